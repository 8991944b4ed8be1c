#!/usr/bin/env bash
# bench-notice.sh - how fast spotrun turns a preemption notice into action.
#
#   scripts/bench-notice.sh [BUILD_DIR]      (default: build; TRIALS=30)
#
# 1. notice-to-request latency per source, over TRIALS runs each: from the
#    moment the notice becomes visible (the test metadata server publishes
#    it at a scheduled instant, at a random phase of spotrun's polling; a
#    signal: the instant of kill) to spotrun's "request" event, the
#    checkpoint signal to the job. Targets: AWS/Azure p99 <= poll interval
#    + 100 ms (1 s polling); GCP long poll and signals p99 <= 50 ms.
# 2. notice-to-durable on the local file store for a 256 MiB and a 1 GiB
#    checkpoint (float32 noise, like tensors; already written by the job,
#    which commits at once on the request): from the notice to the
#    "persisted" event (stage + compress + durable write + manifest).
#    Target: 1 GiB well inside GCP's 30 s.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
trials=${TRIALS:-30}
spotrun=$build/runtime/spotrun
[ -x "$spotrun" ] || { echo "bench-notice: build first ($spotrun missing)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-notice.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
export SPOTRUN_STORE=$work/store SPOTRUN_WORK_DIR=$work/work SPOTRUN_NO_PRELOAD=1
export SPOTRUN_POLL_INTERVAL=${POLL_INTERVAL:-1s}

now_ms() { date +%s%3N; }

# A job that answers a checkpoint request by committing at once.
cat >job.sh <<'JOB'
#!/bin/bash
want=0
trap 'want=1' USR1
[ -n "${BENCH_DATA:-}" ] && cp "$BENCH_DATA" "$SPOTRUN_CKPT_DIR/model.bin"
echo ready
while :; do
    if [ "$want" = 1 ]; then
        want=0
        date +%s >"$SPOTRUN_CKPT_DIR/step"
        "$SPOTRUN_BIN" commit --step 1 || exit 1
    fi
    sleep 0.01
done
JOB
chmod +x job.sh

# event_ms RUN EVENT: unix_ms of the first EVENT in RUN's newest event log.
event_ms() {
    python3 - "$SPOTRUN_STORE/$1/events" "$2" <<'PY'
import json, os, sys
d, want = sys.argv[1], sys.argv[2]
for name in sorted(os.listdir(d))[-1:]:
    for line in open(os.path.join(d, name)):
        e = json.loads(line)
        if e.get("event") == want:
            print(e["unix_ms"]); sys.exit(0)
sys.exit(1)
PY
}

start_server() {
    rm -f port
    python3 "$root/tests/metadata/server.py" --cloud "$1" --port-file port >/dev/null 2>&1 &
    server=$!
    while [ ! -s port ]; do sleep 0.02; done
    url=http://127.0.0.1:$(cat port)
}

wait_line() { while ! grep -q -- "$2" "$1" 2>/dev/null; do sleep 0.01; done; }

latencies=$work/latencies
: >"$latencies"

bench_cloud() {
    local cloud=$1 i
    start_server "$cloud"
    for i in $(seq "$trials"); do
        curl -sf -X POST "$url/_control/clear" >/dev/null
        "$spotrun" run -q --run-id "$cloud-$i" --notice "$cloud" --aws-imds "$url" \
            --gcp-metadata "$url" --azure-metadata "$url" -- ./job.sh >run.log 2>&1 &
        local pid=$!
        wait_line run.log ready
        sleep 0.3 # the watcher has its token / long poll in place
        # Visible at a random phase of the polling.
        local at
        at=$(python3 -c 'import random, time; print("%.3f" % (time.time() + 0.2 + random.random()))')
        curl -sf -X POST "$url/_control/notice?in=30&at=$at&id=ev-$i" >/dev/null
        wait $pid || true
        local req
        req=$(event_ms "$cloud-$i" request)
        echo "$cloud $(python3 -c "print(int($req - $at * 1000))")" >>"$latencies"
    done
    kill $server
    wait $server 2>/dev/null || true
}

bench_signal() {
    local i
    for i in $(seq "$trials"); do
        "$spotrun" run -q --notice none --run-id "sig-$i" -- ./job.sh >run.log 2>&1 &
        local pid=$!
        wait_line run.log ready
        sleep 0.05
        local t
        t=$(now_ms)
        kill -TERM $pid
        wait $pid || true
        echo "signal $(($(event_ms "sig-$i" request) - t))" >>"$latencies"
    done
}

echo "== notice-to-request latency ($trials trials per source, poll interval $SPOTRUN_POLL_INTERVAL)"
for c in aws gcp azure; do bench_cloud $c; done
bench_signal
python3 - "$latencies" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    src, ms = line.split()
    rows.setdefault(src, []).append(int(ms))
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
print("%-8s %6s %6s %6s %6s  %s" % ("source", "p50", "p90", "p99", "max", "target p99"))
target = {"aws": "<= 1100 ms", "azure": "<= 1100 ms", "gcp": "<= 50 ms", "signal": "<= 50 ms"}
for src in ("aws", "gcp", "azure", "signal"):
    v = rows.get(src, [])
    if v:
        print("%-8s %4d ms %4d ms %4d ms %4d ms  %s" % (src, pct(v, 50), pct(v, 90), pct(v, 99), max(v), target[src]))
PY

echo
echo "== notice-to-durable on the local store (file://)"
python3 - <<'PY'
import array, random
random.seed(7)
a = array.array("f", (random.gauss(0.0, 0.02) for _ in range(4 << 20)))  # 16 MiB
open("noise16", "wb").write(a.tobytes())
PY
for size in 256 1024; do
    : >data-$size
    for _ in $(seq $((size / 16))); do cat noise16 >>data-$size; done
    BENCH_DATA=$work/data-$size "$spotrun" run --notice none --run-id "dur-$size" -- ./job.sh \
        >run-$size.log 2>&1 &
    pid=$!
    wait_line run-$size.log ready
    t0=$(now_ms)
    "$spotrun" notify --run-id "dur-$size" --deadline 30s
    wait $pid || true
    t1=$(now_ms)
    notice=$(event_ms "dur-$size" notice)
    durable=$(event_ms "dur-$size" persisted)
    staged=$(grep -o "staged: .*" run-$size.log | head -1)
    printf '%5d MiB: notice -> durable %5d ms, notice -> exit 75 %5d ms (%s)\n' "$size" \
        $((durable - notice)) $((t1 - t0)) "$staged"
    rm -f data-$size
    rm -rf "$SPOTRUN_STORE/dur-$size" "$SPOTRUN_WORK_DIR/dur-$size"
done
echo "target: 1 GiB durable well inside GCP's 30 s"
