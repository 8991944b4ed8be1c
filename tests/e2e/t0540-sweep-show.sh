#!/usr/bin/env bash
# spotrun sweep show: one row per trial with its state (queued, running on
# HOST, preempted, done, failed with its cause), attempts and preemptions as
# `spotrun show` counts them, cost, and the last and best value of each
# metric the job reported; --sort, --maximize, --json; sweep report draws
# one lane per trial.
. "$(dirname "$0")/lib.sh"

# The trials' job: loss goes 2*lr, lr, 1.5*lr (last 1.5*lr, min lr); acc
# goes 1-lr, 1-lr/2 (last = max = 1-lr/2, min 1-lr); then it commits.
cat >job.sh <<'JOB'
#!/bin/sh
lr=$1
m() { awk "BEGIN { print $1 }"; }
"$SPOTRUN_BIN" metric --step 1 loss="$(m "2 * $lr")" acc="$(m "1 - $lr")"
"$SPOTRUN_BIN" metric --step 2 loss="$(m "$lr")" acc="$(m "1 - $lr / 2")"
"$SPOTRUN_BIN" metric --step 3 loss="$(m "1.5 * $lr")"
echo "$lr" >"$SPOTRUN_CKPT_DIR/w"
"$SPOTRUN_BIN" commit --step 3
JOB
# A job that reports, commits and then runs until it is stopped.
cat >long.sh <<'JOB'
#!/bin/sh
"$SPOTRUN_BIN" metric --step 1 loss=9
echo x >"$SPOTRUN_CKPT_DIR/w"
"$SPOTRUN_BIN" commit --step 1
echo ready
while :; do sleep 0.1; done
JOB
chmod +x job.sh long.sh

# rows: trial 0..7 = lr 0.5 0.5 0.2 0.2 0.4 0.4 0.3 0.3, seed 0 1 0 1 ...
test_expect_success 'a sweep of 8 trials' '
    "$SPOTRUN" sweep init sw --param lr=0.5,0.2,0.4,0.3 --param seed=0..1 -- \
        "$TRASH/job.sh" {lr}
'

test_expect_success 'trials 0, 2, 4 finish; 1 fails past --max-restarts 0' '
    for k in 0 2 4; do "$SPOTRUN" run --sweep sw --trial $k >run$k.log 2>&1 || exit 1; done &&
    expect_code 3 "$SPOTRUN" run --sweep sw --trial 1 --max-restarts 0 -- sh -c "exit 3" \
        >run1.log 2>&1
'

test_expect_success 'trial 3 is preempted by a notice and not resumed' '
    "$SPOTRUN" run --sweep sw --trial 3 --notice none -- "$TRASH/long.sh" >run3.log 2>&1 &
    pid=$!
    wait_for run3.log "^ready" 30 &&
    "$SPOTRUN" notify --run-id sw-3 --deadline 10s &&
    expect_code 75 wait $pid
'

# One body: the wrapper must be reaped (wait) by the shell that started it.
test_expect_success 'a trial being run is running on this host; killed -9, it is preempted' '
    "$SPOTRUN" run --sweep sw --trial 6 --notice none -- "$TRASH/long.sh" >run6.log 2>&1 &
    pid=$!
    wait_for run6.log "^ready" 30 &&
    "$SPOTRUN" sweep show sw >running.out &&
    cat running.out &&
    grep -E "^ +6 +0\.3 +0 +running on $(hostname) " running.out &&
    "$SPOTRUN" sweep show sw --json >running.json &&
    "$PY" -c "
