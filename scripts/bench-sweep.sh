#!/usr/bin/env bash
# bench-sweep.sh - what a sweep costs on top of its trials (docs/sweeps.md).
#
#   scripts/bench-sweep.sh [BUILD_DIR]     (default: build; TRIALS=200 WORKERS=4 SHOW=1000)
#
# On the local S3 test server (s3rver with conditional writes), on loopback:
# 1. per-trial overhead of `spotrun sweep work` (claim + start + done) on a
#    trivial job (`true`): TRIALS trials by WORKERS workers, each its own
#    HOME and work dir; worker-seconds per trial (goal <= 0.5 s), against
#    the same trials as WORKERS shell loops of plain `spotrun run` (what a
#    user scripts by hand: no claims, no end marks; goal <= 1.5x) and of
#    the bare job; the wrapper starts lost to another worker (goal <= 2%);
#    the requests each made per trial (the server's log), and where one
#    trial's time goes (BREAKDOWN=20 trials by one worker, and by one loop
#    of plain runs, with their JSON debug logs: the worker's claim, the
#    wrapper's start-up, its work before the job, the job, its work after).
# 2. `spotrun sweep show` on a sweep of SHOW trials, every one of them run:
#    the first show (every trial from its logs; it writes the sweep's view
#    snapshot, docs/store.md), a repeated one (goal < 1 s, at most ~10
#    requests), and one after CHANGED (10) trials' summaries were rewritten (each
#    read again: its listing and its log), in seconds and in requests as the
#    server counts them, against `aws s3 ls --recursive` of the same
#    sweep's runs (the listing a user would script to see the same states).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/bench-data.sh"
bench_work bench-sweep "${1:-}" s3
trials=${TRIALS:-200} workers=${WORKERS:-4} show=${SHOW:-1000} breakdown=${BREAKDOWN:-20}
export SPOTRUN_NOTICE=none SPOTRUN_PRELOAD=$build/preload/libspotrun.so SPOTRUN_QUIET=1

. "$root/scripts/lib-bench-s3.sh"
bench_s3_start "$work"

now_ms() { date +%s%3N; }
per_trial() { python3 -c 'import sys; print("%.3f" % (int(sys.argv[1]) * int(sys.argv[2]) / 1000.0 / int(sys.argv[3])))' "$@"; }

echo "== 1: $trials trivial trials, $workers workers, local S3 server"
"$spotrun" sweep init bench --param k=0..$((trials - 1)) -- true >/dev/null
req0=$(wc -l <"$BENCH_S3_REQUESTS")
t0=$(now_ms)
for w in $(seq 1 "$workers"); do
    HOME=$work/h$w SPOTRUN_WORK_DIR=$work/w$w "$spotrun" sweep work bench --poll 200ms >"worker$w.log" 2>&1 &
    sweep_pids="${sweep_pids:-} $!"
done
wait $sweep_pids
sweep_ms=$(($(now_ms) - t0))
req1=$(wc -l <"$BENCH_S3_REQUESTS")

# The same trials as plain runs, one shell loop per worker.
t0=$(now_ms)
for w in $(seq 1 "$workers"); do
    (for k in $(seq "$w" "$workers" "$trials"); do
        HOME=$work/p$w SPOTRUN_WORK_DIR=$work/pw$w "$spotrun" run --run-id "plain-$k" -- true
    done) >"plain$w.log" 2>&1 &
    plain_pids="${plain_pids:-} $!"
done
wait $plain_pids
plain_ms=$(($(now_ms) - t0))
req2=$(wc -l <"$BENCH_S3_REQUESTS")

t0=$(now_ms)
for w in $(seq 1 "$workers"); do
    (for k in $(seq "$w" "$workers" "$trials"); do true; done) &
    bare_pids="${bare_pids:-} $!"
done
wait $bare_pids
bare_ms=$(($(now_ms) - t0))

printf 'sweep work:        %6d ms wall, %s worker-s per trial (goal <= 0.5)\n' "$sweep_ms" \
    "$(per_trial "$sweep_ms" "$workers" "$trials")"
printf 'plain spotrun run: %6d ms wall, %s worker-s per trial\n' "$plain_ms" \
    "$(per_trial "$plain_ms" "$workers" "$trials")"
printf 'bare job:          %6d ms wall, %s worker-s per trial\n' "$bare_ms" \
    "$(per_trial "$bare_ms" "$workers" "$trials")"
python3 -c 'import sys; s, p = int(sys.argv[1]), int(sys.argv[2]); print("sweep work / plain runs: %.2fx (goal <= 1.5x)" % (s / p))' \
    "$sweep_ms" "$plain_ms"
per_req() { python3 -c 'import sys; print("%.1f" % (int(sys.argv[1]) / int(sys.argv[2])))' "$@"; }
echo "requests per trial: sweep work $(per_req $((req1 - req0)) "$trials"), plain runs $(per_req $((req2 - req1)) "$trials")"
# a wrapper that lost its trial's lease to another worker's (exit 73), or
# found its trial done by another, is a start-up spent for nothing: part of
# the tax, counted against the starts
lost=$(cat worker*.log | grep -c 'is owned by' || true)
dupe=$(cat worker*.log | grep -c 'is already done' || true)
python3 -c 'import sys; t, l, d = map(int, sys.argv[1:]); print("sweep work: %d of %d wrapper starts (%.1f%%) lost to another worker (%d lost the lease, %d found the trial done; goal <= 2%%)" % (l + d, t + l + d, 100.0 * (l + d) / (t + l + d), l, d))' \
    "$trials" "$lost" "$dupe"

