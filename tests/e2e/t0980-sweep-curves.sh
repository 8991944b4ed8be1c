#!/usr/bin/env bash
# Learning curves (docs/sweeps.md, "Learning curves"): `sweep show --json`
# gives each trial's metric series as "curves" ([step, value] in step
# order), bounded per trial (at most 128 points per metric, thinned evenly
# as the metric logs are); `sweep show NAME TRIAL` prints one trial, and
# for a pruned one the rung, its value and the cut-off it was compared with.
. "$(dirname "$0")/lib.sh"

# The job: STEPS steps (default 6) of loss = x + 1/step, each reported and
# committed, resuming from its checkpoint. A hopeless trial (x > 1) lingers
# after its first rung's step, as a real one would still be training: the
# wrapper answers a metric before it judges it, and a prune's stop first
# waits for the commit to be durable, so a job that ran on could report
# step 3 before its SIGTERM came. The stop ends the sleep.
cat >trial.sh <<\EOF
#!/bin/bash
d=$SPOTRUN_CKPT_DIR
step=0
[ -f "$d/step" ] && read -r step <"$d/step"
while [ "$step" -lt "${STEPS:-6}" ]; do
    step=$((step + 1))
    loss=$(awk -v s="$step" -v x="$SPOTRUN_PARAM_X" 'BEGIN { printf "%.6f", x + 1 / s }')
    "$SPOTRUN_BIN" metric --step "$step" loss="$loss" || exit 1
    echo "$step" >"$d/step"
    [ "${STEPS:-6}" -gt 6 ] || "$SPOTRUN_BIN" commit --step "$step" || exit 1
    if [ "$step" = 2 ] && awk -v x="$SPOTRUN_PARAM_X" 'BEGIN { exit !(x > 1) }'; then
        sleep 60
    fi
done
EOF
chmod +x trial.sh
export SPOTRUN_BIN=$SPOTRUN

# Rungs at steps 2, 4 and 8 (the job stops at 6). Run one after another:
# trial 0 (x=0.3) and 1 (x=0.1) go on, each the best at its rungs; trial
# 2 (x=3) is pruned at rung 0: 3.5 against 0.6, the best of the other two
# (the top 1 of 3 go on with eta=2).
test_expect_success 'a sweep with early stopping: two trials done, one pruned' '
    "$SPOTRUN" sweep init cv --param x=0.3,0.1,3 \
        --early-stop loss:min,grace=2,eta=2,max=8 -- ./trial.sh &&
    "$SPOTRUN" run --sweep cv --trial 0 --notice none >run0.log 2>&1 &&
    "$SPOTRUN" run --sweep cv --trial 1 --notice none >run1.log 2>&1 &&
    expect_code 124 "$SPOTRUN" run --sweep cv --trial 2 --notice none >run2.log 2>&1 &&
    "$SPOTRUN" sweep show cv >show.out &&
    cat show.out &&
    grep -E "^ +2 +3 +pruned \(rung 0\)" show.out
'

test_expect_success 'sweep show --json: every trial has its curves, [step, value] in step order' '
    "$SPOTRUN" sweep show cv --json >cv.json &&
    "$PY" - cv.json <<-\PY
	import json, sys
	d = json.load(open(sys.argv[1]))
	t = {x["trial"]: x for x in d["trials"]}
	want0 = [[s, round(0.3 + 1 / s, 6)] for s in range(1, 7)]
	assert t[0]["curves"] == {"loss": want0}, t[0]["curves"]
	assert [p[0] for p in t[1]["curves"]["loss"]] == [1, 2, 3, 4, 5, 6], t[1]["curves"]
	assert t[2]["curves"] == {"loss": [[1, 4.0], [2, 3.5]]}, t[2]["curves"]  # ends at its rung
	PY
'

test_expect_success 'sweep show NAME TRIAL: a pruned trial says the rung, its value and the cut-off' '
    "$SPOTRUN" sweep show cv 2 >t2.out &&
    cat t2.out &&
    grep "^trial 2 of sweep cv (run cv-2): pruned$" t2.out &&
    grep "^params: x=3$" t2.out &&
    grep "^metric loss: last 3.5 at step 2, best 3.5 at step 2, 2 values, curve of 2 points$" t2.out &&
    grep "^  rung 0: loss 3.5 at step 2, compared with 2 other values: pruned$" t2.out &&
    grep "^    cut-off: 0.6, the 1st best of the other values (the top 1 of 3 go on); 3.5 is above it$" t2.out &&
    grep "^pruned at rung 0: loss 3.5 against the cut-off 0.6$" t2.out
'

test_expect_success 'sweep show NAME TRIAL: a done trial lists the rungs it went on at' '
    "$SPOTRUN" sweep show cv 1 >t1.out &&
    cat t1.out &&
    grep "^trial 1 of sweep cv (run cv-1): done$" t1.out &&
    grep "^  rung 0: loss 0.6 at step 2, compared with 1 other value: went on$" t1.out &&
    grep "^  rung 1: loss 0.35 at step 4, compared with 1 other value: went on$" t1.out &&
    if grep "cut-off\|^pruned" t1.out; then say "a trial that went on has no cut-off"; false; fi
'

test_expect_success 'sweep show NAME TRIAL --json: that trial object alone, curves included' '
    "$SPOTRUN" sweep show cv 2 --json >t2.json &&
    "$PY" -c "
import json
o = json.load(open(\"t2.json\"))
assert o[\"trial\"] == 2 and o[\"state\"] == \"pruned\", o
assert o[\"curves\"] == {\"loss\": [[1, 4.0], [2, 3.5]]}, o[\"curves\"]
"
'

test_expect_success 'sweep show NAME TRIAL: a trial the sweep does not have is a usage error' '
    expect_code 64 "$SPOTRUN" sweep show cv 3 2>err &&
    grep "\"3\" is not a trial of sweep cv (0 to 2)" err &&
    expect_code 64 "$SPOTRUN" sweep show cv x 2>err
'

test_expect_success 'a long trial keeps at most 128 points of a metric, evenly thinned' '
    "$SPOTRUN" sweep init long --param x=0 -- ./trial.sh &&
    STEPS=300 "$SPOTRUN" run --sweep long --trial 0 --notice none >long.log 2>&1 &&
    "$SPOTRUN" sweep show long --json >long.json &&
    "$PY" - long.json <<-\PY
	import json, sys
	d = json.load(open(sys.argv[1]))
	c = d["trials"][0]["curves"]["loss"]
	assert 64 < len(c) <= 128, len(c)
	steps = [p[0] for p in c]
	gaps = {b - a for a, b in zip(steps, steps[1:])}
	assert gaps == {4}, gaps  # every 4th of 300 values
	assert d["trials"][0]["metrics"]["loss"]["last_step"] == 300
	PY
'

test_done
