#!/usr/bin/env bash
# The archive is standard: stock `zstd -d | tar -x` reads what spotrun
# pushed into a byte-identical tree, as does `spotrun pull`; the manifest's
# sizes match the data object.
. "$(dirname "$0")/lib.sh"

DATA=$SPOTRUN_STORE/io/ckpt/0000000001/data.tar.zst
MANIFEST=$SPOTRUN_STORE/io/ckpt/0000000001/MANIFEST.json

# A tree with nested and empty dirs, an empty file, an executable, a
# relative symlink (to a file below it) and a ~10 MiB file of mixed data (random, text, zeros)
# that spans several 4 MiB frames.
mkdir -p tree/a/b/c tree/emptydir
: >tree/a/empty
echo hello >tree/a/b/c/deep.txt
printf '#!/bin/sh\necho hi\n' >tree/a/run.sh
chmod 755 tree/a/run.sh
ln -s b/c/deep.txt tree/a/link
{ head -c 3M /dev/urandom; yes "spotrun interop" | head -c 4M; head -c 3M /dev/zero
  head -c 123457 /dev/urandom; } >tree/big.bin

# manifest FIELD: an integer field of the manifest.
manifest() { "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$MANIFEST" "$1"; }

test_expect_success 'spotrun push of the tree' '
    "$SPOTRUN" push io tree --step 5 2>push.err &&
    test -f "$MANIFEST" && test -f "$DATA"
'

test_expect_success 'the manifest: stored_bytes is the data object size, several frames' '
    test "$(manifest stored_bytes)" -eq "$(stat -c %s "$DATA")" &&
    test "$(manifest frames)" -ge 3 &&
    test "$(manifest step)" -eq 5 &&
    test "$(manifest run_id)" = io
'

test_expect_success 'zstd -t accepts the data object' '
    zstd -q -t "$DATA"
'

test_expect_success 'zstd -d | tar -x gives a byte-identical tree' '
    mkdir stock &&
    zstd -q -d <"$DATA" | tar -x -C stock &&
    diff -r --no-dereference tree stock
'

test_expect_success 'stock tar: symlink targets and the executable bit are preserved' '
    test "$(readlink stock/a/link)" = b/c/deep.txt &&
    test -x stock/a/run.sh &&
    test -d stock/emptydir &&
    test -f stock/a/empty && test ! -s stock/a/empty
'

test_expect_success 'stock tar lists relative paths only' '
    zstd -q -d <"$DATA" | tar -t >list &&
    ! grep -E "^/|(^|/)\.\.(/|$)" list &&
    grep "^a/b/c/deep.txt$" list
'

test_expect_success 'the raw tar stream has raw_bytes bytes' '
    test "$(zstd -q -d <"$DATA" | wc -c)" -eq "$(manifest raw_bytes)"
'

test_expect_success 'spotrun pull gives the same tree' '
    "$SPOTRUN" pull io pulled 2>pull.err &&
    diff -r --no-dereference tree pulled &&
    test "$(readlink pulled/a/link)" = b/c/deep.txt &&
    test -x pulled/a/run.sh &&
    test -d pulled/emptydir
'

test_expect_success 'push of the same tree twice gives the same data (deterministic)' '
    "$SPOTRUN" push io tree --step 5 --full-every 1 2>/dev/null &&
    cmp "$DATA" "$SPOTRUN_STORE/io/ckpt/0000000002/data.tar.zst"
'

# What push accepts, pull must restore: a published checkpoint that can
# never be restored would be skipped as unusable at every resume.
test_expect_success 'a symlink with ".." that stays inside the tree round-trips' '
    mkdir -p up/a/b up/data &&
    echo shard >up/data/shard.bin &&
    ln -s ../../data/shard.bin up/a/b/shard &&
    ln -s ../data up/a/datadir &&
    "$SPOTRUN" push up up 2>/dev/null &&
    "$SPOTRUN" pull up up-pulled 2>err &&
    diff -r --no-dereference up up-pulled &&
    test "$(readlink up-pulled/a/b/shard)" = ../../data/shard.bin &&
    test "$(cat up-pulled/a/b/shard)" = shard
'

test_expect_success 'a symlink out of the tree: push refuses it, or pull restores it' '
    mkdir -p out/d &&
    echo x >out/d/f &&
    ln -s /etc/hostname out/host &&
    if "$SPOTRUN" push out out 2>err; then
        "$SPOTRUN" pull out out-pulled 2>err &&
        test "$(readlink out-pulled/host)" = /etc/hostname
    else
        grep "host" err &&
        expect_code 66 "$SPOTRUN" pull out out-pulled 2>/dev/null
    fi
'

test_done
