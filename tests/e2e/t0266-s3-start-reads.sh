#!/usr/bin/env bash
# A resumed `spotrun run` on S3 reads the run's history once at its start,
# whatever needs it (its limits, --every auto, --stall-timeout, the metrics
# file, the summary writer): each earlier event log is fetched once.
# Requests are counted by the test server (S3RVER_REQUEST_LOG, s3lib.sh's
# s3_count).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
s3_start

cat >job.sh <<'EOF'
#!/bin/sh
# A first attempt that commits and fails; a later one that finishes.
[ "$SPOTRUN_RESUMED" = 1 ] && exit 0
echo w >"$SPOTRUN_CKPT_DIR/w"
"$SPOTRUN_BIN" commit --step 1 || exit 3
exit 1
EOF
chmod +x job.sh

# The requests of `count` that GET one of run r's event logs.
log_gets() { grep -c "^GET GET /bkt/$test_name/r/events/" "$1" || true; }

test_expect_success 'a first run commits a checkpoint and fails' '
    expect_code 1 "$SPOTRUN" run --run-id r --max-restarts 0 -- ./job.sh >first.log 2>&1 &&
    grep "checkpoint 1 durable" first.log
'

test_expect_success 'its rerun resumes and GETs the earlier log once, every reader of the history served' '
    s3_count start.req "$SPOTRUN" run --run-id r --max-restarts 0 --every auto \
        --stall-timeout 1h --time-limit 10h --metrics-file m.prom -- ./job.sh >second.log 2>&1 &&
    grep "restored checkpoint 1" second.log &&
    grep "^spotrun_" m.prom &&
    cat start.req &&
    test "$(log_gets start.req)" = 1
'

test_expect_success 'the summary it wrote still counts the earlier attempt' '
    "$SPOTRUN" show --json r >show.json &&
    "$PY" -c "
import json, sys
s = json.load(open(\"show.json\"))
assert s[\"attempts\"] == 2, s[\"attempts\"]
" &&
    s3curl -f "$S3_URL/bkt/$test_name/summaries/r.json" >sum.json &&
    "$PY" -c "
import json
s = json.load(open(\"sum.json\"))
assert [a[\"attempt\"] for a in s[\"attempts\"]] == [0, 1], s
"
'

test_done
