#!/usr/bin/env bash
# Slurm: a real single-node cluster (slurmctld + slurmd + munged, all state
# under this test's scratch dir) runs examples/slurm/train.sbatch as an
# array of 3 trials with --requeue. One trial gets a notice mid-run
# (scancel --batch --signal=USR1, what --signal=B:USR1@N does before the
# time limit), checkpoints, exits 75 and requeues itself; on the requeue it
# resumes, and all three trials end bit-exact with uninterrupted runs.
. "$(dirname "$0")/lib.sh"

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    say "slurm-wlm or munge is not installed (scripts/deps.sh installs them): skipped"
    say "0 passed, 0 failed"
    exit 0
fi

D=$TRASH/slurm
mkdir -p "$D/state" "$D/spool" "$D/munge" "$D/out"
chmod 711 "$D/munge" # munged's socket dir must be reachable by clients
export SLURM_CONF=$D/slurm.conf
HOST=$(hostname -s)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

teardown() {
    if [ -s "$D/slurmctld.pid" ]; then
        scancel --full -s KILL --user=root 2>/dev/null
        for _ in $(seq 50); do
            [ -z "$(squeue -h 2>/dev/null)" ] && break
            sleep 0.2
        done
        scontrol shutdown 2>/dev/null
        for _ in $(seq 50); do
            kill -0 "$(cat "$D/slurmctld.pid" 2>/dev/null)" 2>/dev/null ||
                kill -0 "$(cat "$D/slurmd.pid" 2>/dev/null)" 2>/dev/null || break
            sleep 0.1
        done
        for f in slurmctld slurmd; do
            [ -s "$D/$f.pid" ] && kill -KILL "$(cat "$D/$f.pid")" 2>/dev/null
        done
    fi
    [ -s "$D/munged.pid" ] && kill "$(cat "$D/munged.pid")" 2>/dev/null
    true
}
trap teardown EXIT

test_expect_success 'a single-node Slurm cluster starts' '
    dd if=/dev/urandom of="$D/munge.key" bs=1024 count=1 2>/dev/null &&
    chmod 400 "$D/munge.key" &&
    munged --force --socket="$D/munge/munge.socket.2" --key-file="$D/munge.key" \
        --pid-file="$D/munged.pid" --log-file="$D/munged.log" --seed-file="$D/munged.seed" &&
    cat >"$SLURM_CONF" <<CONF &&
ClusterName=spotrun-test
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.socket.2,cred_expire=5
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
JobRequeue=1
MailProg=/bin/true
SchedulerParameters=bf_interval=1,sched_interval=1
ReturnToService=2
KillWait=5
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=4 RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
    slurmctld -f "$SLURM_CONF" &&
    slurmd -f "$SLURM_CONF" &&
    for _ in $(seq 100); do
        sinfo -h -o %T 2>/dev/null | grep -q idle && break
        sleep 0.1
    done &&
    sinfo -h -o %T | grep idle
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
