#!/usr/bin/env bash
# A real trainer as it is written: a DDP trainer with its own snapshot code
# and a DataLoader with a DistributedSampler
# (tests/e2e/trainers/ddp_snapshot.py, in the style of pytorch/examples'
# ddp-tutorial-series), 2 gloo ranks started by the installed launcher
# (python3 -m spotrun.launch). Its spotrun version keeps the user's
# DataLoader and sampler (at most 5 glue lines): uninterrupted it ends with
# the plain script's weights, and so it does preempted at a random step,
# mid-epoch, by a notice or by SIGTERM to every process of the job, the
# rerun on another "node" (a fresh directory: the trainer's own snapshot
# is not there), bit for bit; and so it does when one rank freezes. SIGTERM reaches the launcher too, which
# must not forward it (from inside the job it would kill the ranks).
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/trainers/lib.sh"

STEPS=32 # 256 samples / 2 ranks / 16 a batch = 8 batches an epoch, 4 epochs
STEP_LINE="^\[RANK0\] Epoch [0-9]* |"
# rank 0's steps; counted anywhere in a line: the ranks share the log, and
# a line of one rank may be cut by the other's
lines() { grep -o "\[RANK0\] Epoch [0-9]* |" "$1" | wc -l; }

test_expect_success 'PyTorch is importable' '
    require_torch
'

test_expect_success 'the glue is at most 5 lines' '
    n=$(glue_lines "$TR/ddp_snapshot.py" "$TR/ddp_snapshot.spotrun.py")
    say "glue: $n lines"
    test "$n" -le 5
'

test_expect_success 'reference: the plain script, without spotrun' '
    mkdir ref && (cd ref && timed ../ref.log timeout 120 "$PY" -m spotrun.launch --nproc-per-node 2 "$TR/ddp_snapshot.py" 4 2 --out w.txt) ||
        { cat ref.log; exit 1; }
    test "$(lines ref.log)" -eq $STEPS &&
    grep "Training snapshot saved" ref.log
'

test_expect_success 'uninterrupted under spotrun: the same weights' '
    mkdir whole && (cd whole && timed ../whole.log timeout 120 "$SPOTRUN" run --run-id whole -- \
        "$PY" -m spotrun.launch --nproc-per-node 2 "$TR/ddp_snapshot.spotrun.py" 4 2 --out w.txt) ||
        { cat whole.log; exit 1; }
    cmp ref/w.txt whole/w.txt
'

for how in notice group; do
    test_expect_success "preempted ($how) mid-epoch, resumed on another node: the same weights" '
        n=$((2 + RANDOM % 20))
        [ $((n % 8)) -ne 0 ] || n=$((n + 1))
        say "$how after $n steps"
        mkdir node1-$how node2-$how
        (cd node1-$how && exec "$SPOTRUN" run --run-id $how -- "$PY" -m spotrun.launch \
            --nproc-per-node 2 "$TR/ddp_snapshot.spotrun.py" 4 2 --pace 0.15 --out w.txt) \
            >$how-1.log 2>&1 &
        stop_at $how-1.log "$STEP_LINE" $n $how $how $! &&
        (cd node2-$how && timed ../$how-2.log timeout 120 "$SPOTRUN" run --run-id $how -- \
            "$PY" -m spotrun.launch --nproc-per-node 2 "$TR/ddp_snapshot.spotrun.py" 4 2 \
            --out w.txt) || { cat $how-2.log; exit 1; }
        step=$("$SPOTRUN" show $how | awk "\$1 == 1 { print \$2 }")
        say "checkpoint at step $step"
        grep -v "Loading snapshot" $how-2.log >/dev/null &&
        test "$(lines $how-2.log)" -eq $((STEPS - step)) &&
        cmp ref/w.txt node2-$how/w.txt
    '
done

# A frozen rank: rank 1 stopped (SIGSTOP) mid-epoch, rank 0 waits for it in
# an allreduce; the stall watchdog names the stopped rank, stops the job
# and restarts it from its newest checkpoint, which ends with the plain
# script's weights.
test_expect_success 'a frozen rank (SIGSTOP) mid-epoch: stalled, restarted from its checkpoint, the same weights' '
    n=$((4 + RANDOM % 16))
    say "rank 1 frozen after $n steps"
    mkdir frozen
    (cd frozen && exec "$SPOTRUN" run --run-id frozen --stall-timeout 8s --every 1s --backoff 10ms -- \
        "$PY" -m spotrun.launch --nproc-per-node 2 "$TR/ddp_snapshot.spotrun.py" 4 2 --pace 0.15 \
        --out w.txt) >frozen.log 2>&1 &
    w=$!
    wait_lines frozen.log "$STEP_LINE" $n 120 || { kill -TERM $w; wait $w; cat frozen.log; exit 1; }
    launcher=$(job_pid $w) &&
    rank1=$(for p in $(pgrep -P "$launcher"); do
        tr "\0" "\n" </proc/$p/environ | grep -x RANK=1 >/dev/null && echo $p; done) &&
    test -n "$rank1" &&
    say "stopping rank 1 (pid $rank1)" &&
    kill -STOP "$rank1" &&
    rc=0 && { wait $w || rc=$?; } &&
    cat frozen.log &&
    test $rc -eq 0 &&
    grep "the job is stalled; stopping it (suspect: pid $rank1 (python[0-9.]*) state T" frozen.log &&
    grep "restarting from the newest checkpoint ([0-9]*)" frozen.log &&
    "$SPOTRUN" show frozen | grep "^causes: .*1 stalled" &&
    cmp ref/w.txt frozen/w.txt
'

test_done
