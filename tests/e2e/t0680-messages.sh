#!/usr/bin/env bash
# Messages and exit codes: every number on the command line goes through one
# strict parser; gc on a run that does not exist creates nothing; file
# names in any script round-trip exactly and quietly.
. "$(dirname "$0")/lib.sh"

cat >job.sh <<'JOB'
#!/bin/sh
# Tries each --step the test gives, recording the exit codes, then a good one.
for s in "$@"; do
    "$SPOTRUN_BIN" commit --step "$s" 2>>"$OUT/commit.err"
    echo "$s=$?" >>"$OUT/codes"
done
echo ok >"$SPOTRUN_CKPT_DIR/f"
"$SPOTRUN_BIN" commit --step 12
JOB
chmod +x job.sh

test_expect_success 'commit --step refuses anything but a plain non-negative integer (64)' '
    OUT=$PWD "$SPOTRUN" run --run-id steps -- ./job.sh 12abc 1e99 "1 2" " 7" +7 -3 0x10 \
        99999999999999999999 2>run.err || { cat run.err; false; } &&
    cat codes &&
    test "$(grep -c "=64$" codes)" = 8 &&
    grep "invalid value \"12abc\" for --step" commit.err &&
    "$SPOTRUN" show steps | grep -E "^ +1 +12 "
'

test_expect_success 'durations and sizes refuse hex floats, exponents and inf (64)' '
    for v in 0x1p3 0x1p3s 1e3 inf nan " 5s"; do
        expect_code 64 "$SPOTRUN" run --every "$v" -- true 2>err || exit 1
        grep "invalid value" err || exit 1
        expect_code 64 "$SPOTRUN" run --gpu-mem-limit "$v" -- true 2>/dev/null || exit 1
    done &&
    expect_code 64 env SPOTRUN_GRACE=0x1p3 "$SPOTRUN" run -- true 2>err &&
    grep "invalid SPOTRUN_GRACE" err &&
    expect_code 64 "$SPOTRUN" run --keep 1e2 -- true 2>/dev/null &&
    expect_code 64 "$SPOTRUN" show steps --price-per-hour 0x1p1 2>/dev/null &&
    expect_code 64 "$SPOTRUN" push steps . --step 1e3 2>/dev/null
'

test_done
