#!/usr/bin/env bash
# Slurm: a real single-node cluster (slurmctld + slurmd + munged, all state
# under this test's scratch dir) runs examples/slurm/train.sbatch as an
# array of 3 trials with --requeue. One trial gets a notice mid-run
# (scancel --batch --signal=USR1, what --signal=B:USR1@N does before the
# time limit), checkpoints, exits 75 and requeues itself; on the requeue it
# resumes, and all three trials end bit-exact with uninterrupted runs.
. "$(dirname "$0")/lib.sh"

. "$(dirname "$0")/lib-slurm.sh"

test_expect_success 'a single-node Slurm cluster starts' '
    slurm_start
'

# Trial i trains 1500 + 500*i steps; the command reads its trial from
# SLURM_ARRAY_TASK_ID, as a sweep script would.
TRIAL='exec "$LOGREG" --steps $((1500 + 500 * SLURM_ARRAY_TASK_ID)) --save-every 0 --pace-ms 2 --out "$OUT/trial-$SLURM_ARRAY_TASK_ID.bin"'

test_expect_success 'uninterrupted reference runs of the three trials' '
    for i in 0 1 2; do
        "$LOGREG" --steps $((1500 + 500 * i)) --out ref-$i.bin >/dev/null || exit 1
    done
'

test_expect_success 'an sbatch --requeue array of 3 trials runs under spotrun' '
    export OUT=$D/out &&
    sbatch --parsable --array=0-2 --chdir="$TRASH" --output="$D/out/task-%a.out" \
        "$SRCDIR/examples/slurm/train.sbatch" sh -c "$TRIAL" >jobid &&
    test -s jobid
'

test_expect_success 'trial 1 is preempted mid-run (USR1 to the batch shell) and requeues itself' '
    job=$(cat jobid) &&
    wait_for "$D/out/task-1.out" "step 500 " 30 &&
    scancel --batch --signal=USR1 "${job}_1" &&
    wait_for "$D/out/task-1.out" "preempted: checkpoint 1 is durable" 30 &&
    wait_for "$D/out/task-1.out" "requeueing" 10
'

test_expect_success 'all three trials finish' '
    wait_until 60 "the Slurm queue to empty" queue_empty &&
    for i in 0 1 2; do grep "run .* done" "$D/out/task-$i.out" || exit 1; done
'

test_expect_success 'the requeued trial resumed from its checkpoint' '
    grep "restart 1" "$D/out/task-1.out" &&
    grep "resumed from step" "$D/out/task-1.out" &&
    ! grep "resumed from step" "$D/out/task-0.out" &&
    ! grep "resumed from step" "$D/out/task-2.out"
'

test_expect_success 'every trial ends bit-exact with its uninterrupted run' '
    for i in 0 1 2; do cmp ref-$i.bin "$D/out/trial-$i.bin" || exit 1; done
'

# scancel --full --signal=TERM signals every process of the batch step (as
# Slurm does at a time limit or a plain scancel): the DataLoader workers get
# it too, re-raise it against themselves (torch's handler), and the shim
# takes that for the outside SIGTERM it is, so the trainer still commits.
# No worker is lost before it did (its commit returns once snapshotted: its
# own exit may be logged before the wrapper's "staged" line).
cat >dl.py <<'PY'
import os, sys, time
import torch
import spotrun

class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 1000000
    def __getitem__(self, i):
        return torch.tensor([float(i)])

step = 0
for batch in torch.utils.data.DataLoader(Data(), batch_size=4, num_workers=2):
    step += 1
    print("step %d" % step, flush=True)
    if spotrun.checkpoint_due():
        torch.save({"step": step}, spotrun.path("state.pt"))
        spotrun.commit(step)
        print("committed at step %d" % step, flush=True)
        sys.exit(75)
    time.sleep(0.02)
PY

test_expect_success 'scancel --full --signal=TERM with DataLoader workers: the trainer commits' '
    require_torch &&
    export PYTHONPATH=$SRCDIR/python &&
    sbatch --parsable --chdir="$TRASH" --output="$D/out/dl.out"         --wrap "exec \"$SPOTRUN\" run --run-id dl --grace 60s -- \"$PY\" dl.py" >dljob &&
    wait_for "$D/out/dl.out" "^step 20$" 120 &&
    scancel --full --signal=TERM "$(cat dljob)" &&
    wait_for "$D/out/dl.out" "preempted: checkpoint 1 is durable" 60 &&
    grep "preemption notice from" "$D/out/dl.out" &&
    ! sed -n "1,/committed at step\|checkpoint 1 (step [0-9]*) staged/p" "$D/out/dl.out" |
        grep -E "exited unexpectedly|killed by signal|Traceback" &&
    "$SPOTRUN" show dl | grep "^checkpoints: *1$"
'

test_done
