#!/usr/bin/env bash
# One owner for every kind of run (docs/store.md, "Single owner"): while a
# 2-node group runs (LEASE.0, LEASE.1), the whole-run writers (a single-node
# `run`, `run --fresh`, `gc`, `push`: the run's LEASE) are refused with 73
# naming the group's node, and the group is left whole: it stops, resumes
# and finishes as if they never came. A stopped multi-node run keeps its
# kind: a plain single-node `run` and `push` are usage errors (64), gc keeps
# whole sets; and a group does not take a single-node run's checkpoints.
# `export` of a multi-node checkpoint is the documented refusal (64), not 70.
# Both on the file store and on S3 with conditional writes. Every "node" is
# its own wrapper with its own HOME and work dir against one store.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-multinode.sh"

# The job of a node: fresh, its part names its rank, committed as step 10,
# then step 20 when asked (a notice); resumed, it says what it got and
# finishes.
cat >nodejob.sh <<\EOF
#!/bin/bash
d=$SPOTRUN_CKPT_DIR
if [ "$SPOTRUN_RESUMED" = 1 ]; then
    echo "resumed rank=$SPOTRUN_NODE_RANK step=$SPOTRUN_STEP files=$(ls "$d" | tr '\n' ' ')"
    exit 0
fi
want=0
trap 'want=1' USR1
echo "rank$SPOTRUN_NODE_RANK step 10" >"$d/rank$SPOTRUN_NODE_RANK"
"$SPOTRUN_BIN" commit --step 10 || exit 1
echo ready
while [ $want = 0 ]; do sleep 0.05; done
echo "rank$SPOTRUN_NODE_RANK step 20" >"$d/rank$SPOTRUN_NODE_RANK"
"$SPOTRUN_BIN" commit --step 20 || exit 1
while :; do sleep 0.05; done
EOF
chmod +x nodejob.sh

# A single-node wrapper elsewhere: its own HOME and work dir.
single() { HOME=$TRASH/home-single SPOTRUN_WORK_DIR=$TRASH/work-single "$SPOTRUN" "$@"; }
stop_group() { kill -TERM ${pid[0]} ${pid[1]} 2>/dev/null; wait ${pid[0]} ${pid[1]} 2>/dev/null; }
mkdir -p "$TRASH/home-single" pushdir && echo pushed >pushdir/f

# started RUN: both nodes are ready and the set of step 10 is published.
started() {
    wait_for $1-0.log "^ready" 120 && wait_for $1-1.log "^ready" 120 &&
        wait_for_file "$SPOTRUN_STORE_DIR/$1/ckpt/0000000011/MANIFEST.json"
}
wait_for_file() {
    local i=0
    until [ -z "$SPOTRUN_STORE_DIR" ] || [ -f "$1" ]; do
        i=$((i + 1))
        [ $i -le 1200 ] || { say "timed out waiting for $1"; return 1; }
        sleep 0.1
    done
}
SPOTRUN_STORE_DIR=$SPOTRUN_STORE

# refused LOG CMD...: exits 73 naming a node of the group.
refused() {
    local log=$1
    shift
    expect_code 73 "$@" 2>"$log"
    cat "$log"
    grep "is owned by $(hostname) pid \(${pid[0]}\|${pid[1]}\) (node [01] of its multi-node group" "$log"
}

test_expect_success 'while a group runs, single-node run, --fresh, gc and push exit 73; the group stops whole' '
    start_node mi 2 0 mi-0.log
    start_node mi 2 1 mi-1.log
    started mi || { stop_group; cat mi-0.log mi-1.log; exit 1; }
    refused single.err single run --run-id mi --lease-wait 0 --restore-parts all -- true
    refused fresh.err single run --run-id mi --lease-wait 0 --fresh -- true
    refused gc.err single gc --keep 1 mi
    refused push.err single push mi pushdir
    test -f "$SPOTRUN_STORE/mi/ckpt/0000000011/MANIFEST.json"
    test -f "$SPOTRUN_STORE/mi/LEASE.0"
    test -f "$SPOTRUN_STORE/mi/LEASE.1"
    test ! -e "$SPOTRUN_STORE/mi/DONE"
    "$SPOTRUN" show --json mi | "$PY" -c "
