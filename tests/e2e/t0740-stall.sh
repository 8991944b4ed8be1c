#!/usr/bin/env bash
# --stall-timeout: a job that heartbeats (checkpoint_due(), commit()) and
# then hangs - asleep in a call, or spinning in Python - is judged stalled,
# its processes' states and Python tracebacks go into a "stalled" event,
# and it restarts from its newest checkpoint and ends bit-exact with an
# uninterrupted run. A job that never heartbeats is never judged, time
# spent answering a checkpoint request is no stall, and stalls count toward
# --max-restarts, across reruns of the run too. (`timeout 120`: were the
# watchdog broken, a hanging job would hold the test until ctest's limit;
# the wrapper takes the TERM as a notice and stops it.)
. "$(dirname "$0")/lib.sh"

export PYTHONPATH=$SRCDIR/python
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the source tree

# stall.py MODE STEPS OUT: a deterministic "training" of three floats, one
# heartbeat (checkpoint_due()) per 20 ms step, a commit every 20 steps or
# when asked; writes the final weights to OUT. At step $HANG_AT it hangs
# on the first attempt (MODE sleep or spin) or on every one (always-sleep);
# "none" never hangs; "slowsave" sleeps 4 s in each save it was asked for.
cat >stall.py <<\PY
import json, math, os, sys, time
import spotrun

mode, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
hang_at = int(os.environ.get("HANG_AT", "30"))


def hang_here_sleeping():
    while True:
        time.sleep(3600)


def hang_here_spinning():
    x = 0
    while True:
        x += 1


step, w = 0, [0.5, -0.25, 0.125]
if spotrun.resumed():
    with open(spotrun.path("state.json")) as f:
        st = json.load(f)
    step, w = st["step"], st["w"]
    print("resumed from step %d" % step, flush=True)
while step < steps:
    step += 1
    w = [x * 0.999 + math.sin(step * (i + 1)) * 1e-3 for i, x in enumerate(w)]
    time.sleep(0.02)
    first = spotrun.attempt() == 0
    if step == hang_at and (mode in ("sleep", "spin") and first or mode == "always-sleep"):
        print("hanging at step %d" % step, flush=True)
        hang_here_spinning() if mode == "spin" else hang_here_sleeping()
    due = spotrun.checkpoint_due()
    if due or step % 20 == 0:
        if due and mode == "slowsave":
            print("a slow save at step %d" % step, flush=True)
            time.sleep(4)
        with spotrun.saving("state.json") as p:
            with open(p, "w") as f:
                json.dump({"step": step, "w": w}, f)
        spotrun.commit(step)
with open(out, "w") as f:
    f.write(repr(w) + "\n")
PY

# stalled.py LOG: prints the stalled events of an event log, one per line,
# as "since_ms timeout_ms" then each process "pid comm state cpu_ms", and
# the traceback.
cat >stalled.py <<\PY
import json, sys
for path in sys.argv[1:]:
    for line in open(path):
        e = json.loads(line)
        if e["event"] != "stalled":
            continue
        print("stalled since_ms=%d timeout_ms=%d" % (e["since_ms"], e["timeout_ms"]))
        for p in e["procs"]:
            assert set(p) >= {"pid", "comm", "state", "wchan", "cpu_ms"}, p
            print("proc %d %s %s %d" % (p["pid"], p["comm"], p["state"], p["cpu_ms"]))
        print(e.get("traceback", "(no traceback)"))
PY

test_expect_success 'uninterrupted reference run (outside spotrun)' '
    "$PY" stall.py none 120 ref.txt 2>/dev/null &&
    test -s ref.txt
'

test_expect_success 'a job asleep after its heartbeats is stalled, stopped and restarted' '
    timeout 120 "$SPOTRUN" run --run-id sleepy --stall-timeout 5s --backoff 10ms -- \
        "$PY" stall.py sleep 120 sleep.txt >sleep.log 2>&1 &&
    cat sleep.log &&
    grep "judged only after its first heartbeat" sleep.log &&
    grep "^hanging at step 30" sleep.log &&
    grep "no heartbeat for [0-9.]*s (--stall-timeout 5.0s): the job is stalled; stopping it" sleep.log &&
    grep -E "stopping it \(suspect: pid [0-9]+ \(python3\) state S(, wchan [^,]+)?, in hang_here_sleeping \(.*stall.py, line [0-9]+\); every process.s state and Python traceback: .spotrun show sleepy --events --attempt 0.\)$" sleep.log &&
    grep "restarting from the newest checkpoint (1)" sleep.log &&
    grep "^resumed from step 20$" sleep.log &&
    test "$(grep -c "^hanging" sleep.log)" -eq 1
'

