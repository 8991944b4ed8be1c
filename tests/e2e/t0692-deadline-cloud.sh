#!/usr/bin/env bash
# The cloud's notice while a stop is under way (`spotrun notify` with 60 s
# came first, then the spot instance-action with 3 s): the stop's one
# deadline comes earlier with it, the commit window with it, and a job that
# hears the request but never commits is stopped by the cloud's deadline.
# The times compared are the wrapper's own, in its event log.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-metadata.sh"
start_metadata aws
export SPOTRUN_NOTICE=aws SPOTRUN_AWS_IMDS=$MD_URL SPOTRUN_POLL_INTERVAL=200ms

cat >hears.sh <<\EOF2
#!/bin/bash
trap 'echo asked' USR1
echo ready
while :; do sleep 0.05; done
EOF2
chmod +x hears.sh

test_expect_success 'a 3 s spot notice after a 60 s notify: the job is stopped by the cloud.s deadline' '
    "$SPOTRUN" run --run-id cl -- ./hears.sh >cl.log 2>&1 &
    pid=$!
    wait_for cl.log "^ready" &&
    "$SPOTRUN" notify --run-id cl --deadline 60s &&
    wait_for cl.log "^asked" &&
    md_control "notice?in=3" &&
    expect_code 75 wait $pid &&
    cat cl.log &&
    events cl | "$PY" -c "
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
first = next(r[\"unix_ms\"] for r in rows if r[\"event\"] == \"notice\")
end = [r[\"unix_ms\"] for r in rows if r[\"event\"] == \"exit\"][-1]
print(\"notice -> exit: %d ms\" % (end - first))
assert end - first < 30000, end - first
" &&
    grep "the stop.s deadline comes earlier (aws): [0-9.]*s left" cl.log &&
    events cl | grep "\"event\":\"deadline\".*\"source\":\"aws\""
'

test_done
