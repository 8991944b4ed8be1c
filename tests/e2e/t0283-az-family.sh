#!/usr/bin/env bash
# What sits above the store works unchanged on az://: delta checkpoints
# (restore reads the referenced ranges of older blobs), run summaries for
# `spotrun stats`, a sweep's trials, and transfers through the fault proxy
# (tests/s3/faultproxy.py: 500, 503, resets, truncated answers) that
# complete bit-exact or fail cleanly; a body damaged on the way is caught
# by its Content-MD5 (tests/azure/flipproxy.py) and sent again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/azlib.sh"
az_start

cat >gen.py <<'GEN'
import random, sys
sys.stdout.buffer.write(random.Random(int(sys.argv[1])).randbytes(int(sys.argv[2]) << 20))
GEN
# A job committing steps 1..4: a frozen 2 MiB file and a 2 MiB head
# rewritten every step; a copy of each step is kept to compare.
cat >job.sh <<JOB
#!/bin/sh
set -e
for i in 1 2 3 4; do
    [ -f "\$SPOTRUN_CKPT_DIR/frozen.bin" ] || $PY $TRASH/gen.py 0 2 >"\$SPOTRUN_CKPT_DIR/frozen.bin"
    $PY $TRASH/gen.py \$i 2 >"\$SPOTRUN_CKPT_DIR/head.bin"
    rm -rf $TRASH/want\$i && cp -a "\$SPOTRUN_CKPT_DIR" $TRASH/want\$i
    "\$SPOTRUN_BIN" commit --step \$i
done
JOB
chmod +x job.sh
man() {
    azreq GET "/ckpt/$test_name/d/ckpt/$(printf %010d "$1")/MANIFEST.json" | tail -n +2 |
        "$PY" -c "import json,sys; print(json.load(sys.stdin)[sys.argv[1]])" "$2"
}

test_expect_success 'delta checkpoints: full, then only the new head; every step restores' '
    SPOTRUN_FRAME_SIZE=256K "$SPOTRUN" run -q --run-id d --no-preload --full-every 3 -- ./job.sh &&
    test "$(man 1 full)" = True && test "$(man 2 full)" = False && test "$(man 3 full)" = False &&
    test "$(man 4 full)" = True &&
    for s in 1 2 3 4; do
        rm -rf got && "$SPOTRUN" pull -q d got --seq $s && diff -r "want$s" got || return 1
    done
'

test_expect_success 'run summaries land in the container; stats reads them' '
    "$SPOTRUN" run --run-id ok -- sh -c "exit 0" 2>ok.log &&
    azreq GET "/ckpt/$test_name/summaries/ok.json" | grep "\"state\":\"done\"" &&
    "$SPOTRUN" stats >stats.out && grep -i "runs" stats.out
'

test_expect_success 'a sweep on az://: init, then a worker runs each trial once' '
    "$SPOTRUN" sweep init g --param lr=1,2,3 -- sh -c "echo \$SPOTRUN_PARAM_LR >>$TRASH/ran" >init.out &&
    grep "sweep g: 3 trials" init.out &&
    "$SPOTRUN" sweep work g >work.out 2>&1 &&
    test "$(sort ran | tr "\n" " ")" = "1 2 3 " &&
    "$SPOTRUN" sweep show g >show.out && grep -c "done" show.out
'

# seqs RUN: the committed checkpoints of RUN.
seqs() { "$SPOTRUN" show "$1" | awk '$1 ~ /^[0-9]+$/ {print $1}' | tr '\n' ' '; }

# The proxy starts inside a test's subshell: its pid goes through a file.
trap 'kill "$(cat "$TRASH/proxy.pid" 2>/dev/null)" "$(cat "$TRASH/flip.pid" 2>/dev/null)" 2>/dev/null
    az_stop' EXIT
test_expect_success 'through a fault proxy: blocks and ranges retried, bit-exact both ways' '
    python3 "$SRCDIR/tests/s3/faultproxy.py" --upstream "http://127.0.0.1:$AZ_PORT" --seed 793 \
        --rate 0.3 --faults 500,503,reset,truncate >proxy.log 2>&1 &
    echo $! >proxy.pid &&
    wait_for proxy.log "^port" &&
    proxy=http://127.0.0.1:$(sed -n "s/^port //p" proxy.log)/$AZ_ACCOUNT &&
    mkdir -p big && "$PY" gen.py 9 3 >big/a.bin && echo small >big/b.txt &&
    AZURE_STORAGE_BLOB_ENDPOINT=$proxy SPOTRUN_AZ_BLOCK_SIZE=256K SPOTRUN_AZ_RETRIES=10 \
        "$SPOTRUN" push f big &&
    AZURE_STORAGE_BLOB_ENDPOINT=$proxy SPOTRUN_AZ_BLOCK_SIZE=256K SPOTRUN_AZ_RETRIES=10 \
        "$SPOTRUN" pull f fout &&
    diff -r big fout &&
    grep "^fault " proxy.log | cut -d" " -f2 | sort | uniq -c &&
    test "$(grep -c "^fault " proxy.log)" -ge 3
'

test_expect_success 'a server that keeps failing: the push fails cleanly, the run keeps its last checkpoint' '
    seqs f >before.out && test "$(cat before.out)" = "1 " &&
    ! AZURE_STORAGE_BLOB_ENDPOINT=http://127.0.0.1:$(sed -n "s/^port //p" proxy.log)/$AZ_ACCOUNT \
        SPOTRUN_AZ_RETRIES=0 SPOTRUN_AZ_BLOCK_SIZE=64K SPOTRUN_AZ_CONCURRENCY=16 \
        "$SPOTRUN" push f big >fail.out 2>&1 &&
    grep "az://devstoreaccount1/ckpt/$test_name/f" fail.out &&
    seqs f >after.out && diff before.out after.out &&
    rm -rf fout2 && "$SPOTRUN" pull f fout2 && diff -r big fout2
'

test_expect_success 'a body damaged in transit is refused by its Content-MD5 and sent again' '
    python3 "$SRCDIR/tests/azure/flipproxy.py" "$AZ_PORT" >flip.log 2>&1 &
    echo $! >flip.pid &&
    wait_for flip.log "^port" &&
    flip=http://127.0.0.1:$(sed -n "s/^port //p" flip.log)/$AZ_ACCOUNT &&
    AZURE_STORAGE_BLOB_ENDPOINT=$flip SPOTRUN_AZ_BLOCK_SIZE=256K "$SPOTRUN" push m big &&
    grep "^flipped PUT .*/m/ckpt/0000000001/data.tar.zst" flip.log &&
    rm -rf mout && "$SPOTRUN" pull m mout && diff -r big mout
'

test_done
