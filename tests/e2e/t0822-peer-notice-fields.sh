#!/usr/bin/env bash
# A peer notice is read from the store, which is untrusted (SECURITY.md):
# its fields must agree with its key (<unix_ms>-r<rank>-e<epoch>.json) and
# stay within bounds (a deadline at most 24h after it was made, a short
# source name); anything else is ignored with a warning naming it, never
# acted on. A valid one still stops the node.
. "$(dirname "$0")/lib.sh"

. "$SRCDIR/tests/e2e/lib-multinode.sh"
write_nodejob

# put_notice NAME RANK EPOCH SOURCE DEADLINE CREATED: a notice object of node 1 (which never
# runs here: without its lease, freshness is by the clock) under its name.
# The valid one leaves 15s: node 1 never commits, so node 0 waits for the
# set until that deadline (long enough to be read fresh under any load).
put_notice() {
    local name=$1 rank=$2 epoch=$3 source=$4 deadline=$5 created=$6
    mkdir -p "$SPOTRUN_STORE/pn/notices"
    printf '{"rank":%s,"epoch":%s,"source":"%s","deadline_unix_ms":%s,"created_unix_ms":%s}' \
        "$rank" "$epoch" "$source" "$deadline" "$created" >"$SPOTRUN_STORE/pn/notices/$name.tmp"
    mv "$SPOTRUN_STORE/pn/notices/$name.tmp" "$SPOTRUN_STORE/pn/notices/$name"
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

test_expect_success 'forged notices are ignored with a warning; a valid one stops the node' '
    HOME=$TRASH/h SPOTRUN_WORK_DIR=$TRASH/w "$SPOTRUN" run --run-id pn --nodes 2 --node-rank 0 \
        --peer-poll 100ms -- ./nodejob.sh >pn.log 2>&1 &
    p=$!
    wait_for pn.log "^ready"
    t=$(now_ms)
    put_notice "$t-r1-e1.json" 1 1 manual 9223372036854775807 "$t"
    wait_for pn.log "ignoring notice .*/$t-r1-e1.json: its deadline is not within 24h"
    t=$((t + 1))
    put_notice "$t-r1-e1.json" 0 1 manual $((t + 30000)) "$t"
    wait_for pn.log "ignoring notice .*/$t-r1-e1.json: its rank, epoch or time differ"
    t=$((t + 1))
    put_notice "$t-r1-e1.json" 1 1 "a b" $((t + 30000)) "$t"
    wait_for pn.log "ignoring notice .*/$t-r1-e1.json: its source is not a short name"
    put_notice "x-r1-e1.json" 1 1 manual $((t + 30000)) "$t"
    wait_for pn.log "ignoring notice .*/x-r1-e1.json: its name is not"
    refute grep "preemption notice" pn.log
    t=$(now_ms)
    put_notice "$t-r1-e1.json" 1 1 manual $((t + 15000)) "$t"
    expect_code 75 wait $p
    cat pn.log
    grep "preemption notice from peer:1:manual" pn.log
'

test_done
