#!/usr/bin/env bash
# The best trial of a sweep (docs/sweeps.md, "Best"): the best among the
# trials that ended done, by the final value of the metric (or, with
# `sweep init --best best-step`, by each done trial's best step). A pruned
# trial (early stopping) and a failed one that hold the lowest value at
# some step are never named: sweep show's best line, its search: line,
# --json's best and progress, sweep report's progress chart and the Optuna
# driver's summary all name the same done trial. With two objectives,
# sweep show gives the Pareto front of the done trials instead.
. "$(dirname "$0")/lib.sh"

# The trials' job: loss at steps 1..4 by the trial's x (its last value is
# its final one; each step is committed after its report, so the wrapper
# judges a rung before the job goes on):
#   x=0.1 (trial 0): 0.9 0.5 0.1 0.4    done, final 0.4, best step 0.1 at 3
#   x=0.2 (trial 1): 0.8 0.3 0.2 0.35   done, final 0.35 (the best final)
#   x=0.3 (trial 2): 0.01 5             pruned at the rung at step 2
#                                       (5 is worst of 3 there, eta 2)
#   x=0.4 (trial 3): 0.001, then exit 3 failed
# With --metric acc (the two-objective sweep) it also reports acc.
cat >trial.sh <<\EOF
#!/bin/bash
asked=0
trap 'asked=1' USR1
case $SPOTRUN_PARAM_X in
0.1) series="0.9 0.5 0.1 0.4" acc=0.7 ;;
0.2) series="0.8 0.3 0.2 0.35" acc=0.6 ;;
0.3) series="0.01 5" acc=0.65 ;;
0.5) series="0.9 0.45" acc=0.65 ;;
*) series="0.001" acc=0.99 ;;
esac
step=0
for loss in $series; do
    step=$((step + 1))
    extra=
    [ -n "${WITH_ACC:-}" ] && extra="acc=$acc"
    "$SPOTRUN_BIN" metric --step "$step" loss="$loss" $extra || exit 1
    echo "$step" >"$SPOTRUN_CKPT_DIR/step"
    "$SPOTRUN_BIN" commit --step "$step" || exit 1
done
case $SPOTRUN_PARAM_X in
0.3) # pruned: its wrapper asks for a checkpoint and stops it
    for _ in $(seq 3000); do
        [ "$asked" = 0 ] || { asked=0; "$SPOTRUN_BIN" commit; }
        sleep 0.1
    done
    exit 1 ;;
0.4) exit 3 ;;
esac
exit 0
EOF
chmod +x trial.sh
export PYTHONPATH=$SRCDIR/python SPOTRUN_BIN=$SPOTRUN

# make NAME [init options]: a search space over x and trials 0..3 (x = 0.1,
# 0.2, 0.3, 0.4), each run to its end in order.
make_sweep() {
    local name=$1
    shift
    "$SPOTRUN" sweep init "$name" --random 0 --param x=uniform:0,1 "$@" -- "$TRASH/trial.sh" &&
        for x in 0.1 0.2 0.3 0.4; do
            "$SPOTRUN" sweep init "$name" --add --param x=$x >/dev/null || return 1
        done &&
        "$SPOTRUN" run --sweep "$name" --trial 0 >"$name-0.log" 2>&1 &&
        "$SPOTRUN" run --sweep "$name" --trial 1 >"$name-1.log" 2>&1 &&
        expect_code 124 "$SPOTRUN" run --sweep "$name" --trial 2 >"$name-2.log" 2>&1 &&
        expect_code 3 "$SPOTRUN" run --sweep "$name" --trial 3 --max-restarts 0 >"$name-3.log" 2>&1
}

test_expect_success 'a sweep whose pruned and failed trials hold the lowest loss at some step' '
    make_sweep sw --early-stop loss:min,grace=2,eta=2,max=4 &&
    "$SPOTRUN" sweep show sw >show.out &&
    cat show.out &&
    grep "^trials: *0 queued, 0 running, 0 preempted, 2 done, 1 failed, 1 pruned$" show.out
'

test_expect_success 'show: best is the done trial with the best final value, said so' '
    grep -E "^best: +trial 1 \(loss 0\.35 at step 4, min, final; x=0\.2\)$" show.out
