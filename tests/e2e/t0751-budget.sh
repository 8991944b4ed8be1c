#!/usr/bin/env bash
# Budgets: --max-cost stops the run after a checkpoint (exit 124) once its
# instance hours, every attempt counted, cost that much at --price-per-hour
# or at its instance type's price in a --prices table. A price of 3600 an
# hour makes every second cost 1. A run that cannot be priced is refused at
# the start; so is a price table with a bad line (naming file:line).
. "$(dirname "$0")/lib.sh"

export PYTHONPATH=$SRCDIR/python SPOTRUN_NOTICE=none

# The trainer (tests/e2e/sumsteps.py): sums its steps, commits every 5
# and whenever asked.
cp "$SRCDIR/tests/e2e/sumsteps.py" train.py

test_expect_success 'a run at its --max-cost: a limit event with cause budget, its checkpoint durable, exit 124' '
    STEPS=150 expect_code 124 "$SPOTRUN" run --run-id b --max-cost 3 --price-per-hour 3600 -- \
        "$PY" train.py >b.log 2>&1 &&
    cat b.log &&
    grep "budget 3.00, 0.00 spent so far at 3600 per hour" b.log &&
    grep "run b reached the run.s budget: [0-9.]* of 3.00 spent; stopping after a checkpoint (give --max-cost larger to extend it)" b.log &&
    events b | grep "\"event\":\"limit\".*\"cause\":\"budget\",\"what\":\"run\",\"limit\":3.0" &&
    events b | sed -n "/\"event\":\"limit\"/,\$p" | grep "\"event\":\"persisted\"" &&
    test ! -e "$SPOTRUN_STORE/b/DONE" &&
    "$SPOTRUN" show b | grep "^limit: *budget reached: [0-9.]* of 3.00$" &&
    "$SPOTRUN" show b --json | "$PY" -c "
