#!/usr/bin/env bash
# Time limits: --attempt-time-limit stops this attempt, --time-limit the
# run's attempts counted across reruns (its history in the store). At the
# limit the job is asked for a checkpoint as at a notice, the checkpoint is
# made durable, the job stopped and the wrapper exits 124 (do not requeue);
# the run is not done. A rerun past its limit does not start; a larger
# limit resumes it from its checkpoint.
. "$(dirname "$0")/lib.sh"

export PYTHONPATH=$SRCDIR/python SPOTRUN_NOTICE=none

# The trainer (tests/e2e/sumsteps.py): sums its steps, commits every 5
# and whenever asked.
cp "$SRCDIR/tests/e2e/sumsteps.py" train.py

# events RUN: the run's event logs, in order.

test_expect_success 'an attempt at --attempt-time-limit: its checkpoint made durable, exit 124, not done' '
    STEPS=150 expect_code 124 "$SPOTRUN" run --run-id att --attempt-time-limit 3s -- \
        "$PY" train.py >att.log 2>&1 &&
    cat att.log &&
    grep "run att reached the attempt.s time limit (--attempt-time-limit 3.0s): .* used; stopping after a checkpoint (give --attempt-time-limit larger to extend it)" att.log &&
    grep "exit 124 (do not requeue; give --attempt-time-limit larger to extend it)" att.log &&
    events att | grep "\"event\":\"limit\".*\"cause\":\"time-limit\",\"what\":\"attempt\",\"limit\":3000" &&
    # asked as at a notice, and what it committed then is durable
    events att | sed -n "/\"event\":\"limit\"/,\$p" >after.jsonl &&
    grep "\"event\":\"request\".*\"reason\":\"limit\"" after.jsonl &&
    grep "\"event\":\"persisted\"" after.jsonl &&
    ! grep "\"event\":\"notice\"\|\"event\":\"preempted\"" after.jsonl &&
    test ! -e "$SPOTRUN_STORE/att/DONE" &&
    ! test -e result-att &&
    "$SPOTRUN" show att >show.txt &&
    grep "^state: *stopped$" show.txt &&
    grep "^failures: *0;" show.txt &&
    grep "^causes: *1 time-limit$" show.txt &&
    "$SPOTRUN" ls | awk "\$1 == \"att\" {print \$2, \$3}" | grep -x "stopped time-limit" &&
    grep "^limit: *time limit reached: .* of 3.0s (--attempt-time-limit)" show.txt &&
    "$SPOTRUN" show att --json | "$PY" -c "
