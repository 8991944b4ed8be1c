#!/usr/bin/env bash
# A time limit or budget of 0 is refused (exit 64) instead of silently
# meaning "no limit": the message says to leave the flag out for none.
. "$(dirname "$0")/lib.sh"

test_expect_success 'run --time-limit 0 is a usage error saying to leave it out' '
    expect_code 64 "$SPOTRUN" run --run-id z --time-limit 0 -- touch ran 2>e1 &&
    cat e1 && grep "time-limit 0 would stop the run before it starts: for no limit, leave --time-limit out" e1 &&
    test ! -e ran
'

test_expect_success 'run --attempt-time-limit 0s and --max-cost 0 are refused too' '
    expect_code 64 "$SPOTRUN" run --run-id z --attempt-time-limit 0s -- touch ran 2>e2 &&
    grep "attempt-time-limit 0 would stop" e2 &&
    expect_code 64 "$SPOTRUN" run --run-id z --max-cost 0 --price-per-hour 1 -- touch ran 2>e3 &&
    grep "max-cost 0 would stop the run before it starts: for no limit, leave --max-cost out (and SPOTRUN_MAX_COST unset)" e3 &&
    test ! -e ran
'

test_expect_success 'the environment twins SPOTRUN_TIME_LIMIT=0 and SPOTRUN_MAX_COST=0.00 are refused' '
    SPOTRUN_TIME_LIMIT=0 expect_code 64 "$SPOTRUN" run --run-id z -- touch ran 2>e4 &&
    grep "SPOTRUN_TIME_LIMIT unset" e4 &&
    SPOTRUN_MAX_COST=0.00 expect_code 64 "$SPOTRUN" run --run-id z -- touch ran 2>e5 &&
    grep "max-cost 0 would stop" e5 &&
    test ! -e ran
'

test_expect_success 'without the flags the run has no limit and runs' '
    "$SPOTRUN" run --run-id z -- touch ran && test -e ran
'

test_expect_success 'sweep init --max-cost 0 is refused; sweep set --max-cost 0 still lifts a budget' '
    expect_code 64 "$SPOTRUN" sweep init sz --max-cost 0 --param k=1 -- true 2>e6 &&
    grep "max-cost 0 would start no trial: for no budget, leave --max-cost out" e6 &&
    test ! -e "$SPOTRUN_STORE/sweeps/sz" &&
    "$SPOTRUN" sweep init sz --max-cost 5 --price-per-hour 1 --param k=1 -- true >/dev/null &&
    "$SPOTRUN" sweep set sz --max-cost 0
'

test_done