'

test_expect_success 'show: the search: line names the same trial' '
    grep -E "^search: +best loss 0\.35 \(trial 1, final\) after [0-9.]+ of [0-9.]+ trial-hours; 4 of 4 trials ended$" show.out
'

test_expect_success 'show --json: best, its rule and the progress name the same trial' '
    "$SPOTRUN" sweep show sw --json >sw.json &&
    json sw.json "
b = d[\"best\"]
assert b == {\"trial\": 1, \"metric\": \"loss\", \"value\": 0.35, \"step\": 4,
             \"maximize\": False, \"rule\": \"final\"}, b
assert d[\"best_rule\"] == \"final\" and d[\"objectives\"] == [] and d[\"pareto\"] is None, d
p = d[\"progress\"]
assert p[\"best_trial\"] == 1 and p[\"rule\"] == \"final\", p
assert [q[\"trial\"] for q in p[\"points\"] if q[\"improved\"]] == [0, 1], p[\"points\"]
assert [q[\"best\"] for q in p[\"points\"]] == [0.4, 0.35, 0.35, 0.35], p[\"points\"]
"
'

test_expect_success 'report: the progress chart names trials 0 and 1 at its improvements, never 2 or 3' '
    "$SPOTRUN" sweep report sw -o sw.svg &&
    test "$(svg_count sw.svg improved)" = 2 &&
    grep -F "<text class=\"improved-label\" x=" sw.svg >labels.out &&
    grep -c ">trial 0: 0.4</text>" labels.out &&
    grep -c ">trial 1: 0.35</text>" labels.out &&
    if grep -E ">trial [23]: " labels.out; then say "a pruned or failed trial on the chart"; false; fi
'

test_expect_success 'report: the chart'"'"'s value axis says the metric and its direction, better up' '
    grep -F ">loss (min: lower is better) " sw.svg &&
    "$PY" - sw.svg <<\PY
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
# the tick labels: 4 significant digits at most, the smallest loss highest
ticks = [(float(t.get("y")), t.text) for t in root.iter(ns + "text")
         if "tick-label" in (t.get("class") or "").split()]
assert len(ticks) >= 3, ticks
for _, s in ticks:
    assert len(s.replace(".", "").replace("-", "").lstrip("0")) <= 4, s
top = min(ticks)[1]
assert float(top) == 0.35, ticks
dots = {g.get("data-trial"): float(g.find(ns + "circle").get("cy"))
        for g in root.iter(ns + "g") if g.get("class") == "improved"}
assert dots["1"] < dots["0"], dots  # the better value drawn higher
PY
'

test_expect_success 'a pruned trial'"'"'s work is pruned work, not lost work: show, --json, report' '
    grep -E "^instances: .*; lost work [0-9a-z.]+ \(0ms to preemptions\); pruned work [0-9a-z.]+$" show.out &&
    grep -E "^ +2 +0\.3 +pruned \(rung 0\) +pruned +1 +0 +0ms " show.out &&
    json sw.json "
t = {x[\"trial\"]: x for x in d[\"trials\"]}
assert t[2][\"lost_work_seconds\"] == 0 and t[2][\"pruned_work_seconds\"] > 0, t[2]
assert d[\"totals\"][\"pruned_work_seconds\"] == t[2][\"pruned_work_seconds\"], d[\"totals\"]
assert d[\"totals\"][\"lost_work_seconds\"] == t[3][\"lost_work_seconds\"], d[\"totals\"]
" &&
    grep -E ">[0-9.e-]+ trial-hours paid; lost work [0-9a-z.]+; pruned work [0-9a-z.]+, cancelled work 0ms \(not lost\)</text>" sw.svg
'

if "$PY" -c "import optuna" 2>/dev/null; then
    test_expect_success 'the Optuna driver names the same best trial' '
        "$PY" -m spotrun.optuna_driver sw --trials 4 --metric loss >driver.out 2>driver.err &&
        cat driver.out &&
        grep -E "^sweep sw: 4 of 4 trials: 2 complete, 1 pruned, 1 failed, 0 open; best trial 1: loss 0\.35 \(x=0\.2\)$" driver.out
    '
else
    test_skip 'the Optuna driver names the same best trial' 'python3-optuna is not installed'
fi

test_expect_success '--best best-step: each done trial by its best step; still never the pruned one' '
    make_sweep bs --best best-step --early-stop loss:min,grace=2,eta=2,max=4 &&
    "$SPOTRUN" sweep show bs >bs.out &&
    cat bs.out &&
    grep -E "^best: +trial 0 \(loss 0\.1 at step 3, min, best-step; x=0\.1\)$" bs.out &&
    grep -E "^search: +best loss 0\.1 \(trial 0, best-step\) after " bs.out &&
    "$SPOTRUN" sweep show bs --json >bs.json &&
    json bs.json "
assert d[\"best_rule\"] == \"best-step\", d[\"best_rule\"]
assert d[\"best\"][\"trial\"] == 0 and d[\"best\"][\"value\"] == 0.1, d[\"best\"]
assert d[\"progress\"][\"best_trial\"] == 0, d[\"progress\"]
" &&
    "$SPOTRUN" sweep report bs -o bs.svg &&
    grep -F ">trial 0: 0.1</text>" bs.svg
'

if "$PY" -c "import optuna" 2>/dev/null; then
    test_expect_success '--best best-step: the driver names the same trial' '
        "$PY" -m spotrun.optuna_driver bs --trials 4 --metric loss >bs-driver.out &&
        grep -E "; best trial 0: loss 0\.1 \(x=0\.1\)$" bs-driver.out
    '
fi

test_expect_success '--best is part of the definition: another rule is exit 65, the same a no-op' '
    expect_code 65 "$SPOTRUN" sweep init bs --random 0 --param x=uniform:0,1 \
        --early-stop loss:min,grace=2,eta=2,max=4 -- "$TRASH/trial.sh" 2>diff.err &&
    grep "different best rule" diff.err &&
    "$SPOTRUN" sweep init bs --random 0 --param x=uniform:0,1 --best best-step \
        --early-stop loss:min,grace=2,eta=2,max=4 -- "$TRASH/trial.sh" >same.out &&
    grep "already defined, unchanged" same.out &&
    expect_code 64 "$SPOTRUN" sweep init bad --param x=1 --best last 2>bad.err &&
    grep "invalid --best \"last\"" bad.err &&
    expect_code 64 "$SPOTRUN" sweep init bs --add --param x=0.9 --best final
'

# Two objectives: loss (min) and acc (max), final values of done trials:
#   trial 0: loss 0.4  acc 0.7    on the front
#   trial 1: loss 0.35 acc 0.6    on the front
#   trial 2: pruned                (loss 0.01 at step 1, never counted)
#   trial 3: failed                (loss 0.001, acc 0.99: never counted)
#   trial 4: loss 0.45 acc 0.65   dominated by trial 0
test_expect_success 'two objectives: show prints the Pareto front of the done trials' '
    export WITH_ACC=1 &&
    make_sweep mo --objective loss:min --objective acc:max \
        --early-stop loss:min,grace=2,eta=2,max=4 &&
    "$SPOTRUN" sweep init mo --add --param x=0.5 &&
    "$SPOTRUN" run --sweep mo --trial 4 >mo-4.log 2>&1 &&
    "$SPOTRUN" sweep show mo >mo.out &&
    cat mo.out &&
    grep -E "^pareto: +2 trials on the front \(loss min, acc max; final values of done trials\)$" mo.out &&
    grep -E "^ +trial 0: loss 0\.4 acc 0\.7 \(x=0\.1\)$" mo.out &&
    grep -E "^ +trial 1: loss 0\.35 acc 0\.6 \(x=0\.2\)$" mo.out &&
    if grep -E "^ +trial [234]:|^best:" mo.out; then say "off the front"; false; fi
'

test_expect_success 'two objectives: --json has the objectives and the front, no single best' '
    "$SPOTRUN" sweep show mo --json >mo.json &&
    json mo.json "
assert d[\"objectives\"] == [{\"metric\": \"loss\", \"direction\": \"min\"},
                            {\"metric\": \"acc\", \"direction\": \"max\"}], d[\"objectives\"]
assert d[\"pareto\"] == [0, 1], d[\"pareto\"]
assert d[\"best\"] is None, d[\"best\"]
"
'

test_done
