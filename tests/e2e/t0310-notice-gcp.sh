#!/usr/bin/env bash
# GCP: --notice auto finds the metadata server, a long poll on
# instance/preempted turns TRUE into a checkpoint and exit 75 within GCP's
# 30 s, a maintenance-event TERMINATE is a notice and its return to NONE
# withdraws it, and a broken server is only a warning.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-metadata.sh"
start_metadata gcp
# auto probes exactly the endpoints given; only the GCP one answers as GCP.
export SPOTRUN_NOTICE=auto SPOTRUN_AWS_IMDS=$MD_URL SPOTRUN_GCP_METADATA=$MD_URL \
    SPOTRUN_AZURE_METADATA=$MD_URL SPOTRUN_POLL_INTERVAL=200ms

test_expect_success 'uninterrupted reference run' '
    "$LOGREG" --steps 2000 --out ref.bin >/dev/null
'

test_expect_success 'auto detects GCP; preempted=TRUE makes the job checkpoint and spotrun exit 75' '
    "$SPOTRUN" run --run-id gcp1 -- "$LOGREG" --steps 2000 --save-every 0 --pace-ms 2 \
        --out w.bin >run1.log 2>&1 &
    wait_for run1.log "watching the gcp metadata service" &&
    wait_for run1.log "step 300 " &&
    md_control "notice?in=30" &&
    expect_code 75 wait $! &&
    grep "preemption notice from gcp (preempted): [0-9.]*s left" run1.log &&
    grep "checkpoint requested at step" run1.log &&
    grep "preempted: checkpoint 1 is durable" run1.log &&
    test ! -e w.bin
'

test_expect_success 'the preempted key is long-polled, not polled' '
    md_get stats | grep -o "\"GET /computeMetadata/v1/instance/preempted\": [0-9]*" >n &&
    test "$(sed "s/.*: //" n)" -le 3
'

test_expect_success 'rerun resumes and ends bit-exact with the reference' '
    md_control clear &&
    "$SPOTRUN" run --run-id gcp1 -- "$LOGREG" --steps 2000 --save-every 0 --out w.bin >run2.log 2>&1 &&
    grep "resumed from step" run2.log &&
    cmp ref.bin w.bin
'

test_expect_success 'maintenance-event TERMINATE is a notice; back to NONE cancels the stop' '
    "$SPOTRUN" run --run-id gcp2 -- sh -c "$STUBBORN_JOB" >run3.log 2>&1 &
    pid=$!
    wait_for run3.log "watching the gcp metadata service" &&
    md_control "maintenance?value=TERMINATE_ON_HOST_MAINTENANCE" &&
    wait_for run3.log "preemption notice from gcp (maintenance-event TERMINATE)" &&
    md_control "maintenance?value=NONE" &&
    wait_for run3.log "notice was withdrawn: cancelling the stop" &&
    sleep 0.3 &&
    kill -0 $pid &&
    "$SPOTRUN" notify --run-id gcp2 --deadline 2s &&
    expect_code 75 wait $pid
'

test_expect_success 'oversized and malformed answers are warnings, not crashes' '
    "$SPOTRUN" run --run-id gcp3 -- "$LOGREG" --steps 100000 --save-every 0 --pace-ms 2 \
        >run4.log 2>&1 &
    pid=$!
    wait_for run4.log "watching the gcp metadata service" &&
    md_control "malformed?mode=huge" &&
    md_control "maintenance?value=MIGRATE_ON_HOST_MAINTENANCE" &&
    wait_for run4.log "answer too large" &&
    md_control "malformed?mode=garbage" &&
    wait_for run4.log "ignoring an unexpected value of /computeMetadata/v1/instance/preempted" &&
    kill -0 $pid &&
    md_control "malformed?mode=ok" &&
    md_control "notice?in=30" &&
    expect_code 75 wait $pid &&
    grep "checkpoint 1 is durable" run4.log
'

# preempted_gets: how many GETs of instance/preempted the server has seen.
preempted_gets() {
    md_get stats | grep -o "\"GET /computeMetadata/v1/instance/preempted\": [0-9]*" | sed "s/.*: //"
}

test_expect_success 'without ETags the preempted key is still long-polled; the notice comes at once' '
    md_control clear
    md_control "gcp-no-etag?on=1"
    "$SPOTRUN" run --run-id gcp4 -- "$LOGREG" --steps 100000 --save-every 0 --pace-ms 2 \
        >run5.log 2>&1 &
    pid=$!
    wait_for run5.log "watching the gcp metadata service" &&
    sleep 0.5 && before=$(preempted_gets) && sleep 2 && after=$(preempted_gets) &&
    echo "requests in 2s: $((after - before))" &&
    test $((after - before)) -le 1 &&
    md_control "notice?in=30" &&
    start=$(date +%s%N) &&
    wait_for run5.log "preemption notice from gcp (preempted)" &&
    test $(( ($(date +%s%N) - start) / 1000000 )) -lt 1000 &&
    expect_code 75 wait $pid &&
    md_control "gcp-no-etag?on=0"
'

test_expect_success 'the test server refuses a request without Metadata-Flavor (403)' '
    test "$(curl -s -o /dev/null -w "%{http_code}" "$MD_URL/computeMetadata/v1/instance/id")" = 403
'

test_done
