#!/usr/bin/env bash
# kill -9 during gc of a delta chain, at every point where gc deletes
# something (docs/store.md "GC"): gc deletes the dropped checkpoints'
# manifests first and their data after, so wherever it dies every
# checkpoint still listed restores bit-exact (a listed delta's base object
# is never gone), and the next gc finishes the job: only the kept
# checkpoints and the objects they reference are left.
. "$(dirname "$0")/lib.sh"
SPOTRUN_INJECT_LIB=${SPOTRUN_INJECT_LIB:-$SRCDIR/build/tests/faults/libspotrun-inject.so}

cat >gen.py <<'GEN'
import random, sys
sys.stdout.buffer.write(random.Random(int(sys.argv[1])).randbytes(int(sys.argv[2]) << 10))
GEN
steps=12
# Steps 1..12: a 2 MiB file that changes every 4th step (deltas reference
# it meanwhile), a 256 KiB one rewritten every step, and the step number;
# a copy of each step to compare with. Full checkpoints every 5th.
cat >job.sh <<JOB
#!/bin/sh
set -e
for i in \$(seq $steps); do
    $PY $TRASH/gen.py \$(( (i - 1) / 4 )) 2048 >"\$SPOTRUN_CKPT_DIR/slow.bin"
    $PY $TRASH/gen.py \$((1000 + i)) 256 >"\$SPOTRUN_CKPT_DIR/fast.bin"
    echo \$i >"\$SPOTRUN_CKPT_DIR/step"
    rm -rf $TRASH/want\$i && cp -a "\$SPOTRUN_CKPT_DIR" $TRASH/want\$i
    "\$SPOTRUN_BIN" commit --step \$i
done
JOB
chmod +x job.sh

listed() { "$SPOTRUN" show g 2>/dev/null | awk '$1 ~ /^[0-9]+$/ {print $1 ":" $2}'; }
# every listed checkpoint restores as the step it says it is
all_restore() {
    local l
    for l in $(listed); do
        rm -rf out && "$SPOTRUN" pull -q g out --seq "${l%:*}" 2>>pull.err ||
            { say "seq ${l%:*} does not restore"; return 1; }
        diff -r "want${l#*:}" out >/dev/null || { say "seq ${l%:*} is not step ${l#*:}"; return 1; }
    done
}
# what is left of the run's checkpoints: "seq/name" lines
left() { (cd "$SPOTRUN_STORE/g/ckpt" && find . -type f | sed 's|^\./0*||' | sort); }

test_expect_success 'a chain of 12 checkpoints, fulls every 5th' '
    "$SPOTRUN" run -q --run-id g --no-preload --full-every 5 -- ./job.sh &&
    test "$(listed | wc -l)" = $steps && all_restore &&
    cp -a "$SPOTRUN_STORE" store.orig
'

# gc --keep 3 on a fresh copy, killed at its Nth delete, for every N until
# one gc runs to the end.
test_expect_success 'gc killed at each of its deletes: every listed checkpoint restores' '
    n=0
    while :; do
        rm -rf "$SPOTRUN_STORE"
        cp -a store.orig "$SPOTRUN_STORE"
        code=0
        LD_PRELOAD=$SPOTRUN_INJECT_LIB SPOTRUN_INJECT=unlink:KILL:$n SPOTRUN_INJECT_PATH=/ckpt/ \
            "$SPOTRUN" gc -q g --keep 3 2>>gc.err || code=$?
        all_restore || { say "killed at delete $n"; exit 1; }
        [ "$code" = 137 ] || break
        n=$((n + 1))
    done
    say "# gc deleted $n times; killed at each" &&
    test "$code" = 0 && test "$n" -ge 18
'

test_expect_success 'after a kill, the next gc finishes: the kept ones and what they reference' '
    rm -rf "$SPOTRUN_STORE" && cp -a store.orig "$SPOTRUN_STORE" &&
    { LD_PRELOAD=$SPOTRUN_INJECT_LIB SPOTRUN_INJECT=unlink:KILL:7 SPOTRUN_INJECT_PATH=/ckpt/ \
        "$SPOTRUN" gc -q g --keep 3 2>/dev/null; test $? = 137; } &&
    "$SPOTRUN" gc -q g --keep 3 && all_restore &&
    test "$(listed | wc -l)" = 3 &&
    rm -rf "$SPOTRUN_STORE" && cp -a store.orig "$SPOTRUN_STORE" &&
    "$SPOTRUN" gc -q g --keep 3 && left >whole &&
    rm -rf "$SPOTRUN_STORE" && cp -a store.orig "$SPOTRUN_STORE" &&
    { LD_PRELOAD=$SPOTRUN_INJECT_LIB SPOTRUN_INJECT=unlink:KILL:7 SPOTRUN_INJECT_PATH=/ckpt/ \
        "$SPOTRUN" gc -q g --keep 3 2>/dev/null; test $? = 137; } &&
    "$SPOTRUN" gc -q g --keep 3 && left >after_kill &&
    diff whole after_kill &&
    refs=$(for m in "$SPOTRUN_STORE"/g/ckpt/*/MANIFEST.json; do
        "$PY" -c "import json, sys
m = json.load(open(sys.argv[1]))
print(m[\"seq\"])
for o in m.get(\"objects\", []): print(int(o.split(\"/\")[1]))" "$m"
    done | sort -nu | tr "\n" " ") &&
    data=$(grep "/data.tar.zst\$" whole | cut -d/ -f1 | sort -nu | tr "\n" " ") &&
    say "# data left: $data; referenced by the kept: $refs" &&
    test "$data" = "$refs"
'

test_done
