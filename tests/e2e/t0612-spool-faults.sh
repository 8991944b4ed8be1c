#!/usr/bin/env bash
# Faults in the spool's pool (runtime/supervise/checkpointer.c): a staged
# archive whose unchanged frames are holes referring to an earlier staged
# archive. When filling them in fails (disk full) or the earlier archive
# changed on disk, that checkpoint fails with a clear message and never
# reaches the store, the previous one stands, and the next commit starts
# afresh and is stored whole and right. (On S3: on a file store a full
# checkpoint's object is the staged file itself, hard-linked, so damage to
# it on disk is damage to the store, which restore's checks catch.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
S3_CONDITIONAL=1 s3_start
SPOTRUN_INJECT_LIB=${SPOTRUN_INJECT_LIB:-$SRCDIR/build/tests/faults/libspotrun-inject.so}

cat >gen.py <<'GEN'
import random, sys
sys.stdout.buffer.write(random.Random(int(sys.argv[1])).randbytes(int(sys.argv[2]) << 10))
GEN
# commits step i when $TRASH/<run>.go<i> appears: a 6 MiB file written
# once, a 256 KiB one rewritten every step; a copy of each step is kept
cat >job.sh <<JOB
#!/bin/sh
set -e
for i in 1 2 3; do
    until [ -e "$TRASH/\$SPOTRUN_RUN_ID.go\$i" ]; do sleep 0.05; done
    [ -f "\$SPOTRUN_CKPT_DIR/frozen.bin" ] || $PY $TRASH/gen.py 7 6144 >"\$SPOTRUN_CKPT_DIR/frozen.bin"
    $PY $TRASH/gen.py \$i 256 >"\$SPOTRUN_CKPT_DIR/hot.bin"
    rm -rf "$TRASH/\$SPOTRUN_RUN_ID.want\$i" && cp -a "\$SPOTRUN_CKPT_DIR" "$TRASH/\$SPOTRUN_RUN_ID.want\$i"
    "\$SPOTRUN_BIN" commit --step \$i
done
JOB
chmod +x job.sh

# step RUN I: lets the job commit step I and waits until checkpoint I is
# durable or failed (its line in the wrapper's log)
step() {
    touch "$1.go$2"
    wait_for "$1.log" "checkpoint $2 durable\|checkpoint $2 could not be stored" 60
}
restores() { # RUN SEQ: that checkpoint is the job's step SEQ, bit-exact
    rm -rf out && "$SPOTRUN" pull -q "$1" out --seq "$2" && diff -r "$1.want$2" out
}
listed() { "$SPOTRUN" show "$1" | awk '$1 ~ /^[0-9]+$/ {print $1}' | tr '\n' ' '; }

test_expect_success 'disk full while filling in the holes: that checkpoint fails, the next is whole' '
    LD_PRELOAD=$SPOTRUN_INJECT_LIB SPOTRUN_INJECT=pwrite:ENOSPC SPOTRUN_INJECT_PATH=/spool/ \
        "$SPOTRUN" run --run-id full --no-preload --full-every 1 -- ./job.sh >full.log 2>&1 &
    pid=$!
    step full 1 && grep "checkpoint 1 durable" full.log &&
    step full 2 && grep "checkpoint 2 could not be stored: .*No space left on device" full.log &&
    test "$(listed full)" = "1 " && restores full 1 &&
    step full 3 && grep "checkpoint 3 durable" full.log &&
    wait $pid &&
    test "$(listed full)" = "1 3 " && restores full 3
'

test_expect_success 'an earlier staged archive changed on disk: never published; the next is whole' '
    "$SPOTRUN" run --run-id dmg --no-preload --full-every 1 -- ./job.sh >dmg.log 2>&1 &
    pid=$!
    step dmg 1 && grep "checkpoint 1 durable" dmg.log &&
    pools=$(ls "$SPOTRUN_WORK_DIR"/dmg/spool/pool-*.tar.zst) && test -n "$pools" &&
    for p in $pools; do
        "$PY" -c "
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.pwrite(fd, b\"X\" * 4096, os.fstat(fd).st_size // 2)
" "$p" || exit 1
    done &&
    step dmg 2 && grep "checkpoint 2 could not be stored: .*changed: its frame" dmg.log &&
    step dmg 3 && grep "checkpoint 3 durable" dmg.log &&
    wait $pid &&
    test "$(listed dmg)" = "1 3 " && restores dmg 1 && restores dmg 3
'

test_done
