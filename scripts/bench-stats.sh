#!/usr/bin/env bash
# bench-stats.sh - `spotrun stats --by team,week` at fleet scale (docs/cost.md),
# in seconds and in requests (docs/store.md, "summaries/").
#
#   scripts/bench-stats.sh [BUILD_DIR]     (default: build; RUNS=10000 CHANGED=10)
#
# STORE=DIR reads a store generated and folded before (a KEEP=1 run's
# store/, of RUNS runs) instead of generating one: at 100,000 runs the
# generation takes longer than the benchmark.
#
# RUNS synthetic runs (tests/e2e/genstore.py --synthetic: 1 to 4 attempts
# each, an event log per attempt), each folded into its
# summaries/<run>.json as its wrapper writes it (runtime/record/runsum.h;
# tests/tools/runsum_tool fold), in a file store and in a bucket of the
# local S3 test server (written into its data directory in its own layout,
# tests/s3/seed.py: uploading ~50,000 objects one PUT at a time would
# measure the upload, not stats). Times `spotrun stats --by team,week`
# (best of 3) on each, against the floor of any tool that must list the
# same keys: `find` of the file store and `aws s3 ls --recursive` of the
# bucket (and, for a repeated read, the listing of summaries/ alone); on
# S3 also the requests each read makes, as the server counts
# them (tests/s3/server.js, S3RVER_REQUEST_LOG): the first read (no
# snapshot yet: every key listed, every summary read, a snapshot written),
# a repeated one, and one after CHANGED runs were rewritten (their
# summaries/ ETags changed, as a wrapper's rewrite changes them).
# Goals (issue 36): file < 1 s; S3 < 5 s, a repeated read in at most ~20
# requests at 10,000 runs (~120 at 100,000), CHANGED runs at most ~CHANGED
# more (each costs a listing of the run and a GET: 2 a run, the floor of
# a summary believed only against its logs: docs/store.md).
# scripts/bench-runsum.sh times the summaries' loading alone. `spotrun plan`
# (the capacity plan) is timed and counted beside stats: it reads the same
# summaries and snapshot; so is the fleet page (report --fleet), which
# also lists sweeps/ (none here).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/bench-data.sh"
bench_work bench-stats "${1:-}" s3
runs=${RUNS:-10000} changed=${CHANGED:-10}
tool=$build/tests/runsum_tool
export SPOTRUN_QUIET=1

now_ms() { date +%s%3N; }
# best_of3 OUT CMD...: the fastest of three runs of CMD, in ms (stdout to OUT).
best_of3() {
    local out=$1 best= t0 ms
    shift
    for _ in 1 2 3; do
        t0=$(now_ms)
        "$@" >"$out"
        ms=$(($(now_ms) - t0))
        if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
    done
    echo "$best"
}
ratio() { python3 -c 'import sys; print("%.1fx" % (int(sys.argv[1]) / max(1, int(sys.argv[2]))))' "$@"; }

echo "== $runs synthetic runs"
t0=$(now_ms)
store=$work/store
if [ -n "${STORE:-}" ]; then
    store=$(cd "$STORE" && pwd)
else
    python3 "$root/tests/e2e/genstore.py" "$store" --synthetic "$runs" --summaries none
    "$tool" fold "$store"
fi
echo "generated in $(($(now_ms) - t0)) ms: $(find "$store" -type f | wc -l) objects"

echo "== file store"
file_ms=$(best_of3 file.out "$spotrun" stats --store "$store" --by team,week)
find_ms=$(best_of3 find.out find "$store" -type f)
head -n 3 file.out
printf 'stats --by team,week: %d ms (goal < 1000); find: %d ms; ratio %s\n' "$file_ms" "$find_ms" \
    "$(ratio "$file_ms" "$find_ms")"
# spotrun plan reads the same summaries (issue 43): its time beside stats'
plan_args=(--price-per-hour 2 --on-demand-price-per-hour 5 --reserved-price 0.8)
plan_ms=$(best_of3 plan.out "$spotrun" plan --store "$store" "${plan_args[@]}")
printf 'plan: %d ms; stats: %d ms; ratio %s (the same read, plus the sweep line)\n' "$plan_ms" \
    "$file_ms" "$(ratio "$plan_ms" "$file_ms")"
