#!/usr/bin/env bash
# A trainer killed while it writes its checkpoint in place (kill -9, the
# OOM killer, a crash) leaves a half-written file: the commit of the
# directory after the job's end never takes it, whether the trainer runs
# under a launcher that exits 1 (torchrun does) or is the job itself.
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/lib-save.sh"

# saves of 4 MiB, each about 10 s long, every 5 s of training
export SIZE_KB=4096 CHUNK_KB=64 CHUNK_S=0.15 STEP_S=1 SAVE_EVERY=5 MAX_STEP=1000

# kill_mid_save RUN SIGNAL JOB...: the trainer's second save is under way
# and a notice (60 s) is waiting for it: then SIGNAL to the trainer.
kill_mid_save() {
    local run=$1 sig=$2
    shift 2
    rm -f saving-* saved-*
    "$SPOTRUN" run --run-id "$run" --settle 1s -- "$@" >"$run.log" 2>&1 &
    pid=$!
    {
        wait_for "$run.log" "checkpoint 1 durable" 120 &&
            wait_until 120 "the second save" test -s saving-2 &&
            "$SPOTRUN" notify --run-id "$run" --deadline 60s &&
            wait_for "$run.log" "the job is saving: ckpt.pt" 30 &&
            kill -"$sig" "$(cat saving-2)"
    } || { kill -TERM $pid; wait $pid; return 1; }
}

test_expect_success 'kill -9 of the trainer mid-save under a launcher that exits 1: exit 75' '
    kill_mid_save launcher KILL sh -c "\"\$0\" saver.py; exit 1" "$PY" &&
    expect_code 75 wait $pid &&
    if test -e saved-2; then say "the save finished: nothing was torn"; false; fi
'

test_expect_success 'the half-written save is not committed: the log names the file and the pid' '
    grep "not committed: ckpt.pt was being written by pid $(cat saving-2)" launcher.log &&
    if grep "committing .* as it stands" launcher.log; then say "the torn save was committed"; false; fi &&
    "$SPOTRUN" show launcher >launcher.show &&
    grep "^checkpoints: *1$" launcher.show
'

test_expect_success 'the rerun resumes from the checkpoint before it' '
    MAX_STEP=0 "$SPOTRUN" run --run-id launcher -- "$PY" saver.py >launcher2.log 2>&1 &&
    grep "^resumed from step 5$" launcher2.log
'

test_expect_success 'a trainer that crashes (SIGABRT) mid-save: not committed, checkpoint 1 stands' '
    kill_mid_save abrt ABRT "$PY" saver.py &&
    expect_code 75 wait $pid &&
    grep "not committed: ckpt.pt was being written by pid $(cat saving-2)" abrt.log &&
    "$SPOTRUN" show abrt >abrt.show &&
    grep "^checkpoints: *1$" abrt.show &&
    MAX_STEP=0 "$SPOTRUN" run --run-id abrt -- "$PY" saver.py >abrt2.log 2>&1 &&
    grep "^resumed from step 5$" abrt2.log
'

test_expect_success 'kill -9 of the trainer itself mid-save: not committed, the event names file and pid' '
    kill_mid_save direct KILL "$PY" saver.py &&
    expect_code 75 wait $pid &&
    grep "killed (SIGKILL): .* so it is not committed; checkpoint 1 (step -) stands" direct.log &&
    events direct >direct.ev &&
    grep "\"event\":\"not_committed\"" direct.ev >nc.ev &&
    grep "\"reason\":\"killed\"" nc.ev &&
    grep "\"file\":\"ckpt.pt\"" nc.ev &&
    grep "\"pid\":$(cat saving-2)" nc.ev &&
    "$SPOTRUN" show direct >direct.show &&
    grep "^checkpoints: *1$" direct.show
'

test_done
