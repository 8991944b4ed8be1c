#!/usr/bin/env bash
# A wrapper killed with kill -9 still bills its hours: every attempt writes
# a periodic "alive" event to its log in the store (SPOTRUN_KEEPALIVE_MS,
# here 200ms instead of a minute), so the attempt ends at its newest
# keep-alive. show, stats and the next run's limits and budget count that
# time; once the lease has expired the run is vanished, never running.
. "$(dirname "$0")/lib.sh"

log=$SPOTRUN_STORE/h/events/000000.jsonl

test_expect_success 'the wrapper writes keep-alives; kill -9 it' '
    SPOTRUN_KEEPALIVE_MS=200 "$SPOTRUN" run --run-id h --lease-ttl 2s --time-limit 20s \
        --max-cost 30 --price-per-hour 3600 -- \
        sh -c "echo \$\$ >$TRASH/job.pid; exec sleep 300" >h.log 2>&1 &
    pid=$! &&
    echo $pid >wrapper.pid &&
    for _ in $(seq 600); do
        test "$(grep -c "\"event\":\"alive\"" "$log" 2>/dev/null)" -ge 6 && break
        sleep 0.1
    done &&
    test "$(grep -c "\"event\":\"alive\"" "$log")" -ge 6 &&
    kill -9 $pid &&
    { wait $pid || :; } &&
    { kill -9 "$(cat job.pid)" 2>/dev/null || :; }
'

test_expect_success 'show: vanished once the lease expired, its hours counted' '
    for _ in $(seq 600); do
        "$SPOTRUN" show h >show.out && grep -q "^state: *vanished$" show.out && break
        sleep 0.1
    done &&
    grep "^state: *vanished$" show.out &&
    grep "^causes: *1 vanished$" show.out &&
    "$SPOTRUN" show h --json >show.json &&
    json show.json "
assert d[\"state\"] == \"vanished\", d[\"state\"]
assert d[\"instance_seconds\"] >= 1.0, d[\"instance_seconds\"]
" &&
    "$SPOTRUN" ls | awk "\$1 == \"h\" {print \$2}" >ls.out &&
    test "$(cat ls.out)" = vanished
'

test_expect_success 'stats: the vanished attempt is priced and ends vanished, not running' '
    "$SPOTRUN" stats --json >stats.json &&
    json stats.json "
g = d[\"groups\"][0]
assert g[\"instance_hours\"] * 3600 >= 1.0, g
assert g[\"cost\"] >= 1.0, g
assert g[\"ends\"][\"vanished\"] == 1 and g[\"ends\"][\"running\"] == 0, g[\"ends\"]
"
'

test_expect_success 'the rerun counts the vanished hours in its time limit and budget' '
    "$SPOTRUN" run --run-id h --lease-ttl 2s --time-limit 20s --max-cost 30 \
        --price-per-hour 3600 -- true 2>rerun.log &&
    cat rerun.log &&
    spent=$(sed -n "s/.*budget 30.00, \([0-9.]*\) spent so far.*/\1/p" rerun.log) &&
    "$PY" -c "import sys; assert float(sys.argv[1]) >= 1.0, sys.argv[1]" "$spent" &&
    ! grep "time limit 20.0s, 0ms used so far" rerun.log &&
    grep -E "time limit 20.0s, [0-9.]+s used so far" rerun.log
'

test_expect_success 'an invalid SPOTRUN_KEEPALIVE_MS is said and the default kept' '
    SPOTRUN_KEEPALIVE_MS=5 "$SPOTRUN" run --run-id k -- true 2>k.log &&
    grep "ignoring SPOTRUN_KEEPALIVE_MS=5: give milliseconds from 100 to 3600000" k.log
'

test_done
