#!/usr/bin/env bash
# Slurm, a sweep: `spotrun sweep init` defines 4 trials, and
# examples/slurm/sweep.sbatch runs them as a real `sbatch --array=0-3
# --requeue` on a single-node cluster, each task `spotrun run --sweep`
# (the trial from SLURM_ARRAY_TASK_ID). One task is preempted mid-run the
# way Slurm preempts (TERM to every process of the batch step): spotrun
# checkpoints, exits 75, the task requeues itself and resumes. Every trial
# ends done exactly once, with the result of an uninterrupted run.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-slurm.sh"

# The trial's job: x <- (x * a + b) mod 1000003 for STEPS steps, the state
# committed after every step (which also answers a checkpoint request);
# the final x goes to $RESULTS/trial-<K>, and one line per finish to
# $RESULTS/finished.
cat >job.sh <<'EOF'
trap 'echo checkpoint requested' USR1
a=$1 b=$2 i=0 x=1
if [ -s "$SPOTRUN_CKPT_DIR/state" ]; then
    read -r i x <"$SPOTRUN_CKPT_DIR/state"
    echo "resumed from step $i"
fi
while [ "$i" -lt "$STEPS" ]; do
    i=$((i + 1))
    x=$(((x * a + b) % 1000003))
    echo "$i $x" >"$SPOTRUN_CKPT_DIR/state"
    "$SPOTRUN_BIN" commit --step "$i" >/dev/null || exit 1
    echo "step $i"
    sleep "$PACE"
done
echo "$x" >"$RESULTS/trial-$SPOTRUN_TRIAL"
echo "$SPOTRUN_TRIAL $x attempt $SPOTRUN_ATTEMPT" >>"$RESULTS/finished"
EOF
export STEPS=30 PACE=0.2 RESULTS=$TRASH/results
mkdir -p "$RESULTS"

# trial K's uninterrupted result (grid a=3,7 x b=1,2: a varies slowest)
reference() { (
    a=$1 b=$2 x=1
    for _ in $(seq "$STEPS"); do x=$(((x * a + b) % 1000003)); done
    echo "$x"
); }

test_expect_success 'a single-node Slurm cluster starts' '
    slurm_start
'

test_expect_success 'sweep init: a 2x2 grid of the job' '
    "$SPOTRUN" sweep init sl --param a=3,7 --param b=1,2 -- sh "$TRASH/job.sh" {a} {b} >init.out &&
    grep "sweep sl: 4 trials" init.out
'

test_expect_success 'sbatch --array=0-3 --requeue runs examples/slurm/sweep.sbatch' '
    sbatch --parsable --array=0-3 --chdir="$TRASH" --output="$D/out/task-%a.out" \
        "$SRCDIR/examples/slurm/sweep.sbatch" sl >jobid &&
    test -s jobid
'

test_expect_success 'trial 1 gets TERM mid-run (every process, as at a preemption), exits 75, requeues' '
    job=$(cat jobid) &&
    wait_for "$D/out/task-1.out" "^step 8$" 30 &&
    scancel --full --signal=TERM "${job}_1" &&
    wait_for "$D/out/task-1.out" "preempted: checkpoint [0-9]* is durable" 30 &&
    # the job answered the notice with a checkpoint (its trap may not have
    # echoed yet: a commit already in flight answers the request, and the
    # job is then stopped)
    awk "/preemption notice from/ {n = 1} n && / staged/ {s = 1} END {exit !s}" \
        "$D/out/task-1.out" &&
    wait_for "$D/out/task-1.out" "requeueing ${job}_1" 10
'

test_expect_success 'the whole array finishes' '
    wait_until 90 "the Slurm queue to empty" queue_empty
'

test_expect_success 'every trial is marked done in the store, none failed' '
    for k in 0 1 2 3; do test -f "$SPOTRUN_STORE/sweeps/sl/end/$k.done" || exit 1; done &&
    ! ls "$SPOTRUN_STORE/sweeps/sl/end/" | grep failed
'

test_expect_success 'every trial finished exactly once, with its uninterrupted result' '
    cat "$RESULTS/finished" &&
    test "$(wc -l <"$RESULTS/finished")" -eq 4 &&
    test "$(cut -d" " -f1 "$RESULTS/finished" | sort -u | tr "\n" " ")" = "0 1 2 3 " &&
    k=0 &&
    for a in 3 7; do
        for b in 1 2; do
            test "$(cat "$RESULTS/trial-$k")" = "$(reference $a $b)" || exit 1
            k=$((k + 1))
        done
    done
'

test_expect_success 'the preempted trial ran twice and resumed from its checkpoint' '
    grep "restart 1" "$D/out/task-1.out" &&
    grep "resumed from step" "$D/out/task-1.out" &&
    ! grep "second notice" "$D/out/task-1.out" &&
    "$SPOTRUN" show sl-1 --json >show1.json &&
    python3 -c "import json, sys; r = json.load(open(sys.argv[1])); \
        assert r[\"attempts\"] >= 2 and r[\"preemptions\"][\"total\"] >= 1, r" show1.json
'

test_expect_success 'the other trials ran once, from scratch' '
    for k in 0 2 3; do
        ! grep "resumed from step" "$D/out/task-$k.out" || exit 1
        "$SPOTRUN" show sl-$k --json >show$k.json &&
        python3 -c "import json, sys; r = json.load(open(sys.argv[1])); \
            assert r[\"attempts\"] == 1 and r[\"preemptions\"][\"total\"] == 0, r" show$k.json || exit 1
    done
'

test_done
