#!/usr/bin/env bash
# Multi-node parts are deltas (docs/multinode.md, docs/archive-format.md):
# two nodes, each its own wrapper with its own HOME and work dir, commit
# steps 1..4 on S3; each node's part of a step uploads only what its
# rank's part of the last set lacks, one in --full-every 3 is full, every
# step restores bit-exact (every part), and gc keeps the older parts a
# kept step's parts reference.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
S3_CONDITIONAL=1 s3_start

cat >gen.py <<'GEN'
import random, sys
sys.stdout.buffer.write(random.Random(int(sys.argv[1])).randbytes(int(sys.argv[2]) << 10))
GEN
# Rank R's job: a 4 MiB file of its own that never changes, a 128 KiB one
# rewritten every step; after each commit it waits for the step's set to
# be complete (so that the next part has it as its base; `show` lists a
# step with parts missing as "incomplete"), and keeps a copy of what it
# committed.
cat >job.sh <<JOB
#!/bin/sh
set -e
r=\$SPOTRUN_NODE_RANK
for i in 1 2 3 4; do
    [ -f "\$SPOTRUN_CKPT_DIR/frozen\$r.bin" ] || $PY $TRASH/gen.py \$((100 + r)) 4096 >"\$SPOTRUN_CKPT_DIR/frozen\$r.bin"
    $PY $TRASH/gen.py \$((10 * i + r)) 128 >"\$SPOTRUN_CKPT_DIR/hot\$r.bin"
    mkdir -p $TRASH/want\$i && cp "\$SPOTRUN_CKPT_DIR"/*\$r.bin $TRASH/want\$i/
    "\$SPOTRUN_BIN" commit --step \$i
    n=0
    until "\$SPOTRUN_BIN" show md 2>/dev/null |
        awk '\$1 ~ /^[0-9]+\$/ && \$3 != "incomplete:" {print \$2}' | grep -qx \$i; do
        n=\$((n + 1)); [ \$n -lt 600 ] || exit 9; sleep 0.1
    done
done
JOB
chmod +x job.sh

node() { # R: node R of 2, in the background
    mkdir -p "$TRASH/home$1"
    HOME=$TRASH/home$1 SPOTRUN_WORK_DIR=$TRASH/work$1 "$SPOTRUN" run --run-id md --nodes 2 \
        --node-rank "$1" --peer-poll 100ms --no-preload --full-every 3 -- ./job.sh >"n$1.log" 2>&1 &
}
# FIELD of rank R's part of step S (its record, found by listing)
part() {
    local dir="s3://bkt/$test_name/md/ckpt/$(printf %010d $(($2 + 1)))/" rec
    rec=$(aws s3 ls "$dir" | awk '{print $4}' | grep "^part-$1-e[0-9]*\.json$") &&
        aws s3 cp "$dir$rec" - | "$PY" -c "import json, sys; print(json.load(sys.stdin)[sys.argv[1]])" "$3"
}

test_expect_success '2 nodes commit 4 steps on S3' '
    node 0 && p0=$! && node 1 && p1=$! &&
    { wait $p0 && wait $p1; } || { cat n0.log n1.log; exit 1; }
    test "$("$SPOTRUN" show md | awk "\$1 ~ /^[0-9]+\$/" | wc -l)" = 4
'

test_expect_success 'each part: step 1 full, 2 and 3 deltas of a few per cent, 4 full again' '
    for r in 0 1; do
        got="$(part $r 1 format) $(part $r 1 full) $(part $r 2 full) $(part $r 3 full)"
        got="$got $(part $r 3 chain) $(part $r 4 full)"
        say "rank $r: format, full 1 2 3, chain 3, full 4: $got"
        test "$got" = "2 True False False 2 True" || exit 1
        for s in 2 3; do
            test "$(part $r $s stored_bytes)" -lt $(( $(part $r $s raw_bytes) / 10 )) || exit 1
        done
    done
'

test_expect_success 'show: the sets of steps 2 and 3 are deltas, uploading less than their archive' '
    "$SPOTRUN" show --json md | "$PY" -c "
import json, sys
c = json.load(sys.stdin)[\"checkpoints\"]
print(\" \".join(x[\"kind\"] for x in c))
assert [x[\"kind\"] for x in c] == [\"full\", \"delta\", \"delta\", \"full\"]
for x in c:
    assert x[\"nodes\"] == 2
    assert (x[\"uploaded_bytes\"] < x[\"archive_bytes\"] / 10) == (x[\"kind\"] == \"delta\"), x
"
'

test_expect_success 'every step restores bit-exact, every part' '
    for s in 1 2 3 4; do
        rm -rf out && "$SPOTRUN" pull -q md out --seq $((s + 1)) && diff -r want$s out || exit 1
    done
'

test_expect_success 'gc --keep 2 keeps the parts that step 3 refers to' '
    "$SPOTRUN" gc -q md --keep 2 &&
    test "$("$SPOTRUN" show md | awk "\$1 ~ /^[0-9]+\$/ {print \$2}" | tr "\n" " ")" = "3 4 " &&
    aws s3 ls "s3://bkt/$test_name/md/ckpt/0000000002/" >ls2.out &&
    grep "part-0-e[0-9]*\.tar.zst" ls2.out &&
    refute grep MANIFEST.json ls2.out &&
    rm -rf out && "$SPOTRUN" pull -q md out --seq 4 && diff -r want3 out
'

test_done
