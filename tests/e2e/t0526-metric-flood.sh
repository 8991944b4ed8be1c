#!/usr/bin/env bash
# Metric volume: a job that reports values faster and longer than any view
# needs gets a bounded event log (every value up to a budget per name, then
# a doubling stride), and its last and best values stay exact; a log past
# the readers' size limit (an older wrapper's) still says how the attempt
# ended and how long it ran (docs/events.md, "Metric volume").
. "$(dirname "$0")/lib.sh"

cat >flood.py <<\PY
import ctypes
lib = ctypes.CDLL(None)
lib.spotrun_metric.argtypes = (ctypes.c_char_p, ctypes.c_double, ctypes.c_long)
n = 3000
for step in range(n):
    loss = 1.0 + (step % 7) / 8.0
    acc = 0.5 + (step % 5) / 100.0
    if step == 2222:  # the bests, among values the log thins out
        loss = 0.001
    if step == 2223:
        acc = 0.999
    if step == n - 1:
        loss, acc = 1.5, 0.52
    assert lib.spotrun_metric(b"loss", loss, step) == 0
    assert lib.spotrun_metric(b"val_acc", acc, step) == 0
    assert lib.spotrun_metric(b"lr", 0.0001 * (step + 1), step) == 0
PY

test_expect_success 'a flood of metrics: the log keeps a bounded share of them' '
    SPOTRUN_METRIC_BUDGET=20 "$SPOTRUN" run --run-id flood --max-restarts 0 -- \
        "$PY" flood.py >flood.log 2>&1 &&
    lines=$(grep -c "\"event\":\"metric\"" "$SPOTRUN_STORE"/flood/events/000000.jsonl) &&
    echo "$lines metric lines for 9000 values" &&
    test "$lines" -lt 600 &&
    test "$(grep -c "\"event\":\"metric_summary\"" "$SPOTRUN_STORE"/flood/events/000000.jsonl)" -eq 3
'

test_expect_success 'show: the state, the cause, and the last and best values exactly' '
    "$SPOTRUN" show flood >flood.show &&
    cat flood.show &&
    grep -E "^state: +done$" flood.show &&
    grep -E "^causes: +1 done$" flood.show &&
    grep -E "^metrics: +loss +last 1\.5 at step 2999, best 0\.001 at step 2222 \(min; 3000 values\)$" flood.show &&
    grep -E "^ +val_acc +last 0\.52 at step 2999, best 0\.999 at step 2223 \(max; 3000 values\)$" flood.show &&
    grep -E "^ +lr +last 0\.3 at step 2999, best 0\.0001 at step 0 \(min; 3000 values\)$" flood.show
'

test_expect_success 'a bad SPOTRUN_METRIC_BUDGET is said and the default used' '
    SPOTRUN_METRIC_BUDGET=0 "$SPOTRUN" run --run-id badbudget --max-restarts 0 -- \
        "$SPOTRUN" metric --step 1 loss=2 >bad.log 2>&1 &&
    grep "ignoring SPOTRUN_METRIC_BUDGET: not a number of values from 1 to" bad.log &&
    "$SPOTRUN" show badbudget | grep -E "^metrics: +loss +last 2 at step 1"
'

# An attempt of 2 hours whose log is 66 MiB of metric lines between its
# start and its end (more than a reader takes whole).
cat >big.py <<\PY
import json, os
d = os.path.join(os.environ["SPOTRUN_STORE"], "big", "events")
os.makedirs(d)
t0 = 1767225600000  # 2026-01-01T00:00:00Z
def line(ev, t, **kw):
    o = {"event": ev, "time": "2026-01-01T00:00:00Z", "unix_ms": t, "attempt": 0}
    o.update(kw)
    return json.dumps(o, separators=(",", ":")) + "\n"
with open(os.path.join(d, "000000.jsonl"), "w") as f:
    f.write(line("start", t0, host="bighost", pid=1, resumed=False, seq=0, step=-1,
                 argv=["train"], price_per_hour=2.0))
    m = line("metric", t0 + 1000, name="loss", value=0.75, step=1)
    f.write(m * ((66 << 20) // len(m) + 1))
    f.write(line("metric", t0 + 7200000 - 1, name="loss", value=0.25, step=99))
    f.write(line("exit", t0 + 7200000, code=3))
PY

test_expect_success 'a log past the size limit: its start, end, cause and hours still read' '
    "$PY" big.py &&
    test "$(stat -c %s "$SPOTRUN_STORE"/big/events/000000.jsonl)" -gt $((64 << 20)) &&
    "$SPOTRUN" show big >big.show 2>big.err &&
    cat big.show big.err &&
    grep -E "^state: +failed$" big.show &&
    grep -E "^causes: +1 crashed$" big.show &&
    grep "(2.0000 instance-hours in 1 session(s))" big.show &&
    grep -E "^metrics: +loss +last 0\.25 at step 99" big.show &&
    grep "big/events/000000.jsonl is 66 MiB: read its first and last 8 MiB only" big.err
'

test_expect_success 'stats counts that attempt without a summary' '
    test ! -e "$SPOTRUN_STORE"/summaries/big.json &&
    "$SPOTRUN" stats --prefix big >big.stats 2>&1 &&
    cat big.stats &&
    grep -E "^ +1 +1 +2\.00 .* crashed 1$" big.stats
'

test_expect_success 'a rerun with a budget counts its hours' '
    "$SPOTRUN" run --run-id big --max-cost 100 --price-per-hour 2 -- true >rerun.log 2>&1 &&
    cat rerun.log &&
    grep "budget 100.00, 4.00 spent so far at 2 per hour" rerun.log
'

test_done
