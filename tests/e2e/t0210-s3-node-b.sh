#!/usr/bin/env bash
# Preempted on "node A", resumed on "node B" (another work dir, no local
# state) through the S3 store, with bit-exact final weights.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
s3_start

test_expect_success 'uninterrupted reference run' '
    "$LOGREG" --steps 1500 --out ref.bin >/dev/null
'

test_expect_success 'node A: notify, the checkpoint reaches the bucket, exit 75' '
    mkdir nodeA &&
    (cd nodeA && SPOTRUN_WORK_DIR=$PWD/work "$SPOTRUN" run --run-id x1 -- "$LOGREG" \
        --steps 1500 --save-every 0 --pace-ms 2 --out w.bin >run1.log 2>&1) &
    wait_for nodeA/run1.log "step 300 "
    SPOTRUN_WORK_DIR=$PWD/nodeA/work "$SPOTRUN" notify --run-id x1 --deadline 20s
    expect_code 75 wait $!
    grep "preempted: checkpoint 1 is durable" nodeA/run1.log
'

test_expect_success 'node B: a fresh work dir resumes from the bucket, bit-exact' '
    mkdir nodeB &&
    (cd nodeB && SPOTRUN_WORK_DIR=$PWD/work "$SPOTRUN" run --run-id x1 -- "$LOGREG" \
        --steps 1500 --save-every 0 --out w.bin >run2.log 2>&1) &&
    grep "resumed from step" nodeB/run2.log &&
    cmp ref.bin nodeB/w.bin
'

test_expect_success 'commit from inside the job goes to the bucket too' '
    (cd nodeB && SPOTRUN_WORK_DIR=$PWD/work "$SPOTRUN" run --run-id x2 -- "$LOGREG" \
        --steps 400 --save-every 100 --out w2.bin >run3.log 2>&1) &&
    "$SPOTRUN" show x2 >show.out && grep "checkpoints: [1-9]" show.out
'

test_done
