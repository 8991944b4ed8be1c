#!/usr/bin/env bash
# Mistakes of the job named as such: a job that listens for checkpoint
# requests but never commits; a job that exits during a notice without the
# commit it was asked for (the work lost); a command that cannot run on the
# first attempt (126/127) is not restarted, nor a second time a job that
# failed the same way twice before saying a word (a module that does not
# import); a restart with no checkpoint says "from scratch".
. "$(dirname "$0")/lib.sh"

export PYTHONPATH=$SRCDIR/python

cat >poll.py <<'PY'
import sys, time, spotrun
with open(spotrun.path("x"), "w") as f:
    f.write("data")
if sys.argv[1] == "commit-then-crash":
    spotrun.commit(10)
print("ready", flush=True)
while True:
    if spotrun.checkpoint_due() and sys.argv[1] != "nocommit":
        sys.exit(1)
    time.sleep(0.05)
PY

# notify_when_ready RUN LOG: waits for the job's "ready", then a notice.
notify_when_ready() {
    wait_for "$2" "^ready$" 60 && "$SPOTRUN" notify --run-id "$1" --deadline 30s
}

test_expect_success 'a job that polls but never commits is named as such; its directory is committed' '
    "$SPOTRUN" run --run-id fc --grace 30s -- "$PY" poll.py nocommit >fc.log 2>&1 &
    pid=$!
    notify_when_ready fc fc.log || { kill $pid; exit 1; }
    expect_code 75 wait $pid &&
    grep "the job listens for checkpoint requests .* but never called commit() in this attempt" fc.log &&
    grep "directory .* is committed as it stands once it stops" fc.log &&
    ! grep "begins from scratch" fc.log &&
    test "$(grep -c "listened for checkpoint requests (1 made) but never called commit()" fc.log)" = 1 &&
    "$SPOTRUN" show fc | grep "^checkpoints: *1$"
'

test_expect_success 'a job exiting during the notice without committing: the work lost is named' '
    "$SPOTRUN" run --run-id lost --grace 30s -- "$PY" poll.py commit-then-crash >lost.log 2>&1 &
    pid=$!
    notify_when_ready lost lost.log || { kill $pid; exit 1; }
    expect_code 75 wait $pid &&
    grep "the job exited (status 1) during the notice without committing: the run resumes from checkpoint 1 (step 10), the work since then (.*) is lost" lost.log &&
    ! grep "never called commit" lost.log
'

test_expect_success 'a command not found on the first attempt: not restarted, exit 127' '
    expect_code 127 "$SPOTRUN" run --run-id nf --backoff 10ms -- sh -c "no_such_command_xyz" \
        >nf.log 2>&1 &&
    grep "not restarting: the job exited with 127 (a command was not found) on its first attempt" nf.log &&
    test "$(grep -c "attempt [0-9]*: started" nf.log)" = 1
'

test_expect_success 'a crash with no checkpoint restarts "from scratch", never "from the newest checkpoint"' '
    expect_code 3 "$SPOTRUN" run --run-id scratch --max-restarts 1 --backoff 10ms -- sh -c "exit 3" \
        >scratch.log 2>&1 &&
    grep "restarting from scratch in .*: run scratch has no checkpoint yet (restart 1 of 1)" scratch.log &&
    ! grep "newest checkpoint" scratch.log &&
    grep "warning: the .* this attempt ran are lost: give --every DURATION (say --every 10m), or commit from the job" scratch.log
'

test_expect_success 'with --every, a crash before the first checkpoint does not suggest it' '
    expect_code 3 "$SPOTRUN" run --run-id scr2 --every 1h --max-restarts 1 --backoff 10ms -- \
        sh -c "exit 3" >scr2.log 2>&1 &&
    grep "restarting from scratch" scr2.log &&
    ! grep "give --every" scr2.log
'

test_expect_success 'a script that cannot import its module: one restart, then stopped with its code' '
    expect_code 1 "$SPOTRUN" run --run-id imp --max-restarts 5 --backoff 10ms -- \
        "$PY" -c "import no_such_module_xyz" >imp.log 2>&1 &&
    cat imp.log &&
    grep "ModuleNotFoundError" imp.log &&
    test "$(grep -c "attempt [0-9]*: started" imp.log)" = 2 &&
    grep "not restarting again: the job failed the same way (status 1) on its first start and on its restart" imp.log &&
    ! grep "giving up after" imp.log &&
    "$SPOTRUN" show imp | grep "^attempts: *2$"
'

test_expect_success 'failing two different ways, or after talking to spotrun, is restarted as asked' '
    cat >twoways.sh <<\JOB &&
#!/bin/sh
exit $((3 + SPOTRUN_ATTEMPT % 2))
JOB
    chmod +x twoways.sh &&
    expect_code 3 "$SPOTRUN" run --run-id twoways --max-restarts 2 --backoff 10ms -- ./twoways.sh \
        >twoways.log 2>&1 &&
    test "$(grep -c "attempt [0-9]*: started" twoways.log)" = 3 &&
    expect_code 5 "$SPOTRUN" run --run-id talks --max-restarts 2 --backoff 10ms -- \
        sh -c "\"\$SPOTRUN\" metric loss=1 && exit 5" >talks.log 2>&1 &&
    test "$(grep -c "attempt [0-9]*: started" talks.log)" = 3 &&
    ! grep "not restarting" twoways.log talks.log
'

test_done
