#!/usr/bin/env bash
# A sweep's budget (docs/sweeps.md, "Budget"): `sweep init --max-cost`
# stores it with the definition; the trials' cost is the sum of their runs'
# instance hours at the sweep's price. `sweep work` stops claiming trials
# once it is spent (exit 124), running trials poll it and checkpoint and
# stop (exit 124), a trial started by hand is refused; `sweep set` changes
# it and the work goes on from the checkpoints. A price of 3600 an hour
# makes every second of a trial cost 1.
. "$(dirname "$0")/lib.sh"

export PYTHONPATH=$SRCDIR/python SPOTRUN_NOTICE=none
unset CUDA_VISIBLE_DEVICES

# The trainer (tests/e2e/sumsteps.py): sums its steps, commits every 5
# and whenever asked.
cp "$SRCDIR/tests/e2e/sumsteps.py" train.py
export OUT=$TRASH STEPS=20 # 4 s a trial, at least

# trials_started: how many trials ever started (their run has an event log).
trials_started() { ls -d "$SPOTRUN_STORE"/sw-*/events 2>/dev/null | wc -l; }

test_expect_success 'sweep init --max-cost stores the budget with the sweep; without a price it is refused' '
    "$SPOTRUN" sweep init sw --param i=0..5 --max-cost 4 --price-per-hour 3600 \
        -- "$PY" "$TRASH/train.py" {i} >init.out &&
    grep "sweep sw: 6 trials" init.out &&
    grep "sweep sw: budget 4.00 at 3600 per trial-hour (version 0)" init.out &&
    test -f "$SPOTRUN_STORE/sweeps/sw/budget/000000.json" &&
    expect_code 64 "$SPOTRUN" sweep init np --param i=0..1 --max-cost 4 -- true 2>np.err &&
    grep "spotrun sweep init: --max-cost 4.00 needs --price-per-hour P" np.err &&
    test ! -e "$SPOTRUN_STORE/sweeps/np"
'

test_expect_success 'at the budget no trial starts, and the running ones checkpoint and stop (exit 124)' '
    expect_code 124 "$SPOTRUN" sweep work sw --slots 2 --poll 200ms -- --budget-poll 300ms \
        >work1.log 2>&1 &&
    cat work1.log &&
    grep "sweep sw: budget reached: [0-9.]* of 4.00; not starting more trials (raise it with \`spotrun sweep set sw --max-cost AMOUNT\`)" work1.log &&
    # two slots took two trials at once; no other trial ever started
    test "$(trials_started)" = 2 &&
    for run in $(cd "$SPOTRUN_STORE" && ls -d sw-*/events | cut -d/ -f1); do
        grep "run $run reached the sweep.s budget: [0-9.]* of 4.00 spent; stopping after a checkpoint (raise it with \`spotrun sweep set sw --max-cost AMOUNT\`)" work1.log &&
        cat "$SPOTRUN_STORE/$run"/events/*.jsonl >ev.jsonl &&
        grep "\"event\":\"limit\".*\"cause\":\"budget\",\"what\":\"sweep\",\"limit\":4.0" ev.jsonl &&
        sed -n "/\"event\":\"limit\"/,\$p" ev.jsonl | grep "\"event\":\"persisted\"" &&
        test ! -e "$SPOTRUN_STORE/$run/DONE" || exit 1
    done &&
    test -z "$(ls "$OUT" | grep "^result-")" &&
    test -z "$(ls "$SPOTRUN_STORE/sweeps/sw/end" 2>/dev/null)" &&
    "$SPOTRUN" sweep show sw >show1.txt &&
    cat show1.txt &&
    grep "^budget reached: [0-9.]* of 4.00$" show1.txt &&
    grep "^trials: *4 queued, 0 running, 0 preempted, 0 done, 0 failed, 2 stopped$" show1.txt &&
    test "$(grep -c " stopped  *budget " show1.txt)" = 2 &&
    "$SPOTRUN" sweep show sw --json | grep "\"reached\": true"
'

test_expect_success 'a trial started by hand past the budget does not start, naming the sweep'"'"'s spending' '
    expect_code 124 "$SPOTRUN" run --sweep sw --trial 4 >hand.log 2>&1 &&
    grep "spotrun run: sweep sw has spent [0-9.]* of its budget (4.00): not starting trial 4 (exit 124); raise it with \`spotrun sweep set sw --max-cost AMOUNT\`" hand.log &&
    test "$(trials_started)" = 2
'

test_expect_success 'sweep set raises the budget: the work goes on, stopped trials resume, every trial finishes' '
    "$SPOTRUN" sweep set sw --max-cost 1000 >set.out &&
    grep "sweep sw: budget 1000.00 at 3600 per trial-hour (version 1)" set.out &&
    stopped=$(cd "$SPOTRUN_STORE" && ls -d sw-*/events | cut -d/ -f1) &&
    "$SPOTRUN" sweep work sw --slots 2 --poll 200ms -- --budget-poll 300ms >work2.log 2>&1 ||
        { cat work2.log; exit 1; }
    for k in 0 1 2 3 4 5; do
        test "$(cat "$OUT/result-sw-$k")" = "20 210" || exit 1
    done &&
    for run in $stopped; do
        test "$(grep "^$run " "$OUT/starts.log" | tail -n 1 | cut -d" " -f2)" -gt 0 || exit 1
    done &&
    "$SPOTRUN" sweep show sw | grep "^budget: [0-9.]* of 1000.00$"
'

test_expect_success 'sweep set without --max-cost, or on no sweep, is refused; a tampered budget is an error, never a crash' '
    expect_code 64 "$SPOTRUN" sweep set sw 2>set.err &&
    grep "nothing to set: give --max-cost AMOUNT" set.err &&
    expect_code 66 "$SPOTRUN" sweep set nosuch --max-cost 3 2>nosuch.err &&
    grep "no sweep nosuch" nosuch.err &&
    printf "{\"sweep\":\"other\",\"version\":2,\"max_cost\":1e300}" \
        >"$SPOTRUN_STORE/sweeps/sw/budget/000002.json" &&
    "$SPOTRUN" sweep show sw >show3.txt 2>show3.err &&
    grep "budget 000002.json\|budget/000002.json" show3.err &&
    ! grep "^budget" show3.txt &&
    expect_code 65 "$SPOTRUN" run --sweep sw --trial 0 --fresh >tamper.log 2>&1 &&
    grep "is not a budget of this sweep" tamper.log &&
    "$SPOTRUN" sweep set sw --max-cost 5 --price-per-hour 1 | grep "(version 3)" &&
    "$SPOTRUN" sweep show sw | grep "^budget: [0-9.]* of 5.00$"
'

test_done
