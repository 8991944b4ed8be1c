#!/usr/bin/env bash
# spotrun removes or empties only what it made: the run's work dir
# WORK_DIR/RUN is spotrun's only when spotrun created it and marked it then
# (its .spotrun-owner marker); one it did not make, or a symlink there, is
# refused with exit 64 and nothing in it is touched. The checkpoint dir is
# told by device and inode, however the user names it, and every directory
# spotrun makes for the run is 0700.
. "$(dirname "$0")/lib.sh"

# precious DIR: every file the user put under DIR is still there.
precious() {
    for d in ckpt gpu stall spool; do
        test "$(cat "$1/$d/file")" = precious || { say "$1/$d/file is gone"; return 1; }
    done
    test "$(cat "$1/job.page")" = notes
}
plant() { mkdir -p "$1"/{ckpt,gpu,stall,spool} && for d in ckpt gpu stall spool; do echo precious >"$1/$d/file"; done && echo notes >"$1/job.page"; }

test_expect_success 'a WORK_DIR/RUN spotrun did not make is refused (exit 64, named, ways out), every file kept' '
    plant scratch/exp1 &&
    expect_code 64 env SPOTRUN_WORK_DIR="$TRASH/scratch" "$SPOTRUN" run --run-id exp1 -- true 2>err &&
    cat err &&
    grep "work dir $TRASH/scratch/exp1 exists and spotrun did not make it" err &&
    grep -- "--work-dir" err && grep -- "--run-id" err &&
    precious scratch/exp1 &&
    test ! -e "$SPOTRUN_STORE/exp1/DONE"
'

test_expect_success 'a refused work dir is untouched by --keep-work and --fresh too' '
    expect_code 64 env SPOTRUN_WORK_DIR="$TRASH/scratch" "$SPOTRUN" run --run-id exp1 --fresh \
        --keep-work -- true 2>err &&
    precious scratch/exp1
'

test_expect_success 'a WORK_DIR/RUN that is a symlink to a user dir is refused, the dir untouched' '
    plant mine && mkdir -p "$SPOTRUN_WORK_DIR" && ln -s "$TRASH/mine" "$SPOTRUN_WORK_DIR/linked" &&
    expect_code 64 "$SPOTRUN" run --run-id linked -- true 2>err &&
    cat err && grep "work dir $SPOTRUN_WORK_DIR/linked is a symlink" err &&
    precious mine && test -L "$SPOTRUN_WORK_DIR/linked"
'

test_expect_success 'the work root, the run dir and the checkpoint dir spotrun makes are 0700' '
    SPOTRUN_WORK_DIR="$TRASH/new/root" "$SPOTRUN" run --run-id modes --keep-work -- \
        sh -c "stat -c %a \"\$SPOTRUN_CKPT_DIR\" >\"$TRASH/ckpt-mode\"" 2>err || { cat err; false; } &&
    test "$(stat -c %a new/root)" = 700 && test "$(stat -c %a new)" = 700 &&
    test "$(stat -c %a new/root/modes)" = 700 && test "$(cat ckpt-mode)" = 700 &&
    "$SPOTRUN" run --run-id modes-d -d made/ckpt -- \
        sh -c "stat -c %a \"\$SPOTRUN_CKPT_DIR\" >\"$TRASH/d-mode\"" 2>err || { cat err; false; } &&
    test "$(cat d-mode)" = 700 && test "$(stat -c %a made)" = 700
'

test_expect_success 'the run dir is marked with the run id and a nonce, mode 0600' '
    test "$(stat -c %a new/root/modes/.spotrun-owner)" = 600 &&
    grep "^run modes$" new/root/modes/.spotrun-owner &&
    grep -E "^nonce [0-9a-f]{32}$" new/root/modes/.spotrun-owner
'

test_expect_success '-d WORK/RUN/ckpt/ with a trailing slash is the run'"'"'s at the start and at the end' '
    "$SPOTRUN" run --run-id slash -d "$SPOTRUN_WORK_DIR/slash/ckpt/" -- \
        sh -c "echo x >\"\$SPOTRUN_CKPT_DIR/state\"" 2>err || { cat err; false; } &&
    grep "removed the local work dir $SPOTRUN_WORK_DIR/slash " err &&
    test ! -e "$SPOTRUN_WORK_DIR/slash"
'

test_expect_success '-d through a symlink to WORK/RUN/ckpt is the run'"'"'s at the start and at the end' '
    expect_code 3 "$SPOTRUN" run --run-id viasym --max-restarts 0 -- sh -c "exit 3" 2>err &&
    test -d "$SPOTRUN_WORK_DIR/viasym/ckpt" &&
    ln -s "$SPOTRUN_WORK_DIR/viasym/ckpt" ckpt-link &&
    "$SPOTRUN" run --run-id viasym -d ckpt-link -- true 2>err || { cat err; false; } &&
    grep "removed the local work dir $SPOTRUN_WORK_DIR/viasym " err &&
    test ! -e "$SPOTRUN_WORK_DIR/viasym"
'

test_done
