#!/usr/bin/env bash
# --metrics-file keeps a Prometheus text file of the run's counters, and
# --log-format json makes spotrun's own lines JSON objects.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/obs-scenario.sh"

# metric NAME [LABEL=VALUE]: the value of a sample in m.jsonl ("" when absent)
metric() {
    "$PY" -c "
import json, sys
want = dict(a.split(\"=\", 1) for a in sys.argv[2:])
for line in open(\"m.jsonl\"):
    s = json.loads(line)
    if s[\"name\"] == sys.argv[1] and all(s[\"labels\"].get(k) == v for k, v in want.items()):
        v = s[\"value\"]; print(int(v) if v == int(v) else v); break
" "$@"
}

test_expect_success 'the metrics file is valid exposition format after the preemption' '
    obs_first_run m --metrics-file "$TRASH/run.prom" &&
    "$PY" "$SRCDIR/tests/e2e/promcheck.py" run.prom >m.jsonl &&
    test "$(metric spotrun_state state=preempted)" = 1 &&
    test "$(metric spotrun_preemptions_total run=m)" = 1 &&
    test "$(metric spotrun_preemptions_by_source_total source=manual)" = 1 &&
    test "$(metric spotrun_restarts_total)" = 1 &&
    test "$(metric spotrun_failures_by_cause_total "cause=exit 3")" = 1
'

test_expect_success 'after the rerun the counters cover the whole run' '
    obs_second_run m --metrics-file "$TRASH/run.prom" &&
    "$PY" "$SRCDIR/tests/e2e/promcheck.py" run.prom >m.jsonl &&
    n=$(ls "$SPOTRUN_STORE/m/ckpt" | wc -l) &&
    test "$(metric spotrun_state state=done)" = 1 &&
    test "$(metric spotrun_attempts_total)" = 3 &&
    test "$(metric spotrun_preemptions_total)" = 1 &&
    test "$(metric spotrun_restarts_total)" = 1 &&
    test "$(metric spotrun_checkpoints_total phase=staged)" = "$n" &&
    test "$(metric spotrun_checkpoints_total phase=durable)" = "$n" &&
    test "$(metric spotrun_checkpoint_stage_seconds_count)" = "$n" &&
    test "$(metric spotrun_checkpoint_persist_seconds_bucket le=+Inf)" = "$n" &&
    stored=$(du -cb "$SPOTRUN_STORE"/m/ckpt/*/data.tar.zst | tail -n 1 | cut -f1) &&
    test "$(metric spotrun_checkpoint_bytes_total kind=stored)" = "$stored" &&
    test -n "$(metric spotrun_last_checkpoint_age_seconds)" &&
    "$PY" -c "import sys; assert float(sys.argv[1]) > 0" "$(metric spotrun_lost_work_seconds_total)"
'

test_expect_success 'no temporary files are left beside it' '
    test "$(ls "$TRASH" | grep -c "run.prom")" -eq 1
'

test_expect_success 'the job'"'"'s metrics: newest value, its step and the best; a planted name with quotes is left out' '
    mkdir -p "$SPOTRUN_STORE/jm/events" &&
    printf "%s\n" "{\"event\":\"metric\",\"time\":\"x\",\"unix_ms\":1700000000000,\"attempt\":0,\"name\":\"we\\\"ird\\\\n\\nme\",\"value\":2.5,\"step\":4}" \
        >"$SPOTRUN_STORE/jm/events/000000.jsonl" &&
    cat "$SPOTRUN_STORE/jm/events/000000.jsonl" &&
    "$SPOTRUN" run --run-id jm --max-restarts 0 --metrics-file "$TRASH/jm.prom" -- sh -c "
        \$SPOTRUN_BIN metric --step 900 loss=0.31 val_acc=0.5 &&
        \$SPOTRUN_BIN metric --step 950 loss=0.35 val_acc=0.75 && \$SPOTRUN_BIN metric lr=0.1" \
        >jm.log 2>&1 &&
    grep "^spotrun_job_metric{run=\"jm\",name=\"loss\"} 0.35$" jm.prom &&
    "$PY" "$SRCDIR/tests/e2e/promcheck.py" jm.prom >m.jsonl &&
    test "$(metric spotrun_job_metric name=loss)" = 0.35 &&
    test "$(metric spotrun_job_metric_step name=loss)" = 950 &&
    test "$(metric spotrun_job_metric_best name=loss)" = 0.31 &&
    test "$(metric spotrun_job_metric_best name=val_acc)" = 0.75 &&
    test "$(metric spotrun_job_metric name=lr)" = 0.1 &&
    test -z "$(metric spotrun_job_metric_step name=lr)" &&
    test "$(grep -c "^spotrun_job_metric{" jm.prom)" = 3 &&
    ! grep -q "ird" jm.prom
'

test_expect_success 'the checker refuses what the format forbids' '
    printf "a_total{x=\"1\"} 1\nb 2\na_total{x=\"2\"} 3\n" >bad1.prom &&
    ! "$PY" "$SRCDIR/tests/e2e/promcheck.py" bad1.prom &&
    printf "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n" >bad2.prom &&
    ! "$PY" "$SRCDIR/tests/e2e/promcheck.py" bad2.prom &&
    printf "x{a=\"b} 1\n" >bad3.prom &&
    ! "$PY" "$SRCDIR/tests/e2e/promcheck.py" bad3.prom
'

test_expect_success '--log-format json: every line of spotrun is a JSON object' '
    "$SPOTRUN" run --run-id j --notice none --log-format json -- "$LOGREG" --steps 600 \
        --save-every 300 >j.out 2>j.err &&
    grep -q "final weights" j.out &&
    "$PY" -c "
import json
lines = open(\"j.err\").read().splitlines()
assert lines
for l in lines:
    o = json.loads(l)
    assert set(o) == {\"time\", \"level\", \"msg\"}, o
    assert o[\"level\"] in (\"warning\", \"info\", \"debug\") and o[\"time\"].endswith(\"Z\")
assert any(\"run j done\" in json.loads(l)[\"msg\"] for l in lines)
"
'

test_expect_success 'SPOTRUN_LOG_FORMAT=json is its twin; a bad format is a usage error' '
    SPOTRUN_LOG_FORMAT=json "$SPOTRUN" run --run-id j2 --notice none -- true 2>j2.err &&
    "$PY" -c "import json; [json.loads(l) for l in open(\"j2.err\")]" &&
    expect_code 64 "$SPOTRUN" run --log-format xml -- true
'

test_done
