#!/usr/bin/env bash
# Conditional parameters (docs/sweeps.md, "Conditional parameters"): the
# Optuna driver with `--space MODULE:FUNCTION` (examples/optuna/space.py:
# the optimizer a choice, a momentum only for sgd) defines the sweep with
# the union of the parameters, and a `sweep work --driver` worker runs the
# search (TPE past its startup trials) with the example's trainer. A trial
# without momentum stores it absent (the empty value): its `{momentum}`
# expands to "" and SPOTRUN_PARAM_MOMENTUM is unset; the rebuilt study
# gives each trial only the parameters the space asked for.
. "$(dirname "$0")/lib.sh"
if ! "$PY" -c 'import optuna' 2>/dev/null; then
    say "python3-optuna is not installed (scripts/deps.sh installs it): skipped"
    say "0 passed, 0 failed"
    exit 0
fi
EX=$SRCDIR/examples/optuna
export PYTHONPATH=$SRCDIR/python:$EX SPOTRUN_BIN=$SPOTRUN
DRIVER=("$PY" -m spotrun.optuna_driver)

# What each trial's job saw, then the example's trainer.
cat >seen.sh <<\EOF2
#!/bin/bash
echo "$SPOTRUN_TRIAL ${SPOTRUN_PARAM_OPTIMIZER} ${SPOTRUN_PARAM_MOMENTUM-unset} $*" >>"$SEEN"
exec "$PY" "$EX/train.py" "$@"
EOF2
chmod +x seen.sh
export SEEN=$TRASH/seen.log EX

test_expect_success 'the driver defines a sweep of the space'"'"'s parameters and adds trials with --space' '
    "${DRIVER[@]}" cond --trials 10 --ahead 2 --startup 4 --space space:space \
        --param optimizer=choice:adam,sgd --param lr=loguniform:1e-3,0.5 \
        --param momentum=uniform:0,0.95 \
        -- ./seen.sh --optimizer {optimizer} --lr {lr} --momentum={momentum} >first.out &&
    cat first.out &&
    test "$(count_lines first.out "^sweep cond: trial [01]: optimizer=")" = 2
'

test_expect_success 'a sweep work --driver worker runs the conditional search to its end' '
    "$SPOTRUN" sweep work cond --slots 2 --poll 200ms \
        --driver "$PY -m spotrun.optuna_driver --trials 10 --ahead 2 --startup 4 --space space:space >>driver.out" \
        -- --notice none >w.log 2>&1 &&
    cat driver.out &&
    "$SPOTRUN" sweep show cond >show.out && cat show.out &&
    test "$(ls "$SPOTRUN_STORE/sweeps/cond/end" | grep -c "\.done$")" = 10
'

test_expect_success 'momentum only for sgd: absent (empty) in the store, unset and "" in the job' '
    "$SPOTRUN" sweep show cond --json >cond.json &&
    cat "$SEEN" &&
    "$PY" - <<-\PYEOF
	import json
	trials = json.load(open("cond.json"))["trials"]
	opts = [t["params"]["optimizer"] for t in trials]
	assert set(opts) == {"adam", "sgd"}, opts  # both branches ran
	seen = {}
	for line in open("seen.log"):
	    k, opt, env, *args = line.split()
	    seen[int(k)] = (opt, env, args)
	assert sorted(seen) == list(range(10)), sorted(seen)
	for t in trials:
	    p, (opt, env, args) = t["params"], seen[t["trial"]]
	    assert opt == p["optimizer"], (t, opt)
	    if p["optimizer"] == "sgd":
	        assert 0 <= float(p["momentum"]) <= 0.95, p
	        assert env == p["momentum"] and args[-1] == "--momentum=" + p["momentum"], (env, args)
	    else:
	        assert p["momentum"] == "", p
	        assert env == "unset" and args[-1] == "--momentum=", (env, args)
	PYEOF
'

test_expect_success 'the rebuilt study gives each trial the parameters its branch asked for' '
    "${DRIVER[@]}" cond --trials 10 --space space:space --dry-run >study.json &&
    "${DRIVER[@]}" cond --trials 10 --space space:space >final.out 2>final.err &&
    cat final.out final.err &&
    grep "^sweep cond: 10 of 10 trials: 10 complete, 0 pruned, 0 failed, 0 open; best trial" final.out &&
    test ! -s final.err &&
    "$PY" - <<-\PYEOF
	import json
	study = {t["trial"]: t for t in json.load(open("study.json"))}
	store = {t["trial"]: t for t in json.load(open("cond.json"))["trials"]}
	for k, t in store.items():
	    s, p = study[k], t["params"]
	    want = {n: v for n, v in p.items() if v != ""}
	    assert set(s["params"]) == set(want), (s, p)
	    assert s["state"] == "COMPLETE" and s["values"] == [t["metrics"]["loss"]["last"]], s
	PYEOF
'

test_expect_success 'a space that suggests a parameter the sweep lacks is refused, naming it' '
    printf "def space(trial):\n    trial.suggest_float(\"lr\", 0.1, 1)\n    trial.suggest_int(\"depth\", 1, 4)\n" >badspace.py &&
    "$SPOTRUN" sweep init few --random 0 --param lr=uniform:0.1,1 -- true &&
    expect_code 64 env PYTHONPATH="$PYTHONPATH:$TRASH" "${DRIVER[@]}" few --trials 2 \
        --space badspace:space 2>bad.err &&
    cat bad.err &&
    grep "suggested depth, not a parameter of sweep few (lr): define the sweep with every parameter" bad.err
'

test_done
