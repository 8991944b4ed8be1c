#!/usr/bin/env bash
# Delta checkpoints (docs/archive-format.md, "Delta checkpoints"): a
# checkpoint uploads only what changed, restores bit-exact from every object
# it references, a missing or corrupt referenced frame and a hostile frame
# list make it bad (fallback), and gc keeps what kept checkpoints reference.
. "$(dirname "$0")/lib.sh"

mkdir -p src
"$PY" -c 'import os; open("src/frozen.bin","wb").write(os.urandom(12 << 20))'
step() { # step N: a new 2 MiB head and step file, the frozen part unchanged
    "$PY" -c "import random,sys; sys.stdout.buffer.write(random.Random($1).randbytes(2 << 20))" >src/head.bin
    echo "$1" >src/step.txt
    "$SPOTRUN" push -q d src --step "$1"
    cp -a src "want$1"
}
man() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" \
    "$SPOTRUN_STORE/d/ckpt/$(printf %010d "$1")/MANIFEST.json" "$2"; }
ckpt() { echo "$SPOTRUN_STORE/d/ckpt/$(printf %010d "$1")"; }

test_expect_success 'the first checkpoint is full and stock-readable' '
    step 1 &&
    test "$(man 1 format)" = 2 && test "$(man 1 full)" = True &&
    mkdir stock && zstd -q -d -c "$(ckpt 1)/data.tar.zst" | tar -x -C stock &&
    diff -r src stock
'

test_expect_success 'the second uploads only the changed file (< 25% of the bytes)' '
    step 2 &&
    test "$(man 2 full)" = False && test "$(man 2 chain)" = 1 &&
    test "$(man 2 stored_bytes)" -lt $(( $(man 2 raw_bytes) / 4 ))
'

test_expect_success 'show: uploaded bytes next to the whole archive, full vs delta, ratio not inflated' '
    "$SPOTRUN" show d >show.out &&
    grep -E "^ +SEQ .* STORED +RATIO +UPLOADED +KIND" show.out &&
    awk "\$1 == 1 {print \$10}" show.out | grep -x full &&
    awk "\$1 == 2 {print \$10}" show.out | grep -x delta &&
    "$SPOTRUN" show d --json >show.json &&
    "$PY" - <<PY
import json
c = json.load(open("show.json"))["checkpoints"]
assert c[0]["kind"] == "full" and c[1]["kind"] == "delta", c
assert c[0]["uploaded_bytes"] == c[0]["archive_bytes"] == c[0]["stored_bytes"]
assert c[1]["uploaded_bytes"] == c[1]["stored_bytes"] < c[1]["archive_bytes"] // 4
assert abs(c[1]["ratio"] - c[1]["raw_bytes"] / c[1]["archive_bytes"]) < 1e-9 and c[1]["ratio"] < 1.1
PY
'

test_expect_success 'pull restores the delta bit-exact, and each older one by --seq' '
    step 3 &&
    "$SPOTRUN" pull -q d out && diff -r want3 out &&
    "$SPOTRUN" pull -q d out2 --seq 2 && diff -r want2 out2 &&
    "$SPOTRUN" pull -q d out1 --seq 1 && diff -r want1 out1
'

test_expect_success 'export: a delta and a full one as standalone archives stock zstd + tar extract bit-exact' '
    "$SPOTRUN" export -q d d3.tar.zst && "$SPOTRUN" export -q d d1.tar.zst --seq 1 &&
    mkdir x3 x1 && zstd -q -d <d3.tar.zst | tar -x -C x3 && zstd -q -d <d1.tar.zst | tar -x -C x1 &&
    diff -r want3 x3 && diff -r want1 x1 &&
    expect_code 73 "$SPOTRUN" export -q d d3.tar.zst
'

test_expect_success '--full-every 1 makes a full checkpoint' '
    "$SPOTRUN" push -q d src --step 3 --full-every 1 &&
    test "$(man 4 full)" = True
'

test_expect_success 'a corrupt referenced frame: pull falls back to the previous checkpoint' '
    step 5 && step 6 &&
    test "$(man 6 full)" = False &&
    cp "$(ckpt 4)/data.tar.zst" saved4 &&
    chmod u+w "$(ckpt 4)/data.tar.zst" &&
    printf "\377\377\377\377" | dd of="$(ckpt 4)/data.tar.zst" bs=1 seek=100000 conv=notrunc 2>/dev/null &&
    rm -rf out && "$SPOTRUN" pull d out 2>err &&
    grep "seq 6 is unusable" err && grep "seq 5 is unusable" err &&
    grep "seq 4 is unusable" err && diff -r want3 out &&
    ! "$SPOTRUN" export -q d bad.tar.zst 2>err && test ! -e bad.tar.zst &&
    cp saved4 "$(ckpt 4)/data.tar.zst"
'

test_expect_success 'a missing referenced object: pull falls back' '
    mv "$(ckpt 4)/data.tar.zst" saved4 &&
    rm -rf out && "$SPOTRUN" pull d out 2>err &&
    grep "seq 6 is unusable" err && diff -r want3 out &&
    mv saved4 "$(ckpt 4)/data.tar.zst" &&
    rm -rf out && "$SPOTRUN" pull -q d out && diff -r want6 out
'

# hostile: rewrite seq 6's manifest (create-only: delete and write again)
hostile() {
    "$PY" - "$(ckpt 6)/MANIFEST.json" "$1" <<'PY'
import json, sys
p, how = sys.argv[1], sys.argv[2]
m = json.load(open(p))
if how == "outside":
    m["objects"][-1] = "../other/ckpt/0000000001/data.tar.zst"
elif how == "newer":
    m["objects"][-1] = "ckpt/0000000099/data.tar.zst"
elif how == "size":
    m["frame_list"][1][2] += 1
elif how == "hash":
    h = m["frame_list"][1][4]
    m["frame_list"][1][4] = ("0" if h[0] != "0" else "1") + h[1:]
elif how == "offset":
    m["frame_list"][1][1] = 1 << 40
import os
os.chmod(p, 0o644)
os.unlink(p)
open(p, "w").write(json.dumps(m))
PY
}

for how in outside newer size hash offset; do
    test_expect_success "a hostile frame list ($how): seq 6 is bad, seq 5 restores" '
        cp "$(ckpt 6)/MANIFEST.json" saved6 &&
        hostile '"$how"' &&
        rm -rf out && "$SPOTRUN" pull d out 2>err &&
        grep "seq 6 is unusable" err && diff -r want5 out &&
        chmod u+w "$(ckpt 6)/MANIFEST.json" && cp saved6 "$(ckpt 6)/MANIFEST.json"
    '
done

test_expect_success 'gc --keep 1 keeps the objects the kept delta references' '
    "$SPOTRUN" gc -q d --keep 1 &&
    test -f "$(ckpt 4)/data.tar.zst" && test ! -f "$(ckpt 4)/MANIFEST.json" &&
    test ! -e "$(ckpt 5)/data.tar.zst" &&
    rm -rf out && "$SPOTRUN" pull -q d out && diff -r want6 out
'

test_expect_success 'after a full checkpoint, gc frees the old objects' '
    "$SPOTRUN" push -q d src --step 7 --full-every 1 &&
    "$SPOTRUN" gc -q d --keep 1 &&
    test "$(ls "$SPOTRUN_STORE/d/ckpt")" = "$(basename "$(ckpt 7)")"
'

test_done
