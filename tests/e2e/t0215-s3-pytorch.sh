#!/usr/bin/env bash
# The PyTorch example through the S3 store: preempted on "node A", resumed
# on "node B" (another work dir, no local state), final weights identical
# to an uninterrupted run.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
s3_start

TRAIN=$SRCDIR/examples/pytorch/train.py
STEPS=80

test_expect_success 'PyTorch is importable' '
    require_torch
'

test_expect_success 'uninterrupted reference run (no spotrun)' '
    "$PY" "$TRAIN" --steps $STEPS --out ref.txt >ref.log 2>&1
'

test_expect_success 'node A: notify, the checkpoint reaches the bucket, exit 75' '
    SPOTRUN_WORK_DIR=$TRASH/node-a "$SPOTRUN" run --run-id pt -- "$PY" "$TRAIN" --steps $STEPS \
        --save-every 0 --pace 0.02 --out a.txt >a.log 2>&1 &
    pid=$!
    {
        wait_for a.log "^step 20 " 60 &&
        SPOTRUN_WORK_DIR=$TRASH/node-a "$SPOTRUN" notify --run-id pt --deadline 30s
    } || { kill -TERM $pid; wait $pid; exit 1; }
    expect_code 75 wait $pid
    grep "checkpoint 1 durable in s3://bkt/" a.log
    grep "preempted: checkpoint 1 is durable" a.log
    test ! -e a.txt
'

test_expect_success 'node B: resumes from the bucket and ends with the reference weights' '
    step=$("$SPOTRUN" show pt | awk "\$1 == 1 { print \$2 }")
    SPOTRUN_WORK_DIR=$TRASH/node-b "$SPOTRUN" run --run-id pt -- "$PY" "$TRAIN" --steps $STEPS \
        --save-every 0 --out b.txt >b.log 2>&1
    grep "^resumed from step $step$" b.log
    cmp ref.txt b.txt
'

test_done
