#!/usr/bin/env bash
# The shim's signal interception: the request signal and SIGTERM stay the
# shim's while the application's own handlers are chained; an unaware job
# survives the request signal; SIGTERM sent to the job itself becomes a
# checkpoint request (a notice with --grace) unless the job handles it.
. "$(dirname "$0")/lib.sh"

if [ -z "${FAKECUDA:-}" ]; then
    say "ok 1 # skip: test programs not built (CUDA headers not found at configure time)"
    exit 0
fi
SIGPROBE=$FAKECUDA/sigprobe
REGJOB=$FAKECUDA/regjob

# job_pid WRAPPER_PID: the job spotrun started.
job_pid() {
    local i=0 p=
    until p=$(pgrep -P "$1" | head -n 1) && [ -n "$p" ]; do
        i=$((i + 1))
        [ $i -le 200 ] || { echo "timed out after 10s waiting for the job of wrapper $1 (a child of it)" >&2; return 1; }
        sleep 0.05
    done
    echo "$p"
}

test_expect_success 'an application SIGUSR1 handler runs and the shim still sees the request' '
    "$SPOTRUN" run --run-id chain --every 200ms --max-restarts 0 -- "$SIGPROBE" chain >chain.log 2>&1 &&
    grep "app=1 shim=1 query=ok" chain.log
'

test_expect_success 'a C program without handlers survives the request signal' '
    "$SPOTRUN" run --run-id unaware --every 100ms --max-restarts 0 -- "$SIGPROBE" wait 800 \
        >unaware.log 2>&1 &&
    grep survived unaware.log
'

test_expect_success 'SIGTERM to the job becomes a checkpoint request; the wrapper exits 75' '
    "$SPOTRUN" run --run-id term --grace 20s -- "$REGJOB" --steps 100000 --pace-ms 2 \
        >term.log 2>&1 &
    pid=$!
    wait_for term.log "step 200$"
    kill -TERM "$(job_pid $pid)"
    expect_code 75 wait $pid
    cat term.log
    grep "preemption notice from job:SIGTERM" term.log &&
    grep "checkpoint requested at step" term.log &&
    grep "checkpoint 1 is durable" term.log
'

test_expect_success 'a job that handles SIGTERM itself gets it (no notice)' '
    "$SPOTRUN" run --run-id own --max-restarts 0 -- "$SIGPROBE" term >own.log 2>&1 &
    pid=$!
    wait_for own.log "^ready"
    kill -TERM "$(job_pid $pid)"
    expect_code 0 wait $pid
    grep "app handled TERM" own.log &&
    ! grep "preemption notice" own.log
'

test_expect_success 'without the shim, SIGTERM to the job kills it (the test can tell)' '
    "$SPOTRUN" run --run-id noshim --no-preload --max-restarts 0 -- "$SIGPROBE" wait 5000 \
        >noshim.log 2>&1 &
    pid=$!
    wait_for noshim.log "^ready"
    kill -TERM "$(job_pid $pid)"
    expect_code 143 wait $pid
'

test_expect_success 'Python: signal.signal(SIGUSR1) handler is chained, the API sees the request' '
    cat >py_chain.py <<\PY &&
import ctypes, os, signal, sys, time
hits = []
signal.signal(signal.SIGUSR1, lambda s, f: hits.append(s))
lib = ctypes.CDLL(None)
for _ in range(300):
    if hits and lib.spotrun_checkpoint_requested():
        break
    time.sleep(0.01)
print("py hits=%d requested=%d handler=%s" % (len(hits), lib.spotrun_checkpoint_requested(),
      signal.getsignal(signal.SIGUSR1) is not signal.SIG_DFL))
PY
    "$SPOTRUN" run --run-id pychain --every 200ms --max-restarts 0 -- "$PY" py_chain.py >py.log 2>&1 &&
    grep "py hits=[1-9][0-9]* requested=1 handler=True" py.log
'

test_done
