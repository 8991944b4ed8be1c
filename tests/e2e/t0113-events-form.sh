#!/usr/bin/env bash
# What a user reads in the record: event logs and `show --events` print
# numbers in their shortest form that reads back the same (0.1, not
# 0.10000000000000001) and leave out fields without a value (no nulls); and
# `show` says when a killed attempt's last stderr lines were written.
. "$(dirname "$0")/lib.sh"

FAKENVML=${FAKENVML:-$SRCDIR/build/tests/fakenvml}
UA=GPU-aaaaaaaa-1111-2222-3333-444444444444
# one GPU that reports no power ("-"): its gpu event has no power figure
cat >nopower.trace <<T
gpu $UA 1000 - 10,10,10,10,10
after lost
T

test_expect_success 'a run that reports 0.1 and 0.30000000000000004, on a GPU without power' '
    LD_LIBRARY_PATH=$FAKENVML FAKENVML_TRACE=$TRASH/nopower.trace FAKENVML_LOG=$TRASH/nvml.log \
        CUDA_VISIBLE_DEVICES=$UA SPOTRUN_GPU_SAMPLE_MS=20 "$SPOTRUN" run --run-id n -- \
        sh -c "\"\$SPOTRUN_BIN\" metric loss=0.1 acc=0.30000000000000004 &&
               echo x >\"\$SPOTRUN_CKPT_DIR/f\" &&
               i=0; while ! grep -q lost \"$TRASH/nvml.log\" 2>/dev/null; do
                   sleep 0.05; i=\$((i+1)); [ \$i -lt 600 ] || exit 9; done" >run.log 2>&1 &&
    events n >log &&
    grep "\"event\":\"gpu\"" log
'

# shortest FILE: every real number of FILE's event lines (a JSON number with
# a point or an exponent) is written as Python's repr writes it: the
# shortest form that reads back as the same double
shortest() {
    "$PY" - "$1" <<-\PYEOF
	import json, sys
	bad = []
	for line in open(sys.argv[1]):
	    json.loads(line, parse_float=lambda t: bad.append(t) if t != repr(float(t)) else None)
	print("not shortest:", bad)
	sys.exit(1 if bad else 0)
	PYEOF
}

test_expect_success 'the event log: shortest numbers, exact where they need every digit' '
    grep "\"name\":\"loss\",\"value\":0.1}" log &&
    grep "\"name\":\"acc\",\"value\":0.30000000000000004}" log &&
    grep "\"util_mean\":10.0," log &&
    shortest log
'

test_expect_success 'the event log has no null fields' '
    if grep -n ":null" log; then say "a field without a value is written as null"; false; fi
'

test_expect_success 'show --events prints the same short numbers' '
    "$SPOTRUN" show n --events >ev.out && cat ev.out &&
    grep "name=loss value=0.1$" ev.out &&
    grep "name=acc value=0.30000000000000004$" ev.out &&
    grep " util_mean=10.0 " ev.out &&
    grep -E " persisted .* seconds=[0-9.]+$" ev.out >persisted &&
    if grep -E "seconds=[0-9]+\.[0-9]{10,}$" persisted; then say "binary noise in show --events"; false; fi
'

test_expect_success 'show: a killed attempt says when its last stderr lines were written' '
    expect_code 137 "$SPOTRUN" run --run-id k --max-restarts 0 -- \
        sh -c "echo loading the data >&2; sleep 2; kill -9 \$\$" >k.log 2>&1 &&
    "$SPOTRUN" show k >k.out && cat k.out &&
    grep -E "^  its stderr ended with \(written at [0-9T:-]+Z, [0-9.]+s before it ended\):$" k.out &&
    grep "^    | loading the data$" k.out &&
    "$SPOTRUN" show k --json >k.json &&
    json k.json "
a = d[\"attempt_list\"][0]
assert a[\"tail_at\"] and a[\"tail_at\"].endswith(\"Z\"), a[\"tail_at\"]
"
'

test_done
