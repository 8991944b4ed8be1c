# lib-slurm.sh - a real single-node Slurm cluster for the e2e tests
# (slurmctld + slurmd + munged, all state under the test's scratch dir),
# sourced after lib.sh. Skips the script when Slurm is not installed;
# slurm_start starts the cluster, and it is torn down when the script exits.
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
# queue_empty: no job is left in the Slurm queue.
queue_empty() { local q; q=$(squeue -h 2>/dev/null) && [ -z "$q" ]; }

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

slurm_start() {

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
        sinfo -h -o %T 2>/dev/null | grep idle >/dev/null && break
        sleep 0.1
    done &&
    sinfo -h -o %T | grep idle
}
