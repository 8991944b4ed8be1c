#!/usr/bin/env bash
# A fenced stale owner (its lease taken over while it uploaded) leaves a
# data object without a manifest, newer than the newest checkpoint; `spotrun
# gc`, which holds the run's lease, removes it. A wrapper's own --keep never
# touches such a seq (its own upload may be in progress).
. "$(dirname "$0")/lib.sh"

cat >job.sh <<\JOB
#!/bin/sh
for i in 1 2; do
    echo "state $i" >"$SPOTRUN_CKPT_DIR/state.txt"
    "$SPOTRUN_BIN" commit --step $i || exit 9
done
JOB
chmod +x job.sh

seqs() { ls "$SPOTRUN_STORE/$1/ckpt" | tr "\n" " "; }

# What a stale owner leaves: seq 3's data object, never its manifest.
plant_leftover() {
    mkdir -p "$SPOTRUN_STORE/$1/ckpt/0000000003" &&
    cp "$SPOTRUN_STORE/$1/ckpt/0000000002/data.tar.zst" "$SPOTRUN_STORE/$1/ckpt/0000000003/"
}

test_expect_success 'a run with two checkpoints and a stale owner'"'"'s data object (seq 3, no manifest)' '
    "$SPOTRUN" run --run-id g -- ./job.sh 2>run.log &&
    plant_leftover g &&
    test "$(seqs g)" = "0000000001 0000000002 0000000003 " &&
    "$SPOTRUN" show g | grep "^checkpoints: *2$"
'

test_expect_success 'spotrun gc removes the leftover and says so; the checkpoints it keeps stand' '
    "$SPOTRUN" gc g --keep 2 2>gc.err &&
    cat gc.err && grep "deleted 1 unfinished checkpoint upload(s) of an earlier owner of g" gc.err &&
    test "$(seqs g)" = "0000000001 0000000002 " &&
    "$SPOTRUN" pull g out && test "$(cat out/state.txt)" = "state 2"
'

test_expect_success 'gc --keep 1 drops the older checkpoint and a leftover together' '
    plant_leftover g &&
    "$SPOTRUN" gc g --keep 1 2>gc1.err &&
    grep "deleted 1 checkpoint(s) of g, kept the newest 1" gc1.err &&
    grep "deleted 1 unfinished" gc1.err &&
    test "$(seqs g)" = "0000000002 "
'

test_done
