#!/usr/bin/env bash
# Multi-node runs (docs/multinode.md): every "node" is its own wrapper with
# its own HOME and work dir against one store, each running one rank of a
# real torch.distributed job (gloo, CPU, TCP rendezvous on 127.0.0.1).
# A notice to one node makes every node checkpoint the same step; a step
# exists only once every node's part is durable; a rerun resumes every
# node to the weights of an uninterrupted run.
. "$(dirname "$0")/lib.sh"

EX=$SRCDIR/examples/pytorch
STEPS=80
export PYTHONDONTWRITEBYTECODE=1

# node N R PORT LOG ARGS...: node R of N, in the background; its pid in node_pid[R].
declare -a node_pid
node() {
    local n=$1 r=$2 port=$3 log=$4
    shift 4
    mkdir -p "$TRASH/home$r"
    HOME=$TRASH/home$r SPOTRUN_WORK_DIR=$TRASH/work$r RANK=$r WORLD_SIZE=$n LOCAL_RANK=0 \
        MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        "$SPOTRUN" run --run-id ddp --nodes "$n" --node-rank "$r" --peer-poll 200ms "$@" -- \
        "$PY" "$EX/train_ddp.py" --steps $STEPS --save-every 0 --pace 0.05 --out "w$r.txt" \
        >"$log" 2>&1 &
    node_pid[$r]=$!
}

# ddp_direct N OUT: the same job without spotrun, all ranks here.
ddp_direct() {
    local n=$1 port pids=() r
    port=$(free_port)
    for r in $(seq 0 $((n - 1))); do
        RANK=$r WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
            "$PY" "$EX/train_ddp.py" --steps $STEPS --out "$2" >"ref$n-$r.log" 2>&1 &
        pids+=($!)
    done
    for r in "${pids[@]}"; do wait "$r" || return 1; done
}

test_expect_success 'PyTorch is importable' '
    require_torch
'

test_expect_success 'uninterrupted references of 2 and 3 ranks' '
    ddp_direct 2 ref2.txt && ddp_direct 3 ref3.txt &&
    test "$(wc -c <ref2.txt)" -ge 64 && test "$(wc -c <ref3.txt)" -ge 64
'

test_expect_success '2 nodes: a notice to node 1 only; both checkpoint the same steps and exit 75' '
    port=$(free_port)
    node 2 0 $port n0.log
    node 2 1 $port n1.log
    { wait_for n0.log "^step 20 " 120 &&
      HOME=$TRASH/home1 SPOTRUN_WORK_DIR=$TRASH/work1 "$SPOTRUN" notify --run-id ddp --deadline 60s; } ||
        { kill -TERM ${node_pid[0]} ${node_pid[1]}; wait; cat n0.log n1.log; exit 1; }
    expect_code 75 wait ${node_pid[0]}
    expect_code 75 wait ${node_pid[1]}
    cat n0.log n1.log
    grep "preemption notice from manual" n1.log &&
    grep "preemption notice from peer:1:manual" n0.log &&
    ! grep "final weights" n0.log &&
    "$SPOTRUN" show ddp --json >show.json &&
    "$PY" -c "
import json, sys
s = json.load(open(\"show.json\"))
c = s[\"checkpoints\"]
# One per request the nodes answered: node 0 may hear it first through the
# job (the ranks all-reduce the flag) and again from the peer notice.
assert 1 <= len(c) <= 2 and all(k[\"nodes\"] == 2 for k in c), c
" &&
    for d in "$SPOTRUN_STORE"/ddp/ckpt/*/; do
        ls "$d" | grep -c "^part-[01]-e[0-9]*.tar.zst$" | grep -x 2 || exit 1
    done
'

test_expect_success '2 nodes: the rerun resumes both and ends bit-exact' '
    port=$(free_port)
    node 2 0 $port r0.log
    node 2 1 $port r1.log
    expect_code 0 wait ${node_pid[0]}
    expect_code 0 wait ${node_pid[1]}
    cat r0.log
    grep "resumed from step" r0.log &&
    test "$(cat w0.txt)" = "$(cat ref2.txt)"
'

test_done
