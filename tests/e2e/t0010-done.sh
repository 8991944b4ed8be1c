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

# A done run's local work dir (~/.cache/spotrun/RUN: the default checkpoint
# dir, the spool) goes once the run is done; every checkpoint is in the
# store, and show says where it was.
test_expect_success 'a done run removes its local work dir; show says where it was' '
    run=$(latest_run) &&
    test ! -e "$SPOTRUN_WORK_DIR/$run" &&
    grep "removed the local work dir $SPOTRUN_WORK_DIR/$run (the run is done; --keep-work keeps it)" run4.log &&
    "$SPOTRUN" show "$run" >show.out &&
    grep "^work dir: *$(hostname):$SPOTRUN_WORK_DIR/$run (removed: the run is done)$" show.out &&
    "$SPOTRUN" show "$run" --json >show.json &&
    "$PY" -c "import json, sys; w = json.load(open(\"show.json\"))[\"work_dir\"]; \
        assert w == {\"host\": \"$(hostname)\", \"path\": \"$SPOTRUN_WORK_DIR/$run\", \
                     \"kept\": False, \"removed\": True}, w"
'

test_expect_success '--keep-work (SPOTRUN_KEEP_WORK) keeps it, and show says so' '
    "$SPOTRUN" run --run-id kept --keep-work -- ./job.sh 2>kept.log &&
    test -s "$SPOTRUN_WORK_DIR/kept/ckpt/model.txt" &&
    ! grep "removed the local work dir" kept.log &&
    "$SPOTRUN" show kept | grep "^work dir: .*:$SPOTRUN_WORK_DIR/kept (kept: --keep-work)$" &&
    SPOTRUN_KEEP_WORK=1 "$SPOTRUN" run --run-id kept2 -- ./job.sh 2>/dev/null &&
    test -d "$SPOTRUN_WORK_DIR/kept2/ckpt"
'

test_expect_success 'a run that is not done keeps its work dir (a rerun here resumes from it)' '
    expect_code 3 "$SPOTRUN" run --run-id failing --max-restarts 0 -- sh -c "exit 3" 2>/dev/null &&
    test -d "$SPOTRUN_WORK_DIR/failing" &&
    "$SPOTRUN" show failing >show.out &&
    grep "^work dir: .*:$SPOTRUN_WORK_DIR/failing$" show.out
'

test_expect_success 'with --ckpt-dir elsewhere: that dir stays, and a rerun --fresh takes it again' '
    "$SPOTRUN" run --run-id own -d own-ckpt -- ./job.sh 2>own.log &&
    test -s own-ckpt/model.txt &&
    ! test -e "$SPOTRUN_WORK_DIR/own/spool" &&
    rm -rf own-ckpt && mkdir own-ckpt && echo x >own-ckpt/old &&
    "$SPOTRUN" run --run-id own -d own-ckpt --fresh -- ./job.sh 2>own2.log &&
    test -s own-ckpt/model.txt
'

test_done
