#!/usr/bin/env bash
# A sparse file (a 256 MiB file with a few bytes of data) is stored as
# compressed zeros and restored with its holes: the same bytes (cmp), the
# same size, and far fewer allocated blocks than its size, by pull, by a
# resumed run and from a delta checkpoint; stock `zstd -d | tar -x` reads
# the same archive (docs/archive-format.md, "Sparse files").
. "$(dirname "$0")/lib.sh"

MIB=1048576
mkdir -p tree
truncate -s 256M tree/sparse.bin
echo x >>tree/sparse.bin
echo small >tree/small.txt
SIZE=$(stat -c %s tree/sparse.bin)

# allocated FILE: the bytes its blocks take on disk.
allocated() { echo $(( $(stat -c %b "$1") * $(stat -c %B "$1") )); }
# holes_here: whether this filesystem makes holes at all (the block
# assertions are skipped where it does not).
holes_here() { test "$(allocated tree/sparse.bin)" -lt "$MIB"; }
man() { "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
    "$SPOTRUN_STORE/sp/ckpt/$(printf %010d "$1")/MANIFEST.json" "$2"; }

test_expect_success 'push stores the holes as compressed zeros (well under 1 MiB)' '
    "$SPOTRUN" push -q sp tree --step 1 &&
    test "$(man 1 raw_bytes)" -gt "$SIZE" &&
    test "$(man 1 stored_bytes)" -lt "$MIB"
'

test_expect_success 'pull restores the same bytes, with holes' '
    "$SPOTRUN" pull -q sp out &&
    cmp tree/sparse.bin out/sparse.bin &&
    cmp tree/small.txt out/small.txt &&
    test "$(stat -c %s out/sparse.bin)" -eq "$SIZE" &&
    { ! holes_here || test "$(allocated out/sparse.bin)" -lt "$MIB"; }
'

test_expect_success 'a delta checkpoint of the changed file restores with holes too' '
    printf y | dd of=tree/sparse.bin bs=1 seek=$((100 * MIB)) conv=notrunc 2>/dev/null &&
    "$SPOTRUN" push -q sp tree --step 2 &&
    test "$(man 2 full)" = False &&
    "$SPOTRUN" pull -q sp out2 &&
    cmp tree/sparse.bin out2/sparse.bin &&
    { ! holes_here || test "$(allocated out2/sparse.bin)" -lt "$MIB"; }
'

test_expect_success 'stock zstd -d | tar -x reads the same bytes' '
    mkdir stock &&
    zstd -q -d <"$SPOTRUN_STORE/sp/ckpt/0000000001/data.tar.zst" | tar -x -C stock &&
    cmp out/sparse.bin stock/sparse.bin
'

# The job makes a sparse file and commits it, then fails; the next run
# resumes from that checkpoint and records what it found.
cat >job.sh <<\JOB
#!/bin/sh
if [ "$SPOTRUN_RESUMED" = 1 ]; then
    cmp "$TRASH/want.bin" "$SPOTRUN_CKPT_DIR/model.bin" >"$TRASH/cmp.out" 2>&1 || exit 5
    stat -c '%s %b %B' "$SPOTRUN_CKPT_DIR/model.bin" >"$TRASH/resumed.stat"
    exit 0
fi
truncate -s 64M "$SPOTRUN_CKPT_DIR/model.bin"
echo weights >>"$SPOTRUN_CKPT_DIR/model.bin"
cp --sparse=always "$SPOTRUN_CKPT_DIR/model.bin" "$TRASH/want.bin"
"$SPOTRUN_BIN" commit --step 7 || exit 9
exit 3
JOB
chmod +x job.sh
export TRASH

test_expect_success 'a resumed run finds the sparse file with the same bytes, with holes' '
    expect_code 3 "$SPOTRUN" run --run-id job --max-restarts 0 -- ./job.sh >run1.log 2>&1 &&
    "$SPOTRUN" show job | grep -E "^ +1 +7 " &&
    "$SPOTRUN" run --run-id job -- ./job.sh >run2.log 2>&1 &&
    grep "restored checkpoint 1 (step 7" run2.log &&
    read -r size blocks unit <resumed.stat &&
    test "$size" -eq $((64 * MIB + 8)) &&
    { ! holes_here || test $((blocks * unit)) -lt "$MIB"; }
'

test_done
