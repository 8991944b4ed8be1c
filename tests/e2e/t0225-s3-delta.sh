#!/usr/bin/env bash
# Delta checkpoints on S3 (docs/archive-format.md, "Delta checkpoints"):
# `spotrun run` uploads only the new frames of each checkpoint, restore
# reads only the referenced frames' byte ranges of older objects, a
# missing object or a hostile frame list falls back, and kill -9 during a
# delta commit never leaves a bad newest checkpoint.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
export S3RVER_VERBOSE=1 # the server logs each request (what restore fetched)
S3_CONDITIONAL=1 s3_start

cat >gen.py <<'GEN'
import random, sys
sys.stdout.buffer.write(random.Random(int(sys.argv[1])).randbytes(int(sys.argv[2]) << 20))
GEN
gen() { "$PY" gen.py "$@"; }
# A job committing steps 1..5: a frozen 12 MiB file (written once) and a
# 12 MiB head rewritten every step; a copy of each step is kept to compare.
cat >job.sh <<JOB
#!/bin/sh
set -e
for i in 1 2 3 4 5; do
    [ -f "\$SPOTRUN_CKPT_DIR/frozen.bin" ] || $PY $TRASH/gen.py 0 12 >"\$SPOTRUN_CKPT_DIR/frozen.bin"
    $PY $TRASH/gen.py \$i 12 >"\$SPOTRUN_CKPT_DIR/head.bin"
    echo \$i >"\$SPOTRUN_CKPT_DIR/step"
    rm -rf $TRASH/want\$i && cp -a "\$SPOTRUN_CKPT_DIR" $TRASH/want\$i
    "\$SPOTRUN_BIN" commit --step \$i
done
JOB
chmod +x job.sh

obj() { echo "$S3_URL/bkt/$test_name/d/ckpt/$(printf %010d "$1")/$2"; }
man() { s3curl "$(obj "$1" MANIFEST.json)" | "$PY" -c "import json,sys; print(json.load(sys.stdin)[sys.argv[1]])" "$2"; }

test_expect_success 'run on S3: the first checkpoint is full, the next ones upload only the new head' '
    "$SPOTRUN" run -q --run-id d --no-preload --full-every 3 -- ./job.sh &&
    test "$(man 1 format)" = 2 && test "$(man 1 full)" = True &&
    test "$(man 2 full)" = False && test "$(man 3 full)" = False && test "$(man 3 chain)" = 2 &&
    test "$(man 4 full)" = True && test "$(man 5 full)" = False &&
    for s in 2 3 5; do
        test "$(man $s stored_bytes)" -lt $(( $(man $s raw_bytes) * 6 / 10 )) || exit 1
    done &&
    s3curl -o stock1 "$(obj 1 data.tar.zst)" && mkdir stock && zstd -q -d -c stock1 | tar -x -C stock &&
    diff -r want1 stock
'

test_expect_success 'every checkpoint of the chain restores bit-exact from S3' '
    for s in 1 2 3 4 5; do
        rm -rf out && "$SPOTRUN" pull -q d out --seq $s && diff -r want$s out || exit 1
    done
'

test_expect_success 'export of a delta on S3: stock zstd + tar extract it bit-exact' '
    "$SPOTRUN" export -q d d3.tar.zst --seq 3 && mkdir x3 && zstd -q -d <d3.tar.zst | tar -x -C x3 &&
    diff -r want3 x3
'

