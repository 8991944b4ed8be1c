#!/usr/bin/env bash
# --stall-timeout after a resume (docs/runtime.md, "Stall watchdog"): once
# a run has heartbeated in an earlier attempt, a later attempt that hangs
# before its first heartbeat is judged from its start (--stall-startup, or
# the learned allowance, whose floor the log names); a run that hangs again
# and again ends failed, cause stalled, not 75. A rerun reads the run's
# earlier heartbeats from its history; a sweep's trial that hangs so fails
# and its worker goes on. A job stopped by SIGSTOP is said to
# be stopped and is not judged until it runs again. (`timeout 90`: were an
# attempt never judged, the test would end there.)
. "$(dirname "$0")/lib.sh"

export PYTHONPATH=$SRCDIR/python
export PYTHONDONTWRITEBYTECODE=1

# A shell job: attempt 0 heartbeats (spotrun metric), commits a checkpoint
# and hangs; every later attempt hangs right after its start, without a
# heartbeat.
cat >hang.sh <<\SH
if [ "$SPOTRUN_ATTEMPT" = 0 ]; then
    for i in 1 2 3; do "$SPOTRUN_BIN" metric loss=$i || exit 9; done
    echo "step 3" >"$SPOTRUN_CKPT_DIR/state"
    "$SPOTRUN_BIN" commit --step 3 || exit 9
    echo "attempt 0 hangs after its heartbeats"
else
    echo "attempt $SPOTRUN_ATTEMPT hangs at its start (restored: $(cat "$SPOTRUN_CKPT_DIR/state"))"
fi
exec sleep 600
SH

# stalled.py LOG...: one line per stalled event: "attempt since_ms timeout_ms startup"
cat >stalled.py <<\PY
import json, sys
for path in sys.argv[1:]:
    for line in open(path):
        e = json.loads(line)
        if e["event"] == "stalled":
            print(e["attempt"], e["since_ms"], e["timeout_ms"], e.get("startup", False))
PY

