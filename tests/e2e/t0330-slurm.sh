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
    for _ in $(seq 600); do
        [ -z "$(squeue -h)" ] && break
        sleep 0.1
    done &&
    test -z "$(squeue -h)" &&
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

test_done
