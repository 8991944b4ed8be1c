#!/usr/bin/env bash
# A preemption with slow uploads and a job that keeps committing: the
# wrapper makes the commit it asked for durable (skipping older queued
# ones), stops the job and exits 75; the job's later commits cannot keep it
# running until the deadline. Each data upload is held back 2 s by the
# fault proxy (tests/s3/faultproxy.py, fault "slow").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
s3_start

python3 "$SRCDIR/tests/s3/faultproxy.py" --upstream "$S3_URL" --rate 1 --faults slow \
    --methods PUT --path "data[.]tar[.]zst" --stall-seconds 2 >proxy.log 2>&1 &
proxy=$!
trap 'kill $proxy 2>/dev/null; s3_stop' EXIT
wait_for proxy.log '^port ' 30 || exit 1
export AWS_ENDPOINT_URL=http://127.0.0.1:$(sed -n 's/^port //p' proxy.log)

test_expect_success 'notice while commits pile up: the requested one is durable, then exit 75' '
    "$SPOTRUN" run --run-id d1 -- "$LOGREG" --steps 2500 --save-every 10 --pace-ms 4 \
        --out w.bin >run.log 2>&1 &
    pid=$!
    wait_for run.log "checkpoint 1 durable"
    wait_for run.log "step 600 "
    "$SPOTRUN" notify --run-id d1 --deadline 60s
    expect_code 75 wait $pid
    test ! -e w.bin # the job was stopped, it did not train to the end
    grep "skipped: superseded by a newer checkpoint" run.log
    step=$(sed -n "s/^checkpoint requested at step \([0-9]*\).*/\1/p" run.log)
    newest=$(AWS_ENDPOINT_URL=$S3_URL "$SPOTRUN" show --json d1 | "$PY" -c "
import json, sys
print(max(c[\"step\"] for c in json.load(sys.stdin)[\"checkpoints\"]))")
    test "$newest" -ge "$step"
'

test_done