# got_bytes KEY LINE: bytes of the ranged GETs (206) of KEY the server
# answered since its log line LINE ("info: KEY 206 12ms 4mb")
got_bytes() {
    tail -n +"$2" "$TRASH/s3.log" | sed "s/\x1b\[[0-9;]*m//g" | "$PY" -c "
import re, sys
n = 0
for l in sys.stdin:
    m = re.search(r\"$1 206 \S+ ([0-9.]+)([kmg]?b)\", l)
    if m:
        n += float(m.group(1)) * {\"b\": 1, \"kb\": 1e3, \"mb\": 1 << 20, \"gb\": 1 << 30}[m.group(2)]
print(int(n))"
}

s3rver_only 'it counts ranged GETs in the request log of s3rver' ||
    test_expect_success 'restoring a delta reads only the referenced frames of the older object' '
    line=$(wc -l <"$TRASH/s3.log") &&
    rm -rf out && "$SPOTRUN" pull -q d out --seq 3 && diff -r want3 out &&
    size1=$(man 1 stored_bytes) && got=$(got_bytes d/ckpt/0000000001/data.tar.zst $line) &&
    say "seq 1 object: $size1 bytes, read $got" &&
    test "$got" -gt $((size1 / 3)) && test "$got" -lt $((size1 * 6 / 10))
'

s3rver_only 'it counts ranged GETs in the request log of s3rver' ||
    test_expect_success 'consecutive frames of an older object come in fewer ranged GETs than frames' '
    frames=$(s3curl "$(obj 3 MANIFEST.json)" | "$PY" -c "
import json, sys
m = json.load(sys.stdin)
o = m[\"objects\"].index(\"ckpt/0000000001/data.tar.zst\")
print(sum(1 for f in m[\"frame_list\"] if f[0] == o))") &&
    line=$(wc -l <"$TRASH/s3.log") &&
    rm -rf out && SPOTRUN_S3_CONCURRENCY=1 "$SPOTRUN" pull -q d out --seq 3 && diff -r want3 out &&
    gets=$(tail -n +"$line" "$TRASH/s3.log" | grep -c "d/ckpt/0000000001/data.tar.zst 206") &&
    say "seq 3 reads $frames frames of seq 1 in $gets ranged GETs" &&
    test "$frames" -ge 3 && test "$gets" -lt "$frames"
'

test_expect_success 'a missing referenced object: the newest falls back to the previous chain' '
    s3curl -o saved4 "$(obj 4 data.tar.zst)" &&
    s3curl -X DELETE "$(obj 4 data.tar.zst)" &&
    rm -rf out && "$SPOTRUN" pull d out 2>err &&
    grep "seq 5 is unusable" err && grep "seq 4 is unusable" err && diff -r want3 out &&
    s3curl -X PUT -T saved4 "$(obj 4 data.tar.zst)" &&
    rm -rf out && "$SPOTRUN" pull -q d out && diff -r want5 out
'

hostile() {
    s3curl "$(obj 5 MANIFEST.json)" | "$PY" -c "
import json, sys
m = json.load(sys.stdin)
if sys.argv[1] == \"outside\":
    m[\"objects\"][-1] = \"../other/ckpt/0000000001/data.tar.zst\"
else:
    h = m[\"frame_list\"][1][4]
    m[\"frame_list\"][1][4] = (\"0\" if h[0] != \"0\" else \"1\") + h[1:]
print(json.dumps(m))" "$1" >bad.json &&
    s3curl -X DELETE "$(obj 5 MANIFEST.json)" && s3curl -X PUT -T bad.json "$(obj 5 MANIFEST.json)"
}

for how in outside hash; do
    test_expect_success "a hostile frame list ($how): seq 5 is bad, seq 4 restores" '
        s3curl -o saved5 "$(obj 5 MANIFEST.json)" &&
        hostile '"$how"' &&
        rm -rf out && "$SPOTRUN" pull d out 2>err &&
        grep "seq 5 is unusable" err && diff -r want4 out &&
        s3curl -X DELETE "$(obj 5 MANIFEST.json)" && s3curl -X PUT -T saved5 "$(obj 5 MANIFEST.json)"
    '
done

# kill -9 of the wrapper during delta commits: the newest complete
# checkpoint always restores, complete and consistent.
cat >loop.sh <<JOB
#!/bin/sh
i=\${SPOTRUN_STEP:-0}
[ -f "\$SPOTRUN_CKPT_DIR/frozen.bin" ] || $PY $TRASH/gen.py 0 8 >"\$SPOTRUN_CKPT_DIR/frozen.bin"
while :; do
    i=\$((i + 1))
    $PY $TRASH/gen.py \$i 2 >"\$SPOTRUN_CKPT_DIR/data"
    echo "\$i" >"\$SPOTRUN_CKPT_DIR/step"
    "\$SPOTRUN_BIN" commit --step "\$i" || exit 1
done
JOB
chmod +x loop.sh
check_store() {
    rm -rf kout
    "$SPOTRUN" pull -q k kout || return 1
    local step
    step=$(cat kout/step) || return 1
    gen "$step" 2 | cmp - kout/data && gen 0 8 | cmp - kout/frozen.bin || return 1
    echo "$step"
}
newest_durable() { "$SPOTRUN" show k 2>/dev/null | awk '$1 ~ /^[0-9]+$/ {s=$2} END {print s+0}'; }
points=${SPOTRUN_FAULT_POINTS:-8}
seed=${SPOTRUN_FAULT_SEED:-$(date +%s)}
say "# seed $seed, $points kill points (SPOTRUN_FAULT_SEED=$seed to replay)"
RANDOM=$seed

test_expect_success "kill -9 during delta commits on S3 ($points points): 0 bad restores" '
    "$SPOTRUN" run --run-id k --keep 3 --no-preload -- ./loop.sh 2>prime.log &
    pid=$!
    wait_for prime.log "durable" 120
    kill -9 $pid; wait $pid 2>/dev/null || :
    for _ in $(seq 50); do pgrep -f "$TRASH/loop.sh" >/dev/null || break; sleep 0.05; done
    before=$(newest_durable)
    for n in $(seq "$points"); do
        "$SPOTRUN" run -q --run-id k --keep 3 --no-preload -- ./loop.sh 2>>run.log &
        pid=$!
        sleep "$((RANDOM % 2)).$((RANDOM % 10))"
        kill -9 $pid
        wait $pid 2>/dev/null || :
        for _ in $(seq 50); do pgrep -f "$TRASH/loop.sh" >/dev/null || break; sleep 0.05; done
        after=$(newest_durable)
        got=$(check_store) || { say "point $n: newest checkpoint does not restore"; exit 1; }
        [ "$got" -eq "$after" ] || { say "point $n: restored step $got, newest listed $after"; exit 1; }
        [ "$after" -ge "$before" ] || { say "point $n: lost checkpoint ($before -> $after)"; exit 1; }
        before=$after
    done

    say "newest durable step after $points kills: $before"
'

test_done
