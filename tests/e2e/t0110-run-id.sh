#!/usr/bin/env bash
# Run ids: the default one is derived from the command and the directory
# (so a requeued job finds its checkpoints), array indices are appended,
# and --run-id templates expand scheduler variables or fail with 64.
. "$(dirname "$0")/lib.sh"

# Records its run id; the first time it commits and fails, a resumed start
# records that it resumed and succeeds.
cat >job.sh <<\JOB
#!/bin/sh
echo "$SPOTRUN_RUN_ID $SPOTRUN_RESUMED" >>"$TRASH/ids"
if [ "$SPOTRUN_RESUMED" = 0 ]; then
    echo saved >"$SPOTRUN_CKPT_DIR/state.txt"
    "$SPOTRUN_BIN" commit --step 1 || exit 9
    exit 4
fi
JOB
chmod +x job.sh
export TRASH

# Prints the run id it was given.
printf '#!/bin/sh\necho "$SPOTRUN_RUN_ID"\n' >printid.sh
chmod +x printid.sh
cp printid.sh job-name.sh

# id_of [OPTIONS] [-- ARGS]: the run id ./printid.sh ARGS gets under spotrun.
id_of() {
    local opts=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    "$SPOTRUN" run "${opts[@]}" -- "$TRASH/printid.sh" "$@" 2>/dev/null
}

test_expect_success 'same command in the same dir twice: same run id, the second resumes' '
    expect_code 4 "$SPOTRUN" run --max-restarts 0 -- ./job.sh --lr 1 2>run1.log &&
    "$SPOTRUN" run --max-restarts 0 -- ./job.sh --lr 1 2>run2.log &&
    first=$(sed -n 1p ids) && second=$(sed -n 2p ids) &&
    test "${first% *}" = "${second% *}" &&
    test "${first#* }" = 0 && test "${second#* }" = 1 &&
    test "$("$SPOTRUN" ls | awk "NR > 1" | wc -l)" -eq 1
'

test_expect_success 'the default run id starts with the program name' '
    id=$(sed -n "1s/ .*//p" ids) &&
    case "$id" in job-*) ;; *) say "unexpected id $id"; exit 1 ;; esac
'

test_expect_success 'an interpreter is skipped: the script name is used' '
    id=$("$SPOTRUN" run -- sh ./job-name.sh 2>/dev/null) &&
    case "$id" in job-name-*) ;; *) say "unexpected id $id"; exit 1 ;; esac
'

test_expect_success 'different args: a different run id' '
    expect_code 4 "$SPOTRUN" run --max-restarts 0 -- ./job.sh --lr 2 2>run3.log &&
    third=$(sed -n 3p ids) && first=$(sed -n 1p ids) &&
    test "${third% *}" != "${first% *}" &&
    test "${third#* }" = 0
'

test_expect_success 'same command in another directory: a different run id' '
    mkdir -p elsewhere &&
    a=$(id_of) &&
    b=$(cd elsewhere && id_of) &&
    test -n "$a" && test -n "$b" && test "$a" != "$b"
'

test_expect_success 'SLURM_ARRAY_TASK_ID=3: the default id ends with -3' '
    plain=$(id_of -- array) &&
    id=$(SLURM_ARRAY_TASK_ID=3 id_of -- array) &&
    test -n "$plain" &&
    test "$id" = "$plain-3"
'

test_expect_success 'JOB_COMPLETION_INDEX=5 (Kubernetes indexed job): the default id ends with -5' '
    id=$(JOB_COMPLETION_INDEX=5 id_of -- indexed) &&
    case "$id" in *-5) ;; *) say "unexpected id $id"; exit 1 ;; esac
'

test_expect_success '--run-id with {slurm_array_job_id} and {slurm_array_task_id} expands' '
    id=$(SLURM_ARRAY_JOB_ID=777 SLURM_ARRAY_TASK_ID=2 \
        id_of --run-id "sweep-{slurm_array_job_id}-{slurm_array_task_id}" -- x) &&
    test "$id" = sweep-777-2 &&
    test -d "$SPOTRUN_STORE/sweep-777-2"
'

test_expect_success '{index} takes JOB_COMPLETION_INDEX' '
    id=$(JOB_COMPLETION_INDEX=4 id_of --run-id "shard-{index}" -- x) &&
    test "$id" = shard-4
'

test_expect_success '{index} takes SLURM_ARRAY_TASK_ID' '
    id=$(SLURM_ARRAY_TASK_ID=9 id_of --run-id "shard-{index}" -- x) &&
    test "$id" = shard-9
'

test_expect_success '{env:VAR} expands any variable; SPOTRUN_RUN_ID is the twin of --run-id' '
    id=$(EXPERIMENT=lr3e-4 id_of --run-id "exp-{env:EXPERIMENT}" -- x) &&
    test "$id" = exp-lr3e-4 &&
    id=$(SPOTRUN_RUN_ID=from-env id_of) &&
    test "$id" = from-env
'

test_expect_success 'a template variable that is not set: exit 64 naming the variable' '
    expect_code 64 "$SPOTRUN" run --run-id "sweep-{slurm_array_job_id}" -- touch ran 2>err &&
    grep "SLURM_ARRAY_JOB_ID" err &&
    test ! -e ran &&
    expect_code 64 "$SPOTRUN" run --run-id "x-{env:NO_SUCH_VAR_E2E}" -- true 2>err &&
    grep "NO_SUCH_VAR_E2E" err &&
    expect_code 64 "$SPOTRUN" run --run-id "x-{index}" -- true 2>err &&
    grep "SLURM_ARRAY_TASK_ID" err
'

test_expect_success 'an unknown placeholder: exit 64 naming it' '
    expect_code 64 "$SPOTRUN" run --run-id "x-{bogus}" -- true 2>err &&
    grep "{bogus}" err
'

test_expect_success 'invalid characters in the run id: exit 64' '
    expect_code 64 "$SPOTRUN" run --run-id "a/b" -- touch ran 2>err &&
    grep "invalid run id" err &&
    expect_code 64 "$SPOTRUN" run --run-id "has space" -- true 2>err &&
    expect_code 64 "$SPOTRUN" run --run-id ".hidden" -- true 2>err &&
    expect_code 64 "$SPOTRUN" run --run-id "../up" -- true 2>err &&
    expect_code 64 "$SPOTRUN" run --run-id "-dash" -- true 2>err &&
    test ! -e ran &&
    test ! -e "$TRASH/up" && test ! -e "$SPOTRUN_STORE/../up"
'

test_expect_success 'a variable expanding to invalid characters: exit 64' '
    expect_code 64 env EXPERIMENT="../../etc" "$SPOTRUN" run --run-id "x-{env:EXPERIMENT}" \
        -- true 2>err &&
    grep "invalid run id" err
'

test_expect_success 'a run id over 128 characters: exit 64' '
    long=$(printf "%0130d" 0) &&
    expect_code 64 "$SPOTRUN" run --run-id "r$long" -- true 2>err
'

test_done
