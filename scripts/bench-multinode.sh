#!/usr/bin/env bash
# bench-multinode.sh - what the multi-node protocol costs (docs/multinode.md).
#
#   scripts/bench-multinode.sh [BUILD_DIR]     (default: build; TRIALS=20)
#
# Every "node" is its own wrapper, work dir and HOME, on this machine.
# 1. notice on node 0 -> checkpoint request on the last of 3 nodes: from the
#    `spotrun notify` to node 0 to the last node's "request" event, p50/p99
#    over TRIALS runs (goal: p99 <= --peer-poll + 0.2 s; --peer-poll 1s).
# 2. last part durable -> set manifest visible (file store: the newest part
#    record's mtime to the manifest's), p50/p99 over the same runs (goal:
#    p99 <= --peer-poll + 0.2 s).
# 3. a 4-node commit of 4 x 256 MiB parts on the local S3 test server
#    (s3rver) vs 4 single-node runs committing the same data at once: wall
#    time of each, and the multi-node overhead (goal <= 10 %).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/bench-data.sh"
bench_work bench-multinode "${1:-}"
trials=${TRIALS:-20}
export SPOTRUN_NOTICE=none SPOTRUN_PRELOAD=$build/preload/libspotrun.so

now_ms() { date +%s%3N; }
wait_line() { while ! grep -q -- "$2" "$1" 2>/dev/null; do sleep 0.01; done; }

# A node's job: commits step 1 when asked, then idles (BENCH_DATA: a file
# copied into the part first; ONESHOT: commit at once and exit).
cat >job.sh <<'JOB'
#!/bin/bash
[ -n "${BENCH_DATA:-}" ] && cp "$BENCH_DATA" "$SPOTRUN_CKPT_DIR/part.bin"
if [ -n "${ONESHOT:-}" ]; then exec "$SPOTRUN_BIN" commit --step 1; fi
want=0
trap 'want=1' USR1
echo ready
while [ $want = 0 ]; do sleep 0.01; done
echo x >"$SPOTRUN_CKPT_DIR/state"
"$SPOTRUN_BIN" commit --step 1
while :; do sleep 0.05; done
JOB
chmod +x job.sh

# start_node RUN N R: node R of N in the background (pids in $pids).
start_node() {
    mkdir -p "home-$1-$3"
    HOME=$work/home-$1-$3 SPOTRUN_WORK_DIR=$work/work-$1-$3 \
        "$spotrun" run --run-id "$1" --nodes "$2" --node-rank "$3" --peer-poll 1s -- ./job.sh \
        >"$1-$3.log" 2>&1 &
    pids="$pids $!"
}

# event_ms STORE RUN RANK EVENT: unix_ms of EVENT in node RANK's newest log.
event_ms() { bench_event_ms "$1/$2/events" "-n$3.jsonl" "$4"; }

pct() {
    python3 -c '
import sys
v = sorted(int(x) for x in sys.argv[2:])
p = float(sys.argv[1])
print(v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))])' "$@"
}

echo "== 1, 2: a notice to node 0 of 3, file store ($trials trials, --peer-poll 1s)"
export SPOTRUN_STORE=$work/store
fanout=() settle=()
for i in $(seq "$trials"); do
    run=fan-$i pids=
    for r in 0 1 2; do start_node "$run" 3 $r; done
    for r in 0 1 2; do wait_line "$run-$r.log" ready; done
    t0=$(now_ms)
    HOME=$work/home-$run-0 SPOTRUN_WORK_DIR=$work/work-$run-0 "$spotrun" notify -q --run-id "$run" \
        --deadline 30s
    for p in $pids; do wait "$p" || true; done
    fanout+=($(($(event_ms "$SPOTRUN_STORE" "$run" 2 request) - t0)))
    dir=$(ls -d "$SPOTRUN_STORE/$run"/ckpt/*/ | tail -n 1)
    settle+=($(python3 -c '
import glob, os, sys
d = sys.argv[1]
parts = max(os.stat(p).st_mtime for p in glob.glob(d + "part-*.json"))
print(int((os.stat(d + "MANIFEST.json").st_mtime - parts) * 1000))' "$dir"))
done
printf 'notice on node 0 -> request on node 2: p50 %5d ms  p99 %5d ms  (goal p99 <= 1200 ms)\n' \
    "$(pct 50 "${fanout[@]}")" "$(pct 99 "${fanout[@]}")"
printf 'last part durable -> manifest:       p50 %5d ms  p99 %5d ms  (goal p99 <= 1200 ms)\n' \
    "$(pct 50 "${settle[@]}")" "$(pct 99 "${settle[@]}")"

echo
echo "== 3: 4 nodes x 256 MiB on the local S3 server vs 4 single-node commits"
[ -d "$root/tests/s3/node_modules/@20minutes/s3rver" ] ||
    { echo "skipped: the S3 test server is not installed (scripts/test.sh installs it)"; exit 0; }
. "$root/scripts/lib-bench-s3.sh"
bench_s3_start "$work"
python3 - <<'PY'
import array, random
random.seed(7)
a = array.array("f", (random.gauss(0.0, 0.02) for _ in range(4 << 20)))  # 16 MiB
with open("part.bin", "wb") as f:
    for _ in range(16):
        f.write(a.tobytes())  # 256 MiB, tensor-like
PY
export BENCH_DATA=$work/part.bin ONESHOT=1
# Alternating rounds (ROUNDS, default 2), the best of each: the machine is shared.
single=0 multi=0
for round in $(seq "${ROUNDS:-2}"); do
    t0=$(now_ms) pids=
    for r in 0 1 2 3; do
        mkdir -p "home-single-$r"
        HOME=$work/home-single-$r SPOTRUN_WORK_DIR=$work/work-single-$r \
            "$spotrun" run -q --run-id "single$round-$r" --max-restarts 0 -- ./job.sh \
            >"single-$r.log" 2>&1 &
        pids="$pids $!"
    done
    for p in $pids; do wait "$p"; done
    t=$(($(now_ms) - t0))
    [ "$single" -eq 0 ] || [ "$t" -lt "$single" ] && single=$t
    t0=$(now_ms) pids=
    for r in 0 1 2 3; do start_node "multi$round" 4 $r; done
    for p in $pids; do wait "$p"; done
    t=$(($(now_ms) - t0))
    [ "$multi" -eq 0 ] || [ "$t" -lt "$multi" ] && multi=$t
    grep -h "every node's part" multi$round-*.log | head -n 1
done
python3 -c 'import sys; s, m = int(sys.argv[1]), int(sys.argv[2]); print("4 single-node runs %6d ms, one 4-node run %6d ms: overhead %+.1f %% (goal <= 10 %%)" % (s, m, (m - s) * 100.0 / s))' "$single" "$multi"
