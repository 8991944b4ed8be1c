#!/usr/bin/env bash
# A multi-node run is done only when every node's job finished
# (docs/multinode.md, "When the job finishes"): a node whose job finishes
# first records it (done/<rank>-s<seq>) and DONE is written by whoever
# completes the marks. A node whose job finished while another node was
# preempted never makes the run "already done": the requeued group resumes
# every node from the newest complete checkpoint.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-multinode.sh"

# The job of a node: its part is one file naming its rank and step. It
# commits step 10 at once. Rank 0 then exits 0 (EARLY0=1), or exits 0 when
# asked for a checkpoint (EARLY0=req: its job ends as the notice comes);
# rank 1 commits step 20 when asked and idles. With CHECK=1 it prints what
# it was given and exits 0.
cat >nodejob.sh <<\EOF
#!/bin/bash
d=$SPOTRUN_CKPT_DIR
echo "rank=$SPOTRUN_NODE_RANK resumed=$SPOTRUN_RESUMED step=${SPOTRUN_STEP:-none}"
[ -n "${CHECK:-}" ] && exit 0
want=0
trap 'want=1' USR1
echo "rank$SPOTRUN_NODE_RANK step 10" >"$d/rank$SPOTRUN_NODE_RANK"
"$SPOTRUN_BIN" commit --step 10 || exit 1
echo ready
[ "$SPOTRUN_NODE_RANK" = 0 ] && [ "${EARLY0:-}" = 1 ] && exit 0
while [ $want = 0 ]; do sleep 0.05; done
[ "$SPOTRUN_NODE_RANK" = 0 ] && exit 0
echo "rank$SPOTRUN_NODE_RANK step 20" >"$d/rank$SPOTRUN_NODE_RANK"
"$SPOTRUN_BIN" commit --step 20 || exit 1
while :; do sleep 0.05; done
EOF
chmod +x nodejob.sh

done_mark() { test -f "$SPOTRUN_STORE/$1/DONE"; }

test_expect_success 'node 0 finishes first, node 1 is then preempted: no DONE, exit 0 and 75' '
    EARLY0=1 start_node early 2 0 e0.log
    start_node early 2 1 e1.log
    expect_code 0 wait ${pid[0]}
    cat e0.log
    grep "node 0.s job finished (1 of 2 nodes); run early is done once every node.s job" e0.log &&
    ! done_mark early &&
    wait_for e1.log "^ready" &&
    notify_node early 1 30s &&
    expect_code 75 wait ${pid[1]} &&
    ! done_mark early
'

test_expect_success 'the requeued group runs every node again from the newest set; both finish: DONE' '
    CHECK=1 start_node early 2 0 r0.log
    CHECK=1 start_node early 2 1 r1.log
    wait ${pid[0]}
    wait ${pid[1]}
    cat r0.log r1.log
    ! grep "already done" r0.log r1.log &&
    grep "^rank=0 resumed=1 step=10$" r0.log && grep "^rank=1 resumed=1 step=10$" r1.log &&
    done_mark early &&
    grep "run early done" r0.log r1.log &&
    CHECK=1 start_node early 2 0 a0.log && wait ${pid[0]} &&
    grep "already done" a0.log && ! grep "^rank=" a0.log &&
    "$SPOTRUN" show early | grep "^state: *done$"
'

test_expect_success 'a notice to node 1; node 0 finishes during it: both exit 75, no DONE' '
    EARLY0=req start_node mid 2 0 m0.log
    start_node mid 2 1 m1.log
    wait_for m0.log "^ready"
    wait_for m1.log "^ready"
    notify_node mid 1 15s # node 0 must read it while fresh, whatever the load
    expect_code 75 wait ${pid[0]}
    expect_code 75 wait ${pid[1]}
    cat m0.log m1.log
    grep "the job finished during the notice" m0.log &&
    grep "node 0.s job finished, but run mid is being stopped by a notice" m0.log &&
    ! done_mark mid &&
    CHECK=1 start_node mid 2 0 n0.log && CHECK=1 start_node mid 2 1 n1.log &&
    wait ${pid[0]} && wait ${pid[1]} &&
    cat n0.log n1.log &&
    ! grep "already done" n0.log n1.log &&
    grep "^rank=0 resumed=1 step=10$" n0.log && grep "^rank=1 resumed=1 step=10$" n1.log &&
    done_mark mid
'

test_done
