#!/usr/bin/env bash
# Multi-node runs when things go wrong (docs/multinode.md): a step exists
# only once every node's part is durable; a part that never lands leaves the
# previous step standing on every node; a set whose completer died before
# the manifest is published at the next start; two wrappers of one rank
# cannot both run; a resume on another node count is refused. Every "node"
# is its own wrapper with its own HOME and work dir against one store; the
# job is a small shell script (t0800 runs real torch.distributed).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-multinode.sh"

# The job of a node: its part is one file naming its rank and step. It
# commits step 10 at once, step 20 when asked, then idles. With CHECK=1 it
# prints what it was given and exits.
cat >nodejob.sh <<\EOF
#!/bin/bash
d=$SPOTRUN_CKPT_DIR
echo "rank=$SPOTRUN_NODE_RANK of $SPOTRUN_NODES resumed=$SPOTRUN_RESUMED step=${SPOTRUN_STEP:-none} files=$(ls "$d" | tr '\n' ' ')"
[ -n "${CHECK:-}" ] && exit 0
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

manifest() { test -f "$SPOTRUN_STORE/$1/ckpt/$(printf %010d "$2")/MANIFEST.json"; }

test_expect_success 'a commit without --step in a multi-node run is a usage error' '
    HOME=$TRASH/h SPOTRUN_WORK_DIR=$TRASH/w "$SPOTRUN" run --run-id nostep --nodes 2 \
        --node-rank 0 --max-restarts 0 -- sh -c "\$SPOTRUN_BIN commit; echo rc=\$?" >nostep.log 2>&1
    cat nostep.log
    grep "rc=64" nostep.log && grep "needs --step N" nostep.log
'

test_expect_success 'two wrappers for the same rank: the second exits 73' '
    start_node twice 2 0 a.log --lease-wait 0
    wait_for a.log "^ready"
    HOME=$TRASH/home-twice-0b SPOTRUN_WORK_DIR=$TRASH/work-twice-0b expect_code 73 \
        "$SPOTRUN" run --run-id twice --nodes 2 --node-rank 0 --lease-wait 0 -- true 2>b.err
    cat b.err
    grep "run twice node 0 is owned by" b.err
    kill -TERM ${pid[0]}; wait ${pid[0]} || true
'

test_expect_success 'a notice to one node: every node commits step 20, the set has every part' '
    start_node grp 2 0 g0.log
    start_node grp 2 1 g1.log
    wait_for g0.log "^ready"
    wait_for g1.log "^ready"
    notify_node grp 0 30s
    expect_code 75 wait ${pid[0]}
    expect_code 75 wait ${pid[1]}
    cat g0.log g1.log
    manifest grp 11 && manifest grp 21 &&
    grep "preemption notice from peer:0:manual" g1.log
'

test_expect_success 'a part that never lands: no manifest for its step, the rerun restores the one before' '
    start_node lost 2 0 l0.log
    SPOTRUN_INJECT=write:EIO SPOTRUN_INJECT_PATH=0000000021/.part-1 LD_PRELOAD=$SPOTRUN_INJECT_LIB \
        start_node lost 2 1 l1.log
    wait_for l0.log "^ready"
    wait_for l1.log "^ready"
    notify_node lost 1 4s
    expect_code 75 wait ${pid[0]}
    expect_code 75 wait ${pid[1]}
    cat l0.log l1.log
    manifest lost 11 && ! manifest lost 21 &&
    grep "could not be stored" l1.log &&
    "$SPOTRUN" show lost | grep "^ *21 *20  incomplete: 1 node part(s), no manifest$" &&
    "$SPOTRUN" show lost --json | "$PY" -c "import json, sys; i = json.load(sys.stdin)[\"incomplete\"]; assert i == [{\"seq\": 21, \"step\": 20, \"parts\": 1}], i" &&
    CHECK=1 start_node lost 2 0 c0.log && CHECK=1 start_node lost 2 1 c1.log &&
    wait ${pid[0]} && wait ${pid[1]} &&
    cat c0.log c1.log &&
    grep "rank=0 of 2 resumed=1 step=10 files=rank0 $" c0.log &&
    grep "rank=1 of 2 resumed=1 step=10 files=rank1 $" c1.log
'

test_expect_success 'the completer dies before the manifest: the next start publishes the set' '
    SPOTRUN_INJECT=write:EIO SPOTRUN_INJECT_PATH=0000000021/.MANIFEST LD_PRELOAD=$SPOTRUN_INJECT_LIB \
        start_node late 2 0 t0.log
    SPOTRUN_INJECT=write:EIO SPOTRUN_INJECT_PATH=0000000021/.MANIFEST LD_PRELOAD=$SPOTRUN_INJECT_LIB \
        start_node late 2 1 t1.log
    wait_for t0.log "^ready"
    wait_for t1.log "^ready"
    notify_node late 0 4s
    expect_code 75 wait ${pid[0]}
    expect_code 75 wait ${pid[1]}
    cat t0.log t1.log
    ! manifest late 21 &&
    CHECK=1 start_node late 2 0 d0.log && CHECK=1 start_node late 2 1 d1.log &&
    wait ${pid[0]} && wait ${pid[1]} &&
    cat d0.log d1.log &&
    manifest late 21 &&
    grep "rank=0 of 2 resumed=1 step=20" d0.log && grep "rank=1 of 2 resumed=1 step=20" d1.log
'

test_expect_success 'another node count is refused; --restore-parts all gives every part' '
    HOME=$TRASH/h3 SPOTRUN_WORK_DIR=$TRASH/w3 expect_code 64 "$SPOTRUN" run --run-id grp \
        --nodes 3 --node-rank 0 -- true 2>three.err
    cat three.err
    grep "made by 2 node(s) and this run has 3" three.err &&
    HOME=$TRASH/h4 SPOTRUN_WORK_DIR=$TRASH/w4 "$SPOTRUN" run --run-id grp --nodes 3 --node-rank 2 \
        --restore-parts all --max-restarts 0 -- sh -c "ls \$SPOTRUN_CKPT_DIR; exit 3" >all.log 2>&1 ||
        true
    cat all.log
    grep "^rank0$" all.log && grep "^rank1$" all.log &&
    "$SPOTRUN" pull grp pulled && ls pulled | grep -x rank0 && ls pulled | grep -x rank1
'

test_expect_success 'S3 (conditional writes), 3 nodes: a notice to node 2, every node exits 75 and resumes' '
    . "$SRCDIR/tests/e2e/s3lib.sh"
    S3_CONDITIONAL=1 s3_start
    for r in 0 1 2; do start_node s3grp 3 $r s$r.log; done
    for r in 0 1 2; do wait_for s$r.log "^ready" || exit 1; done
    notify_node s3grp 2 30s
    for r in 0 1 2; do expect_code 75 wait ${pid[$r]} || exit 1; done
    cat s0.log s2.log
    for r in 0 1 2; do CHECK=1 start_node s3grp 3 $r c$r.log; done
    for r in 0 1 2; do wait ${pid[$r]} || exit 1; done
    for r in 0 1 2; do grep "rank=$r of 3 resumed=1 step=20 files=rank$r $" c$r.log || exit 1; done
'

test_done
