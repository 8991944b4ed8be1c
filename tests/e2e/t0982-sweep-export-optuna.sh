#!/usr/bin/env bash
# `spotrun sweep export NAME --optuna URL` (docs/sweeps.md, "Exporting to
# Optuna"): a sweep with early stopping (done and pruned trials) written
# into an Optuna study that Optuna's own tools read: load_study, the
# matplotlib plots of the optimization history, the intermediate values
# and the parameter importances (to PNG), and the best trial, which is the
# one spotrun names. A re-export adds new trials once and finishes those
# the study held as running; a journal file works the same; without
# Optuna the command says which package to install (69).
. "$(dirname "$0")/lib.sh"
if ! "$PY" -c 'import optuna, matplotlib, sklearn' 2>/dev/null; then
    say "python3-optuna, python3-matplotlib or python3-sklearn is not installed (scripts/deps.sh installs them): skipped"
    say "0 passed, 0 failed"
    exit 0
fi

# The job: 6 steps of loss = x + 1/step - seed/100, each reported and committed.
cat >trial.sh <<\EOF
#!/bin/bash
d=$SPOTRUN_CKPT_DIR
step=0
[ -f "$d/step" ] && read -r step <"$d/step"
while [ "$step" -lt 6 ]; do
    step=$((step + 1))
    loss=$(awk -v s="$step" -v x="$SPOTRUN_PARAM_X" -v k="$SPOTRUN_PARAM_SEED" \
        'BEGIN { printf "%.6f", x + 1 / s - k / 100 }')
    "$SPOTRUN_BIN" metric --step "$step" loss="$loss" || exit 1
    echo "$step" >"$d/step"
    "$SPOTRUN_BIN" commit --step "$step" || exit 1
done
EOF
chmod +x trial.sh
export SPOTRUN_BIN=$SPOTRUN

# Trials 0-5 (x = 0.3, 0.2, 0.1; seed 0, 1), run in order, each better than
# every one before it at each rung: done. Trials 6-9 (x = 3, 4) are worse
# than the top half at rung 0 (step 2; eta=2): pruned. The best: trial 5
# (x=0.1, seed=1), 0.256667.
test_expect_success 'a sweep with early stopping: six trials done, four pruned' '
    "$SPOTRUN" sweep init cv --param x=0.3,0.2,0.1,3,4 --param seed=0..1 \
        --early-stop loss:min,grace=2,eta=2,max=8 -- ./trial.sh &&
    for k in 0 1 2 3 4 5; do
        "$SPOTRUN" run --sweep cv --trial $k --notice none >run$k.log 2>&1 || return 1
    done &&
    for k in 6 7 8 9; do
        expect_code 124 "$SPOTRUN" run --sweep cv --trial $k --notice none >run$k.log 2>&1 || return 1
    done &&
    "$SPOTRUN" sweep show cv --json >cv.json &&
    "$PY" -c "
