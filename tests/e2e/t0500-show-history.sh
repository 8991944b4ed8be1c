#!/usr/bin/env bash
# spotrun show and ls tell what happened to a run: state, attempts,
# preemptions by source, failures by cause, lost work, checkpoint times,
# and the cost at a given price, in words and in --json.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/obs-scenario.sh"

test_expect_success 'a run crashes once, restarts, and is preempted: exit 75' '
    obs_first_run h
'

test_expect_success 'show: state preempted, 2 attempts, 1 preemption (manual), 1 failure' '
    "$SPOTRUN" show h >show1.out &&
    grep "^state: *preempted$" show1.out &&
    grep "^attempts: *2$" show1.out &&
    grep "^preemptions: 1 (manual: 1)$" show1.out &&
    grep "^failures: *1 (exit 3: 1); 1 restart(s)$" show1.out
'

test_expect_success 'ls: the run is preempted, its last attempt by a preemption' '
    "$SPOTRUN" ls | awk "\$1 == \"h\" && \$2 == \"preempted\" && \$3 == \"preempted\"" | grep .
'

test_expect_success 'the rerun resumes and finishes: state done, 3 attempts' '
    obs_second_run h &&
    "$SPOTRUN" show h >show.out &&
    grep "^state: *done$" show.out &&
    grep "^attempts: *3$" show.out
'

test_expect_success 'show: each attempt says how it ended; the crash lost work' '
    grep -E "^attempt 0 .*fresh .*: crashed \(exit 3\), lost [0-9.]+(ms|s)$" show.out &&
    grep -E "^attempt 1 .*from seq 1 step 500 .*: preempted \(manual\), lost" show.out &&
    grep -E "^attempt 2 .*: done$" show.out &&
    ! grep -E "^attempt 0 .*lost 0ms$" show.out
'

test_expect_success 'show: checkpoint statistics count every checkpoint' '
    n=$(ls "$SPOTRUN_STORE/h/ckpt" | wc -l) &&
    grep "^checkpoints: *$n$" show.out &&
    grep -E "^stage: *p50 [0-9.]+s, max [0-9.]+s \($n staged\)$" show.out &&
    grep -E "^persist: *p50 [0-9.]+s, max [0-9.]+s \($n durable\), ratio [0-9.]+x$" show.out
'

test_expect_success 'show --json: the documented fields' '
    "$SPOTRUN" show h --json >show.json &&
    n=$(ls "$SPOTRUN_STORE/h/ckpt" | wc -l) &&
    json show.json "
assert d[\"schema_version\"] == 1
assert d[\"run_id\"] == \"h\" and d[\"state\"] == \"done\"
assert d[\"attempts\"] == 3 and d[\"sessions\"] == 2 and d[\"restarts\"] == 1
assert d[\"preemptions\"] == {\"total\": 1, \"by_source\": {\"manual\": 1}}
assert d[\"failures\"] == {\"total\": 1, \"by_cause\": {\"exit 3\": 1}}
a = d[\"attempt_list\"]
assert [x[\"outcome\"] for x in a] == [\"crashed\", \"preempted\", \"done\"]
assert [x[\"cause\"] for x in a] == [\"crashed\", \"preempted\", \"done\"]
assert [x[\"cause_detail\"] for x in a] == [\"exit 3\", \"manual\", None]
assert a[0][\"exit_code\"] == 3 and a[0][\"lost_work_seconds\"] > 0
assert a[1][\"notice_source\"] == \"manual\" and a[1][\"resumed_step\"] == 500
assert abs(d[\"lost_work_seconds\"] - sum(x[\"lost_work_seconds\"] for x in a)) < 1e-6
s = d[\"checkpoint_stats\"]
assert s[\"staged\"] == s[\"durable\"] == d[\"checkpoint_count\"] == len(d[\"checkpoints\"]) == $n
assert 0 <= s[\"stage_seconds\"][\"p50\"] <= s[\"stage_seconds\"][\"max\"]
assert s[\"ratio\"] > 1
assert d[\"checkpoints\"][0][\"seq\"] == 1 and d[\"checkpoints\"][0][\"step\"] == 500
assert d[\"cost\"] is None
assert 0 < d[\"instance_seconds\"] <= d[\"wall_seconds\"]
"
'

test_expect_success 'cost: instance hours times the price; on-demand gives the saving' '
    SPOTRUN_PRICE_PER_HOUR=2.5 "$SPOTRUN" show h --json --on-demand-price-per-hour 10 >cost.json &&
    json cost.json "
c = d[\"cost\"]; h = d[\"instance_hours\"]
assert abs(h - d[\"instance_seconds\"] / 3600) < 1e-9
assert c[\"price_per_hour\"] == 2.5 and abs(c[\"total\"] - 2.5 * h) < 1e-9
assert abs(c[\"on_demand_total\"] - 10 * h) < 1e-9
assert abs(c[\"saving\"] - 7.5 * h) < 1e-9
" &&
    "$SPOTRUN" show h --price-per-hour 2.5 --on-demand-price-per-hour 10 >cost.out &&
    grep -E "^cost: +\\\$[0-9.]+ at \\\$2.50/h; on demand \\\$[0-9.]+: saved \\\$[0-9.]+ \(75%\)$" cost.out
'

test_expect_success 'a bad price is a usage error' '
    expect_code 64 "$SPOTRUN" show h --price-per-hour cheap 2>err &&
    grep "price-per-hour" err
'

test_expect_success 'a run that keeps crashing is failed' '
    expect_code 3 "$SPOTRUN" run --run-id f --notice none --max-restarts 0 -- sh -c "exit 3" \
        >f.log 2>&1 &&
    "$SPOTRUN" show f | grep "^state: *failed$"
'

test_expect_success 'ls: a sweep at a glance, and --json' '
    "$SPOTRUN" ls --price-per-hour 1 >ls.out &&
    head -n 1 ls.out | grep -E "^RUN +STATE +CAUSE +CKPTS " &&
    awk "\$1 == \"h\" && \$2 == \"done\" && \$3 == \"done\" && \$9 == 3 && \$10 == 1 && \$11 == 1" ls.out | grep . &&
    awk "\$1 == \"f\" && \$2 == \"failed\" && \$3 == \"crashed\"" ls.out | grep . &&
    "$SPOTRUN" ls --json >ls.json &&
    json ls.json "
r = {x[\"run_id\"]: x for x in d[\"runs\"]}
assert d[\"schema_version\"] == 1 and set(r) == {\"h\", \"f\"}
assert r[\"h\"][\"state\"] == \"done\" and r[\"h\"][\"attempts\"] == 3
assert r[\"h\"][\"newest\"][\"step\"] == 3000
assert r[\"f\"][\"state\"] == \"failed\" and r[\"f\"][\"checkpoint_count\"] == 0
assert r[\"f\"][\"newest\"] is None
assert r[\"h\"][\"last_cause\"] == \"done\" and r[\"f\"][\"last_cause\"] == \"crashed\"
assert r[\"f\"][\"last_cause_detail\"] == \"exit 3\"
assert r[\"h\"][\"causes\"][\"crashed\"] == 1 and r[\"h\"][\"causes\"][\"preempted\"] == 1
"
'

test_done
