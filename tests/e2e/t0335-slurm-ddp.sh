#!/usr/bin/env bash
# Slurm, multi-node: examples/slurm/ddp.sbatch on a real single-node
# cluster with two tasks, each `spotrun run` taking its node rank from the
# srun step and running one rank of a torch.distributed job (gloo, CPU).
# A notice (USR1 to the batch shell, forwarded to every task) makes both
# checkpoint one step and exit 75; the job requeues itself and resumes both
# ranks to the weights of an uninterrupted run.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-slurm.sh"

EX=$SRCDIR/examples/pytorch
STEPS=60
export PYTHONDONTWRITEBYTECODE=1

test_expect_success 'PyTorch is importable and a single-node Slurm cluster starts' '
    require_torch &&
    slurm_start
'

test_expect_success 'uninterrupted reference of 2 ranks (no spotrun)' '
    port=$(free_port)
    RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        "$PY" "$EX/train_ddp.py" --steps $STEPS --out ref.txt >ref0.log 2>&1 &
    r0=$!
    RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        "$PY" "$EX/train_ddp.py" --steps $STEPS >ref1.log 2>&1 &&
    wait $r0 &&
    test "$(wc -c <ref.txt)" -ge 64
'

test_expect_success 'sbatch: two tasks, one spotrun per task, node ranks from the step' '
    export MASTER_ADDR=127.0.0.1 SPOTRUN="$SPOTRUN" &&
    sbatch --parsable --ntasks=2 --ntasks-per-node=2 --chdir="$TRASH" --output="$D/out/ddp.out" \
        "$SRCDIR/examples/slurm/ddp.sbatch" "$PY" "$EX/train_ddp.py" --steps $STEPS \
        --save-every 0 --pace 0.1 --out "$TRASH/w.txt" >jobid &&
    test -s jobid
'

test_expect_success 'a notice to the job: both nodes checkpoint one step, exit 75, requeue' '
    job=$(cat jobid) &&
    wait_for "$D/out/ddp.out" "^step 20 " 120 &&
    scancel --batch --signal=USR1 "$job" &&
    wait_for "$D/out/ddp.out" "requeueing" 60 &&
    grep -c "preempted: checkpoint [0-9]* is durable" "$D/out/ddp.out" | grep -x 2
'

test_expect_success 'the requeued job resumes both ranks and ends bit-exact' '
    wait_until 120 "the Slurm queue to empty" queue_empty &&
    cat "$D/out/ddp.out" &&
    grep "resumed from step" "$D/out/ddp.out" &&
    test "$(cat w.txt)" = "$(cat ref.txt)"
'

test_done
