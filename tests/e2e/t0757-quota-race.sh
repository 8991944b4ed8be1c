#!/usr/bin/env bash
# Runs racing near a quota (docs/cost.md, "Quotas and approvals"): each
# running run reads the quota's use at every --budget-poll from a record
# at most one poll old (its keep-alive is that frequent under a quota), so
# N runs together overrun the quota by at most N x rate x 2 polls, plus
# the time each takes to checkpoint and stop once it saw it. Two runs of
# one team at a price of 3600 an hour (each second costs 1) under a quota
# of 10: both stop with cause quota, and the team's cost, as stats adds it
# up, stays within that bound (2 s a run added for a loaded machine; were
# the runs blind to each other, each would spend the 10 by itself: 20).
. "$(dirname "$0")/lib.sh"

export PYTHONPATH=$SRCDIR/python SPOTRUN_NOTICE=none OUT=$TRASH STEPS=150
unset CUDA_VISIBLE_DEVICES
cp "$SRCDIR/tests/e2e/sumsteps.py" train.py

test_expect_success 'two runs racing under one quota both stop at it, within the overrun bound' '
    "$SPOTRUN" quota set team=vision --max-cost 10 --per month --by ana &&
    for r in r1 r2; do
        "$SPOTRUN" run --run-id $r --label team=vision --price-per-hour 3600 \
            --budget-poll 500ms -- "$PY" train.py >$r.log 2>&1 &
        echo $! >$r.pid
        test_bg $(cat $r.pid)
    done &&
    for r in r1 r2; do
        expect_code 124 wait $(cat $r.pid) || { cat $r.log; exit 1; }
        grep "run $r reached the quota team=vision: cost [0-9.]* of 10.00" $r.log || exit 1
    done &&
    "$SPOTRUN" stats --label team=vision --json >s.json &&
    cat "$SPOTRUN_STORE"/r1/events/*.jsonl >r1.events &&
    cat "$SPOTRUN_STORE"/r2/events/*.jsonl >r2.events &&
    "$PY" -c "
import json
N, rate, poll, limit = 2, 1.0, 0.5, 10.0
stop = 0.0
for r in (\"r1\", \"r2\"):
    ev = [json.loads(l) for l in open(r + \".events\")]
    lim = [e for e in ev if e[\"event\"] == \"limit\"]
    assert len(lim) == 1 and lim[0][\"cause\"] == \"quota\", lim
    stop += (ev[-1][\"unix_ms\"] - lim[0][\"unix_ms\"]) / 1000.0
cost = json.load(open(\"s.json\"))[\"total\"][\"cost\"]
# two seconds per run on top, for a loaded machine: a look made late
bound = limit + N * rate * (2 * poll + 2) + rate * stop
print(\"cost %.2f, bound %.2f (stopping took %.2f s)\" % (cost, bound, stop))
assert limit <= cost <= bound, (cost, bound)
"
'

test_done
