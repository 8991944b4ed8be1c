#!/usr/bin/env bash
# bench-stall.sh - what --stall-timeout costs and how fast it acts.
#
#   heartbeat: Python checkpoint_due() per call with the heartbeat (the
#              page's progress and progress_ms written) and without it (the
#              poll alone, as before the heartbeat), and the C API's
#              spotrun_checkpoint_requested() per call, on a real job page;
#   latency:   a job heartbeats every 10 ms, then hangs; from its last
#              heartbeat to the stalled event (the timeout plus the poll),
#              to its exit (TERM), and to the restarted attempt's start.
#
# Environment:
#   BUILD    build directory holding runtime/spotrun and preload/ (default: build)
#   TIMEOUT  --stall-timeout of the latency run (default: 2s)
#   CALLS    calls per heartbeat measurement (default: 2000000)
set -euo pipefail

BUILD=${BUILD:-build}
TIMEOUT=${TIMEOUT:-2s}
CALLS=${CALLS:-2000000}
root=$(cd "$(dirname "$0")/.." && pwd)
SPOTRUN=${SPOTRUN:-$BUILD/runtime/spotrun}
LIB=$BUILD/preload/libspotrun.so
PY=/usr/bin/python3

die() { echo "bench-stall: $*" >&2; exit 1; }
[ -x "$SPOTRUN" ] || die "no spotrun binary at $SPOTRUN (build first, or set BUILD)"
[ -f "$LIB" ] || die "no $LIB (build first, or set BUILD)"
command -v cc >/dev/null || die "cc is required"
LIB=$(cd "$(dirname "$LIB")" && pwd)/libspotrun.so
SPOTRUN=$(cd "$(dirname "$SPOTRUN")" && pwd)/spotrun

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export PYTHONPATH=$root/python PYTHONDONTWRITEBYTECODE=1

# A job page as the wrapper makes it (preload/job_page.h).
"$PY" - "$dir/job.page" <<\PY
import struct, sys
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("=QII", 0x0031424F4A525053, 1, 4096).ljust(4096, b"\0"))
PY

echo "== heartbeat cost (per call, $CALLS calls, best of 3)"
SPOTRUN_JOB_PAGE=$dir/job.page SPOTRUN_CONTROL=$dir/none.sock "$PY" - "$CALLS" <<\PY
import sys, timeit
import spotrun
from spotrun import _request
n = int(sys.argv[1])
spotrun.checkpoint_due()
with_beat = min(timeit.repeat(spotrun.checkpoint_due, number=n, repeat=3)) / n
beat = _request._beat
_request._beat = None  # the poll alone: what checkpoint_due() did before the heartbeat
without = min(timeit.repeat(spotrun.checkpoint_due, number=n, repeat=3)) / n
_request._beat = beat
print("python checkpoint_due() with heartbeat:    %6.1f ns" % (with_beat * 1e9))
print("python checkpoint_due() without heartbeat: %6.1f ns" % (without * 1e9))
print("python heartbeat share:                    %6.1f ns" % ((with_beat - without) * 1e9))
PY

cat >"$dir/beat.c" <<\C
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int spotrun_checkpoint_requested(void);
int main(int argc, char **argv)
{
    const long n = atol(argv[1]);
    double best = 1e9;
    for (int r = 0; r < 3; r++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        int x = 0;
        for (long i = 0; i < n; i++)
            x += spotrun_checkpoint_requested();
        clock_gettime(CLOCK_MONOTONIC, &b);
        const double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n;
        if (ns < best)
            best = ns;
        if (x < 0)
            return 1;
    }
    printf("C spotrun_checkpoint_requested() (heartbeat included): %6.1f ns\n", best);
    return 0;
}
C
cc -O2 -o "$dir/beat" "$dir/beat.c" "$LIB" -Wl,-rpath,"$(dirname "$LIB")"
SPOTRUN_JOB_PAGE=$dir/job.page "$dir/beat" "$CALLS"

echo "== stall detection latency (--stall-timeout $TIMEOUT)"
cat >"$dir/hang.py" <<\PY
import time, spotrun
for _ in range(100):
    spotrun.checkpoint_due()
    time.sleep(0.01)
if spotrun.attempt() == 0:
    while True:
        time.sleep(3600)
PY
(cd "$dir" && SPOTRUN_STORE=$dir/store SPOTRUN_WORK_DIR=$dir/work SPOTRUN_PRELOAD=$LIB \
    timeout 120 "$SPOTRUN" run --run-id bench --stall-timeout "$TIMEOUT" --backoff 10ms -- \
    "$PY" hang.py >"$dir/run.log" 2>&1) || { cat "$dir/run.log"; die "the latency run failed"; }
cat "$dir"/store/bench/events/*.jsonl | "$PY" -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin]
st = next(e for e in ev if e["event"] == "stalled")
ex = next(e for e in ev if e["event"] == "exit" and e["attempt"] == st["attempt"])
rs = next(e for e in ev if e["event"] == "start" and e["attempt"] == st["attempt"] + 1)
print("timeout:                           %6d ms" % st["timeout_ms"])
print("last heartbeat -> stalled event:   %6d ms" % st["since_ms"])
print("stalled event -> job exited:       %6d ms" % (ex["unix_ms"] - st["unix_ms"]))
print("stalled event -> restarted:        %6d ms" % (rs["unix_ms"] - st["unix_ms"]))
'
