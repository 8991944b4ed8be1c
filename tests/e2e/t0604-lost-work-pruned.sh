#!/usr/bin/env bash
# Lost work is the truth in a sweep: the work of a trial its early stopping
# pruned is no loss. A sweep with no preemption and no failure shows lost
# work 0, and the pruned trial's work as its own figure ("pruned work") in
# sweep show, show, report and stats.
. "$(dirname "$0")/lib.sh"

# Trials 0 and 1 (good) run first, one at a time: they set the
# first rung's bar (step 2); trials 2 and 3 (bad) are worse there and are
# pruned at it.
cat >trial.sh <<\EOF2
#!/bin/sh
d=$SPOTRUN_CKPT_DIR
step=0
[ -f "$d/step" ] && read -r step <"$d/step"
while [ "$step" -lt 4 ]; do
    step=$((step + 1))
    sleep 0.3
    loss=$(awk -v s="$step" -v k="$SPOTRUN_PARAM_KIND" 'BEGIN { l = 1 / s; if (k == "bad") l += 5; printf "%.6f", l }')
    "$SPOTRUN_BIN" metric --step "$step" loss="$loss" || exit 1
    echo "$step" >"$d/step"
    "$SPOTRUN_BIN" commit --step "$step" || exit 1
done
EOF2
chmod +x trial.sh

test_expect_success 'a sweep with early stopping: two trials done, two pruned, none preempted or failed' '
    "$SPOTRUN" sweep init es --param kind=good,bad --param seed=0..1 \
        --early-stop loss:min,grace=2,eta=2,max=8 \
        -- ./trial.sh &&
    for k in 0 1; do
        CUDA_VISIBLE_DEVICES= "$SPOTRUN" run --sweep es --trial $k --notice none 2>>work.log
    done &&
    for k in 2 3; do
        CUDA_VISIBLE_DEVICES= expect_code 124 "$SPOTRUN" run --sweep es --trial $k --notice none 2>>work.log
    done &&
    ls store/sweeps/es/end | sort | tr "\n" " " >ends &&
    test "$(cat ends)" = "0.done 1.done 2.pruned 3.pruned "
'

test_expect_success 'sweep show: lost work 0, the pruned work its own figure' '
    "$SPOTRUN" sweep show es >show.out && cat show.out &&
    grep "^instances: .*; lost work 0ms (0ms to preemptions); pruned work [0-9.]*m\?s$" show.out &&
    "$SPOTRUN" sweep show es --json >show.json &&
    json show.json "
t = d[\"totals\"]
assert t[\"lost_work_seconds\"] == 0, t
assert t[\"pruned_work_seconds\"] >= 0.5, t
rows = {r[\"trial\"]: r for r in d[\"trials\"]}
assert rows[3][\"lost_work_seconds\"] == 0 and rows[3][\"pruned_work_seconds\"] >= 0.5, rows[3]
"
'

test_expect_success 'show: the pruned trial lost nothing; its work dropped by the sweep' '
    "$SPOTRUN" show es-3 >one.out && cat one.out &&
    grep "^lost work: *0ms (.*); pruned work [0-9.]*m\?s$" one.out &&
    grep "pruned (the sweep.s early stopping, at its rung of step 2), its work dropped, not lost" one.out &&
    "$SPOTRUN" show es-3 --json >one.json &&
    json one.json "
assert d[\"lost_work_seconds\"] == 0, d[\"lost_work_seconds\"]
assert d[\"pruned_work_seconds\"] >= 0.5, d[\"pruned_work_seconds\"]
a = d[\"attempt_list\"][-1]
assert a[\"lost_work_seconds\"] == 0 and a[\"dropped_work_seconds\"] >= 0.5, a
"
'

test_expect_success 'report and stats: no lost work, the pruned hours apart' '
    "$SPOTRUN" report es-3 -o es-3.svg &&
    grep "lost work 0ms; pruned work" es-3.svg &&
    "$SPOTRUN" stats --json >stats.json &&
    json stats.json "
t = d[\"total\"]
assert t[\"lost_hours\"] == 0, t
assert t[\"dropped_hours\"] > 0, t
"
'

test_done
