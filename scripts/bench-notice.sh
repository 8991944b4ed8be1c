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
# 3. request-to-commit of the PyTorch example (examples/pytorch/train.py
#    --save-every 0: it saves only when asked), over TORCH_TRIALS runs
#    (default 10) each, started directly and behind a launcher that starts it
#    with subprocess (as torchrun does): from the notice (`spotrun notify`)
#    to the trainer printing "checkpoint requested" (its stdout, timestamped
#    as it arrives) and to the commit being staged ("staged" event), p50 and
#    p99. Skipped when /usr/bin/python3 cannot import torch.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/bench-data.sh"
bench_work bench-notice "${1:-}"
trials=${TRIALS:-30}
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
event_ms() { bench_event_ms "$SPOTRUN_STORE/$1/events" "" "$2"; }

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

echo
echo "== request-to-commit of the PyTorch example (notice -> request seen -> staged)"
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
    echo "skipped: /usr/bin/python3 cannot import torch (apt-get install python3-torch)"
    exit 0
fi
unset SPOTRUN_NO_PRELOAD # the shim carries the request across the trainer's subprocesses
torch_trials=${TORCH_TRIALS:-10}
cat >launcher.py <<'PY'
import subprocess, sys
sys.exit(subprocess.Popen(sys.argv[1:]).wait())
PY
# Prefixes each line with its arrival time (unix ms).
cat >stamp.py <<'PY'
import sys, time
for line in sys.stdin:
    sys.stdout.write("%d %s" % (time.time() * 1000, line)); sys.stdout.flush()
PY
: >"$work/r2c"
for mode in direct launcher; do
    for i in $(seq "$torch_trials"); do
        run=torch-$mode-$i
        pre=()
        [ "$mode" = launcher ] && pre=(/usr/bin/python3 launcher.py)
        "$spotrun" run --notice none --run-id "$run" -- "${pre[@]}" /usr/bin/python3 \
            "$root/examples/pytorch/train.py" --steps 100000 --save-every 0 --pace 0.02 2>&1 |
            python3 -u stamp.py >"$run.log" &
        pid=$!
        wait_line "$run.log" "step 10 "
        "$spotrun" notify --run-id "$run" --deadline 30s >/dev/null 2>&1
        wait $pid || true
        notice=$(event_ms "$run" notice)
        staged=$(event_ms "$run" staged)
        seen=$(awk '/checkpoint requested/ {print $1; exit}' "$run.log")
        echo "$mode $((seen - notice)) $((staged - notice))" >>"$work/r2c"
    done
done
python3 - "$work/r2c" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    mode, seen, staged = line.split()
    rows.setdefault(mode, ([], []))
    rows[mode][0].append(int(seen)); rows[mode][1].append(int(staged))
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
print("%-9s %22s %22s" % ("job", "notice -> seen p50/p99", "notice -> staged p50/p99"))
for mode, (seen, staged) in rows.items():
    print("%-9s %10d / %6d ms %10d / %6d ms" % (mode, pct(seen, 50), pct(seen, 99), pct(staged, 50), pct(staged, 99)))
PY
