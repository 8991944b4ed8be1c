#!/usr/bin/env bash
# A damaged newest checkpoint (flipped byte, truncated or missing data) is
# skipped with a warning naming it, and the previous one is restored; asked
# for by its seq, it fails with exit 65 and touches nothing.
. "$(dirname "$0")/lib.sh"

DATA=$SPOTRUN_STORE/cf/ckpt/0000000003/data.tar.zst

# Three checkpoints of different content; seq N holds dN at step N00.
for i in 1 2 3; do
    mkdir -p d$i/sub
    head -c 200000 /dev/urandom >d$i/blob
    echo "checkpoint $i" >d$i/sub/n.txt
done

# Puts back the good newest data object.
restore_good() { cp good3.tar.zst "$DATA"; }

# A stale target directory (an earlier pull's) that a pull must replace entirely.
stale_out() { rm -rf out && mkdir -p out && spotrun_made out && echo stale >out/stale.txt; }

test_expect_success 'push three checkpoints' '
    for i in 1 2 3; do
        "$SPOTRUN" push cf d$i --step ${i}00 2>/dev/null || exit 1
    done &&
    "$SPOTRUN" show cf | grep "^checkpoints: *3$" &&
    cp "$DATA" good3.tar.zst
'

test_expect_success 'intact: pull restores the newest (dir 3)' '
    stale_out &&
    "$SPOTRUN" pull cf out 2>err &&
    diff -r d3 out &&
    ! grep -i warning err
'

test_expect_success 'a flipped byte in the newest: pull restores dir 2 with a warning naming seq 3' '
    "$PY" -c "
import sys
p = sys.argv[1]; b = bytearray(open(p, \"rb\").read())
b[len(b) // 2] ^= 0x5a
open(p, \"wb\").write(b)" "$DATA" &&
    ! cmp -s good3.tar.zst "$DATA" &&
    stale_out &&
    "$SPOTRUN" pull cf out 2>err &&
    diff -r d2 out &&
    grep "warning" err | grep "seq 3" &&
    grep "restored checkpoint 2 " err
'

test_expect_success 'pull --seq 3 of the corrupt one: exit 65, target untouched' '
    stale_out &&
    expect_code 65 "$SPOTRUN" pull --seq 3 cf out 2>err &&
    grep -i "checksum" err &&
    test "$(ls -A out)" = stale.txt &&
    test "$(cat out/stale.txt)" = stale
'

test_expect_success 'pull --seq 3 of the corrupt one into a new dir: exit 65, no dir created' '
    expect_code 65 "$SPOTRUN" pull --seq 3 cf newdir 2>err &&
    test ! -e newdir
'

test_expect_success 'a truncated newest: pull restores dir 2 with a warning naming seq 3' '
    restore_good &&
    size=$(stat -c %s "$DATA") &&
    truncate -s $((size / 2)) "$DATA" &&
    stale_out &&
    "$SPOTRUN" pull cf out 2>err &&
    diff -r d2 out &&
    grep "warning" err | grep "seq 3"
'

test_expect_success 'pull --seq 3 of the truncated one: exit 65, target untouched' '
    stale_out &&
    expect_code 65 "$SPOTRUN" pull --seq 3 cf out 2>err &&
    test "$(ls -A out)" = stale.txt
'

test_expect_success 'the newest manifest without its data: pull restores dir 2 with a warning' '
    rm -f "$DATA" &&
    stale_out &&
    "$SPOTRUN" pull cf out 2>err &&
    diff -r d2 out &&
    grep "warning" err | grep "seq 3"
'

test_expect_success 'a byte flipped inside the seek table: pull falls back to dir 2' '
    restore_good &&
    "$PY" -c "
import sys
p = sys.argv[1]; b = bytearray(open(p, \"rb\").read())
b[-10] ^= 0x01
open(p, \"wb\").write(b)" "$DATA" &&
    stale_out &&
    "$SPOTRUN" pull cf out 2>err &&
    diff -r d2 out &&
    grep "warning" err | grep "seq 3"
'

test_expect_success 'spotrun run resumes the job from the previous good checkpoint' '
    cat >job.sh <<-\JOB &&
	#!/bin/sh
	echo "step=${SPOTRUN_STEP-none} resumed=$SPOTRUN_RESUMED" >"$OUT/seen"
	cp -r "$SPOTRUN_CKPT_DIR" "$OUT/restored"
	JOB
    chmod +x job.sh &&
    OUT=$PWD "$SPOTRUN" run --run-id cf -- ./job.sh >run.log 2>&1 &&
    test "$(cat seen)" = "step=200 resumed=1" &&
    diff -r d2 restored &&
    grep "warning" run.log | grep "seq 3"
'

test_done