import json, sys
s = json.load(sys.stdin)
c = s[\"checkpoints\"]
assert [k[\"nodes\"] for k in c] == [2], c
# show names every owner: each node of the group holds its lease
assert [(x[\"node\"], x[\"state\"]) for x in s[\"node_leases\"]] == [(0, \"held\"), (1, \"held\")], s
"
    "$SPOTRUN" show mi | grep "^lease: *node 1 held by $(hostname) pid ${pid[1]} (epoch"
    # The group was left whole: a notice stops it with 75, step 20 is a set.
    HOME=$TRASH/home-mi-1 SPOTRUN_WORK_DIR=$TRASH/work-mi-1 "$SPOTRUN" notify --run-id mi --deadline 30s
    expect_code 75 wait ${pid[0]}
    expect_code 75 wait ${pid[1]}
    cat mi-0.log mi-1.log
    test -f "$SPOTRUN_STORE/mi/ckpt/0000000021/MANIFEST.json"
'

test_expect_success 'a stopped multi-node run keeps its kind: plain run and push are usage errors' '
    expect_code 64 single run --run-id mi --lease-wait 0 -- true 2>kind.err
    cat kind.err
    grep "run mi is a multi-node run of 2 nodes" kind.err
    grep -- "--restore-parts all" kind.err
    expect_code 64 single push mi pushdir 2>kpush.err
    cat kpush.err
    grep "run mi is a multi-node run" kpush.err &&
    test ! -e "$SPOTRUN_STORE/mi/ckpt/0000000022"
'

test_expect_success 'gc of a stopped group keeps whole sets' '
    single gc --keep 1 mi
    test ! -e "$SPOTRUN_STORE/mi/ckpt/0000000011" &&
    ls "$SPOTRUN_STORE/mi/ckpt/0000000021" | grep -c "^part-[01]-e[0-9]*.tar.zst$" | grep -x 2
'

test_expect_success 'the group resumes both nodes at step 20 and finishes' '
    start_node mi 2 0 r0.log
    start_node mi 2 1 r1.log
    expect_code 0 wait ${pid[0]}
    expect_code 0 wait ${pid[1]}
    cat r0.log r1.log
    grep "^resumed rank=0 step=20 files=rank0 $" r0.log &&
    grep "^resumed rank=1 step=20 files=rank1 $" r1.log &&
    test -e "$SPOTRUN_STORE/mi/DONE"
'

test_expect_success 'export of a multi-node checkpoint is refused with 64, naming pull' '
    expect_code 64 "$SPOTRUN" export mi mi.tar.zst 2>export.err
    cat export.err
    grep "spans 2 nodes: spotrun pull it" export.err &&
    test ! -e mi.tar.zst &&
    "$SPOTRUN" pull mi pulled && test "$(cat pulled/rank0 pulled/rank1)" = "rank0 step 20
rank1 step 20"
'

test_expect_success 'run --fresh of a stopped multi-node run starts it over on one node' '
    single run --run-id mi --fresh --lease-wait 0 -- sh -c "echo one >\$SPOTRUN_CKPT_DIR/f" 2>fresh2.err
    test ! -e "$SPOTRUN_STORE/mi/LEASE.0" && test ! -e "$SPOTRUN_STORE/mi/LEASE.1" &&
    "$SPOTRUN" show --json mi | "$PY" -c "
import json, sys
s = json.load(sys.stdin)
assert all(\"nodes\" not in k for k in s[\"checkpoints\"]) and s[\"node_leases\"] == [], s
"
'

test_expect_success 'a group does not take a single-node run: 64, naming the way' '
    single push one pushdir
    HOME=$TRASH/home-one-0 SPOTRUN_WORK_DIR=$TRASH/work-one-0 expect_code 64 "$SPOTRUN" run \
        --run-id one --nodes 2 --node-rank 0 --lease-wait 0 -- true 2>one.err
    cat one.err
    grep "run one is a single-node run" one.err
'

. "$(dirname "$0")/s3lib.sh"
S3_CONDITIONAL=1 s3_start
SPOTRUN_STORE_DIR=

test_expect_success 'S3: while a group runs, gc and a single-node run exit 73; the group finishes' '
    start_node s3mi 2 0 s3mi-0.log
    start_node s3mi 2 1 s3mi-1.log
    started s3mi || { stop_group; cat s3mi-0.log s3mi-1.log; exit 1; }
    refused s3gc.err single gc --keep 1 s3mi
    refused s3run.err single run --run-id s3mi --lease-wait 0 --restore-parts all -- true
    HOME=$TRASH/home-s3mi-0 SPOTRUN_WORK_DIR=$TRASH/work-s3mi-0 "$SPOTRUN" notify --run-id s3mi --deadline 30s
    expect_code 75 wait ${pid[0]}
    expect_code 75 wait ${pid[1]}
    start_node s3mi 2 0 s3r0.log
    start_node s3mi 2 1 s3r1.log
    expect_code 0 wait ${pid[0]}
    expect_code 0 wait ${pid[1]}
    cat s3r0.log s3r1.log
    grep "^resumed rank=0 step=20 " s3r0.log && grep "^resumed rank=1 step=20 " s3r1.log
'

test_done
