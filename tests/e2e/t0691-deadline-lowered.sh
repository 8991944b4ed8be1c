#!/usr/bin/env bash
# One deadline for a stop, whichever source brings it earlier: a job that
# hears the checkpoint request but never commits is stopped by the newest
# (earliest) deadline, not the first notice's commit window. Each source
# that lowers it while a stop is under way: a second `spotrun notify`, the
# wrapper's SIGTERM with --grace, and a notice during a time limit's stop.
# (The cloud's notice: t0692; another node's: t0693.) The times compared
# are the wrapper's own, in its event log; the first deadline is 60 s, the
# newest 3 s, and the bound 30 s leaves a loaded machine plenty.
. "$(dirname "$0")/lib.sh"

export SPOTRUN_NOTICE=none

# Listens (a handler for the request's signal) and says when asked; never
# commits.
cat >hears.sh <<\EOF2
#!/bin/bash
trap 'echo asked >>asked-$RUN' USR1
echo ready
while :; do sleep 0.05; done
EOF2
chmod +x hears.sh

# stopped_within RUN EVENT MS: the wrapper's last "exit" event came less
# than MS after its first EVENT event (both on its clock); says both.
stopped_within() {
    events "$1" | "$PY" -c '
import json, sys
ev, limit = sys.argv[1], int(sys.argv[2])
rows = [json.loads(l) for l in sys.stdin if l.strip()]
first = next(r["unix_ms"] for r in rows if r["event"] == ev)
end = [r["unix_ms"] for r in rows if r["event"] == "exit"][-1]
print("%s -> exit: %d ms (bound %d ms)" % (ev, end - first, limit))
sys.exit(0 if end - first < limit else 1)
' "$2" "$3"
}

test_expect_success 'a second, shorter notify: the job is stopped by its deadline, not the first one' '
    RUN=two "$SPOTRUN" run --run-id two -- ./hears.sh >two.log 2>&1 &
    pid=$!
    wait_for two.log "^ready" &&
    "$SPOTRUN" notify --run-id two --deadline 60s &&
    wait_for asked-two asked &&
    "$SPOTRUN" notify --run-id two --deadline 10m &&
    "$SPOTRUN" notify --run-id two --deadline 3s &&
    expect_code 75 wait $pid &&
    cat two.log &&
    stopped_within two notice 30000 &&
    grep "the stop.s deadline comes earlier (manual): [0-9.]*s left" two.log &&
    # the longer one in between moved nothing: one lowering, to the 3 s
    events two | grep "\"event\":\"deadline\"" >lowered &&
    test "$(wc -l <lowered)" = 1 &&
    grep "\"source\":\"manual\"" lowered &&
    "$PY" -c "import json; d = json.load(open(\"lowered\")); assert d[\"ms_left\"] <= 3000, d"
'

test_expect_success 'SIGTERM to the wrapper with --grace 3s after a 60 s notify: stopped by the grace' '
    RUN=term "$SPOTRUN" run --run-id term --grace 3s -- ./hears.sh >term.log 2>&1 &
    pid=$!
    wait_for term.log "^ready" &&
    "$SPOTRUN" notify --run-id term --deadline 60s &&
    wait_for asked-term asked &&
    kill -TERM $pid &&
    expect_code 75 wait $pid &&
    cat term.log &&
    stopped_within term notice 30000 &&
    grep "the stop.s deadline comes earlier (signal:SIGTERM)" term.log
'

test_expect_success 'a notice during a time limit'\''s stop (--grace 60s): stopped by the notice, exit 124' '
    RUN=lim expect_code 124 "$SPOTRUN" run --run-id lim --time-limit 1s --grace 60s -- \
        ./hears.sh >lim.log 2>&1 &
    pid=$!
    wait_for lim.log "reached the run.s time limit" &&
    wait_for asked-lim asked &&
    "$SPOTRUN" notify --run-id lim --deadline 3s &&
    wait $pid &&
    cat lim.log &&
    stopped_within lim limit 30000 &&
    grep "the stop.s deadline comes earlier (manual)" lim.log
'

test_done
