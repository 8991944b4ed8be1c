#!/usr/bin/env bash
# How an attempt ends is decided in one place (runtime/outcome/outcome.h): a
# stop spotrun made (the stall watchdog, a notice, a limit) is never a
# success, whatever the job's exit status; only spotrun says 75 or 124 (a
# job's own 75 or 124 is a failure, exit 1); a notice whose deadline is
# already past still gives the job the minimum commit window and the TERM
# grace. (`timeout 120`: were the watchdog broken, a hanging job would hold
# the test; the wrapper takes timeout's TERM as a notice and stops it.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-metadata.sh"

export PYTHONPATH=$SRCDIR/python
export PYTHONDONTWRITEBYTECODE=1

# Heartbeats, then hangs; SIGTERM makes it exit 0 (a common handler).
cat >hang0.py <<\PY
import signal, sys, time
import spotrun
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
for _ in range(5):
    spotrun.checkpoint_due()
    time.sleep(0.05)
print("hanging", flush=True)
while True:
    time.sleep(3600)
PY

# Exits 0 when asked to checkpoint (the request signal), without a commit.
cat >req0.py <<\PY
import signal, sys, time
import spotrun
signal.signal(signal.SIGUSR1, lambda *a: sys.exit(0))
print("ready", flush=True)
while True:
    time.sleep(0.05)
PY

test_expect_success 'a stalled job that exits 0 on SIGTERM is restarted, then fails as stalled; never done' '
    expect_code 143 timeout 120 "$SPOTRUN" run --run-id st0 --stall-timeout 2s --max-restarts 1 \
        --backoff 10ms -- python3 hang0.py >st0.log 2>&1 &&
    cat st0.log &&
    test "$(grep -c "^hanging" st0.log)" = 2 &&
    grep "the job exited 0 after the stall watchdog stopped it: a stall is not a finish" st0.log &&
    grep "restarting from scratch" st0.log &&
    ! grep "finished successfully" st0.log &&
    test ! -e "$SPOTRUN_STORE/st0/DONE" &&
    "$SPOTRUN" show st0 >show.out && cat show.out &&
    grep "^state: *failed" show.out &&
    "$SPOTRUN" ls >ls.out && grep "^st0 .*stalled" ls.out
'

test_expect_success 'a rerun of that run runs the job again (it is not done)' '
    expect_code 143 timeout 120 "$SPOTRUN" run --run-id st0 --stall-timeout 2s --max-restarts 0 \
        -- python3 hang0.py >st0b.log 2>&1 &&
    ! grep "already done" st0b.log && grep "^hanging" st0b.log
'

test_expect_success 'a job exiting 0 on the checkpoint request during a notice is preempted (75), not done' '
    "$SPOTRUN" run --run-id rq0 -- python3 req0.py >rq0.log 2>&1 &
    wait_for rq0.log "^ready" &&
    "$SPOTRUN" notify --run-id rq0 --deadline 30s &&
    expect_code 75 wait $! &&
    cat rq0.log &&
    grep "the job exited 0 while spotrun was stopping it (notice): a stop is not a finish" rq0.log &&
    test ! -e "$SPOTRUN_STORE/rq0/DONE" &&
    "$SPOTRUN" show rq0 | grep "^state: *preempted"
'

test_expect_success 'a job exiting 0 on the checkpoint request at a time limit stops with 124, not done' '
    expect_code 124 timeout 120 "$SPOTRUN" run --run-id lim0 --time-limit 5s -- \
        sh -c "trap \"exit 0\" USR1; echo ready; while :; do sleep 0.05; done" >lim0.log 2>&1 &&
    cat lim0.log &&
    grep "a stop is not a finish" lim0.log &&
    test ! -e "$SPOTRUN_STORE/lim0/DONE" &&
    "$SPOTRUN" show lim0 | grep "^state: *stopped"
'

test_expect_success 'a job failing with its own 124 past --max-restarts: exit 1, its code in show' '
    expect_code 1 "$SPOTRUN" run --run-id own124 --max-restarts 0 -- sh -c "exit 124" \
        >own124.log 2>&1 &&
    cat own124.log &&
    grep "the job.s own exit 124 is a failure, not spotrun.s limit (124): exit 1" own124.log &&
    ! grep "stopped at" own124.log &&
    "$SPOTRUN" show own124 >show124.out &&
    grep "^state: *failed" show124.out && grep "exit 124" show124.out &&
    "$SPOTRUN" show own124 --json | grep "\"cause_detail\": *\"exit 124\""
'

SPOTRUN_INJECT_LIB=${SPOTRUN_INJECT_LIB:-$SRCDIR/build/tests/faults/libspotrun-inject.so}
# The wrapper pauses (SIGSTOP, once) as it writes the manifest of the
# directory committed after the job's exit 0; a SIGTERM then waits for it.
test_expect_success 'a notice after the job finished (its last commit persisting) leaves the run done, exit 75' '
    LD_PRELOAD=$SPOTRUN_INJECT_LIB SPOTRUN_INJECT=rename:STOP SPOTRUN_INJECT_PATH=MANIFEST \
        "$SPOTRUN" run --run-id fin -- sh -c "echo w >\"\$SPOTRUN_CKPT_DIR/w\"; echo bye" \
        >fin.log 2>&1 &
    pid=$!
    wait_until 60 "the wrapper paused at its manifest" \
        sh -c "grep -q \"^State:.*T\" /proc/$pid/status" &&
    kill -TERM $pid && kill -CONT $pid &&
    expect_code 75 wait $pid &&
    cat fin.log &&
    grep "notice from signal:SIGTERM after the job ended: its end stands" fin.log &&
    grep "run fin done" fin.log &&
    grep "run fin is done, but a notice came as it finished: exit 75" fin.log &&
    test -e "$SPOTRUN_STORE/fin/DONE" &&
    "$SPOTRUN" show fin | grep "^state: *done" &&
    "$SPOTRUN" run --run-id fin -- sh -c "echo w >\"\$SPOTRUN_CKPT_DIR/w\"; echo bye" \
        >fin2.log 2>&1 &&
    grep "already done" fin2.log && ! grep "^bye" fin2.log
'

start_metadata aws
test_expect_success 'a notice whose deadline is already past still gets the commit window and TERM grace' '
    SPOTRUN_NOTICE=aws SPOTRUN_AWS_IMDS=$MD_URL SPOTRUN_POLL_INTERVAL=200ms \
        "$SPOTRUN" run --run-id past -- "$LOGREG" --steps 100000 --save-every 0 --pace-ms 2 \
        --out w.bin >past.log 2>&1 &
    wait_for past.log "step 300 " &&
    md_control "notice?in=-86400" &&
    expect_code 75 wait $! &&
    cat past.log &&
    grep "has a deadline 24h00m in the past (clock skew or a stale answer): the job still gets 1s to commit and 2s after SIGTERM" past.log &&
    grep "checkpoint requested at step" past.log &&
    grep "preempted: checkpoint 1 is durable" past.log &&
    ! grep -- "-[0-9]*ms left" past.log
'

test_done