# Where one trial's time goes: BREAKDOWN trials by one worker, then as one
# loop of plain runs, both with JSON debug logs (times to the ms); the
# loop notes when each wrapper starts and exits ($EPOCHREALTIME, no fork).
if [ "$breakdown" -gt 0 ]; then
    "$spotrun" sweep init tax --param k=0..$((breakdown - 1)) -- true >/dev/null
    HOME=$work/th SPOTRUN_WORK_DIR=$work/tw SPOTRUN_QUIET='' SPOTRUN_VERBOSE=1 SPOTRUN_LOG_FORMAT=json \
        "$spotrun" sweep work tax --poll 200ms >tax.log 2>&1
    for k in $(seq 1 "$breakdown"); do
        echo "{\"spawn\":$EPOCHREALTIME}" >&2
        HOME=$work/tp SPOTRUN_WORK_DIR=$work/tpw SPOTRUN_QUIET='' SPOTRUN_VERBOSE=1 SPOTRUN_LOG_FORMAT=json \
            "$spotrun" run --run-id "tax-plain-$k" -- true
        echo "{\"exit\":$EPOCHREALTIME}" >&2
    done 2>taxplain.log
    python3 - tax.log taxplain.log <<'PY'
import datetime, json, re, sys
# (pattern of a log line, the phase mark it is): the worker's own lines,
# then the wrapper's; a plain loop notes spawn and exit itself.
MARKS = [(r"wrapper pid \d+ started", "spawn"), (r"^run \S+, store ", "store"),
         (r"attempt \d+: started ", "job"), (r"the job finished successfully", "done"),
         (r"wrapper pid \d+ exited", "exit"), (r"working with \d+ slot", "ready")]
def trials(path):
    out, cur, last = [], {}, None
    for line in open(path):
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if "spawn" in o or "exit" in o:
            mark, t = ("spawn", o["spawn"]) if "spawn" in o else ("exit", o["exit"])
        else:
            t = datetime.datetime.strptime(o["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                tzinfo=datetime.timezone.utc).timestamp()
            mark = next((m for p, m in MARKS if re.search(p, o.get("msg", ""))), None)
        if mark == "ready":
            last = t
        elif mark == "spawn":
            cur = {"spawn": t, "prev": last}
        elif mark and cur:
            cur.setdefault(mark, t)
            if mark == "exit":
                out.append(cur)
                last, cur = t, {}
    return [c for c in out if all(k in c for k in ("spawn", "store", "job", "done", "exit"))]
cols = [("claim", "prev", "spawn"), ("start-up", "spawn", "store"), ("before job", "store", "job"),
        ("job", "job", "done"), ("after job", "done", "exit")]
print("where a trial's time goes, ms (mean; one worker, one loop of plain runs):")
print("%-12s" % "" + "".join("%12s" % c[0] for c in cols) + "%12s" % "total")
for name, path in (("sweep work", sys.argv[1]), ("plain run", sys.argv[2])):
    ts = trials(path)
    mean = lambda a, b: sum(1000 * (c[b] - c[a]) for c in ts if c.get(a)) / max(1, sum(1 for c in ts if c.get(a)))
    v = [mean(a, b) for _, a, b in cols]
    print("%-12s" % name + "".join("%12.0f" % x for x in v) + "%12.0f" % sum(v) + "   (%d trials)" % len(ts))
print("(claim: a plain loop's is the shell's, from one wrapper's exit to the next's start)")
PY
fi

echo "== 2: sweep show on $show trials, every one run (local S3 server)"
changed=${CHANGED:-10}
"$spotrun" sweep init big --param k=0..$((show - 1)) -- sh -c 'exec "$SPOTRUN_BIN" metric loss=0.{k}' >/dev/null
for w in $(seq 1 "$workers"); do
    HOME=$work/b$w SPOTRUN_WORK_DIR=$work/bw$w "$spotrun" sweep work big --poll 200ms >"big$w.log" 2>&1 &
    big_pids="${big_pids:-} $!"
done
wait $big_pids
t0=$(now_ms)
first_req=$(bench_requests "$spotrun" sweep show big) # every trial from its logs
first_ms=$(($(now_ms) - t0))
best=
for i in 1 2 3; do
    t0=$(now_ms)
    "$spotrun" sweep show big >show.out 2>show.err || { cat show.err; exit 1; }
    ms=$(($(now_ms) - t0))
    [ -z "$best" ] || [ "$ms" -lt "$best" ] && best=$ms
done
rm -rf "$work/s3data/bkt/bench/sweeps/big/view" # no snapshot: from the logs again
"$spotrun" sweep show big >logs.out
cmp -s logs.out show.out || echo "warning: the show from the snapshot differs from the one from the logs"
t0=$(now_ms)
/usr/bin/aws --endpoint-url "$AWS_ENDPOINT_URL" s3 ls --recursive s3://bkt/bench/ >ls.out 2>&1 || true
ls_ms=$(($(now_ms) - t0))
printf 'first sweep show (%d trials, from their logs): %d ms, %s\n' "$show" "$first_ms" "$first_req"
printf 'repeated sweep show: %d ms, best of 3 (goal < 1000 ms); aws s3 ls --recursive: %d ms (%d objects)\n' \
    "$best" "$ls_ms" "$(wc -l <ls.out)"
echo "repeated sweep show: $(bench_requests "$spotrun" sweep show big) (goal <= ~10)"
# CHANGED trials' summaries rewritten: new ETags (the server's .md5 beside
# each), as their wrappers' rewrites give them.
for md5 in $(ls "$work/s3data/bkt/bench/summaries/big-"*.json._S3rver_object.md5 | head -n "$changed"); do
    echo 0123456789abcdef0123456789abcdef >"$md5"
done
echo "after $changed trials changed: $(bench_requests "$spotrun" sweep show big) (goal <= ~10 + $changed; each costs its listing and its log: docs/store.md)"
head -n 3 show.out