test_expect_success 'the stalled event names the process, its state and the hanging function' '
    "$PY" stalled.py "$SPOTRUN_STORE"/sleepy/events/000000.jsonl >sleep.ev &&
    cat sleep.ev &&
    test "$(grep -c "^stalled " sleep.ev)" -eq 1 &&
    since=$(sed -n "s/^stalled since_ms=\([0-9]*\) timeout_ms=5000$/\1/p" sleep.ev) &&
    test "$since" -ge 5000 &&
    grep -E "^proc [0-9]+ python3 S [0-9]+$" sleep.ev &&
    grep "in hang_here_sleeping" sleep.ev &&
    ! grep "\"event\":\"stalled\"" "$SPOTRUN_STORE"/sleepy/events/000001.jsonl
'

test_expect_success 'show names the process the stall hung on: pid, state, wait channel, Python frame' '
    "$SPOTRUN" show sleepy >show.out &&
    cat show.out &&
    pid=$(sed -n "s/^proc \([0-9]*\) python3 S [0-9]*$/\1/p" sleep.ev) &&
    grep -E "^ +stalled on pid $pid \(python3\) state S(, wchan [^,]+)?, in hang_here_sleeping \(.*stall.py, line [0-9]+\)$" show.out &&
    test "$(grep -c "stalled on" show.out)" -eq 1
'

test_expect_success 'show --events prints an attempt readably, the traceback as lines' '
    "$SPOTRUN" show sleepy --events --attempt 0 >ev0.out &&
    cat ev0.out &&
    grep "^attempt 0, events/000000.jsonl$" ev0.out &&
    grep -E "^  [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} +\+[0-9]+\.[0-9]{3}s  start +host=" ev0.out &&
    grep -E "^  [0-9:.]+ +\+[0-9.]+s  stalled +since_ms=[0-9]+ timeout_ms=5000 procs=\[\{\"pid\":" ev0.out &&
    grep "traceback=(below)" ev0.out &&
    grep -E "^ +File .*stall.py\", line [0-9]+ in hang_here_sleeping$" ev0.out &&
    "$SPOTRUN" show sleepy --events >last.out &&
    grep "^attempt 1, events/000001.jsonl$" last.out &&
    ! grep " stalled " last.out &&
    expect_code 66 "$SPOTRUN" show sleepy --events --attempt 9 &&
    expect_code 64 "$SPOTRUN" show sleepy --events --attempt x &&
    expect_code 64 "$SPOTRUN" show sleepy --attempt 0
'

test_expect_success 'the restarted run ends with the weights of the uninterrupted one' '
    cmp ref.txt sleep.txt
'

test_expect_success 'a job spinning in Python after its heartbeats: stalled, running, using CPU' '
    timeout 120 "$SPOTRUN" run --run-id spinny --stall-timeout 5s --backoff 10ms -- \
        "$PY" stall.py spin 120 spin.txt >spin.log 2>&1 &&
    cat spin.log &&
    grep "the job is stalled; stopping it" spin.log &&
    "$PY" stalled.py "$SPOTRUN_STORE"/spinny/events/000000.jsonl >spin.ev &&
    cat spin.ev &&
    grep "in hang_here_spinning" spin.ev &&
    cpu=$(sed -n "s/^proc [0-9]* python3 R \([0-9]*\)$/\1/p" spin.ev) &&
    test "$cpu" -ge 100 &&
    cmp ref.txt spin.txt
'

