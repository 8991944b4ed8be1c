#!/usr/bin/env bash
# A price recorded with a run (run --price-per-hour, or sweep init
# --price-per-hour for every trial: the start event's price_per_hour) is
# the price show, ls and sweep show cost the run at when no
# --price-per-hour is given; the flag still wins.
. "$(dirname "$0")/lib.sh"

test_expect_success 'a run at 3600 per hour' '
    "$SPOTRUN" run --run-id priced --price-per-hour 3600 -- sleep 0.2 2>run.log &&
    grep "\"price_per_hour\":3600" "$SPOTRUN_STORE/priced/events/000000.jsonl"
'

test_expect_success 'show without the flag: the cost at the recorded price' '
    "$SPOTRUN" show priced >show.out &&
    grep "^cost: *\$[0-9.]* at \$3600.00/h (recorded by the run)$" show.out &&
    ! grep "give --price-per-hour" show.out
'

test_expect_success 'show --json says where the price came from' '
    "$SPOTRUN" show priced --json >show.json &&
    "$PY" -c "import json, sys; c = json.load(open(\"show.json\"))[\"cost\"]; \
        assert c[\"price_per_hour\"] == 3600 and c[\"price_from\"] == \"recorded\" \
        and c[\"total\"] > 0, c"
'

test_expect_success 'ls without the flag: the COST column has it' '
    "$SPOTRUN" ls >ls.out &&
    cat ls.out &&
    grep "^priced .* \$[0-9.]*  *20[0-9-]* [0-9:]*$" ls.out
'

test_expect_success 'the flag wins over the recorded price' '
    "$SPOTRUN" show priced --price-per-hour 7200 >flag.out &&
    grep "^cost: *\$[0-9.]* at \$7200.00/h$" flag.out
'

test_expect_success 'a sweep with a price and no budget: each trial records it' '
    "$SPOTRUN" sweep init sw --param lr=1,2 --price-per-hour 3600 -- sleep 0.2 >init.out &&
    grep "trials priced at 3600 per hour" init.out &&
    "$SPOTRUN" run --sweep sw --trial 0 2>trial.log &&
    grep "\"price_per_hour\":3600" "$SPOTRUN_STORE/sw-0/events/000000.jsonl"
'

test_expect_success 'sweep show without the flag: the costs at the recorded price' '
    "$SPOTRUN" sweep show sw >sw.out &&
    cat sw.out &&
    grep "^cost: *\$[0-9.]* at \$3600.00/h" sw.out &&
    grep "^ *0  *1  *done .* \$[0-9.]*$" sw.out &&
    "$SPOTRUN" show sw-0 | grep "^cost: .* at \$3600.00/h (recorded by the run)"
'

test_expect_success 'a price alone never changes a budget (sweep init --add)' '
    "$SPOTRUN" sweep init b --param lr=1 --max-cost 5 --price-per-hour 3 -- true &&
    "$SPOTRUN" sweep init b --add --param lr=2 --price-per-hour 4 -- true &&
    "$SPOTRUN" sweep show b --json >b.json &&
    "$PY" -c "import json; b = json.load(open(\"b.json\"))[\"budget\"]; \
        assert b[\"max_cost\"] == 5 and b[\"price_per_hour\"] == 4, b"
'

test_done
