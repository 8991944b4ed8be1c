#!/usr/bin/env bash
# torch.distributed under spotrun (examples/pytorch/train_ddp.py, 2 gloo
# ranks on CPU, started by the installed launcher, python3 -m spotrun.launch):
# at a notice the ranks agree on one step, each saves its file, one commits;
# a rerun resumes every rank to the weights of an uninterrupted run. The
# launcher forwards signals and exits with its children's worst status.
. "$(dirname "$0")/lib.sh"

EX=$SRCDIR/examples/pytorch
STEPS=60
export PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH=$SRCDIR/python
ddp() { timeout 300 "$PY" -m spotrun.launch --nproc-per-node 2 "$EX/train_ddp.py" --steps $STEPS "$@"; }

test_expect_success 'PyTorch is importable' '
    require_torch
'

test_expect_success 'uninterrupted reference run of 2 ranks (no spotrun)' '
    ddp --out ref.txt >ref.log 2>&1 || { cat ref.log; exit 1; }
    test "$(wc -c <ref.txt)" -ge 64 &&
    grep -c "^final weights sha256: $(cat ref.txt)$" ref.log | grep -x 1
'

test_expect_success 'notify: the ranks save one step, one commit, spotrun exits 75' '
    "$SPOTRUN" run --run-id ddp -- "$PY" -m spotrun.launch --nproc-per-node 2 "$EX/train_ddp.py" \
        --steps $STEPS --save-every 0 --pace 0.05 --out w.txt >run1.log 2>&1 &
    pid=$!
    { wait_for run1.log "^step 20 " 120 && "$SPOTRUN" notify --run-id ddp --deadline 60s; } ||
        { kill -TERM $pid; wait $pid; exit 1; }
    expect_code 75 wait $pid
    cat run1.log
    grep "preempted: checkpoint 1 is durable" run1.log &&
    ! grep "final weights" run1.log &&
    "$SPOTRUN" show ddp | grep "^checkpoints: *1$"
'

test_expect_success 'the checkpoint holds both ranks at the step the store records' '
    step=$("$SPOTRUN" show ddp | awk "\$1 == 1 { print \$2 }") &&
    "$SPOTRUN" pull ddp ckpt &&
    ls ckpt &&
    "$PY" -c "
import sys, torch
steps = [torch.load(\"ckpt/rank%d.pt\" % r)[\"step\"] for r in (0, 1)]
assert steps == [int(sys.argv[1])] * 2, (steps, sys.argv[1])
" "$step"
'

test_expect_success 'rerun resumes every rank and ends with the reference weights' '
    step=$("$SPOTRUN" show ddp | awk "\$1 == 1 { print \$2 }") &&
    timeout 300 "$SPOTRUN" run --run-id ddp -- "$PY" -m spotrun.launch --nproc-per-node 2 \
        "$EX/train_ddp.py" --steps $STEPS --save-every 0 --out w.txt >run2.log 2>&1 || { cat run2.log; exit 1; }
    cat run2.log &&
    grep "^resumed from step $step$" run2.log &&
    cmp ref.txt w.txt
'

# child.py: prints its rank, and on SIGTERM "rank R got TERM" then exits
# 143; "fail" makes rank 1 exit 3 at once.
cat >child.py <<\PY
import os, signal, sys, time
rank = os.environ["RANK"]
def term(s, f):
    os.write(1, ("rank %s got TERM\n" % rank).encode())  # one write: ranks share the file
    sys.exit(143)
signal.signal(signal.SIGTERM, term)
os.write(1, ("rank %s of %s port %s\n" % (rank, os.environ["WORLD_SIZE"], os.environ["MASTER_PORT"])).encode())
open("ready%s" % rank, "w").close()  # its TERM handler is in place
if len(sys.argv) > 1 and sys.argv[1] == "fail" and rank == "1":
    for _ in range(600):  # fail once the others can tell they got TERM
        if os.path.exists("ready0") and os.path.exists("ready2"):
            break
        time.sleep(0.1)
    sys.exit(3)
time.sleep(60)
PY

test_expect_success 'the launcher forwards SIGTERM to every rank and exits with their status' '
    "$PY" -m spotrun.launch --nproc-per-node 3 child.py >fwd.log 2>&1 &
    pid=$!
    for r in 0 1 2; do wait_for fwd.log "^rank $r of 3 port [0-9]" 20 || exit 1; done
    kill -TERM $pid
    expect_code 143 wait $pid
    cat fwd.log
    for r in 0 1 2; do grep "^rank $r got TERM" fwd.log || exit 1; done
'

test_expect_success 'a failing rank stops the others; the launcher exits with its code' '
    rm -f ready0 ready1 ready2
    expect_code 3 "$PY" -m spotrun.launch --nproc-per-node 3 child.py fail >fail.log 2>&1
    cat fail.log
    grep "rank 1 exited with 3; stopping the others" fail.log &&
    grep "^rank 0 got TERM" fail.log && grep "^rank 2 got TERM" fail.log
'

test_done