fleet_ms=$(best_of3 fleet.out "$spotrun" report --fleet -o "$work/fleet" --store "$store" "${plan_args[@]}")
printf 'report --fleet: %d ms (%d KiB page); stats: %d ms; ratio %s (the same read, stats 4 times, plan, a row per run)\n' \
    "$fleet_ms" "$(($(stat -c %s "$work/fleet/index.html") / 1024))" "$file_ms" "$(ratio "$fleet_ms" "$file_ms")"

echo "== local S3 server"
python3 "$root/tests/s3/seed.py" "$store" "$work/s3data/bkt/bench"
rm -f s3.log
S3RVER_REQUEST_LOG=$work/requests node --openssl-legacy-provider "$root/tests/s3/server.js" \
    "$work/s3data" bkt >s3.log 2>&1 &
until grep -qs '^port ' s3.log; do sleep 0.1; done
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
export AWS_ENDPOINT_URL=http://127.0.0.1:$(sed -n 's/^port //p' s3.log)
export AWS_EC2_METADATA_DISABLED=true AWS_SHARED_CREDENTIALS_FILE=$work/none AWS_CONFIG_FILE=$work/none
aws=/usr/bin/aws
[ -x "$aws" ] || aws=aws
# counted OUT CMD...: CMD's stdout to OUT; "N requests (K LIST, ...) in T ms" on stdout.
counted() {
    local out=$1 before t0 ms
    shift
    before=$(wc -l <"$work/requests" 2>/dev/null || echo 0)
    t0=$(now_ms)
    "$@" >"$out"
    ms=$(($(now_ms) - t0))
    tail -n +"$((before + 1))" "$work/requests" >"$work/last.req"
    printf '%d requests (%s) in %d ms' "$(wc -l <"$work/last.req")" \
        "$(cut -d' ' -f1 "$work/last.req" | sort | uniq -c | awk '{print $1 " " $2}' | paste -sd, - | sed 's/,/, /g')" "$ms"
}
goal=$((runs <= 10000 ? 20 : 20 + (runs - 10000) / 900))
echo "first read (no snapshot yet): $(counted s3.out "$spotrun" stats --store s3://bkt/bench --by team,week)"
echo "repeated read: $(counted s3.out "$spotrun" stats --store s3://bkt/bench --by team,week) (goal <= $goal requests)"
echo "plan, repeated read: $(counted plan-s3.out "$spotrun" plan --store s3://bkt/bench "${plan_args[@]}") (goal: stats' requests + a constant)"
echo "report --fleet, repeated read: $(counted fleet-s3.out "$spotrun" report --fleet -o "$work/fleet-s3" --store s3://bkt/bench "${plan_args[@]}") (goal: stats' requests + a constant: + the listing of sweeps/)"
s3_ms=$(best_of3 s3.out "$spotrun" stats --store s3://bkt/bench --by team,week)
ls_ms=$(best_of3 ls.out "$aws" --endpoint-url "$AWS_ENDPOINT_URL" s3 ls --recursive s3://bkt/bench/)
# the listing alone, by spotrun's own S3 client (no CLI start-up)
sum_ms=$(best_of3 sum.out sh -c '"$1" list s3://bkt/bench summaries/ 2>&1' sh "$tool")
head -n 3 s3.out
diff -q file.out s3.out >/dev/null || echo "warning: the S3 store's table differs from the file store's"
printf 'stats --by team,week: %d ms (goal < 5000); aws s3 ls --recursive: %d ms (%d keys); ratio %s\n' \
    "$s3_ms" "$ls_ms" "$(wc -l <ls.out)" "$(ratio "$s3_ms" "$ls_ms")"
printf 'the floor of a repeated read, the listing of summaries/ alone: %d ms (%s); ratio %s\n' \
    "$sum_ms" "$(sed -n 's/ listed.*//p' sum.out)" "$(ratio "$s3_ms" "$sum_ms")"
# CHANGED runs rewritten: their summaries/ objects get new ETags (the
# server's .md5 beside each), as a wrapper's rewrite gives them.
for md5 in $(ls "$work/s3data/bkt/bench/summaries/"*.json._S3rver_object.md5 | head -n "$changed"); do
    echo 0123456789abcdef0123456789abcdef >"$md5"
done
echo "after $changed runs changed: $(counted changed.out "$spotrun" stats --store s3://bkt/bench --by team,week) (goal <= $goal + $changed requests; the floor is $goal + $((2 * changed)): a changed run's listing and its summary, docs/store.md)"
diff -q file.out changed.out >/dev/null || echo "warning: the table after the changes differs from the file store's"
