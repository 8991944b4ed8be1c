#!/usr/bin/env bash
# What a suspect checkpoint does not do (docs/runtime.md, "A bad
# checkpoint"): `gc --keep N` keeps the newest N checkpoints that are not
# suspect (and every newer one), and drops the marks of what it deletes; a
# run whose every checkpoint is suspect stops with exit 65 and says how to
# go on, never starts over by itself; a job killed from outside right after
# its restore (SIGKILL), however often, marks nothing.
. "$(dirname "$0")/lib.sh"

# Plants the mark a wrapper writes (storage/run/quarantine.c) on seq $2 of run $1.
plant_mark() {
    mkdir -p "$SPOTRUN_STORE/$1/suspect" &&
    printf '{"format":1,"run_id":"%s","seq":%d,"step":%d,"reason":"job failed twice right after restoring it (exit 1, exit 1)","attempts":[1,2],"exits":[{"code":1},{"code":1}],"host":"h","time":"2026-01-01T00:00:00Z"}' \
        "$1" "$2" "$2" >"$SPOTRUN_STORE/$1/suspect/$(printf %010d "$2").json"
}

test_expect_success 'gc --keep 1 keeps the newest trusted checkpoint and the suspect one after it' '
    for i in 1 2 3; do
        mkdir -p d$i && echo "$i" >d$i/state &&
        "$SPOTRUN" push g d$i --step $i 2>/dev/null || exit 1
    done &&
    plant_mark g 1 &&
    plant_mark g 3 &&
    "$SPOTRUN" gc g --keep 1 2>gc.err &&
    test ! -e "$SPOTRUN_STORE/g/ckpt/0000000001" &&
    test -f "$SPOTRUN_STORE/g/ckpt/0000000002/MANIFEST.json" &&
    test -f "$SPOTRUN_STORE/g/ckpt/0000000003/MANIFEST.json" &&
    "$SPOTRUN" pull g out 2>/dev/null &&
    test "$(cat out/state)" = 2
'

test_expect_success 'gc drops the mark of the suspect checkpoint it deleted, keeps the other' '
    test ! -e "$SPOTRUN_STORE/g/suspect/0000000001.json" &&
    test -f "$SPOTRUN_STORE/g/suspect/0000000003.json"
'

# A job whose only checkpoint is bad: it writes "poison" at step 1, commits,
# crashes; every attempt that restores it exits 1 at once.
cat >poison.sh <<'JOB'
#!/bin/sh
d=$SPOTRUN_CKPT_DIR
echo "${SPOTRUN_STEP-fresh}" >>"$OUT/starts"
if [ -f "$d/state" ]; then
    echo "cannot load $(cat "$d/state")" >&2
    exit 1
fi
echo poison >"$d/state"
"$SPOTRUN_BIN" commit --step 1 || exit 3
exit 1
JOB
chmod +x poison.sh
export OUT=$PWD

test_expect_success 'every checkpoint suspect: exit 65 naming the ways on, no fresh start' '
    expect_code 65 "$SPOTRUN" run --run-id z --backoff 0.1s --max-restarts 5 -- ./poison.sh \
        >z.log 2>&1 &&
    grep "every checkpoint of run z (1) is marked suspect" z.log &&
    grep "spotrun run --fresh. starts over" z.log &&
    printf "%s\n" fresh 1 1 >want &&
    diff want starts
'

test_expect_success 'a later run of it stops the same way before starting the job' '
    rm -f starts &&
    expect_code 65 "$SPOTRUN" run --run-id z -- ./poison.sh >z2.log 2>&1 &&
    grep "every checkpoint of run z (1) is marked suspect" z2.log &&
    test ! -e starts
'

test_expect_success 'run --fresh starts over from scratch' '
    expect_code 1 "$SPOTRUN" run --run-id z --fresh --max-restarts 0 -- ./poison.sh >z3.log 2>&1 &&
    test "$(cat starts)" = fresh
'

# A job that commits step 1, and then is killed by SIGKILL right after each
# of its next two restores (a kill from outside, not its checkpoint).
cat >killed.sh <<'JOB'
#!/bin/sh
d=$SPOTRUN_CKPT_DIR
echo "${SPOTRUN_STEP-fresh}" >>"$OUT/kstarts"
case $SPOTRUN_ATTEMPT in
0) echo 1 >"$d/state" && "$SPOTRUN_BIN" commit --step 1 && exit 1 ;;
1 | 2) kill -KILL $$ ;;
esac
echo "$(cat "$d/state")" >"$OUT/kfinal"
JOB
chmod +x killed.sh

test_expect_success 'killed by SIGKILL twice right after its restore: nothing is marked' '
    "$SPOTRUN" run --run-id k --backoff 0.1s --max-restarts 5 -- ./killed.sh >k.log 2>&1 &&
    printf "%s\n" fresh 1 1 1 >want &&
    diff want kstarts &&
    test "$(cat kfinal)" = 1 &&
    test ! -e "$SPOTRUN_STORE/k/suspect" &&
    if grep -e "is suspect" -e "marked suspect" -e "failed right after restoring" k.log; then
        say "a kill from outside counted against the checkpoint"; false
    fi
'

test_done
