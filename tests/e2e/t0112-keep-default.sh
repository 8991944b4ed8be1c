#!/usr/bin/env bash
# The store does not grow without bound by default: a run keeps its newest
# 3 complete checkpoints unless --keep says otherwise (0: all), the newest
# is never deleted, and `spotrun gc` deletes the rest by hand.
. "$(dirname "$0")/lib.sh"
unset SPOTRUN_KEEP # lib.sh keeps all for the other tests: here the default

# Commits steps 1..6, each with different content.
cat >job.sh <<\JOB
#!/bin/sh
for i in 1 2 3 4 5 6; do
    echo "state $i" >"$SPOTRUN_CKPT_DIR/state.txt"
    "$SPOTRUN_BIN" commit --step $i || exit 9
done
JOB
chmod +x job.sh

seqs() { ls "$SPOTRUN_STORE/$1/ckpt" | tr "\n" " "; }

test_expect_success 'without --keep: the newest 3 checkpoints remain, the newest restores' '
    "$SPOTRUN" run --run-id d -- ./job.sh >run.log 2>&1 &&
    test "$(grep -c "durable" run.log)" -eq 6 &&
    test "$(seqs d)" = "0000000004 0000000005 0000000006 " &&
    "$SPOTRUN" show d >show.out &&
    grep "^checkpoints: *3$" show.out &&
    "$SPOTRUN" pull d out &&
    test "$(cat out/state.txt)" = "state 6"
'

test_expect_success 'the default retention deletes old checkpoints only: a user file beside them stays' '
    mkdir -p "$SPOTRUN_STORE/e/ckpt" &&
    echo precious >"$SPOTRUN_STORE/e/notes.txt" &&
    echo precious >"$SPOTRUN_STORE/e/ckpt/notes.txt" &&
    "$SPOTRUN" run --run-id e -- ./job.sh >run2.log 2>&1 &&
    test "$(cat "$SPOTRUN_STORE/e/notes.txt")" = precious &&
    test "$(cat "$SPOTRUN_STORE/e/ckpt/notes.txt")" = precious &&
    "$SPOTRUN" show e >show2.out &&
    grep "^checkpoints: *3$" show2.out
'

test_expect_success 'only --keep 0 keeps every checkpoint (the default does not); gc deletes the rest by hand' '
    test "$(seqs d)" = "0000000004 0000000005 0000000006 " &&
    "$SPOTRUN" run --run-id all --keep 0 -- ./job.sh >run3.log 2>&1 &&
    test "$(seqs all)" = "0000000001 0000000002 0000000003 0000000004 0000000005 0000000006 " &&
    "$SPOTRUN" gc all --keep 2 &&
    test "$(seqs all)" = "0000000005 0000000006 "
'

test_expect_success 'run --help, docs/cli.md and the man page say the default' '
    "$SPOTRUN" run --help >help.out &&
    grep -- "--keep N .*(default 3; 0: all;" help.out &&
    grep "^| \`-k, --keep N\` | \`SPOTRUN_KEEP\` | 3 |" "$SRCDIR/docs/cli.md" &&
    grep "(default 3; 0: keep" "$SRCDIR/docs/spotrun.1.scd"
'

test_done
