#!/usr/bin/env bash
# AWS: spotrun reads spot notices from IMDSv2 (token first), turns the
# instance-action into a checkpoint and exit 75, treats a rebalance
# recommendation as a checkpoint without a stop, and survives a broken
# metadata service.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-metadata.sh"
start_metadata aws
export SPOTRUN_NOTICE=aws SPOTRUN_AWS_IMDS=$MD_URL SPOTRUN_POLL_INTERVAL=200ms

test_expect_success 'uninterrupted reference run' '
    "$LOGREG" --steps 2000 --out ref.bin >/dev/null
'

test_expect_success 'a spot instance-action makes the job checkpoint and spotrun exit 75' '
    "$SPOTRUN" run --run-id aws1 -- "$LOGREG" --steps 2000 --save-every 0 --pace-ms 2 \
        --out w.bin >run1.log 2>&1 &
    wait_for run1.log "step 300 " &&
    md_control "notice?in=20" &&
    expect_code 75 wait $! &&
    grep "preemption notice from aws (spot instance-action terminate at .*): [0-9.]*s left" run1.log &&
    grep "checkpoint requested at step" run1.log &&
    grep "preempted: checkpoint 1 is durable" run1.log &&
    test ! -e w.bin
'

test_expect_success 'every metadata read carried an IMDSv2 token' '
    md_get stats >stats.json &&
    grep "\"PUT /latest/api/token\": [1-9]" stats.json &&
    ! grep "status 401" stats.json
'

test_expect_success 'the notice is in the event log with its deadline' '
    grep "\"event\":\"notice\"" "$SPOTRUN_STORE"/aws1/events/*.jsonl >notice.json &&
    grep "\"source\":\"aws\"" notice.json && grep "\"deadline_unix_ms\"" notice.json
'

test_expect_success 'rerun resumes and ends bit-exact with the reference' '
    md_control clear &&
    "$SPOTRUN" run --run-id aws1 -- "$LOGREG" --steps 2000 --save-every 0 --out w.bin >run2.log 2>&1 &&
    grep "resumed from step" run2.log &&
    cmp ref.bin w.bin
'

test_expect_success 'an expired IMDSv2 token is renewed at once and no notice is missed' '
    "$SPOTRUN" run --run-id aws5 -- "$LOGREG" --steps 100000 --save-every 0 --pace-ms 2 \
        >run6.log 2>&1 &
    pid=$!
    wait_for run6.log "step 100 " &&
    puts=$(md_get stats | "$PY" -c "import json,sys; print(json.load(sys.stdin)[\"PUT /latest/api/token\"])") &&
    md_control revoke-tokens &&
    i=0 &&
    until md_get stats >stats2.json &&
        "$PY" -c "import json,sys; s=json.load(open(\"stats2.json\")); sys.exit(not s[\"PUT /latest/api/token\"] > $puts)"; do
        i=$((i + 1)); [ $i -le 300 ] || { say "timed out waiting for a new IMDSv2 token (PUTs: $puts)"; exit 1; }
        sleep 0.1
    done &&
    ! grep -i "warning" run6.log &&
    md_control "notice?in=20" &&
    expect_code 75 wait $pid &&
    grep "preemption notice from aws" run6.log &&
    md_control clear
'

test_expect_success 'a rebalance recommendation checkpoints without stopping the job' '
    "$SPOTRUN" run --run-id aws2 -- "$LOGREG" --steps 100000 --save-every 0 --pace-ms 2 \
        >run3.log 2>&1 &
    pid=$!
    wait_for run3.log "step 200 " &&
    md_control rebalance &&
    wait_for run3.log "checkpoint 1 durable" &&
    grep "rebalance recommendation from aws: asking the job to checkpoint (it keeps running)" run3.log &&
    sleep 0.5 &&
    kill -0 $pid &&
    "$SPOTRUN" notify --run-id aws2 --deadline 20s &&
    expect_code 75 wait $pid &&
    md_control clear
'

# wait_more FILE PATTERN N: waits until FILE has more than N lines matching PATTERN.
wait_more() { wait_lines "$1" "$2" $(($3 + 1)) 30; }

test_expect_success 'malformed, oversized, wrongly typed and slow answers are warnings, not crashes or hangs' '
    "$SPOTRUN" run --run-id aws3 -- "$LOGREG" --steps 100000 --save-every 0 --pace-ms 2 \
        >run4.log 2>&1 &
    pid=$!
    wait_for run4.log "step 100 " &&
    md_control "malformed?mode=garbage" &&
    wait_for run4.log "ignoring a malformed spot/instance-action answer" &&
    md_control "malformed?mode=huge" &&
    wait_for run4.log "answer too large" &&
    md_control "malformed?mode=wrongtype" &&
    sleep 0.5 &&
    kill -0 $pid &&
    md_control "malformed?mode=ok" &&
    sleep 1.5 &&
    seen=$(grep -c "ignoring a malformed spot/instance-action answer" run4.log) &&
    md_control "malformed?mode=html" &&
    wait_more run4.log "ignoring a malformed spot/instance-action answer" "$seen" &&
    md_control "malformed?mode=slowloris" &&
    wait_for run4.log "instance-action: Operation timed out after" &&
    sleep 5 &&
    test "$(grep -c "instance-action: Operation timed out after" run4.log)" = 1 &&
    kill -0 $pid &&
    md_control "malformed?mode=ok" &&
    md_control "notice?in=20" &&
    expect_code 75 wait $pid &&
    grep "checkpoint 1 is durable" run4.log &&
    md_control clear
'

test_expect_success 'a token request that times out names the hop limit and falls back to IMDSv1' '
    trap "md_control token-hang?on=0; md_control imdsv1?on=0" EXIT
    md_control "token-hang?on=1" && md_control "imdsv1?on=1" || exit 1
    "$SPOTRUN" run --run-id aws4 -- "$LOGREG" --steps 100000 --save-every 0 --pace-ms 2 \
        >run5.log 2>&1 &
    pid=$!
    wait_for run5.log "using IMDSv1" &&
    grep "IMDSv2 token request .* timed out: .*hop limit (raise it to 2" run5.log &&
    md_control "notice?in=20" &&
    expect_code 75 wait $pid &&
    grep "checkpoint 1 is durable" run5.log
'

test_expect_success 'the test IMDS refuses a request without a token (401)' '
    test "$(curl -s -o /dev/null -w "%{http_code}" "$MD_URL/latest/meta-data/instance-id")" = 401
'

test_done