import json, sys
l = json.load(sys.stdin)[\"limit\"]
assert l[\"reached\"] and l[\"cause\"] == \"time-limit\" and l[\"what\"] == \"attempt\", l
assert l[\"limit\"] == 3.0 and l[\"used\"] >= 3.0, l
"
'

test_expect_success '--time-limit counts every attempt: a preempted attempt and its rerun reach it' '
    STEPS=150 "$SPOTRUN" run --run-id tl --time-limit 10s -- "$PY" train.py >tl1.log 2>&1 &
    pid=$!
    wait_for tl1.log "^ready$" 60 && sleep 1 &&
    "$SPOTRUN" notify --run-id tl --deadline 20s &&
    expect_code 75 wait $pid &&
    STEPS=150 expect_code 124 "$SPOTRUN" run --run-id tl --time-limit 10s -- \
        "$PY" train.py >tl2.log 2>&1 &&
    cat tl2.log &&
    grep "time limit 10.0s, [0-9.]*s used so far" tl2.log &&
    ! grep "time limit 10.0s, 0ms used so far" tl2.log &&
    grep "run tl reached the run.s time limit (--time-limit 10.0s)" tl2.log &&
    # the limit fired in the rerun (attempt 1), counting attempt 0 too
    grep "\"event\":\"limit\".*\"attempt\":1,\"cause\":\"time-limit\",\"what\":\"run\",\"limit\":10000" \
        "$SPOTRUN_STORE"/tl/events/000001.jsonl &&
    test "$(grep -c "^tl " starts.log)" = 2
'

test_expect_success 'a rerun past its --time-limit does not start: it names the time used and the limit' '
    ls "$SPOTRUN_STORE"/tl/events >before &&
    STEPS=150 expect_code 124 "$SPOTRUN" run --run-id tl --time-limit 10s -- \
        "$PY" train.py >tl3.log 2>&1 &&
    cat tl3.log &&
    grep "spotrun run: run tl has used [0-9.]*s of its time limit (--time-limit 10.0s): not starting (exit 124); give --time-limit larger to extend it" tl3.log &&
    ls "$SPOTRUN_STORE"/tl/events >after &&
    cmp before after &&
    test "$(grep -c "^tl " starts.log)" = 2
'

test_expect_success 'a larger --time-limit resumes the run from its checkpoint; it finishes with the right sum' '
    step=$(grep "^tl " starts.log | tail -n 1 | cut -d" " -f2) &&
    STEPS=80 "$SPOTRUN" run --run-id tl --time-limit 1h -- "$PY" train.py >tl4.log 2>&1 &&
    resumed=$(grep "^tl " starts.log | tail -n 1 | cut -d" " -f2) &&
    test "$resumed" -gt "$step" &&
    # 1 + 2 + ... + 80, whatever the stops in between
    test "$(cat result-tl)" = "80 3240" &&
    test -e "$SPOTRUN_STORE/tl/DONE"
'

test_expect_success 'a limit reached while a crashed job waits for its restart ends the run: exit 124, no restart' '
    expect_code 124 "$SPOTRUN" run --run-id bo --time-limit 3s --backoff 1h -- \
        sh -c "sleep 1; exit 3" >bo.log 2>&1 &&
    cat bo.log &&
    grep "run bo reached the run.s time limit (--time-limit 3.0s): .*; between attempts: the job is not restarted (give --time-limit larger to extend it)" bo.log &&
    test "$(grep -c "attempt [0-9]*: started" bo.log)" = 1 &&
    grep "\"event\":\"limit\"" "$SPOTRUN_STORE"/bo/events/000000.jsonl
'

test_expect_success 'the limits have environment twins and take durations only' '
    STEPS=150 SPOTRUN_ATTEMPT_TIME_LIMIT=2s expect_code 124 "$SPOTRUN" run --run-id env -- \
        "$PY" train.py >env.log 2>&1 &&
    grep "(--attempt-time-limit 2.0s)" env.log &&
    expect_code 64 "$SPOTRUN" run --run-id bad --time-limit 12x -- true 2>bad.log &&
    grep "time-limit" bad.log &&
    SPOTRUN_TIME_LIMIT=soon expect_code 64 "$SPOTRUN" run --run-id bad -- true 2>bad2.log &&
    grep "SPOTRUN_TIME_LIMIT" bad2.log &&
    "$SPOTRUN" run --help | grep -- "--time-limit DURATION" &&
    "$SPOTRUN" run --help | grep "124"
'

# Two nodes of one run: each commits step 10, says ready, and commits step
# 20 when asked (so the group's set 20 is complete only if both were asked).
. "$SRCDIR/tests/e2e/lib-multinode.sh"
write_nodejob

test_expect_success 'a multi-node run: the node at its limit stops the whole group after one checkpoint, each exits 124' '
    start_node mn 2 0 mn0.log --attempt-time-limit 4s
    start_node mn 2 1 mn1.log
    expect_code 124 wait ${pid[0]} &&
    expect_code 124 wait ${pid[1]} || { cat mn0.log mn1.log; exit 1; }
    cat mn0.log mn1.log &&
    grep "run mn reached the attempt.s time limit (--attempt-time-limit 4.0s)" mn0.log &&
    grep "node 0 of run mn reached a time limit attempt; stopping after a checkpoint" mn1.log &&
    grep "stopped at the attempt.s time limit (--attempt-time-limit 4.0s): .*exit 124" mn1.log &&
    grep "\"event\":\"limit\".*\"from_node\":0" "$SPOTRUN_STORE"/mn/events/000000-n1.jsonl &&
    ! grep "\"event\":\"notice\"" "$SPOTRUN_STORE"/mn/events/*.jsonl &&
    "$SPOTRUN" show mn >mn.show && cat mn.show &&
    grep "^ *[0-9]* *20 " mn.show &&
    grep "^limit: *time limit reached: [0-9.]*s of 4.0s (--attempt-time-limit)" mn.show &&
    test ! -e "$SPOTRUN_STORE/mn/DONE"
'

test_done
