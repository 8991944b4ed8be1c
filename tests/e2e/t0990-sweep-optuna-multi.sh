#!/usr/bin/env bash
# Multi-objective search (docs/sweeps.md, "Several objectives"): the Optuna
# driver given two `--metric NAME:min|max` runs a multi-objective study
# (NSGA-II by default) over a sweep it defines itself, with an integer
# parameter drawn in log space and one with a step; two `sweep work
# --driver` workers run it to the end. Every done trial reaches Optuna
# COMPLETE with the values of both metrics as the store has them, and the
# driver's summary names exactly the non-dominated trials of those values.
. "$(dirname "$0")/lib.sh"
if ! "$PY" -c 'import optuna' 2>/dev/null; then
    say "python3-optuna is not installed (scripts/deps.sh installs it): skipped"
    say "0 passed, 0 failed"
    exit 0
fi
export PYTHONPATH=$SRCDIR/python SPOTRUN_BIN=$SPOTRUN
DRIVER=("$PY" -m spotrun.optuna_driver)

# Two objectives that pull apart: loss = x^2 + y^2 wants x = 0, size =
# (x - 1)^2 + y^2 + log2(n) / 10 + b / 100 wants x = 1; y, n and b only add.
# Every done trial is on the front of x alone when y = 0, n = 1, b = 0, so a
# front of a few trials among dominated ones.
cat >trial.sh <<\EOF2
#!/bin/bash
for step in 1 2; do
    "$SPOTRUN_BIN" metric --step "$step" $(awk -v x="$SPOTRUN_PARAM_X" -v y="$SPOTRUN_PARAM_Y" \
        -v n="$SPOTRUN_PARAM_N" -v b="$SPOTRUN_PARAM_B" -v s="$step" 'BEGIN {
        printf "loss=%.9f size=%.9f", x^2 + y^2 + 1/s, (x-1)^2 + y^2 + log(n)/log(2)/10 + b/100 + 1/s }')
done
EOF2
chmod +x trial.sh

OBJ=(--metric loss:min --metric size:min)
SPACE=(--param x=uniform:0,1 --param y=uniform:0,1 --param n=int:1,64,log
    --param b=int:0,20,step=5)

test_expect_success 'the driver defines the sweep and adds its first trials, drawn by NSGA-II' '
    "${DRIVER[@]}" mo --trials 10 --ahead 3 "${OBJ[@]}" "${SPACE[@]}" -- ./trial.sh >first.out &&
    cat first.out &&
    test "$(count_lines first.out "^sweep mo: trial [0-2]: x=.* y=.* n=[0-9]* b=[0-9]* (nsga2)$")" = 3
'

test_expect_success 'two sweep work --driver workers run the 2-objective search to its end' '
    for w in 1 2; do
        SPOTRUN_WORK_DIR=$TRASH/w$w "$SPOTRUN" sweep work mo --slots 1 --poll 200ms \
            --driver "$PY -m spotrun.optuna_driver --trials 10 --ahead 3 ${OBJ[*]} >>driver$w.out" \
            -- --notice none >w$w.log 2>&1 &
        echo $! >>pids
    done &&
    for p in $(cat pids); do wait "$p"; done &&
    "$SPOTRUN" sweep show mo >show.out && cat show.out &&
    test "$(ls "$SPOTRUN_STORE/sweeps/mo/end" | grep -c "\.done$")" = 10
'

test_expect_success 'every trial is COMPLETE with the values of both metrics as the store has them' '
    "${DRIVER[@]}" mo --trials 10 "${OBJ[@]}" --dry-run >study.json &&
    "$SPOTRUN" sweep show mo --json >mo.json &&
    "$PY" - <<-\PYEOF
	import json
	study = {t["trial"]: t for t in json.load(open("study.json"))}
	store = {t["trial"]: t for t in json.load(open("mo.json"))["trials"]}
	assert sorted(study) == sorted(store) == list(range(10)), (sorted(study), sorted(store))
	for k, t in store.items():
	    m = t["metrics"]
	    assert study[k]["state"] == "COMPLETE", study[k]
	    assert study[k]["values"] == [m["loss"]["last"], m["size"]["last"]], (study[k], m)
	    n, b = int(t["params"]["n"]), int(t["params"]["b"])
	    assert 1 <= n <= 64 and b in (0, 5, 10, 15, 20), t["params"]
	PYEOF
'

test_expect_success 'the summary lists the non-dominated trials of the reported values, no other' '
    "${DRIVER[@]}" mo --trials 10 "${OBJ[@]}" >final.out &&
    cat final.out &&
    grep "^sweep mo: 10 of 10 trials: 10 complete, 0 pruned, 0 failed, 0 open; pareto front (loss min, size min): trial " final.out &&
    "$PY" - <<-\PYEOF
	import json, re
	line = open("final.out").read().splitlines()[-1]
	shown = {int(k): (float(l), float(s)) for k, l, s in
	         re.findall(r"trial (\d+): loss (\S+) size (\S+) \(", line)}
	vals = {t["trial"]: (t["metrics"]["loss"]["last"], t["metrics"]["size"]["last"])
	        for t in json.load(open("mo.json"))["trials"]}
	def dominated(v):
	    return any(w[0] <= v[0] and w[1] <= v[1] and w != v for w in vals.values())
	front = sorted(k for k, v in vals.items() if not dominated(v))
	print("front", front, "of", len(vals), "shown", sorted(shown))
	assert sorted(shown) == front, (sorted(shown), front)
	assert 0 < len(front) < len(vals), front
	for k, (l, s) in shown.items():
	    assert abs(l - vals[k][0]) <= 1e-5 * abs(vals[k][0]), (k, l, vals[k])
	    assert abs(s - vals[k][1]) <= 1e-5 * abs(vals[k][1]), (k, s, vals[k])
	PYEOF
'

[ -f pids ] && xargs -r kill -TERM <pids 2>/dev/null
test_done