import json
d = json.load(open(\"cv.json\"))
assert d[\"counts\"][\"done\"] == 6 and d[\"counts\"][\"pruned\"] == 4, d[\"counts\"]
assert d[\"best\"][\"trial\"] == 5, d[\"best\"]
"
'

test_expect_success 'sweep export --optuna sqlite: every trial, its distributions, state, curve and value' '
    "$SPOTRUN" sweep export cv --optuna sqlite:///study.db >export.out &&
    cat export.out &&
    grep "^sweep cv -> study cv in sqlite:///study.db: 10 trials added, 0 finished, 0 already there$" export.out &&
    "$PY" - <<-\PY
	import optuna
	from optuna.distributions import CategoricalDistribution, IntDistribution
	S = optuna.trial.TrialState
	s = optuna.load_study(study_name="cv", storage="sqlite:///study.db")
	assert s.direction == optuna.study.StudyDirection.MINIMIZE
	t = {x.user_attrs["spotrun_trial"]: x for x in s.trials}
	assert sorted(t) == list(range(10)), sorted(t)
	assert [t[k].state for k in range(10)] == [S.COMPLETE] * 6 + [S.PRUNED] * 4
	assert t[5].params == {"x": "0.1", "seed": 1}, t[5].params
	assert t[5].distributions == {"x": CategoricalDistribution(["0.3", "0.2", "0.1", "3", "4"]),
	                              "seed": IntDistribution(0, 1)}, t[5].distributions
	assert abs(t[5].value - 0.256667) < 1e-9, t[5].value
	assert t[5].intermediate_values == {s_: round(0.1 + 1 / s_ - 0.01, 6) for s_ in range(1, 7)}
	assert t[6].intermediate_values == {1: 4.0, 2: 3.5}, t[6].intermediate_values
	assert t[6].value is None
	assert t[6].user_attrs["spotrun_state"] == "pruned"
	PY
'

test_expect_success 'Optuna names the best trial spotrun names' '
    "$PY" -c "
import json, optuna
s = optuna.load_study(study_name=\"cv\", storage=\"sqlite:///study.db\")
best = json.load(open(\"cv.json\"))[\"best\"]
assert s.best_trial.user_attrs[\"spotrun_trial\"] == best[\"trial\"], (s.best_trial, best)
assert abs(s.best_value - best[\"value\"]) < 1e-9, (s.best_value, best)
"
'

test_expect_success 'optuna.visualization.matplotlib draws history, intermediate values and importances to PNG' '
    MPLBACKEND=Agg MPLCONFIGDIR=$TRASH/mpl "$PY" - <<-\PY &&
	import warnings
	import optuna
	from optuna.visualization import matplotlib as vm
	warnings.simplefilter("ignore")  # matplotlib plots are "experimental"
	s = optuna.load_study(study_name="cv", storage="sqlite:///study.db")
	for name, plot in (("history", vm.plot_optimization_history),
	                   ("intermediate", vm.plot_intermediate_values),
	                   ("importances", vm.plot_param_importances)):
	    plot(s).figure.savefig(name + ".png")
	PY
    for f in history intermediate importances; do
        test "$(head -c 8 $f.png | od -An -tx1 | tr -d " \n")" = 89504e470d0a1a0a &&
        test "$(wc -c <$f.png)" -gt 5000 || return 1
    done
'

test_expect_success 'a re-export adds a new trial once and finishes it when it has ended' '
    "$SPOTRUN" sweep export cv --optuna sqlite:///study.db >again.out &&
    grep "0 trials added, 0 finished, 10 already there" again.out &&
    "$SPOTRUN" sweep init cv --add --param x=0.1 --param seed=0 >add.out &&
    "$SPOTRUN" sweep export cv --optuna sqlite:///study.db >queued.out &&
    grep "1 trial added, 0 finished, 10 already there" queued.out &&
    "$SPOTRUN" run --sweep cv --trial 10 --notice none >run10.log 2>&1 &&
    "$SPOTRUN" sweep export cv --optuna sqlite:///study.db >ended.out &&
    grep "0 trials added, 1 finished, 10 already there" ended.out &&
    "$PY" - <<-\PY
	import collections, optuna
	s = optuna.load_study(study_name="cv", storage="sqlite:///study.db")
	n = collections.Counter(x.user_attrs["spotrun_trial"] for x in s.trials)
	assert sorted(n) == list(range(11)) and set(n.values()) == {1}, n
	t = [x for x in s.trials if x.user_attrs["spotrun_trial"] == 10][0]
	assert t.state == optuna.trial.TrialState.COMPLETE, t.state
	assert abs(t.value - (0.1 + 1 / 6)) < 1e-6, t.value
	assert sorted(t.intermediate_values) == [1, 2, 3, 4, 5, 6], t.intermediate_values
	assert s.best_trial.user_attrs["spotrun_trial"] == 5
	PY
'

test_expect_success 'sweep export --optuna journal:PATH: a JournalStorage file Optuna reads, --study names it' '
    "$SPOTRUN" sweep export cv --optuna journal:study.log --study other >journal.out &&
    grep "11 trials added" journal.out &&
    "$PY" -c "
import optuna
from optuna.storages import JournalFileStorage, JournalStorage
s = optuna.load_study(study_name=\"other\", storage=JournalStorage(JournalFileStorage(\"study.log\")))
assert len(s.trials) == 11 and s.best_trial.user_attrs[\"spotrun_trial\"] == 5
"
'

test_expect_success 'without an interpreter that has Optuna: 69, naming the package' '
    SPOTRUN_PYTHON=/bin/false expect_code 69 "$SPOTRUN" sweep export cv --optuna sqlite:///x.db 2>nopy.err &&
    grep "SPOTRUN_PYTHON=/bin/false cannot import optuna: install Optuna for it (Debian: apt install python3-optuna" nopy.err &&
    test ! -e x.db
'

test_expect_success 'a storage that is not an URL is a usage error' '
    expect_code 64 "$SPOTRUN" sweep export cv --optuna study.db 2>url.err &&
    grep "\"study.db\" is not one: give --optuna URL, an RDB URL such as sqlite:///study.db or journal:PATH" url.err &&
    expect_code 64 "$SPOTRUN" sweep export cv 2>none.err &&
    grep "no storage: give --optuna URL" none.err
'

test_done
