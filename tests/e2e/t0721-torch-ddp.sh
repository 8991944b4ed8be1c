#!/usr/bin/env bash
# spotrun.torch under torch.distributed: examples/pytorch/train_bundle.py
# (the same five glue lines) on 2 gloo ranks through python3 -m spotrun.launch, 2 loader
# workers each. A notice at a random step: the ranks agree on one step,
# each saves its own file (its RNG states and data position), one commits;
# the rerun resumes every rank mid-epoch and ends bit-exact with an
# uninterrupted run.
. "$(dirname "$0")/lib.sh"

EX=$SRCDIR/examples/pytorch
export PYTHONPATH=$SRCDIR/python
export PYTHONDONTWRITEBYTECODE=1
EPOCHS=4
STEPS=32 # 512 samples / 2 ranks / 32 a batch = 8 batches an epoch
ddp=("$PY" -m spotrun.launch --nproc-per-node 2 "$EX/train_bundle.py" --epochs $EPOCHS --workers 2)

STEP_LINE="^epoch [0-9]* batch [0-9]* loss"
lines() { count_lines "$1" "$STEP_LINE"; } # 0 while the file does not exist

test_expect_success 'PyTorch is importable' '
    require_torch
'

test_expect_success 'uninterrupted reference run of 2 ranks (no spotrun)' '
    timeout 300 "${ddp[@]}" --out ref.txt >ref.log 2>&1 || { cat ref.log; exit 1; }
    test "$(lines ref.log)" -eq $STEPS
    grep "^final weights sha256: $(cat ref.txt)$" ref.log
'

test_expect_success 'a notice at a random step: one step on both ranks, one commit, exit 75' '
    n=$((2 + RANDOM % 11)) # the end (32) stays 2.8 s of pace away
    say "the notice after $n steps"
    "$SPOTRUN" run --run-id dt -- "${ddp[@]}" --pace 0.15 --out w.txt >run1.log 2>&1 &
    pid=$!
    wait_lines run1.log "$STEP_LINE" $n 120 || { kill -TERM $pid; wait $pid; exit 1; }
    "$SPOTRUN" notify --run-id dt --deadline 60s || { kill -TERM $pid; wait $pid; exit 1; }
    expect_code 75 wait $pid
    cat run1.log
    grep "preempted: checkpoint 1 is durable" run1.log
    ! grep "final weights" run1.log || exit 1
    "$SPOTRUN" show dt | grep "^checkpoints: *1$"
'

test_expect_success 'the checkpoint holds each rank at the step the store records' '
    step=$("$SPOTRUN" show dt | awk "\$1 == 1 { print \$2 }")
    "$SPOTRUN" pull dt ckpt
    ls ckpt
    "$PY" -c "
import sys, torch
st = [torch.load(\"ckpt/spotrun-torch.rank%d.pt\" % r) for r in (0, 1)]
assert [s[\"step\"] for s in st] == [int(sys.argv[1])] * 2, ([s[\"step\"] for s in st], sys.argv[1])
assert [s[\"rank\"] for s in st] == [0, 1] and {s[\"world_size\"] for s in st} == {2}
assert not torch.equal(st[0][\"rng\"][\"torch\"], st[1][\"rng\"][\"torch\"])  # each its own stream
print(\"ok\", st[0][\"loader\"])
" "$step"
'

test_expect_success 'rerun resumes every rank mid-epoch and ends with the reference weights' '
    step=$("$SPOTRUN" show dt | awk "\$1 == 1 { print \$2 }")
    timeout 300 "$SPOTRUN" run --run-id dt -- "${ddp[@]}" --out w.txt >run2.log 2>&1 ||
        { cat run2.log; exit 1; }
    cat run2.log
    test "$(lines run2.log)" -eq $((STEPS - step))
    cmp ref.txt w.txt
'

test_done
