#!/usr/bin/env bash
# A trainer that saves its own checkpoint in place (like torch.save of
# nanoGPT's ckpt.pt) under --settle, and does not listen for requests: a
# stop that comes while it is writing lets the save finish before the
# job's SIGTERM, then commits it; when the deadline leaves no time, the
# half-written file is never committed: the previous checkpoint stays the
# newest and the log names the file and the process writing it.
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/lib-save.sh"

# saves of 4 MiB, each about 5 s long, every 5 s of training
export SIZE_KB=4096 CHUNK_KB=128 CHUNK_S=0.15 STEP_S=1 SAVE_EVERY=5 MAX_STEP=1000

# start_mid_save RUN [spotrun run options]: runs the trainer in the
# background (RUN.log, $pid) until its first save is durable and its
# second has begun.
start_mid_save() {
    local run=$1
    shift
    rm -f saving-* saved-*
    "$SPOTRUN" run --run-id "$run" --settle 1s "$@" -- "$PY" saver.py >"$run.log" 2>&1 &
    pid=$!
    wait_for "$run.log" "checkpoint 1 durable" 120 &&
        wait_until 120 "the second save" test -s saving-2 ||
        { kill -TERM $pid; wait $pid; return 1; }
}

test_expect_success 'a notice mid-save: the save finishes before SIGTERM, exit 75' '
    start_mid_save long &&
    "$SPOTRUN" notify --run-id long --deadline 60s &&
    expect_code 75 wait $pid &&
    writer=$(cat saving-2) &&
    grep "the job is saving: ckpt.pt is open for writing by pid $writer" long.log &&
    test -s saved-2 &&
    grep "committing .* as it stands (job stopped)" long.log
'

test_expect_success 'the save it finished is the newest checkpoint: the rerun resumes from it' '
    MAX_STEP=0 "$SPOTRUN" run --run-id long -- "$PY" saver.py >long2.log 2>&1 &&
    grep "^resumed from step 10$" long2.log
'

test_expect_success 'SIGTERM to the wrapper mid-save (--grace 60s): the save finishes and is committed' '
    start_mid_save term --grace 60s &&
    kill -TERM $pid &&
    expect_code 75 wait $pid &&
    grep "the job is saving: ckpt.pt is open for writing by pid $(cat saving-2)" term.log &&
    MAX_STEP=0 "$SPOTRUN" run --run-id term -- "$PY" saver.py >term2.log 2>&1 &&
    grep "^resumed from step 10$" term2.log
'

test_expect_success 'an attempt time limit reached mid-save: the save finishes and is committed, exit 124' '
    rm -f saving-* saved-*
    # the first save begins after 3 s and lasts about 20 s; the limit is 10 s
    SAVE_EVERY=3 CHUNK_S=0.6 expect_code 124 "$SPOTRUN" run --run-id limit --settle 1s \
        --grace 60s --attempt-time-limit 10s -- "$PY" saver.py >limit.log 2>&1 &&
    grep "the job is saving: ckpt.pt is open for writing by pid $(cat saving-1)" limit.log &&
    test -s saved-1 &&
    MAX_STEP=0 "$SPOTRUN" run --run-id limit -- "$PY" saver.py >limit2.log 2>&1 &&
    grep "^resumed from step 3$" limit2.log
'

test_expect_success 'a notice mid-save with too short a deadline: not committed, naming file and pid' '
    CHUNK_S=0.4 start_mid_save short &&
    "$SPOTRUN" notify --run-id short --deadline 3s &&
    expect_code 75 wait $pid &&
    if test -e saved-2; then say "the save finished: nothing was torn"; false; fi &&
    grep "not committed: ckpt.pt was being written by pid $(cat saving-2)" short.log &&
    if grep "committing .* as it stands" short.log; then say "the torn save was committed"; false; fi
'

test_expect_success 'the event says why; checkpoint 1 stays the newest and the rerun resumes from it' '
    events short >short.ev &&
    grep "\"event\":\"not_committed\"" short.ev >nc.ev &&
    grep "\"file\":\"ckpt.pt\"" nc.ev &&
    grep "\"pid\":$(cat saving-2)" nc.ev &&
    grep "\"stands_seq\":1" nc.ev &&
    "$SPOTRUN" show short >short.show &&
    grep "^checkpoints: *1$" short.show &&
    MAX_STEP=0 "$SPOTRUN" run --run-id short -- "$PY" saver.py >short2.log 2>&1 &&
    grep "^resumed from step 5$" short2.log
'

test_done