import json, sys
l = json.load(sys.stdin)[\"limit\"]
assert l[\"reached\"] and l[\"cause\"] == \"budget\" and l[\"what\"] == \"run\", l
assert l[\"limit\"] == 3.0 and l[\"used\"] >= 3.0, l
"
'

test_expect_success 'a rerun past its budget does not start; a larger --max-cost resumes it to the end' '
    STEPS=40 expect_code 124 "$SPOTRUN" run --run-id b --max-cost 3 --price-per-hour 3600 -- \
        "$PY" train.py >b2.log 2>&1 &&
    grep "spotrun run: run b has spent [0-9.]* of its budget (--max-cost 3.00): not starting (exit 124); give --max-cost larger to extend it" b2.log &&
    test "$(grep -c "^b " starts.log)" = 1 &&
    STEPS=40 "$SPOTRUN" run --run-id b --max-cost 1000 --price-per-hour 3600 -- \
        "$PY" train.py >b3.log 2>&1 &&
    test "$(grep "^b " starts.log | tail -n 1 | cut -d" " -f2)" -gt 0 &&
    test "$(cat result-b)" = "40 820" &&
    # under its budget, show says what it spent of it
    "$SPOTRUN" show b | grep "^limit: *budget: [0-9.]* of 1000.00$"
'

test_expect_success '--prices: the spot price of the run'"'"'s instance type is the price, recorded with the run' '
    cat >my.prices <<-\EOF &&
	# instance_type  spot  on_demand
	g5.xlarge        3600  7200   # a price per hour that makes seconds cost
	p3.2xlarge       0.95         # no on-demand price
	g4dn.xlarge      0.22  -
	EOF
    STEPS=150 expect_code 124 "$SPOTRUN" run --run-id p --prices my.prices \
        --instance-type g5.xlarge --max-cost 2 -- "$PY" train.py >p.log 2>&1 &&
    grep "budget 2.00, 0.00 spent so far at 3600 per hour" p.log &&
    events p | grep "\"event\":\"start\".*\"instance_type\":\"g5.xlarge\"" &&
    events p | grep "\"event\":\"limit\".*\"cause\":\"budget\""
'

test_expect_success 'the example price tables parse and price their instance types' '
    for t in aws:g5.xlarge gcp:a2-highgpu-1g azure:Standard_NC6s_v3; do
        "$SPOTRUN" run --run-id ex-${t%%:*} --prices "$SRCDIR/examples/prices/${t%%:*}.prices" \
            --instance-type ${t#*:} --max-cost 100 -- true 2>ex.log || { cat ex.log; exit 1; }
        grep "budget 100.00, 0.00 spent so far at" ex.log || exit 1
    done
'

# bad_prices NAME LINE WHAT: a price table NAME.prices is refused (64)
# naming NAME.prices:LINE and WHAT, and nothing of the run is made.
bad_prices() {
    expect_code 64 "$SPOTRUN" run --run-id bad --prices "$1.prices" --instance-type g5.xlarge \
        --max-cost 1 -- true 2>"$1.err" &&
    cat "$1.err" &&
    grep "spotrun run: --prices: $1.prices:$2: .*$3" "$1.err" &&
    test ! -e "$SPOTRUN_STORE/bad"
}

test_expect_success 'a bad line of a price table is refused naming file:line; nothing runs' '
    printf "g5.xlarge 0.45 1.0 extra\n" >fields.prices &&
    bad_prices fields 1 "got more fields" &&
    printf "# ok\n\ng5.xlarge\n" >noprice.prices &&
    bad_prices noprice 3 "got no price for \"g5.xlarge\"" &&
    printf "g5.xlarge cheap\n" >word.prices &&
    bad_prices word 1 "the spot price is not a price like 0.42: \"cheap\"" &&
    printf "g5.xlarge -1\n" >neg.prices &&
    bad_prices neg 1 "the spot price is not a price" &&
    printf "g5.xlarge 0.4 x\n" >od.prices &&
    bad_prices od 1 "the on-demand price is not a price" &&
    printf "g5.xlarge 0.4\ng5.xlarge 0.5\n" >twice.prices &&
    bad_prices twice 2 "instance type given twice: \"g5.xlarge\"" &&
    printf "g5\x01xl 0.4\n" >ctl.prices &&
    bad_prices ctl 1 "not an instance type" &&
    expect_code 64 "$SPOTRUN" run --run-id bad --prices no-such.prices -- true 2>missing.err &&
    grep "cannot read the price table no-such.prices" missing.err
'

test_expect_success 'a budget that cannot be priced is refused at the start, saying how to price it' '
    expect_code 64 "$SPOTRUN" run --run-id np --max-cost 5 -- true 2>np.err &&
    grep "spotrun run: --max-cost 5.00 needs a price per hour: give --price-per-hour, or --prices FILE" np.err &&
    expect_code 64 "$SPOTRUN" run --run-id np --max-cost 5 --prices my.prices -- true 2>np2.err &&
    grep "this instance.s type is unknown (no cloud metadata service told it), so my.prices cannot price it: give --instance-type TYPE" np2.err &&
    expect_code 64 "$SPOTRUN" run --run-id np --max-cost 5 --prices my.prices \
        --instance-type m5.large -- true 2>np3.err &&
    grep "instance type m5.large is not in my.prices: add it there, or give --price-per-hour" np3.err &&
    test ! -e "$SPOTRUN_STORE/np/events" &&
    SPOTRUN_MAX_COST=5 SPOTRUN_PRICE_PER_HOUR=1 "$SPOTRUN" run --run-id envtwin -- true 2>env.err &&
    grep "budget 5.00" env.err
'

. "$SRCDIR/tests/e2e/lib-metadata.sh"

test_expect_success 'with --prices and no --instance-type, the type comes from the cloud'"'"'s metadata (AWS, GCP, Azure)' '
    cat >clouds.prices <<-\EOF &&
	g5.xlarge                 3600
	a2-highgpu-1g             7200
	Standard_NC6s_v3          1800
	EOF
    for c in aws:g5.xlarge:3600 gcp:a2-highgpu-1g:7200 azure:Standard_NC6s_v3:1800; do
        cloud=${c%%:*} type=${c#*:} && type=${type%%:*} price=${c##*:} &&
        start_metadata $cloud &&
        case $cloud in
        aws) ep="--aws-imds $MD_URL" ;;
        gcp) ep="--gcp-metadata $MD_URL" ;;
        azure) ep="--azure-metadata $MD_URL" ;;
        esac &&
        "$SPOTRUN" run --run-id md-$cloud --notice $cloud $ep --prices clouds.prices \
            --max-cost 100 -- true 2>md-$cloud.log &&
        cat md-$cloud.log &&
        grep "instance type $type (from the cloud.s metadata)" md-$cloud.log &&
        grep "budget 100.00, 0.00 spent so far at $price per hour" md-$cloud.log &&
        cat "$SPOTRUN_STORE/md-$cloud"/events/*.jsonl | grep "\"instance_type\":\"$type\"" || exit 1
    done
'

test_done
