#!/usr/bin/env bash
# SIGTERM to every process of the job (Slurm's default; a user's
# `kill -TERM -- -PGID`) with a PyTorch DataLoader of 2 workers: the workers'
# own SIGTERM handler re-raises it against themselves, which the shim takes
# for the outside SIGTERM it is (a checkpoint request, not a death); the
# trainer commits, spotrun exits 75 and the rerun resumes from that
# checkpoint. A SIGTERM from inside the job's tree still kills a worker.
. "$(dirname "$0")/lib.sh"

export PYTHONPATH=$SRCDIR/python

cat >trainer.py <<'PY'
import os, sys, time
import torch
import spotrun

class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 1000000
    def __getitem__(self, i):
        return torch.tensor([float(i)])

state = os.path.join(spotrun.ckpt_dir(), "state.pt")
step = 0
if os.path.exists(state):
    step = torch.load(state)["step"]
    print("resumed from step %d" % step, flush=True)
steps = int(sys.argv[1])
loader = iter(torch.utils.data.DataLoader(Data(), batch_size=4, num_workers=2))
for batch in loader:
    step += 1
    print("step %d" % step, flush=True)
    if step == 20:
        with open("workers.tmp", "w") as f:  # the DataLoader's worker pids
            f.write(" ".join(str(w.pid) for w in loader._workers))
        os.rename("workers.tmp", "workers")
    if spotrun.checkpoint_due():
        torch.save({"step": step}, state)
        spotrun.commit(step)
        print("committed at step %d" % step, flush=True)
        sys.exit(75)
    if step >= steps:
        break
    time.sleep(0.02)
print("done at step %d" % step, flush=True)
PY

# job_pid WRAPPER_PID: the job spotrun started (its own process group).
job_pid() {
    local i=0 p=
    until p=$(pgrep -P "$1" | head -n 1) && [ -n "$p" ]; do
        i=$((i + 1))
        [ $i -le 200 ] || { echo "timed out after 10s waiting for the job of wrapper $1 (a child of it)" >&2; return 1; }
        sleep 0.05
    done
    echo "$p"
}

step_of_ckpt() { "$SPOTRUN" show "$1" | awk -v s="$2" '$1 == s { print $2 }'; }

# preempted LOG: what a preempted DataLoader job's log must show: a notice,
# checkpoint 1 staged with no worker lost before the job committed it, and
# durable. (What happens after the commit is a race between the job's own
# exit and the wrapper's TERM, which kills the workers as torch means it to;
# the commit returns once snapshotted, so the job's exit may be logged
# before the wrapper's "staged" line, which comes after the packing; and the
# job's "committed" line may never be written: the store is the truth.)
preempted() {
    grep "preemption notice from" "$1" &&
    grep "checkpoint 1 (step [0-9]*) staged" "$1" &&
    grep "checkpoint 1 is durable" "$1" &&
    ! sed -n "1,/committed at step\|checkpoint 1 (step [0-9]*) staged/p" "$1" |
        grep -E "exited unexpectedly|killed by signal|Traceback"
}

test_expect_success 'PyTorch is importable' '
    require_torch
'

test_expect_success 'kill -TERM -- -PGID of the job: the trainer commits, exit 75' '
    "$SPOTRUN" run --run-id grp --grace 60s -- "$PY" trainer.py 1000000 >grp.log 2>&1 &
    pid=$!
    wait_for grp.log "^step 20$" 120
    wait_for workers . 30
    job=$(job_pid $pid)
    test "$(ps -o pgid= -p $(cut -d" " -f1 workers) | tr -d " ")" = "$job"
    kill -TERM -- -"$job"
    expect_code 75 wait $pid &&
    preempted grp.log
'

test_expect_success 'the rerun resumes from that checkpoint' '
    step=$(step_of_ckpt grp 1) &&
    test -n "$step" &&
    "$SPOTRUN" run --run-id grp -- "$PY" trainer.py $((step + 10)) >grp2.log 2>&1 &&
    grep "^resumed from step $step$" grp2.log &&
    grep "^done at step $((step + 10))$" grp2.log
'

test_expect_success 'TERM to the wrapper'"'"'s group and the job'"'"'s at once (as Slurm): exit 75' '
    setsid "$SPOTRUN" run --run-id both --grace 60s -- "$PY" trainer.py 1000000 >both.log 2>&1 &
    pid=$!
    rm -f workers
    wait_for both.log "^step 20$" 120
    wait_for workers . 30
    job=$(job_pid $pid)
    test "$(ps -o pgid= -p $pid | tr -d " ")" = "$pid"
    kill -TERM -- -"$pid" -"$job"
    expect_code 75 wait $pid &&
    preempted both.log &&
    test -n "$(step_of_ckpt both 1)"
'

test_expect_success 'a SIGTERM from inside the job'"'"'s tree still kills a worker' '
    rc=0
    "$SPOTRUN" run --run-id inside --max-restarts 0 -- "$PY" -c "
import runpy, subprocess, sys, threading, time
def killer():
    while True:
        try:
            pids = open(\"workers\").read().split()
            break
        except OSError:
            time.sleep(0.05)
    # the sender stays alive while the worker handles the signal: a
    # sender that has exited by then cannot be placed in the tree
    subprocess.run([\"sh\", \"-c\", \"kill -TERM %s; sleep 3\" % pids[0]])
rm = __import__(\"os\").unlink
try:
    rm(\"workers\")
except OSError:
    pass
threading.Thread(target=killer, daemon=True).start()
sys.argv = [\"trainer.py\", \"1000000\"]
runpy.run_path(\"trainer.py\", run_name=\"__main__\")
" >inside.log 2>&1 || rc=$?
    test $rc -ne 0 && test $rc -ne 75 &&
    # torch says so as the exit of the worker, or (the trainer reading from the
    # worker as it dies) as the reset of its connection
    grep -E "DataLoader worker .* (killed by signal|exited unexpectedly)|ConnectionResetError" inside.log &&
    ! grep "preemption notice" inside.log
'

# pid1.py: polls checkpoint_due(), commits when asked and trains on (as
# examples/pytorch/train.py does): the wrapper's TERM ends it.
cat >pid1.py <<'PY'
import os, time
import spotrun
step = 0
print("pid1 job started", flush=True)
while True:
    step += 1
    if spotrun.checkpoint_due():
        with open(os.path.join(spotrun.ckpt_dir(), "s"), "w") as f:
            f.write(str(step))
        spotrun.commit(step)
        print("committed", flush=True)
    time.sleep(0.05)
PY

if unshare --pid --fork --mount-proc true 2>/dev/null; then
    test_expect_success 'spotrun as pid 1 (a container entrypoint): its TERM after the checkpoint ends the job' '
        unshare --pid --fork --mount-proc "$SPOTRUN" run --run-id pid1 --grace 20s -- "$PY" pid1.py \
            >pid1.log 2>&1 &
        u=$!
        wait_for pid1.log "pid1 job started" &&
        w=$(pgrep -P $u) &&
        kill -TERM $w &&
        rc=0 && wait $u || rc=$?
        cat pid1.log
        # (the job may be ended by the TERM before it prints "committed":
        # the wrapper TERMs it once the checkpoint is durable)
        test $rc -eq 75 &&
        grep "checkpoint 1 durable" pid1.log &&
        ! grep "did not stop after SIGTERM" pid1.log
    '
else
    test_count=$((test_count + 1))
    say "ok $test_count # skip: no pid namespace here (unshare --pid --fork --mount-proc)"
fi

test_done
