#!/usr/bin/env bash
# spotrun.torch in a user's own script (examples/pytorch/train_bundle.py:
# MLP with dropout, AdamW, cosine LR, a shuffling DataLoader whose workers
# augment): the glue is five lines and the script without them is plain
# PyTorch; preempted twice at random steps (a notice by `spotrun notify`,
# then SIGTERM to the wrapper) with 0 and with 2 workers, it resumes
# mid-epoch and ends with the weights of an uninterrupted run, bit for bit.
. "$(dirname "$0")/lib.sh"

EX=$SRCDIR/examples/pytorch
export PYTHONPATH=$SRCDIR/python
export PYTHONDONTWRITEBYTECODE=1
EPOCHS=4
STEPS=64 # 512 samples / 32 a batch = 16 batches an epoch

# lines FILE: the training steps logged in FILE (0 while it does not exist).
STEP_LINE="^epoch [0-9]* batch [0-9]* loss"
lines() { count_lines "$1" "$STEP_LINE"; }

# wait_steps FILE N: waits until FILE logged N steps (120 s at most; the
# wrapper started in the background may not have created FILE yet).
wait_steps() { wait_lines "$1" "$STEP_LINE" "$2" 120; }

# unglue.py SCRIPT: SCRIPT without its glue: a line ending in "  # spotrun"
# goes, one ending in "  # spotrun; plain: CODE" becomes CODE.
cat >unglue.py <<\PY
import re, sys
for line in open(sys.argv[1]):
    m = re.match(r"(\s*).*  # spotrun(; plain: (.*))?$", line)
    if not m:
        sys.stdout.write(line)
    elif m.group(3):
        print(m.group(1) + m.group(3))
PY

test_expect_success 'PyTorch is importable' '
    require_torch
'

test_expect_success 'the glue is five lines; without them the script is plain PyTorch and runs' '
    grep -c "  # spotrun\(;.*\)\?$" "$EX/train_bundle.py" | grep -x 5
    "$PY" unglue.py "$EX/train_bundle.py" >plain.py
    cat plain.py
    ! sed -n "/^import/,\$p" plain.py | grep -n "spotrun\|\<st\." || exit 1
    diff "$EX/train_bundle.py" plain.py >glue.diff || test $? = 1 # 1: they differ
    test "$(grep -c "^<" glue.diff)" = 5
    PYTHONPATH= "$PY" plain.py --epochs 1 --workers 2 >plain.log 2>&1 || { cat plain.log; exit 1; }
    grep -c "^epoch 0 batch" plain.log | grep -x 16
    grep "^final weights sha256: [0-9a-f]\{64\}$" plain.log
'

test_expect_success 'uninterrupted reference runs (no spotrun), 0 and 2 workers' '
    "$PY" "$EX/train_bundle.py" --epochs $EPOCHS --workers 0 --out ref0.txt >ref0.log 2>&1 ||
        { cat ref0.log; exit 1; }
    "$PY" "$EX/train_bundle.py" --epochs $EPOCHS --workers 2 --out ref2.txt >ref2.log 2>&1 ||
        { cat ref2.log; exit 1; }
    test "$(lines ref0.log)" -eq $STEPS
    test "$(lines ref2.log)" -eq $STEPS
    ! cmp -s ref0.txt ref2.txt # the augmentation differs between 0 and 2 workers
'

# step_of RUN SEQ: the step of checkpoint SEQ as the store records it.
step_of() { "$SPOTRUN" show "$1" | awk -v s="$2" '$1 == s { print $2 }'; }

# preempted W: two preemptions at random steps, then the rest; the final
# weights must be the reference's.
preempted() {
    w=$1 id=b$1
    run=("$SPOTRUN" run --run-id $id -- "$PY" "$EX/train_bundle.py" --epochs $EPOCHS
        --workers $w --pace 0.1 --out w$w.txt) # $! must be the wrapper: no function
    n1=$((3 + RANDOM % 10)) n2=$((3 + RANDOM % 10)) # the end (64) stays 3.5 s of pace away
    say "workers $w: a notice after $n1 steps, SIGTERM to the wrapper after $n2 more"
    "${run[@]}" >$id-1.log 2>&1 &
    pid=$!
    { wait_steps $id-1.log $n1 && "$SPOTRUN" notify --run-id $id --deadline 60s; } ||
        { kill -TERM $pid; wait $pid; exit 1; }
    expect_code 75 wait $pid
    grep "preempted: checkpoint 1 is durable" $id-1.log
    s1=$(step_of $id 1)
    test "$s1" -ge $n1
    test "$s1" -lt $STEPS
    "${run[@]}" >$id-2.log 2>&1 &
    pid=$!
    wait_steps $id-2.log $n2 || { kill -TERM $pid; wait $pid; exit 1; }
    kill -TERM $pid
    expect_code 75 wait $pid
    grep "preempted: checkpoint 2 is durable" $id-2.log
    s2=$(step_of $id 2)
    test "$s2" -gt "$s1"
    test "$s2" -lt $STEPS
    timeout 300 "$SPOTRUN" run --run-id $id -- "$PY" "$EX/train_bundle.py" --epochs $EPOCHS \
        --workers $w --out w$w.txt >$id-3.log 2>&1 || { cat $id-3.log; exit 1; }
    # it went on from step s2: exactly the steps after it were trained
    test "$(lines $id-3.log)" -eq $((STEPS - s2))
    cmp ref$w.txt w$w.txt
    "$SPOTRUN" show $id | grep "^state: *done$"
}

test_expect_success 'preempted twice at random steps, 0 workers: bit-exact' '
    preempted 0
'

test_expect_success 'preempted twice at random steps, 2 workers: bit-exact' '
    preempted 2
'

test_done