import json, socket
t = json.load(open(\"running.json\"))[\"trials\"][6]
assert t[\"state\"] == \"running\" and t[\"host\"] == socket.gethostname(), t
" &&
    kill -9 $pid &&
    { wait $pid || :; } &&
    for _ in $(seq 100); do pgrep -f "$TRASH/long.sh" >/dev/null || break; sleep 0.05; done &&
    "$SPOTRUN" sweep show sw >show.out &&
    cat show.out &&
    grep -E "^ +6 +0\.3 +0 +preempted " show.out
'

row() { grep -E "^ +$1 " show.out; }

test_expect_success 'each row says the trial state and why its last attempt ended' '
    row 0 | grep -E "0\.5 +0 +done +done " &&
    row 1 | grep -E "0\.5 +1 +failed \(exit 3\) +crashed " &&
    row 2 | grep -E "0\.2 +0 +done +done " &&
    row 3 | grep -E "0\.2 +1 +preempted +preempted +1 +1 " &&
    row 4 | grep -E "0\.4 +0 +done +done " &&
    row 5 | grep -E "0\.4 +1 +queued +- +0 +0 " &&
    row 6 | grep -E "0\.3 +0 +preempted +vanished +1 +0 " &&
    row 7 | grep -E "0\.3 +1 +queued +- "
'

test_expect_success 'the header counts the trials per state' '
    grep "^trials: *2 queued, 0 running, 2 preempted, 3 done, 1 failed$" show.out
'

test_expect_success 'metrics: last/best per trial, a column per metric; acc is best largest' '
    head -n 8 show.out | grep -E "^TRIAL +lr +seed +STATE .* loss last/min +acc last/max$" &&
    row 0 | grep -E " 0\.75/0\.5 +0\.75/0\.75$" &&
    row 2 | grep -E " 0\.3/0\.2 +0\.9/0\.9$" &&
    row 3 | grep -E " 9/9 +-$" &&
    row 5 | grep -E " - +-$"
'

order() { awk "f { print \$1 } /^TRIAL/ { f = 1 }" | tr "\n" " "; }

test_expect_success '--sort loss: best (smallest) first, trials without it last' '
    "$SPOTRUN" sweep show sw --sort loss >sorted.out &&
    test "$(order <sorted.out)" = "2 4 0 3 6 1 5 7 "
'

test_expect_success 'acc: its best is the largest by its name, and sorts first; --minimize turns it' '
    "$SPOTRUN" sweep show sw --sort acc >acc-max.out &&
    test "$(order <acc-max.out)" = "2 4 0 1 3 5 6 7 " &&
    grep -E "acc last/max$" acc-max.out &&
    grep -E "^ +2 .* 0\.9/0\.9$" acc-max.out &&
    "$SPOTRUN" sweep show sw --sort acc --minimize acc >acc-min.out &&
    test "$(order <acc-min.out)" = "0 4 2 1 3 5 6 7 " &&
    grep -E "acc last/min$" acc-min.out &&
    "$SPOTRUN" sweep show sw --sort loss --maximize loss >loss-max.out &&
    test "$(order <loss-max.out)" = "3 6 0 4 2 1 5 7 " &&
    grep -E "loss last/max " loss-max.out
'

test_expect_success 'best: the done trial with the best final value of the sort metric, its step and parameters' '
    grep -E "^best: +trial 2 \(loss 0\.3 at step 3, min, final; lr=0\.2 seed=0\)$" show.out &&
    grep -E "^best: +trial 2 \(loss 0\.3 at step 3, min, final; lr=0\.2 seed=0\)$" sorted.out &&
    grep -E "^best: +trial 2 \(acc 0\.9 at step 2, max, final; lr=0\.2 seed=0\)$" acc-max.out &&
    grep -E "^best: +trial 0 \(acc 0\.75 at step 2, min, final; lr=0\.5 seed=0\)$" acc-min.out &&
    grep -E "^best: +trial 0 \(loss 0\.75 at step 3, max, final; lr=0\.5 seed=0\)$" loss-max.out &&
    "$SPOTRUN" sweep show sw --sort acc --json >best.json &&
    "$PY" -c "
import json
d = json.load(open(\"best.json\"))
assert d[\"best\"] == {\"trial\": 2, \"metric\": \"acc\", \"value\": 0.9, \"step\": 2, \"maximize\": True,
                     \"rule\": \"final\"}, d[\"best\"]
assert d[\"maximize\"] == [\"acc\"], d[\"maximize\"]
"
'

test_expect_success 'an unknown metric for --sort is a usage error (64)' '
    expect_code 64 "$SPOTRUN" sweep show sw --sort nosuch 2>err &&
    grep "no trial of sweep sw reported a metric \"nosuch\"" err
'

test_expect_success 'a missing sweep is 66' '
    expect_code 66 "$SPOTRUN" sweep show nosuch 2>err &&
    grep "no sweep nosuch" err
'

test_expect_success 'with prices: cost, the cost of preempted work and the saving' '
    "$SPOTRUN" sweep show sw --price-per-hour 2 --on-demand-price-per-hour 6 >cost.out &&
    grep -E "^cost: +\\\$[0-9.]+ at \\\$2\.00/h; preempted work \\\$[0-9.]+; on demand \\\$[0-9.]+: saved \\\$[0-9.]+ \(67%\)$" cost.out &&
    ! grep "^cost: *-" cost.out &&
    grep "give --price-per-hour" show.out
'

test_expect_success '--json: the trials, their states, metrics and totals' '
    "$SPOTRUN" sweep show sw --json --maximize acc --price-per-hour 2 \
        --on-demand-price-per-hour 6 >sw.json &&
    for k in 0 1 2 3 4 6; do "$SPOTRUN" show sw-$k --json >run$k.json || exit 1; done &&
    "$PY" - <<\PY
import json
d = json.load(open("sw.json"))
assert d["schema_version"] == 1 and d["sweep"] == "sw", d
assert d["params"] == ["lr", "seed"], d["params"]
assert d["counts"] == {"queued": 2, "running": 0, "preempted": 2, "done": 3, "failed": 1,
                       "stopped": 0, "cancelled": 0, "pruned": 0}, d["counts"]
t = d["trials"]
assert [x["trial"] for x in t] == list(range(8))
assert [x["state"] for x in t] == ["done", "failed", "done", "preempted", "done", "queued",
                                  "preempted", "queued"], [x["state"] for x in t]
assert t[2]["params"] == {"lr": "0.2", "seed": "0"} and t[2]["run_id"] == "sw-2"
for k in (0, 1, 2, 3, 4, 6):
    run = json.load(open("run%d.json" % k))
    assert t[k]["attempts"] == run["attempts"], (k, t[k]["attempts"], run["attempts"])
    assert t[k]["preemptions"] == run["preemptions"]["total"], k
    assert abs(t[k]["lost_work_seconds"] - run["lost_work_seconds"]) < 1e-6, k
    assert abs(t[k]["instance_hours"] - run["instance_hours"]) < 1e-9, k
    assert t[k]["host"] is None
    assert run["metrics"] == {} or "min" in list(run["metrics"].values())[0], run["metrics"]
assert t[3]["preemptions"] == 1 and t[3]["attempts"] == 1
assert t[1]["end"] == {"cause": "exit 3", "exit_code": 3}, t[1]["end"]
assert t[0]["end"] == {"cause": None, "exit_code": 0} and t[5]["end"] is None
assert [x["cause"] for x in t] == ["done", "crashed", "done", "preempted", "done", None,
                                  "vanished", None], [x["cause"] for x in t]
assert t[1]["cause_detail"] == "exit 3" and t[3]["cause_detail"] == "manual", t[3]
loss = t[2]["metrics"]["loss"]
assert loss["last"] == 0.3 and loss["best"] == 0.2 and loss["count"] == 3 and loss["last_step"] == 3, loss
acc = t[2]["metrics"]["acc"]
assert acc["last"] == 0.9 and acc["best"] == 0.9 and acc["count"] == 2, acc
assert t[5]["metrics"] == {} and t[5]["attempts"] == 0 and t[5]["cost"] == 0.0
tot = d["totals"]
hours = sum(x["instance_hours"] for x in t)
assert abs(tot["instance_hours"] - hours) < 1e-9, tot
assert abs(tot["cost"] - 2 * hours) < 1e-9 and abs(tot["on_demand_cost"] - 6 * hours) < 1e-9, tot
assert abs(tot["saving"] - 4 * hours) < 1e-9, tot
assert tot["preempted_cost"] >= 0
PY
'

test_expect_success '--json without prices: costs are null' '
    "$SPOTRUN" sweep show sw --json >plain.json &&
    "$PY" -c "
import json
d = json.load(open(\"plain.json\"))
assert d[\"totals\"][\"cost\"] is None and d[\"totals\"][\"saving\"] is None
assert all(t[\"cost\"] is None for t in d[\"trials\"])
"
'

test_expect_success 'sweep report: a well-formed SVG, one lane per trial' '
    "$SPOTRUN" sweep report sw -o sw.svg 2>err &&
    grep "wrote sw.svg (8 trials)" err &&
    test "$(svg_count sw.svg trial)" -eq 8 &&
    test "$(svg_count sw.svg "attempt done")" -eq 3 &&
    test "$(svg_count sw.svg "attempt failed")" -eq 1 &&
    test "$(svg_count sw.svg "attempt preempted")" -eq 2 &&
    test "$(svg_count sw.svg "attempt failed cause-crashed")" -eq 1 &&
    test "$(svg_count sw.svg "attempt preempted cause-vanished")" -eq 1 &&
    grep -q "failed, crashed (exit 3)" sw.svg &&
    test "$(svg_count sw.svg done-mark)" -eq 3 &&
    test "$(svg_count sw.svg fail-mark)" -eq 1 &&
    test "$(svg_count sw.svg notice)" -eq 1 &&
    test "$(svg_count sw.svg queued)" -eq 2 &&
    grep -q "lr=0.2 seed=1" sw.svg
'

test_expect_success 'sweep report -o sw.html: the picture and the table' '
    "$SPOTRUN" sweep report sw -o sw.html &&
    head -n 1 sw.html | grep -i "<!DOCTYPE html>" &&
    grep -q "<svg xmlns=" sw.html &&
    grep -q "2 queued, 0 running, 2 preempted, 3 done, 1 failed" sw.html
'

test_expect_success 'sweep report -o sw.html: the <pre> keeps its lines (a row per trial)' '
    "$PY" - sw.html <<-\PY
	import re, sys
	pre = re.search(r"<pre>(.*?)</pre>", open(sys.argv[1]).read(), re.S).group(1).split("\n")
	print("\n".join(pre))
	assert pre[0].startswith("sweep:       sw (8 trials"), pre[0]
	assert "trials:      2 queued, 0 running, 2 preempted, 3 done, 1 failed" in pre, pre
	assert sum(bool(re.match(r" +[0-7] +0\.[2-5] ", l)) for l in pre) == 8, pre
	PY
'

# One body, as above: the wrapper is reaped by the shell that started it.
test_expect_success 'a trial run by a multi-node group is running (its LEASE.0); sweep work leaves it' '
    "$SPOTRUN" run --sweep sw --trial 7 --nodes 2 --node-rank 0 --notice none -- \
        "$TRASH/long.sh" >run7.log 2>&1 &
    pid=$!
    wait_for run7.log "^ready" 30 &&
    "$SPOTRUN" sweep show sw >multi.out &&
    grep -E "^ +7 +0\.3 +1 +running on $(hostname) " multi.out &&
    "$SPOTRUN" sweep work sw --until-empty --poll 100ms >work.log 2>&1 &&
    "$SPOTRUN" show sw-7 --json >s7.json &&
    "$PY" -c "
import json
s = json.load(open(\"s7.json\"))
assert s[\"attempts\"] == 1, s[\"attempts\"]
" &&
    kill $pid && { wait $pid || :; }
'

# The search's progress: the best value against the trial-hours the ended
# trials cost, in the order they ended (run one by one here: 3, 1, 2, 0.5;
# trial 4 never runs).
test_expect_success 'search progress: the best so far over trial-hours, in show, --json and report' '
    "$SPOTRUN" sweep init prog --param x=3,1,2,0.5,9 -- \
        sh -c "\"\$SPOTRUN_BIN\" metric --step 1 loss={x}" >/dev/null &&
    for k in 0 1 2 3; do "$SPOTRUN" run --sweep prog --trial $k 2>/dev/null || return 1; done &&
    "$SPOTRUN" sweep show prog >prog.out &&
    cat prog.out &&
    grep -E "^search: +best loss 0.5 \(trial 3, final\) after ([0-9.]+) of \1 trial-hours; 4 of 5 trials ended$" prog.out &&
    "$SPOTRUN" sweep show prog --json >prog.json &&
    "$PY" -c "
import json
p = json.load(open(\"prog.json\"))[\"progress\"]
pts = p[\"points\"]
assert p[\"metric\"] == \"loss\" and p[\"maximize\"] is False, p
assert [q[\"trial\"] for q in pts] == [0, 1, 2, 3], pts
assert [q[\"best\"] for q in pts] == [3, 1, 1, 0.5], pts
assert [q[\"improved\"] for q in pts] == [True, True, False, True], pts
assert all(a[\"hours\"] < b[\"hours\"] for a, b in zip(pts, pts[1:])), pts
assert p[\"best_after_hours\"] == pts[3][\"hours\"] == p[\"hours\"], p
" &&
    "$SPOTRUN" sweep report prog -o prog.svg &&
    xmllint --noout prog.svg &&
    test "$(svg_count prog.svg improved)" -eq 3 &&
    grep "trial 3: loss 0.5 after" prog.svg &&
    "$SPOTRUN" sweep init none --param x=1 -- true >/dev/null &&
    "$SPOTRUN" sweep show none --json | "$PY" -c "import json, sys; assert json.load(sys.stdin)[\"progress\"] is None" &&
    ! "$SPOTRUN" sweep show none | grep "^search:"
'

test_done
