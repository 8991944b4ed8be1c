#!/usr/bin/env bash
# --stall-timeout in a multi-node run (docs/multinode.md, docs/runtime.md
# "Stall watchdog"): 2 nodes, each its own wrapper with its own HOME and
# work dir against one store, each one gloo rank of a real DDP job under a
# shell launcher. Node 1's trainer is stopped (SIGSTOP) mid-training, its
# launcher still running (so the job is hung, not stopped as a whole: a
# job whose every process is stopped is not judged), and node 0's trainer
# then waits in its next all_reduce. Node 1 judges its job stalled, records the
# stalled event and asks the group to stop through the store; node 0
# records a peer notice and exits 75, and so does node 1 (the engine
# reruns the group, up to --max-restarts stalls, 3 by default). The
# group rerun (as the engine would: both wrappers again) resumes from the
# same step on both nodes and ends bit-exact with an uninterrupted run.
. "$(dirname "$0")/lib.sh"

EX=$SRCDIR/examples/pytorch
STEPS=80
export PYTHONDONTWRITEBYTECODE=1

# node R PORT LOG TIMEOUT: node R of 2 in the background (pid in node_pid[R]).
declare -a node_pid
node() {
    local r=$1 port=$2 log=$3 timeout=$4
    mkdir -p "$TRASH/home$r"
    HOME=$TRASH/home$r SPOTRUN_WORK_DIR=$TRASH/work$r RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 \
        MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        timeout 300 "$SPOTRUN" run --run-id ddp --nodes 2 --node-rank "$r" --peer-poll 200ms \
        --grace 20s --stall-timeout "$timeout" -- sh -c '"$@"; exit $?' launcher \
        "$PY" "$EX/train_ddp.py" --steps $STEPS --save-every 10 --pace 0.05 --out "w$r.txt" \
        >"$log" 2>&1 &
    node_pid[$r]=$!
}

test_expect_success 'PyTorch is importable' '
    require_torch
'

test_expect_success 'uninterrupted reference of 2 ranks (no spotrun)' '
    port=$(free_port) pids=""
    for r in 0 1; do
        RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
            timeout 300 "$PY" "$EX/train_ddp.py" --steps $STEPS --out ref.txt >ref$r.log 2>&1 &
        pids="$pids $!"
    done
    for p in $pids; do wait $p || { cat ref0.log ref1.log; exit 1; }; done
    test "$(wc -c <ref.txt)" -ge 64
'

# Node 0 judges at 60 s: node 1 (5 s) is the one that finds the stall,
# and node 0 learns it from the store (were both at 5 s, both would judge
# their own job stalled, which is true of node 0 too, and the test could
# not say which message comes first).
test_expect_success 'node 1 stopped mid-training: it is stalled, node 0 stops on its notice' '
    port=$(free_port)
    node 0 $port n0.log 60s
    node 1 $port n1.log 5s
    wait_for n0.log "^step 30 " 120 ||
        { kill -TERM ${node_pid[0]} ${node_pid[1]}; wait; cat n0.log n1.log; exit 1; }
    wrapper=$(ps -o pid= --ppid ${node_pid[1]} | tr -d " ")
    launcher=$(ps -o pid= --ppid "$wrapper" | tr -d " ")
    trainer=$(ps -o pid= --ppid "$launcher" | tr -d " ")
    test -n "$trainer" || { kill -TERM ${node_pid[0]} ${node_pid[1]}; wait; exit 1; }
    echo "stopping node 1 trainer $trainer (node 1 wrapper $wrapper)"
    kill -STOP "$trainer"
    code1=0 code0=0
    wait ${node_pid[1]} || code1=$?
    wait ${node_pid[0]} || code0=$?
    cat n0.log n1.log
    test "$code0" -eq 75 &&
    test "$code1" -eq 75 &&
    grep "no heartbeat for [0-9.]*s (--stall-timeout 5.0s): the job is stalled; stopping it" n1.log &&
    grep "asking the other nodes of run ddp to stop" n1.log &&
    grep "node 1.s job stalled (1 stall(s) of run ddp, at most 3): the group stops and resumes from the newest complete checkpoint when its engine reruns it" n1.log &&
    grep "stalled: run ddp resumes from checkpoint [0-9]*; exit 75 (requeue the group)" n1.log &&
    grep "preemption notice from peer:1:stalled" n0.log &&
    ! grep "the job is stalled" n0.log &&
    ! grep "final weights" n0.log n1.log
'

test_expect_success 'the event logs: stalled (a stopped process) on node 1, a peer notice on node 0' '
    cat "$SPOTRUN_STORE"/ddp/events/*-n1.jsonl | "$PY" -c "
import json, sys
ev = [json.loads(l) for l in sys.stdin]
st = [e for e in ev if e[\"event\"] == \"stalled\"]
assert len(st) == 1, st
assert st[0][\"timeout_ms\"] == 5000 and st[0][\"since_ms\"] >= 5000, st
assert any(p[\"state\"] == \"T\" and p[\"comm\"].startswith(\"python\") for p in st[0][\"procs\"]), st
" &&
    cat "$SPOTRUN_STORE"/ddp/events/*-n0.jsonl | grep "\"event\":\"notice\"" | grep "peer:1:stalled"
'

test_expect_success 'the group rerun resumes both nodes from the same step and ends bit-exact' '
    port=$(free_port)
    node 0 $port r0.log 60s
    node 1 $port r1.log 30s
    code0=0 code1=0
    wait ${node_pid[0]} || code0=$?
    wait ${node_pid[1]} || code1=$?
    cat r0.log r1.log
    test "$code0" -eq 0 && test "$code1" -eq 0 &&
    s0=$(sed -n "s/^spotrun: restored checkpoint [0-9]* (step \([0-9]*\),.*/\1/p" r0.log) &&
    s1=$(sed -n "s/^spotrun: restored checkpoint [0-9]* (step \([0-9]*\),.*/\1/p" r1.log) &&
    test -n "$s0" && test "$s0" = "$s1" && test "$s0" -ge 30 &&
    grep "^resumed from step $s0$" r0.log &&
    ! grep "stalled" r0.log r1.log | grep -v "stalled 1 time(s) before" &&
    cmp ref.txt w0.txt
'

test_done
