#!/usr/bin/env bash
# Early stopping's first trials (docs/sweeps.md, "Early stopping"): with
# fewer than eta values at a rung, a trial goes on only if it is the best
# so far there (a tie goes on); `,patient` keeps every first trial going.
# Trials run one after another by hand (`run --sweep --trial K`), so the
# order in which they reach each rung, and so every decision, is known:
# trial 0 (good), trial 1 (bad: worse than trial 0 at rung 0), trial 2
# (good: ties trial 0). The rule loss:min,grace=1,eta=3,max=9 puts rungs
# at steps 1, 3 and 9; the job stops at step 4.
. "$(dirname "$0")/lib.sh"
export SPOTRUN_NOTICE=none

# The job: loss = 1 + 1/step (+4 when bad) at steps 1..4, a checkpoint
# after each report; resumes from its saved step.
cat >trial.sh <<\EOF
#!/bin/bash
d=$SPOTRUN_CKPT_DIR step=0
[ -f "$d/step" ] && read -r step <"$d/step"
while [ "$step" -lt 4 ]; do
    step=$((step + 1))
    loss=$(awk -v s="$step" -v k="$SPOTRUN_PARAM_KIND" \
        'BEGIN { l = 1 + 1 / s; if (k == "bad") l += 4; printf "%.6f", l }')
    "$SPOTRUN_BIN" metric --step "$step" loss="$loss" || exit 1
    echo "$step" >"$d/step"
    "$SPOTRUN_BIN" commit --step "$step" || exit 1
done
EOF
chmod +x trial.sh
export SPOTRUN_BIN=$SPOTRUN

# state NAME: the trials' states and rungs as `sweep show --json` gives them.
state() {
    "$SPOTRUN" sweep show "$1" --json >"show-$1.json" &&
        "$PY" -c '
import json, sys
v = json.load(open(sys.argv[1]))
print(" ".join("%d:%s:%s" % (t["trial"], t["state"], t["rung"]) for t in v["trials"]))' "show-$1.json"
}

test_expect_success 'the default rule: a first trial worse than the best so far at a rung is pruned there' '
    "$SPOTRUN" sweep init ft --param kind=good,bad,good \
        --early-stop loss:min,grace=1,eta=3,max=9 -- ./trial.sh &&
    "$SPOTRUN" run --sweep ft --trial 0 2>t0.err &&
    grep "early stopping: loss 2 at step 1 is the best of the 1 value at rung 0 (step 1), fewer than eta=3: only the best so far goes on; going on" t0.err &&
    expect_code 124 "$SPOTRUN" run --sweep ft --trial 1 2>t1.err &&
    cat t1.err &&
    grep "loss 6 at step 1 is not the best of the 2 values at rung 0 (step 1), fewer than eta=3: only the best so far goes on" t1.err &&
    test "$(state ft)" = "0:done:1 1:pruned:0 2:queued:None"
'

test_expect_success 'the default rule: a first trial that ties the best so far goes on (at rung 1, 2 values)' '
    "$SPOTRUN" run --sweep ft --trial 2 2>t2.err &&
    grep "loss 2 at step 1 is in the top 1 of the 3 values at rung 0 (step 1); going on" t2.err &&
    grep "loss 1.33333 at step 3 is the best of the 2 values at rung 1 (step 3), fewer than eta=3: only the best so far goes on; going on" t2.err &&
    test "$(state ft)" = "0:done:1 1:pruned:0 2:done:1"
'

test_expect_success ',patient keeps the first trials going: stored in the definition, the bad trial runs to its end' '
    "$SPOTRUN" sweep init pt --param kind=good,bad,good \
        --early-stop loss:min,grace=1,eta=3,max=9,patient -- ./trial.sh &&
    json "$SPOTRUN_STORE/sweeps/pt/def/000000.json" "
assert d[\"early_stop\"] == {\"metric\": \"loss\", \"mode\": \"min\", \"grace\": 1, \"eta\": 3, \"max\": 9, \"patient\": True}, d
" &&
    json "$SPOTRUN_STORE/sweeps/ft/def/000000.json" "assert \"patient\" not in d[\"early_stop\"], d" &&
    "$SPOTRUN" run --sweep pt --trial 0 2>p0.err &&
    "$SPOTRUN" run --sweep pt --trial 1 2>p1.err &&
    grep "loss 6 at step 1 is one of 2 values at rung 0 (step 1), fewer than eta=3: patient, nobody waits; going on" p1.err &&
    test "$(state pt)" = "0:done:1 1:done:1 2:queued:None" &&
    expect_code 65 "$SPOTRUN" sweep init pt --param kind=good,bad,good \
        --early-stop loss:min,grace=1,eta=3,max=9 -- ./trial.sh 2>err &&
    grep "different early-stopping rule" err
'

test_done