test_expect_success 'a hang right after each resume is judged from the start; the run ends stalled' '
    code=0
    start=$(date +%s)
    timeout 90 "$SPOTRUN" run --run-id again --stall-timeout 2s --stall-startup 3s \
        --max-restarts 2 --backoff 10ms -- sh hang.sh >again.log 2>&1 || code=$?
    took=$(($(date +%s) - start))
    cat again.log
    echo "exit $code after ${took}s"
    test "$code" -ne 0 && test "$code" -ne 75 && test "$code" -ne 124 &&
    grep "^attempt 0 hangs after its heartbeats" again.log &&
    grep "^attempt 1 hangs at its start (restored: step 3)" again.log &&
    grep "^attempt 2 hangs at its start (restored: step 3)" again.log &&
    grep "no heartbeat for [0-9.]*s (--stall-timeout 2.0s): the job is stalled; stopping it" again.log &&
    grep "spotrun: --stall-timeout: run again heartbeated in an earlier attempt, so this attempt is judged from its start: its first heartbeat is due within 3.0s (--stall-startup)" again.log &&
    test "$(grep -c "no heartbeat for [0-9.]*s since the job started (it heartbeated in an earlier attempt; start-up allowance 3.0s, --stall-startup): the job is stalled; stopping it" again.log)" -eq 2 &&
    grep "not restarting: run again stalled 3 time(s), --max-restarts is 2" again.log &&
    "$PY" stalled.py "$SPOTRUN_STORE"/again/events/*.jsonl >again.ev &&
    cat again.ev &&
    test "$(wc -l <again.ev)" -eq 3 &&
    grep -E "^0 [0-9]+ 2000 False$" again.ev &&
    test "$(grep -cE "^[12] (3[0-9]{3}|[4-9][0-9]{3}) 3000 True$" again.ev)" -eq 2
'

test_expect_success 'show: the run failed, cause stalled' '
    "$SPOTRUN" show again --json >again.json &&
    "$PY" -c "
import json, sys
d = json.load(open(\"again.json\"))
a = d[\"attempt_list\"]
print(d[\"state\"], [x[\"cause\"] for x in a])
assert d[\"state\"] == \"failed\", d[\"state\"]
assert [x[\"cause\"] for x in a] == [\"stalled\"] * 3
" &&
    "$SPOTRUN" show again >again.show &&
    cat again.show &&
    grep "stalled" again.show
'

test_expect_success 'the first heartbeat of an attempt is an event, with its time since the start' '
    grep "\"event\":\"heartbeat\"" "$SPOTRUN_STORE"/again/events/000000.jsonl |
        grep "\"after_ms\":[0-9]" &&
    ! grep "\"event\":\"heartbeat\"" "$SPOTRUN_STORE"/again/events/000001.jsonl
'

test_expect_success 'sweep: a trial that hangs after each resume fails, cause stalled; the worker goes on' '
    "$SPOTRUN" sweep init hangs --param k=1 -- sh "$PWD/hang.sh" >/dev/null
    code=0
    timeout 90 "$SPOTRUN" sweep work hangs --until-empty --poll 100ms -- --stall-timeout 2s \
        --stall-startup 3s --max-restarts 1 --backoff 10ms >sweep.log 2>&1 || code=$?
    cat sweep.log
    test "$code" -eq 0 &&
    test -f "$SPOTRUN_STORE/sweeps/hangs/end/0.failed" &&
    test "$(grep -c "the job is stalled; stopping it" sweep.log)" -eq 2 &&
    "$SPOTRUN" sweep show hangs >sweep.show &&
    cat sweep.show &&
    grep "trial 0 failed (stalled); left alone" sweep.log &&
    grep -E "^ +0 +1 +failed \(stalled\) +stalled +2 " sweep.show
'

# first.sh: heartbeats for 2 s (the wrapper looks at the heartbeat every
# tenth of the timeout), then fails (exit 3) on attempt 0; on attempt 1
# hangs at its start; on attempt 2 heartbeats and finishes.
cat >first.sh <<\SH
case $SPOTRUN_ATTEMPT in
0)
    for i in 1 2 3 4 5 6 7 8 9 10; do "$SPOTRUN_BIN" metric loss=$i || exit 9; sleep 0.2; done
    echo "attempt 0 fails"
    exit 3
    ;;
1) echo "attempt 1 hangs at its start"; exec sleep 600 ;;
*)
    for i in 1 2 3 4 5 6 7 8 9 10; do "$SPOTRUN_BIN" metric loss=0.$i || exit 9; sleep 0.2; done
    echo "attempt $SPOTRUN_ATTEMPT finishes"
    ;;
esac
SH

test_expect_success 'a rerun reads the earlier heartbeats from the history and judges from the start' '
    expect_code 3 "$SPOTRUN" run --run-id rerun --stall-timeout 2s --max-restarts 0 -- \
        sh first.sh >rerun0.log 2>&1
    cat rerun0.log
    refute grep "judged from its start" rerun0.log
    grep "\"event\":\"heartbeat\"" "$SPOTRUN_STORE"/rerun/events/000000.jsonl
    code=0
    timeout 90 "$SPOTRUN" run --run-id rerun --stall-timeout 2s --stall-startup 2s \
        --max-restarts 0 -- sh first.sh >rerun1.log 2>&1 || code=$?
    cat rerun1.log
    test "$code" -ne 0 && test "$code" -ne 75 && test "$code" -ne 124 &&
    grep "^attempt 1 hangs at its start" rerun1.log &&
    grep "run rerun heartbeated in an earlier attempt, so this attempt is judged from its start: its first heartbeat is due within 2.0s (--stall-startup)" rerun1.log &&
    grep "no heartbeat for [0-9.]*s since the job started" rerun1.log &&
    grep "not restarting: run rerun stalled 1 time(s), --max-restarts is 0" rerun1.log
'

test_expect_success 'by default the allowance has a floor; a resumed job that heartbeats is not judged' '
    "$SPOTRUN" run --run-id rerun --stall-timeout 2s --max-restarts 1 -- sh first.sh >rerun2.log 2>&1 &&
    cat rerun2.log &&
    grep "its first heartbeat is due within 5m00s (the floor)" rerun2.log &&
    grep "^attempt 2 finishes" rerun2.log &&
    grep "the job finished successfully" rerun2.log &&
    ! grep "the job is stalled" rerun2.log
'

# twice.sh: heartbeats for 2 s, then fails on attempt 0 and finishes on the next.
cat >twice.sh <<\SH
for i in 1 2 3 4 5 6 7 8 9 10; do "$SPOTRUN_BIN" metric loss=$i || exit 9; sleep 0.2; done
test "$SPOTRUN_ATTEMPT" = 0 && exit 3
echo "attempt $SPOTRUN_ATTEMPT finishes"
SH

test_expect_success 'auto: the start-up allowance is at least its timeout; learning is not judging' '
    "$SPOTRUN" run --run-id learn --stall-timeout auto --max-restarts 1 --backoff 10ms -- \
        sh twice.sh >learn.log 2>&1 &&
    cat learn.log &&
    grep "its first heartbeat is due within 10m00s (the stall timeout)" learn.log &&
    grep "^attempt 1 finishes" learn.log &&
    ! grep "judged from now on" learn.log
'

# stopme.py: heartbeats every 50 ms until the file "finish" exists, then
# exits 0; says its pid, and "beating" after 40 heartbeats.
cat >stopme.py <<\PY
import os, time
import spotrun
print("job %d" % os.getpid(), flush=True)
n = 0
while not os.path.exists("finish"):
    spotrun.heartbeat()
    n += 1
    if n == 40:
        print("beating", flush=True)
    time.sleep(0.05)
print("job finishes", flush=True)
PY

test_expect_success 'a job stopped by SIGSTOP past the timeout is said to be stopped, not judged' '
    timeout 90 "$SPOTRUN" run --run-id stopped --stall-timeout 2s --max-restarts 0 -- \
        "$PY" stopme.py >stop.log 2>&1 &
    wrapper=$!
    ok=0 job=
    # ok=1 when every step worked; the job is let go and the wrapper
    # waited for either way, then ok is asserted.
    if wait_for stop.log "^beating" 60 &&
        job=$(sed -n "s/^job \([0-9]*\)$/\1/p" stop.log) &&
        kill -STOP "$job" &&
        wait_for stop.log "the job is stopped (pid $job in state T: SIGSTOP or a debugger), not hung" 60 &&
        sleep 3 && # stopped for more than the timeout again: still not judged
        kill -CONT "$job" &&
        wait_for stop.log "the job runs again" 60; then
        ok=1
    fi
    test -z "$job" || kill -CONT "$job" 2>/dev/null
    touch finish
    code=0
    wait $wrapper || code=$?
    cat stop.log
    test "$ok" -eq 1 &&
    test "$code" -eq 0 &&
    test "$(grep -c "the job is stopped" stop.log)" -eq 1 &&
    grep "^job finishes" stop.log &&
    grep "the job finished successfully" stop.log &&
    ! grep "the job is stalled" stop.log &&
    ! grep -h "\"event\":\"stalled\"" "$SPOTRUN_STORE"/stopped/events/*.jsonl
'

test_done
