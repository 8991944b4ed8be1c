#!/usr/bin/env bash
# The PyTorch example under spotrun: a preemption notice makes it save and
# commit, spotrun exits 75, and a rerun resumes to the same final weights
# as an uninterrupted run.
. "$(dirname "$0")/lib.sh"

TRAIN=$SRCDIR/examples/pytorch/train.py
STEPS=120

test_expect_success 'PyTorch is importable' '
    require_torch
'

test_expect_success 'uninterrupted reference run (no spotrun)' '
    "$PY" "$TRAIN" --steps $STEPS --out ref.txt >ref.log 2>&1 &&
    test "$(wc -c <ref.txt)" -ge 64
'

# The step of checkpoint 1 as the store records it. (The job logs
# "checkpoint requested at step N" only after its commit returned, so the
# wrapper may stop it before that line is written: the store is the truth.)
step_of_ckpt1() { "$SPOTRUN" show pt | awk '$1 == 1 { print $2 }'; }

test_expect_success 'notify: the job saves and commits, spotrun exits 75' '
    "$SPOTRUN" run --run-id pt -- "$PY" "$TRAIN" --steps $STEPS --save-every 0 --pace 0.02 \
        --out w.txt >run1.log 2>&1 &
    pid=$!
    {
        wait_for run1.log "^step 20 " 60 &&
        "$SPOTRUN" notify --run-id pt --deadline 30s
    } || { kill -TERM $pid; wait $pid; exit 1; }
    expect_code 75 wait $pid &&
    grep "preemption notice from manual" run1.log &&
    grep "preempted: checkpoint 1 is durable" run1.log &&
    ! grep "final weights" run1.log &&
    test ! -e w.txt
'

test_expect_success 'the checkpoint in the store has the step the job saved' '
    "$SPOTRUN" show pt >show.out &&
    grep "^checkpoints: *1$" show.out &&
    step=$(step_of_ckpt1) &&
    test "$step" -ge 20 && test "$step" -lt $STEPS &&
    "$SPOTRUN" pull pt ckpt &&
    test -s ckpt/state.pt
'

test_expect_success 'rerun resumes from that step and ends with the reference weights' '
    step=$(step_of_ckpt1) &&
    "$SPOTRUN" run --run-id pt -- "$PY" "$TRAIN" --steps $STEPS --save-every 0 \
        --out w.txt >run2.log 2>&1 &&
    grep "^resumed from step $step$" run2.log &&
    cmp ref.txt w.txt &&
    "$SPOTRUN" show pt | grep "^state: *done$"
'

test_done
