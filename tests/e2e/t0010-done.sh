#!/usr/bin/env bash
# A job that exits 0 marks its run done: the wrapper exits 0, DONE is in
# the store, and a rerun of the same command does nothing unless --fresh.
. "$(dirname "$0")/lib.sh"

# The job counts its starts in a marker file, records what it was given,
# and leaves a checkpoint behind.
cat >job.sh <<\JOB
#!/bin/sh
echo start >>"$TRASH/started"
echo "resumed=$SPOTRUN_RESUMED" >"$TRASH/env"
ls -A "$SPOTRUN_CKPT_DIR" >"$TRASH/ckpt-at-start"
echo "trained $(date +%s%N)" >"$SPOTRUN_CKPT_DIR/model.txt"
"$SPOTRUN_BIN" commit --step 10 || exit 9
JOB
chmod +x job.sh
export TRASH

test_expect_success 'a job exiting 0: the wrapper exits 0' '
    "$SPOTRUN" run -- ./job.sh >run1.log 2>&1 &&
    test "$(wc -l <started)" -eq 1 &&
    grep "resumed=0" env
'

test_expect_success 'the run is marked DONE in the store' '
    run=$(latest_run) &&
    test -n "$run" &&
    test -f "$SPOTRUN_STORE/$run/DONE"
'

test_expect_success 'spotrun ls shows the run as done' '
    "$SPOTRUN" ls >ls.out &&
    run=$(latest_run) &&
    awk -v r="$run" "\$1 == r && \$2 == \"done\"" ls.out | grep . &&
    "$SPOTRUN" show "$run" >show.out &&
    grep "^state: *done" show.out
'

test_expect_success 'rerun of the same command exits 0 at once without running the job' '
    "$SPOTRUN" run -- ./job.sh >run2.log 2>&1 &&
    test "$(wc -l <started)" -eq 1 &&
    grep "already done" run2.log &&
    grep -- "--fresh" run2.log
'

test_expect_success '--fresh runs it again from scratch: SPOTRUN_RESUMED=0, empty dir' '
    run=$(latest_run) &&
    "$SPOTRUN" show "$run" | grep -E "^ +1 +10 " &&
    "$SPOTRUN" run --fresh -- ./job.sh >run3.log 2>&1 &&
    test "$(wc -l <started)" -eq 2 &&
    grep "resumed=0" env &&
    test ! -s ckpt-at-start
'

test_expect_success '--fresh deleted the old checkpoints: only the new one remains' '
    run=$(latest_run) &&
    "$SPOTRUN" show "$run" >show.out &&
    grep "^checkpoints: *1$" show.out &&
    grep "^state: *done" show.out &&
    test "$(ls "$SPOTRUN_STORE/$run/ckpt")" = 0000000001 &&
    test -f "$SPOTRUN_STORE/$run/DONE"
'

test_expect_success 'SPOTRUN_FRESH=1 is the environment twin of --fresh' '
    SPOTRUN_FRESH=1 "$SPOTRUN" run -- ./job.sh >run4.log 2>&1 &&
    test "$(wc -l <started)" -eq 3
'

test_done
