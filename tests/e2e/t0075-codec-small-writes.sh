#!/usr/bin/env bash
# The codec never hands the kernel a write of more than 64 KiB (the page
# cache fills several-MiB writes with large folios, 5-10x the CPU on a VM,
# docs/archive-format.md "Speed"): push and pull succeed, byte-exact, when
# every write() or pwrite() of more bytes fails (libspotrun-inject.so).
. "$(dirname "$0")/lib.sh"

SPOTRUN_INJECT_LIB=${SPOTRUN_INJECT_LIB:-$SRCDIR/build/tests/faults/libspotrun-inject.so}
# small_writes_only cmd...: cmd, with every write of more than 64 KiB failing.
small_writes_only() {
    LD_PRELOAD=$SPOTRUN_INJECT_LIB SPOTRUN_INJECT=write:EIO,pwrite:EIO \
        SPOTRUN_INJECT_MINLEN=65537 "$@"
}

# Frames that compress little (random data: each a few MiB stored) and a
# file of zeros with data in the middle (a hole on each side of a long run).
mkdir -p tree/sub
head -c 9M /dev/urandom >tree/random.bin
{ head -c 5M /dev/zero; head -c 3M /dev/urandom; head -c 5M /dev/zero; } >tree/sub/mixed.bin
echo meta >tree/meta.json

test_expect_success 'the fault is real: a plain write of 1 MiB fails under it' '
    ! small_writes_only "$PY" -c "import os; os.write(os.open(\"probe\", os.O_WRONLY | os.O_CREAT), bytes(1 << 20))" 2>probe.err &&
    grep "Input/output error" probe.err
'

test_expect_success 'push writes its archive in small pieces' '
    small_writes_only "$SPOTRUN" push -q r tree --step 1 &&
    test "$(find "$SPOTRUN_STORE" -name data.tar.zst -size +8M | wc -l)" = 1
'

test_expect_success 'pull writes the files in small pieces, byte-exact' '
    "$SPOTRUN" push -q p tree --step 1 &&
    small_writes_only "$SPOTRUN" pull -q p out &&
    diff -r tree out
'

test_done
