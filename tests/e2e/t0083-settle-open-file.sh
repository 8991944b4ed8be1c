#!/usr/bin/env bash
# --settle commits the directory only when no process of the job holds a
# file of it open for writing, not merely when it has been quiet: a
# trainer that pauses mid-save for longer than the settle time is not
# committed mid-file. A log it keeps open for appending is not a save and
# does not hold the settle up.
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/lib-save.sh"

# one save of 4 MiB with a 4 s pause halfway (settle: 1 s), a log held
# open for appending, then training goes on
export SIZE_KB=4096 CHUNK_KB=256 CHUNK_S=0.05 STEP_S=1 SAVE_EVERY=5 MAX_STEP=1000 \
    PAUSE_SAVE=1 PAUSE_S=4 LOG_APPEND=1

test_expect_success 'a pause mid-save longer than --settle: committed once the file is closed' '
    "$SPOTRUN" run --run-id pause --settle 1s --grace 5s -- "$PY" saver.py >pause.log 2>&1 &
    pid=$!
    # the first settle: train.log alone; the second: the whole save
    { wait_until 120 "the first save" test -s saved-1 &&
        wait_lines pause.log "committing .*(settled)" 2 120 &&
        wait_for pause.log "checkpoint 2 durable" 120 &&
        "$SPOTRUN" notify --run-id pause --deadline 5s; } || { kill -TERM $pid; wait $pid; exit 1; }
    expect_code 75 wait $pid &&
    grep "pausing mid-save" pause.log &&
    grep "ckpt.pt is open for writing by pid $(cat saving-1): --settle commits the directory once it is closed" pause.log
'

test_expect_success 'every checkpoint in the store that holds ckpt.pt holds a whole one' '
    "$SPOTRUN" show pause >pause.show &&
    n=$(sed -n "s/^checkpoints: *//p" pause.show) &&
    saves=0 &&
    for seq in $(seq 1 "$n"); do
        rm -rf out-$seq
        "$SPOTRUN" pull --seq $seq pause out-$seq
        if test -e out-$seq/ckpt.pt; then
            "$PY" saver.py --check out-$seq/ckpt.pt || exit 1
            saves=$((saves + 1))
        fi
    done &&
    test "$saves" -ge 1
'

test_expect_success 'the rerun resumes from the whole save' '
    MAX_STEP=0 "$SPOTRUN" run --run-id pause -- "$PY" saver.py >pause2.log 2>&1 &&
    grep "^resumed from step 5$" pause2.log
'

test_done