test_expect_success 'a job that never heartbeats is never judged, and the start says so' '
    "$SPOTRUN" run --run-id quiet --stall-timeout 2s -- sleep 8 >quiet.log 2>&1 &&
    cat quiet.log &&
    grep "spotrun: --stall-timeout 2.0s: the job is judged only after its first heartbeat (checkpoint_due(), commit(), metric()" quiet.log &&
    grep "the job finished successfully" quiet.log &&
    ! grep "stalled" quiet.log &&
    ! grep -h "\"event\":\"stalled\"" "$SPOTRUN_STORE"/quiet/events/*.jsonl
'

test_expect_success 'time spent answering a checkpoint request is not a stall' '
    "$SPOTRUN" run --run-id slow --stall-timeout 2s --every 1s --max-restarts 0 -- \
        "$PY" stall.py slowsave 120 slow.txt >slow.log 2>&1 &&
    cat slow.log &&
    grep "^a slow save at step" slow.log &&
    ! grep "stalled" slow.log &&
    cmp ref.txt slow.txt
'

test_expect_success 'a request the hung job never hears (--every 1s) does not shield it' '
    timeout 120 "$SPOTRUN" run --run-id deaf --stall-timeout 3s --every 1s --backoff 10ms -- \
        "$PY" stall.py sleep 120 deaf.txt >deaf.log 2>&1 &&
    cat deaf.log &&
    grep "^hanging at step 30" deaf.log &&
    grep "the job is stalled; stopping it" deaf.log &&
    cmp ref.txt deaf.txt
'

test_expect_success 'stalls count toward --max-restarts: a job that always hangs stops' '
    code=0
    timeout 120 "$SPOTRUN" run --run-id always --stall-timeout 2s --max-restarts 1 \
        --backoff 10ms -- "$PY" stall.py always-sleep 120 always.txt >always.log 2>&1 || code=$?
    cat always.log
    test "$code" -eq 143 &&
    test "$(grep -c "the job is stalled; stopping it" always.log)" -eq 2 &&
    grep "restarting from the newest checkpoint (1) in 10ms (restart 1 of 1)" always.log &&
    grep "not restarting: run always stalled 2 time(s), --max-restarts is 1" always.log &&
    ! test -e always.txt
'

test_expect_success 'a rerun counts the run'"'"'s earlier stalls: its next stall ends it' '
    code=0
    timeout 120 "$SPOTRUN" run --run-id always --stall-timeout 2s --max-restarts 1 \
        --backoff 10ms -- "$PY" stall.py always-sleep 120 always.txt >again.log 2>&1 || code=$?
    cat again.log
    test "$code" -eq 143 &&
    grep "run always stalled 2 time(s) before (--max-restarts 1 counts them)" again.log &&
    test "$(grep -c "the job is stalled; stopping it" again.log)" -eq 1 &&
    grep "not restarting: run always stalled 3 time(s) (counting its earlier wrappers)" again.log
'

# beat.c: the C API. 50 spotrun_checkpoint_requested() 10 ms apart (looked
# up at run time: the shim is preloaded), then, on the first attempt, a
# hang in pause(); then it exits 0.
cat >beat.c <<\C
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void)
{
    int (*requested)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "spotrun_checkpoint_requested");
    if (!requested)
        return 2;
    for (int i = 0; i < 50; i++) {
        requested();
        usleep(10000);
    }
    const char *a = getenv("SPOTRUN_ATTEMPT");
    if (a && atoi(a) == 0) {
        printf("c job hangs\n");
        fflush(stdout);
        pause();
    }
    return 0;
}
C

test_expect_success 'C: spotrun_checkpoint_requested() is a heartbeat; a C job that hangs is stalled' '
    cc -o beat beat.c -ldl &&
    timeout 120 "$SPOTRUN" run --run-id cjob --stall-timeout 2s --backoff 10ms -- ./beat >c.log 2>&1 &&
    cat c.log &&
    grep "^c job hangs" c.log &&
    grep "the job is stalled; stopping it (suspect: pid [0-9]* ([^)]*) state .*; every process.s state: .spotrun show cjob --events --attempt 0.)$" c.log &&
    "$PY" stalled.py "$SPOTRUN_STORE"/cjob/events/000000.jsonl >c.ev &&
    cpu=$(sed -n "s/^proc [0-9]* beat S \([0-9]*\)$/\1/p" c.ev) &&
    test "$cpu" -lt 200 &&
    grep "^(no traceback)" c.ev
'

test_expect_success 'a shell job heartbeats with spotrun metric; a hang after it is stalled' '
    code=0
    timeout 120 "$SPOTRUN" run --run-id shell --stall-timeout 2s --max-restarts 0 -- sh -c \
        "for i in 1 2 3; do \"\$SPOTRUN_BIN\" metric loss=\$i || exit 9; done; echo sh hangs; sleep 600" \
        >sh.log 2>&1 || code=$?
    cat sh.log
    test "$code" -eq 143 &&
    grep "^sh hangs" sh.log &&
    grep "the job is stalled; stopping it" sh.log &&
    grep "not restarting: run shell stalled 1 time(s), --max-restarts is 0" sh.log
'

# 1000 steps of 20 ms (a checkpoint every 20): the wrapper looks once a second and
# learns no gap across a commit's staging, so a slow (ASan, loaded) wrapper
# needs the length to see its 5 gaps.
test_expect_success 'auto: judged only once 5 gaps between heartbeats were seen, at the 10 min floor' '
    timeout 120 "$SPOTRUN" run --run-id learn --stall-timeout auto --max-restarts 0 -- \
        "$PY" stall.py none 1000 learn.txt >learn.log 2>&1 &&
    cat learn.log &&
    grep "spotrun: --stall-timeout auto: the job is judged only after its first heartbeat (checkpoint_due(), commit(), metric(); spotrun_checkpoint_requested() in C) and 5 gaps between heartbeats, at 5 x the longest gap seen and at least 10 min" learn.log &&
    grep "spotrun: --stall-timeout auto: 10m00s (longest gap between heartbeats [0-9.]*s): the job is judged from now on" learn.log &&
    test "$(grep -c "judged from now on" learn.log)" -eq 1
'

test_expect_success 'bad values are refused, naming the option and what it takes' '
    expect_code 64 "$SPOTRUN" run --stall-timeout soon -- true 2>bad.err &&
    grep "spotrun run: invalid value \"soon\" for --stall-timeout (a duration of at least 1s like 90s or 10m, auto or off)" bad.err &&
    SPOTRUN_STALL_TIMEOUT=10ms expect_code 64 "$SPOTRUN" run -- true 2>bad2.err &&
    grep "invalid SPOTRUN_STALL_TIMEOUT=\"10ms\"" bad2.err
'

test_done
