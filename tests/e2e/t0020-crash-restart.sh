#!/usr/bin/env bash
# A crash restarts the job from its newest checkpoint, and the run still
# ends bit-exact with an uninterrupted one.
. "$(dirname "$0")/lib.sh"

test_expect_success 'uninterrupted reference run' '
    "$LOGREG" --steps 2000 --out ref.bin >/dev/null
'

test_expect_success 'a crash at step 1234: restart, resumed from the last saved step' '
    "$SPOTRUN" run --run-id cr --backoff 10ms -- "$LOGREG" --steps 2000 --save-every 500 \
        --crash-at 1234 --out w.bin >run.log 2>&1 &&
    grep "crashing at step 1234" run.log &&
    grep "the job exited with code 3" run.log &&
    grep "resumed from step 1000$" run.log &&
    test "$(grep -c "resumed from step" run.log)" -eq 1
'

test_expect_success 'the final weights equal the uninterrupted run' '
    cmp ref.bin w.bin
'

test_expect_success 'spotrun show: attempts 2, state done, the saved steps' '
    "$SPOTRUN" show cr >show.out &&
    grep "^attempts: *2$" show.out &&
    grep "^state: *done$" show.out &&
    for step in 500 1000 1500 2000; do
        awk -v s=$step "\$2 == s" show.out | grep . || exit 1
    done
'

test_expect_success 'a crash before the first checkpoint restarts from scratch' '
    "$SPOTRUN" run --run-id early --backoff 10ms -- "$LOGREG" --steps 2000 --save-every 500 \
        --crash-at 300 --out w2.bin >run2.log 2>&1 &&
    grep "crashing at step 300" run2.log &&
    ! grep "resumed from step" run2.log &&
    cmp ref.bin w2.bin &&
    "$SPOTRUN" show early | grep "^attempts: *2$"
'

test_expect_success 'a job that exits 75 by itself fails (exit 1: only spotrun says 75): no preemption is recorded' '
    code=0
    "$SPOTRUN" run --run-id own75 --max-restarts 1 --backoff 10ms -- sh -c "exit 75" \
        >run75.log 2>&1 || code=$?
    test "$code" -eq 1 &&
    grep "exit 75 is the job.s own code" run75.log &&
    grep "the job.s own exit 75 is a failure, not spotrun.s requeue me (75): exit 1" run75.log &&
    ! grep "preempted" run75.log &&
    ! grep "\"event\":\"preempted\"" "$SPOTRUN_STORE"/own75/events/*.jsonl &&
    "$SPOTRUN" show own75 >show75.out &&
    grep "^state: *failed$" show75.out &&
    grep "^preemptions: *0" show75.out &&
    grep "^failures: *2 (exit 75: 2)" show75.out &&
    ! grep "unknown" show75.out
'

test_done
