#!/usr/bin/env bash
# A time limit's stop of a job that does not listen for checkpoint requests
# is as quick as a notice's: "not waiting for a commit" means SIGTERM at
# once, not at the end of the commit window (~22 s with the default
# --grace). Compared on the wrapper's clock: its "limit" event and the
# job's "exit" (the job dies of the TERM); the bound, 10 s, leaves a loaded
# machine plenty.
. "$(dirname "$0")/lib.sh"

export SPOTRUN_NOTICE=none

cat >deaf.sh <<\EOF2
#!/bin/bash
echo ready
while :; do sleep 0.05; done
EOF2
chmod +x deaf.sh

test_expect_success 'a time limit on a job that never listens: SIGTERM at once, exit 124' '
    expect_code 124 "$SPOTRUN" run --run-id deaf --time-limit 1s -- ./deaf.sh >deaf.log 2>&1 &&
    cat deaf.log &&
    grep "not waiting for a commit" deaf.log &&
    events deaf | grep "\"event\":\"deaf\"" &&
    events deaf | "$PY" -c "
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
limit = next(r[\"unix_ms\"] for r in rows if r[\"event\"] == \"limit\")
end = [r[\"unix_ms\"] for r in rows if r[\"event\"] == \"exit\"][-1]
print(\"limit -> exit: %d ms\" % (end - limit))
assert end - limit < 10000, end - limit
"
'

test_done
