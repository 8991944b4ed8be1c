#!/usr/bin/env bash
# An operator's kill is not a spot preemption: an attempt stopped by a
# SIGTERM from outside (or `spotrun notify`) still ends "preempted" and
# exits 75 (the Slurm rule), but the record keeps its notice's source, and
# stats counts only the clouds' notices (aws, gcp, azure) in PREEMPT,
# PER100H and MTBP-H; the others are SIG-STOP (signal_stops in --json and
# --csv). show names each stop's source.
. "$(dirname "$0")/lib.sh"

H=3600000
T0=1795996800000 # 2026-11-30T00:00:00Z

# A store of 2 runs, every attempt 2 hours: run c preempted by aws, then
# gcp, then done; run s stopped by a SIGTERM, by `spotrun notify`, preempted
# by azure, then done. 14 instance-hours, 3 cloud preemptions, 2 signal stops.
test_expect_success 'a store with cloud preemptions and signal stops' '
    "$PY" - "$TRASH/fleet" "$T0" "$H" <<-\PY
	import json, os, sys
	store, t, H = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
	def ev(kind, ms, i, **kw):
	    o = {"event": kind, "unix_ms": ms, "attempt": i}
	    o.update(kw)
	    return json.dumps(o)
	for run, ends in (("c", ["aws", "gcp", None]),
	                  ("s", ["signal:SIGTERM", "manual", "azure", None])):
	    os.makedirs(os.path.join(store, run, "events"))
	    for i, src in enumerate(ends):
	        end = t + 2 * H
	        lines = [ev("start", t, i, host="h", cloud="aws", zone="us-east-1a",
	                    instance_type="g5.xlarge")]
	        if src:
	            lines += [ev("notice", end - 60000, i, source=src, ms_left=60000),
	                      ev("exit", end, i, code=75), ev("preempted", end, i)]
	        else:
	            lines += [ev("exit", end, i, code=0), ev("done", end, i)]
	        open(os.path.join(store, run, "events", "%06d.jsonl" % i), "w").write(
	            "\n".join(lines) + "\n")
	        t = end + 60000
	    open(os.path.join(store, run, "DONE"), "w").close()
	PY
'

test_expect_success 'stats --json: 3 preemptions, 2 signal stops, rate and MTBP of the 3' '
    "$SPOTRUN" stats --store "$TRASH/fleet" --json >s.json &&
    "$PY" -c "import json; t = json.load(open(\"s.json\"))[\"total\"]; \
        assert t[\"preemptions\"] == 3 and t[\"signal_stops\"] == 2, t; \
        assert abs(t[\"instance_hours\"] - 14) < 1e-6, t; \
        assert abs(t[\"preemptions_per_100h\"] - 300 / 14) < 1e-5, t; \
        assert abs(t[\"mtbp_hours\"] - 14 / 3) < 1e-5, t; \
        assert t[\"ends\"][\"preempted\"] == 5, t"
'

test_expect_success 'stats: the table has a SIG-STOP column and says what it is' '
    "$SPOTRUN" stats --store "$TRASH/fleet" --by cloud >s.out &&
    cat s.out &&
    head -1 s.out | grep -E " PREEMPT +PER100H +MTBP-H +LOST-H +LOST\\$ +SIG-STOP " &&
    grep -E "^aws +2 +7 +14\.00 .* 3 +21\.43 +4\.7 +[0-9.]+ +- +2 " s.out &&
    grep "^SIG-STOP: 2 attempt(s) stopped by a signal" s.out
'

test_expect_success 'stats --csv: a signal_stops column' '
    "$SPOTRUN" stats --store "$TRASH/fleet" --csv >s.csv &&
    "$PY" -c "import csv; r = list(csv.DictReader(open(\"s.csv\")))[0]; \
        assert r[\"preemptions\"] == \"3\" and r[\"signal_stops\"] == \"2\", r"
'

test_expect_success 'show names each stop by its source' '
    "$SPOTRUN" show --store "$TRASH/fleet" s >show.out &&
    grep "^attempt 0 .*: preempted (signal:SIGTERM)" show.out &&
    grep "^attempt 1 .*: preempted (manual)" show.out &&
    grep "^attempt 2 .*: preempted (azure)" show.out
'

test_expect_success 'a real SIGTERM to the wrapper: exit 75, a signal stop in its summary and stats' '
    "$SPOTRUN" run --run-id live --grace 5s -- sh -c "echo ready; exec sleep 300" >live.log 2>&1 &
    pid=$! &&
    wait_for live.log "^ready" 60 &&
    kill -TERM $pid &&
    expect_code 75 wait $pid &&
    grep "\"notice_source\": *\"signal:SIGTERM\"" "$SPOTRUN_STORE/summaries/live.json" &&
    "$SPOTRUN" stats --json >live.json &&
    "$PY" -c "import json; t = json.load(open(\"live.json\"))[\"total\"]; \
        assert t[\"preemptions\"] == 0 and t[\"signal_stops\"] == 1, t"
'

test_done
