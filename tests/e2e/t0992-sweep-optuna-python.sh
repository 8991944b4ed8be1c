#!/usr/bin/env bash
# The driver's interpreter (docs/sweeps.md, "Model-based search (Optuna)"):
# the documented `--driver 'python3 -m spotrun.optuna_driver ...'` works
# when the python3 first on PATH cannot import optuna (a pyenv or venv
# python3 before Debian's, which has python3-optuna): the driver runs
# itself again under a python3 that can, $SPOTRUN_PYTHON when set; when
# none can, it exits 69 naming the interpreters it tried.
. "$(dirname "$0")/lib.sh"
if ! "$PY" -c 'import optuna' 2>/dev/null; then
    say "python3-optuna is not installed (scripts/deps.sh installs it): skipped"
    say "0 passed, 0 failed"
    exit 0
fi
export PYTHONPATH=$SRCDIR/python SPOTRUN_BIN=$SPOTRUN

# A python3 first on PATH that has the spotrun module (PYTHONPATH) but not
# optuna: Debian's without its site packages.
mkdir bin
printf '#!/bin/sh\nexec %s -S "$@"\n' "$PY" >bin/python3
chmod +x bin/python3
export PATH=$TRASH/bin:$PATH

test_expect_success "sweep work --driver 'python3 -m spotrun.optuna_driver ...' runs the search anyway" '
    refute python3 -c "import optuna" 2>/dev/null &&
    "$SPOTRUN" sweep init hp --random 0 --param x=uniform:0,1 -- \
        sh -c "\"\$SPOTRUN_BIN\" metric --step 1 loss=\$SPOTRUN_PARAM_X" &&
    "$SPOTRUN" sweep work hp --slots 2 --poll 200ms \
        --driver "python3 -m spotrun.optuna_driver --trials 3 --ahead 2 >>driver.out" \
        -- --notice none >w.log 2>&1 &&
    cat driver.out &&
    test "$(count_lines driver.out "^sweep hp: trial [0-2]: x=")" = 3 &&
    test "$(ls "$SPOTRUN_STORE/sweeps/hp/end" | grep -c "\.done$")" = 3
'

test_expect_success 'SPOTRUN_PYTHON without optuna: exit 69 naming it and what to do' '
    expect_code 69 env SPOTRUN_PYTHON="$TRASH/bin/python3" \
        python3 -m spotrun.optuna_driver hp --trials 3 2>none.err &&
    cat none.err &&
    grep "spotrun.optuna_driver: optuna is not importable by .*, nor by $TRASH/bin/python3: install it there" none.err &&
    grep "or set SPOTRUN_PYTHON to a python3 that has it" none.err
'

test_done
