#!/usr/bin/env bash
# A preemption notice makes the job checkpoint, the wrapper exit 75, and a
# rerun resume to the same final weights as an uninterrupted run.
. "$(dirname "$0")/lib.sh"

test_expect_success 'uninterrupted reference run' '
    "$LOGREG" --steps 1500 --out ref.bin >/dev/null
'

test_expect_success 'notify: the job checkpoints and spotrun exits 75' '
    "$SPOTRUN" run --run-id c1 -- "$LOGREG" --steps 1500 --save-every 0 --pace-ms 2 \
        --out w.bin >run1.log 2>&1 &
    wait_for run1.log "step 300 "
    "$SPOTRUN" notify --run-id c1 --deadline 20s
    expect_code 75 wait $!
    grep "checkpoint requested at step" run1.log &&
    grep "preempted: checkpoint 1 is durable" run1.log &&
    test ! -e w.bin
'

test_expect_success 'the checkpoint is in the store with its step' '
    "$SPOTRUN" show c1 >show.out &&
    step=$(sed -n "s/^checkpoint requested at step \([0-9]*\).*/\1/p" run1.log) &&
    awk -v s="$step" "\$1 == 1 && \$2 == s" show.out | grep .
'

test_expect_success 'rerun resumes and ends bit-exact with the reference' '
    "$SPOTRUN" run --run-id c1 -- "$LOGREG" --steps 1500 --save-every 0 --out w.bin >run2.log 2>&1 &&
    grep "resumed from step" run2.log &&
    cmp ref.bin w.bin
'

test_expect_success 'SIGTERM to the wrapper is a notice too (Kubernetes, systemd)' '
    "$SPOTRUN" run --run-id c2 --grace 20s -- "$LOGREG" --steps 100000 --save-every 0 \
        --pace-ms 2 >run3.log 2>&1 &
    pid=$!
    wait_for run3.log "step 200 "
    kill -TERM $pid
    expect_code 75 wait $pid
    grep "preemption notice from signal:SIGTERM" run3.log &&
    grep "checkpoint 1 is durable" run3.log
'

test_done
