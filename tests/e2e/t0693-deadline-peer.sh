#!/usr/bin/env bash
# Multi-node: a notice that brings one node's stop deadline earlier reaches
# the other nodes too, and each stops by it. Node 1 gets `spotrun notify`
# with 60 s (node 0 learns it as a peer's), both jobs hear the request and
# never commit, then node 0 gets one with 3 s: node 1, told by node 0, is
# stopped by that deadline, not by the first notice's commit window. The
# times compared are node 1's wrapper's own, in its event log.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-multinode.sh"

export SPOTRUN_NOTICE=none

cat >nodejob.sh <<\EOF2
#!/bin/bash
trap 'echo asked' USR1
echo ready
while :; do sleep 0.05; done
EOF2
chmod +x nodejob.sh

test_expect_success 'a peer.s shorter notice during the stop: node 1 stops by it' '
    start_node pr 2 0 n0.log &&
    start_node pr 2 1 n1.log &&
    wait_for n0.log "^ready" && wait_for n1.log "^ready" &&
    notify_node pr 1 60s &&
    wait_for n1.log "^asked" && wait_for n0.log "^asked" &&
    notify_node pr 0 3s &&
    expect_code 75 wait ${pid[1]} &&
    expect_code 75 wait ${pid[0]} &&
    cat n1.log &&
    cat "$SPOTRUN_STORE"/pr/events/*-n1.jsonl | "$PY" -c "
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
first = next(r[\"unix_ms\"] for r in rows if r[\"event\"] == \"notice\")
end = [r[\"unix_ms\"] for r in rows if r[\"event\"] == \"exit\"][-1]
print(\"node 1: notice -> exit: %d ms\" % (end - first))
assert end - first < 30000, end - first
" &&
    grep "the stop.s deadline comes earlier (peer:0:manual)" n1.log
'

test_done
