#!/usr/bin/env bash
# Azure: Scheduled Events. A Preempt event for this VM becomes a checkpoint,
# the event is acknowledged (StartRequests) once the checkpoint is durable,
# and spotrun exits 75; an event that disappears cancels the stop; events
# for other VMs and broken documents are ignored. The service's slow first
# answer does not hold up the job.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-metadata.sh"
start_metadata azure --azure-first-delay 1
export SPOTRUN_NOTICE=azure SPOTRUN_AZURE_METADATA=$MD_URL SPOTRUN_POLL_INTERVAL=200ms
EVENT=602d9444-d2cd-49c7-8624-8643e7171297

test_expect_success 'uninterrupted reference run' '
    "$LOGREG" --steps 2000 --out ref.bin >/dev/null
'

test_expect_success 'a Preempt event makes the job checkpoint, is acknowledged, and spotrun exits 75' '
    "$SPOTRUN" run --run-id az1 -- "$LOGREG" --steps 2000 --save-every 0 --pace-ms 2 \
        --out w.bin >run1.log 2>&1 &
    wait_for run1.log "step 300 " &&
    md_control "notice?in=30" &&
    expect_code 75 wait $! &&
    grep "preemption notice from azure (scheduled event Preempt (Scheduled)): [0-9.]*s left" run1.log &&
    grep "checkpoint requested at step" run1.log &&
    grep "acknowledged azure event $EVENT" run1.log &&
    grep "preempted: checkpoint 1 is durable" run1.log &&
    test ! -e w.bin
'

test_expect_success 'the service recorded the acknowledgement after the checkpoint was durable' '
    test "$(md_get acks)" = "[\"$EVENT\"]" &&
    durable=$(grep -n "checkpoint 1 durable" run1.log | cut -d: -f1) &&
    acked=$(grep -n "acknowledged azure event" run1.log | cut -d: -f1) &&
    test "$durable" -lt "$acked"
'

test_expect_success 'rerun resumes and ends bit-exact with the reference' '
    md_control clear &&
    "$SPOTRUN" run --run-id az1 -- "$LOGREG" --steps 2000 --save-every 0 --out w.bin >run2.log 2>&1 &&
    grep "resumed from step" run2.log &&
    cmp ref.bin w.bin
'

test_expect_success 'an event that disappears cancels the stop, and is not acknowledged' '
    "$SPOTRUN" run --run-id az2 -- sh -c "$STUBBORN_JOB" >run3.log 2>&1 &
    pid=$!
    wait_for run3.log "started" &&
    md_control "notice?in=60&id=withdrawn-1" &&
    wait_for run3.log "preemption notice from azure" &&
    md_control withdraw &&
    wait_for run3.log "the azure notice was withdrawn: cancelling the stop" &&
    sleep 0.3 &&
    kill -0 $pid &&
    "$SPOTRUN" notify --run-id az2 --deadline 2s &&
    expect_code 75 wait $pid &&
    ! md_get acks | grep withdrawn-1
'

test_expect_success 'an event for another VM is not ours' '
    "$SPOTRUN" run --run-id az3 -- "$LOGREG" --steps 100000 --save-every 0 --pace-ms 2 \
        >run4.log 2>&1 &
    pid=$!
    wait_for run4.log "step 100 " &&
    md_control "notice?in=30&resource=some-other-vm&id=other-1" &&
    sleep 1 &&
    kill -0 $pid &&
    ! grep "preemption notice from" run4.log &&
    md_control clear &&
    "$SPOTRUN" notify --run-id az3 --deadline 20s &&
    expect_code 75 wait $pid
'

test_expect_success 'malformed and oversized documents are warnings, and withdraw nothing' '
    "$SPOTRUN" run --run-id az4 -- "$LOGREG" --steps 100000 --save-every 0 --pace-ms 2 \
        >run5.log 2>&1 &
    pid=$!
    wait_for run5.log "step 100 " &&
    md_control "malformed?mode=garbage" &&
    wait_for run5.log "ignoring a malformed scheduled events document" &&
    md_control "malformed?mode=huge" &&
    wait_for run5.log "answer too large" &&
    md_control "malformed?mode=wrongtype" &&
    sleep 0.5 &&
    kill -0 $pid &&
    md_control "malformed?mode=ok" &&
    md_control "notice?in=30&id=after-garbage" &&
    expect_code 75 wait $pid &&
    grep "checkpoint 1 is durable" run5.log &&
    ! grep withdrawn run5.log
'

test_expect_success 'the test server refuses a request without Metadata: true (400)' '
    test "$(curl -s -o /dev/null -w "%{http_code}" "$MD_URL/metadata/scheduledevents?api-version=2020-07-01")" = 400
'

test_done
