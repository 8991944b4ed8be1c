#!/usr/bin/env bash
# A checkpoint dir the user named (-d DIR) is never emptied silently: one
# holding another run's checkpoint (spotrun's mark names the run) is refused
# naming that run; one holding the user's own files (a trainer's
# out_dir/ckpt.pt) is refused with the command that adopts them; --adopt
# makes them the run's newest checkpoint and the job resumes from them;
# every file spotrun removes from such a dir is logged with its path.
. "$(dirname "$0")/lib.sh"

save() { echo "echo $1 >\"\$SPOTRUN_CKPT_DIR/ckpt.pt\""; }

test_expect_success 'a second run with other args on the same -d is refused, naming the dir, the run and --adopt' '
    "$SPOTRUN" run --run-id first -d out -- sh -c "$(save v1)" 2>err1 || { cat err1; false; } &&
    test "$(cat out/ckpt.pt)" = v1 &&
    expect_code 64 "$SPOTRUN" run --run-id second -d out -- sh -c "$(save v2)" 2>err &&
    cat err &&
    grep -- "--ckpt-dir $TRASH/out holds the checkpoint of run first" err &&
    grep -- "--run-id first" err && grep -- "--adopt" err &&
    test "$(cat out/ckpt.pt)" = v1
'

test_expect_success 'a changed command (a new derived run id) on the same -d is refused too' '
    "$SPOTRUN" run -d derived -- sh -c "$(save a) # lr=1" 2>err1 || { cat err1; false; } &&
    expect_code 64 "$SPOTRUN" run -d derived -- sh -c "$(save b) # lr=2" 2>err &&
    grep "holds the checkpoint of run" err &&
    test "$(cat derived/ckpt.pt)" = a
'

test_expect_success 'a trainer'"'"'s own out_dir/ckpt.pt is refused with the command that adopts it' '
    mkdir own && echo mine >own/ckpt.pt &&
    expect_code 64 "$SPOTRUN" run --run-id mine -d own -- sh -c "$(save x)" 2>err &&
    cat err &&
    grep "holds files spotrun did not put there (ckpt.pt)" err &&
    grep -- "spotrun run --adopt --run-id mine -d $TRASH/own" err &&
    test "$(cat own/ckpt.pt)" = mine
'

test_expect_success '--adopt pushes them as the run'"'"'s checkpoint and the job resumes from them' '
    "$SPOTRUN" run --run-id mine --adopt -d own -- sh -c \
        "test \"\$SPOTRUN_RESUMED\" = 1 && test \"\$(cat \"\$SPOTRUN_CKPT_DIR/ckpt.pt\")\" = mine" \
        2>err || { cat err; false; } &&
    grep -- "--adopt: the files $TRASH/own holds are checkpoint 1 of run mine" err &&
    grep "restored checkpoint 1" err &&
    "$SPOTRUN" pull -q mine check --seq 1 && test "$(cat check/ckpt.pt)" = mine
'

test_expect_success '--adopt on another run'"'"'s dir starts this run from its files' '
    "$SPOTRUN" run --run-id second --adopt -d out -- sh -c \
        "test \"\$(cat \"\$SPOTRUN_CKPT_DIR/ckpt.pt\")\" = v1" 2>err || { cat err; false; } &&
    grep "restored checkpoint 1" err
'

test_expect_success '--fresh logs every file it removes from a -d dir, with its path' '
    mkdir -p logged && "$SPOTRUN" run --run-id logged -d logged -- \
        sh -c "echo a >\"\$SPOTRUN_CKPT_DIR/a\"; mkdir \"\$SPOTRUN_CKPT_DIR/sub\"; echo b >\"\$SPOTRUN_CKPT_DIR/sub/b\"" \
        2>err || { cat err; false; } &&
    "$SPOTRUN" run --run-id logged -d logged --fresh -- true 2>err || { cat err; false; } &&
    cat err &&
    grep "removed $TRASH/logged/a (--fresh)" err &&
    grep "removed $TRASH/logged/sub/b (--fresh)" err
'

test_expect_success 'a fresh start in the run'"'"'s -d dir logs every file it removes' '
    mkdir -p other-store &&
    echo left >logged/left &&
    SPOTRUN_STORE="$TRASH/other-store" "$SPOTRUN" run --run-id logged -d logged -- \
        sh -c "test ! -e \"\$SPOTRUN_CKPT_DIR/left\"" 2>err || { cat err; false; } &&
    grep "removed $TRASH/logged/left (run logged has no checkpoint to restore)" err
'

test_expect_success 'a restore into the run'"'"'s -d dir names each file it removed' '
    expect_code 3 "$SPOTRUN" run --run-id rl -d rdir --max-restarts 0 -- sh -c \
        "echo s >\"\$SPOTRUN_CKPT_DIR/state\" && \"\$SPOTRUN_BIN\" commit --step 1 &&
         echo junk >\"\$SPOTRUN_CKPT_DIR/extra\"; exit 3" 2>err1 || { cat err1; false; } &&
    test -e rdir/extra &&
    "$SPOTRUN" run --run-id rl -d rdir -- sh -c "test ! -e \"\$SPOTRUN_CKPT_DIR/extra\"" \
        2>err || { cat err; false; } &&
    cat err &&
    grep "removed $TRASH/rdir/extra (restored checkpoint 1 of run rl)" err &&
    grep "replaced 1 file(s) $TRASH/rdir held" err
'

test_done
