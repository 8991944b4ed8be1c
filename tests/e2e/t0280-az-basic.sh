#!/usr/bin/env bash
# Every store command works with --store az://account/container/prefix
# against Azurite (Shared Key checked by the server): push, pull, ls, show,
# gc, a job's run; large objects go up as blocks and come back in ranges.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/azlib.sh"
az_start

test_expect_success 'push then pull a small checkpoint through az://' '
    mkdir -p src/sub && echo hello >src/a.txt && head -c 100000 /dev/urandom >src/sub/b.bin &&
    "$SPOTRUN" push r1 src --step 7 &&
    "$SPOTRUN" pull r1 out &&
    diff -r src out
'

test_expect_success 'ls and show read the run from the container' '
    "$SPOTRUN" ls >ls.out && grep "^r1 .*checkpointed *- *1 " ls.out &&
    "$SPOTRUN" show r1 >show.out && grep "store: *az://devstoreaccount1/ckpt/t0280-az-basic" show.out
'

test_expect_success 'the blobs are where the layout says, manifest included' '
    az_keys t0280-az-basic/r1/ >keys &&
    grep "^t0280-az-basic/r1/ckpt/0000000001/data.tar.zst$" keys &&
    grep "^t0280-az-basic/r1/ckpt/0000000001/MANIFEST.json$" keys
'

test_expect_success 'a checkpoint over the block size goes up in blocks, bit-exact back' '
    head -c 3000000 /dev/urandom >src/big.bin &&
    SPOTRUN_AZ_BLOCK_SIZE=256K SPOTRUN_AZ_CONCURRENCY=4 "$SPOTRUN" push r1 src --step 8 &&
    azreq GET /ckpt/t0280-az-basic/r1/ckpt/0000000002/data.tar.zst "comp=blocklist" >bl.xml &&
    test "$(grep -o "<Block>" bl.xml | wc -l)" -ge 12 &&
    SPOTRUN_AZ_BLOCK_SIZE=256K "$SPOTRUN" pull r1 out2 && diff -r src out2
'

test_expect_success 'pull --seq restores an older checkpoint' '
    "$SPOTRUN" pull r1 out1 --seq 1 && test ! -e out1/big.bin && cmp src/a.txt out1/a.txt
'

test_expect_success 'gc deletes old checkpoints from the container' '
    "$SPOTRUN" push r1 src --step 9 &&
    "$SPOTRUN" gc r1 --keep 1 &&
    "$SPOTRUN" show r1 >show2.out && grep "checkpoints: 1" show2.out &&
    az_keys t0280-az-basic/r1/ckpt/0000000001/ >gone && test ! -s gone
'

test_expect_success 'run: a job that finishes marks the run done in the container' '
    "$SPOTRUN" run --run-id done1 -- "$LOGREG" --steps 50 --out w.bin >run.log 2>&1 &&
    "$SPOTRUN" ls >ls2.out && grep "^done1 .*done" ls2.out
'

test_done
