#!/usr/bin/env bash
# Metrics the job reports (`spotrun metric`, spotrun_metric() of the C API)
# land in the run's event log with their step; bad names and values are
# usage errors; outside a wrapper there is nobody to tell.
. "$(dirname "$0")/lib.sh"

metrics() { cat "$SPOTRUN_STORE/$1"/events/*.jsonl | grep '"event":"metric"'; }

test_expect_success 'spotrun metric records each NAME=VALUE with its step' '
    "$SPOTRUN" run --run-id cli --max-restarts 0 -- \
        sh -c "\$SPOTRUN_BIN metric --step 7 loss=0.3125 acc=91 && \$SPOTRUN_BIN metric delta=-1.5e-3" \
        >cli.log 2>&1 &&
    metrics cli >cli.ev &&
    cat cli.ev &&
    test "$(wc -l <cli.ev)" -eq 3 &&
    grep "\"name\":\"loss\"" cli.ev | grep "\"value\":0.3125" | grep "\"step\":7" &&
    grep "\"name\":\"acc\"" cli.ev | grep "\"value\":91" &&
    grep "\"name\":\"delta\"" cli.ev | grep "\"value\":-0.0015" | grep -v "\"step\""
'

test_expect_success 'show: each metric'"'"'s last value and its best, with their steps' '
    "$SPOTRUN" run --run-id cur --max-restarts 0 -- sh -c "
        \$SPOTRUN_BIN metric --step 1 loss=0.9 val_acc=0.5 &&
        \$SPOTRUN_BIN metric --step 2 loss=0.4 val_acc=0.8 &&
        \$SPOTRUN_BIN metric --step 3 loss=0.6 val_acc=0.7 && \$SPOTRUN_BIN metric lr=0.1" \
        >cur.log 2>&1 &&
    "$SPOTRUN" show cur >cur.show &&
    cat cur.show &&
    grep -E "^metrics: +loss +last 0\.6 at step 3, best 0\.4 at step 2 \(min; 3 values\)$" cur.show &&
    grep -E "^ +val_acc +last 0\.7 at step 3, best 0\.8 at step 2 \(max; 3 values\)$" cur.show &&
    grep -E "^ +lr +last 0\.1, best 0\.1 \(min; 1 value\)$" cur.show
'

test_expect_success 'show --json: the old metric fields, and best, best_step, maximize' '
    "$SPOTRUN" show cur --json >cur.json &&
    "$PY" -c "
import json
m = json.load(open(\"cur.json\"))[\"metrics\"]
l, a = m[\"loss\"], m[\"val_acc\"]
assert (l[\"last\"], l[\"min\"], l[\"max\"], l[\"count\"], l[\"last_step\"]) == (0.6, 0.4, 0.9, 3, 3), l
assert (l[\"best\"], l[\"best_step\"], l[\"maximize\"], l[\"min_step\"], l[\"max_step\"]) == (0.4, 2, False, 2, 1), l
assert (a[\"best\"], a[\"best_step\"], a[\"maximize\"]) == (0.8, 2, True), a
assert m[\"lr\"][\"best_step\"] is None and m[\"lr\"][\"last_step\"] is None, m
"
'

test_expect_success 'ls --long: a METRICS column of the first two metrics; --metric picks' '
    "$SPOTRUN" ls >ls.out &&
    ! grep METRICS ls.out &&
    "$SPOTRUN" ls -l >ls-l.out &&
    head -n 1 ls-l.out | grep -E "CREATED +METRICS$" &&
    grep -E "^cur .* loss=0\.6 val_acc=0\.7$" ls-l.out &&
    grep -E "^cli .* loss=0\.3125 acc=91$" ls-l.out &&
    "$SPOTRUN" ls --metric lr --metric val_acc >ls-m.out &&
    grep -E "^cur .* lr=0\.1 val_acc=0\.7$" ls-m.out &&
    grep -E "^cli .* lr=- val_acc=-$" ls-m.out &&
    expect_code 64 "$SPOTRUN" ls --metric a --metric b --metric c 2>ls.err &&
    grep "at most 2 --metric" ls.err
'

test_expect_success 'the C API records a metric (ctypes, through the shim)' '
    cat >capi.py <<\PY &&
import ctypes
lib = ctypes.CDLL(None)
lib.spotrun_metric.argtypes = (ctypes.c_char_p, ctypes.c_double, ctypes.c_long)
# one write (PYTHONUNBUFFERED makes each argument of print a write of its
# own, and the wrapper logs into the same file meanwhile)
print("ok %d bad %d nan %d" % (lib.spotrun_metric(b"lr", 0.25, 12),
      lib.spotrun_metric(b"l r", 1.0, 1), lib.spotrun_metric(b"lr", float("nan"), 1)))
PY
    "$SPOTRUN" run --run-id capi --max-restarts 0 -- "$PY" capi.py >capi.log 2>&1 &&
    grep "ok 0 bad -22 nan -22" capi.log &&
    metrics capi | grep "\"name\":\"lr\"" | grep "\"value\":0.25" | grep "\"step\":12"
'

test_expect_success 'bad metrics are usage errors and record nothing' '
    i=0
    for bad in loss=nan loss=inf loss=0x10 "loss=1 2" =1 "lo ss=1" loss= loss; do
        i=$((i + 1))
        "$SPOTRUN" run --run-id bad$i --max-restarts 0 -- \
            sh -c "\$SPOTRUN_BIN metric \"\$0\"; echo rc=\$?" "$bad" >bad.log 2>&1
        grep -q "rc=64" bad.log || { echo "accepted: $bad"; cat bad.log; exit 1; }
        ! metrics bad$i || exit 1
    done
'

test_expect_success 'outside a wrapper: a clear usage error' '
    expect_code 64 "$SPOTRUN" metric loss=1 2>out.err &&
    grep "not running under .spotrun run." out.err
'

test_done
