#!/usr/bin/env bash
# `sweep export --space MODULE:FUNCTION` (docs/sweeps.md, "Exporting to
# Optuna"): a sweep of conditional parameters (examples/optuna/space.py: a
# momentum only for sgd; a trial without it has it absent) exported with
# the define-by-run space it was driven with: each trial gets only the
# parameters the space asks for, with the space's distributions; without
# --space an absent parameter is left out too; a --space that does not
# import is a usage error (64).
. "$(dirname "$0")/lib.sh"
if ! "$PY" -c 'import optuna' 2>/dev/null; then
    say "python3-optuna is not installed (scripts/deps.sh installs it): skipped"
    say "0 passed, 0 failed"
    exit 0
fi
export PYTHONPATH=$SRCDIR/examples/optuna SPOTRUN_BIN=$SPOTRUN

cat >job.sh <<'JOB'
#!/bin/sh
"$SPOTRUN_BIN" metric --step 1 loss="$(awk -v l="$SPOTRUN_PARAM_LR" 'BEGIN { print 2 * l }')"
"$SPOTRUN_BIN" metric --step 2 loss="$SPOTRUN_PARAM_LR"
JOB
chmod +x job.sh

test_expect_success 'a sweep of three trials, the first without momentum' '
    "$SPOTRUN" sweep init cond --param optimizer=adam --param lr=0.01 --param momentum=absent: \
        -- ./job.sh &&
    "$SPOTRUN" sweep init cond --add --param optimizer=sgd --param lr=0.1 --param momentum=0.9 &&
    "$SPOTRUN" sweep init cond --add --param optimizer=sgd --param lr=0.2 --param momentum=0.5 &&
    for k in 0 1 2; do "$SPOTRUN" run --sweep cond --trial $k >run$k.log 2>&1 || return 1; done
'

test_expect_success 'sweep export --space: each trial has the parameters and distributions the space asks for' '
    "$SPOTRUN" sweep export cond --optuna sqlite:///space.db --space space:space >space.out &&
    grep "3 trials added" space.out &&
    "$PY" - <<-\PY
	import optuna
	from optuna.distributions import CategoricalDistribution, FloatDistribution
	s = optuna.load_study(study_name="cond", storage="sqlite:///space.db")
	t = {x.user_attrs["spotrun_trial"]: x for x in s.trials}
	assert t[0].params == {"optimizer": "adam", "lr": 0.01}, t[0].params
	assert t[1].params == {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9}, t[1].params
	assert t[1].distributions == {"optimizer": CategoricalDistribution(["adam", "sgd"]),
	                              "lr": FloatDistribution(1e-3, 0.5, log=True),
	                              "momentum": FloatDistribution(0.0, 0.95)}, t[1].distributions
	assert s.best_trial.user_attrs["spotrun_trial"] == 0
	PY
'

test_expect_success 'without --space an absent parameter is left out of its trial' '
    "$SPOTRUN" sweep export cond --optuna sqlite:///plain.db >plain.out &&
    "$PY" -c "
import optuna
s = optuna.load_study(study_name=\"cond\", storage=\"sqlite:///plain.db\")
t = {x.user_attrs[\"spotrun_trial\"]: x for x in s.trials}
assert \"momentum\" not in t[0].params and t[1].params[\"momentum\"] == \"0.9\", t
"
'

test_expect_success 'sweep export --metric NAME:max: a study that maximizes it; another direction later is refused (65)' '
    "$SPOTRUN" sweep export cond --optuna sqlite:///max.db --metric loss:max >max.out &&
    "$PY" -c "
import optuna
s = optuna.load_study(study_name=\"cond\", storage=\"sqlite:///max.db\")
assert s.direction == optuna.study.StudyDirection.MAXIMIZE, s.direction
assert s.best_trial.user_attrs[\"spotrun_trial\"] == 2, s.best_trial
" &&
    expect_code 65 "$SPOTRUN" sweep export cond --optuna sqlite:///max.db 2>dir.err &&
    grep "study cond already exists with directions \[.maximize.\], not \[.minimize.\]" dir.err
'

test_expect_success 'a --space that does not import is a usage error naming it' '
    expect_code 64 "$SPOTRUN" sweep export cond --optuna sqlite:///x.db --space nosuch:space 2>err &&
    grep "spotrun sweep export: --space nosuch:space: No module named .nosuch." err
'

test_done
