#!/usr/bin/env bash
# A sweep worker records its own lifetime under the sweep
# (sweeps/<name>/workers/<host>-<pid>-<start>.json: start, keep-alive, end,
# host, price), so its time between trials (polling, claiming, restoring)
# is counted: `sweep show` prints the worker hours beside the trials', and
# how much of them was idle, with their cost. A worker killed with kill -9
# ends at its last keep-alive (SPOTRUN_KEEPALIVE_MS: 200ms here).
. "$(dirname "$0")/lib.sh"

export SPOTRUN_KEEPALIVE_MS=200

test_expect_success 'a worker runs a sweep of three trivial trials' '
    "$SPOTRUN" sweep init sw --param n=1..3 -- sh -c "sleep 0.2" &&
    SPOTRUN_PRICE_PER_HOUR=3600 "$SPOTRUN" sweep work sw --until-empty --poll 100ms \
        >work.log 2>&1 &&
    ls "$SPOTRUN_STORE"/sweeps/sw/workers/ >records &&
    test "$(wc -l <records)" = 1 &&
    grep -E "^$(hostname | tr -c "A-Za-z0-9._\n-" _)-[0-9]+-[0-9]+\.json$" records
'

test_expect_success 'sweep show: worker hours cover the trials, the rest is idle, priced' '
    "$SPOTRUN" sweep show sw >show.out &&
    cat show.out &&
    grep -E "^workers: +1 \([0-9.]+ worker-hours: [0-9.]+ running trials, [0-9.]+ idle\); cost \\\$[0-9.]+, idle \\\$[0-9.]+$" show.out &&
    "$SPOTRUN" sweep show sw --json >show.json &&
    json show.json "
w, t = d[\"workers\"], d[\"totals\"]
assert w[\"count\"] == 1 and w[\"open\"] == 0, w
assert w[\"hours\"] >= t[\"instance_hours\"] > 0, (w, t)
assert 0 < w[\"busy_hours\"] <= w[\"hours\"], w
assert abs(w[\"hours\"] - w[\"busy_hours\"] - w[\"idle_hours\"]) < 1e-9 and w[\"idle_hours\"] > 0, w
assert abs(w[\"cost\"] - w[\"hours\"] * 3600) < 1e-3 and abs(w[\"idle_cost\"] - w[\"idle_hours\"] * 3600) < 1e-3, w
"
'

test_expect_success 'stats: the worker hours and their idle part beside the runs' '
    "$SPOTRUN" stats >stats.out &&
    cat stats.out &&
    grep -E "^workers: +1 \([0-9.]+ worker-hours: [0-9.]+ running trials, [0-9.]+ idle\); cost \\\$[0-9.]+, idle \\\$[0-9.]+$" stats.out &&
    "$SPOTRUN" stats --json >stats.json &&
    json stats.json "
w, g = d[\"workers\"], d[\"groups\"][0]
assert w[\"count\"] == 1 and w[\"idle_hours\"] > 0, w
assert w[\"hours\"] >= g[\"instance_hours\"] > 0, (w, g)
assert abs(w[\"idle_cost\"] - w[\"idle_hours\"] * 3600) < 1e-3, w
" &&
    { "$SPOTRUN" stats --label team=x >label.out 2>&1 || :; } &&
    ! grep "^workers:" label.out
'

test_expect_success 'a record that is not one of this sweep is ignored, with a warning' '
    d="$SPOTRUN_STORE"/sweeps/sw/workers &&
    echo "{not json" >"$d/x-1-1.json" &&
    sed "s/\"sweep\":\"sw\"/\"sweep\":\"other\"/" "$d"/$(head -n 1 records) >"$d/y-2-2.json" &&
    printf "%s" "{\"format\":1,\"sweep\":\"sw\",\"host\":\"a\\u001b[31m\",\"pid\":3,\"start_ms\":1,\"alive_ms\":2,\"price_per_hour\":1,\"slots\":1,\"trials\":[]}" >"$d/z-3-3.json" &&
    "$SPOTRUN" sweep show sw --json >hostile.json 2>hostile.err &&
    test "$(grep -c "ignoring the sweep worker record" hostile.err)" = 3 &&
    json hostile.json "assert d[\"workers\"][\"count\"] == 1, d[\"workers\"]" &&
    rm "$d/x-1-1.json" "$d/y-2-2.json" "$d/z-3-3.json"
'

rec() { ls "$SPOTRUN_STORE"/sweeps/long/workers/*.json 2>/dev/null | sed -n 1p; }

test_expect_success 'a worker killed with kill -9 ends at its last keep-alive' '
    "$SPOTRUN" sweep init long --param n=1 -- sh -c "exec sleep 300" &&
    "$SPOTRUN" sweep work long --poll 100ms >long.log 2>&1 &
    pid=$! &&
    for _ in $(seq 600); do
        r=$(rec) && test -n "$r" &&
            "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d[\"alive_ms\"] - d[\"start_ms\"] < 1000)" "$r" &&
            break
        sleep 0.1
    done &&
    r=$(rec) &&
    kids=$(pgrep -P $pid || :) &&
    kill -9 $pid && { wait $pid || :; } &&
    for k in $kids; do pkill -9 -P "$k" || :; kill -9 "$k" || :; done &&
    cp "$r" killed.json &&
    json killed.json "assert \"end_ms\" not in d and d[\"trials\"] == [0], d" &&
    "$SPOTRUN" sweep show long --json >long.json &&
    "$PY" -c "
import json
rec, w = json.load(open(\"killed.json\")), json.load(open(\"long.json\"))[\"workers\"]
assert w[\"open\"] == 1, w
life = (rec[\"alive_ms\"] - rec[\"start_ms\"]) / 3600000
assert abs(w[\"hours\"] - life) < 1e-9 and life >= 1 / 3600, (w, life)
" &&
    cmp "$r" killed.json
'

test_done
