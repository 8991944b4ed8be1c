#!/usr/bin/env bash
# The job's contract: the environment spotrun gives the job on a fresh
# start and after a resume, the request signal, and the shim that makes
# that signal harmless for a job that never asked for it.
. "$(dirname "$0")/lib.sh"

# Records its environment and its checkpoint dir per attempt; on the first
# attempt saves, commits step 42 and crashes.
cat >envjob.sh <<\JOB
#!/bin/sh
a=$SPOTRUN_ATTEMPT
env | grep -E "^(SPOTRUN_[A-Z_]*|LD_PRELOAD)=" | sort >"$OUT/env.$a"
if [ -S "$SPOTRUN_CONTROL" ]; then echo socket >"$OUT/control.$a"; fi
if [ -d "$SPOTRUN_CKPT_DIR" ]; then ls -A "$SPOTRUN_CKPT_DIR" >"$OUT/ckpt.$a"; fi
if [ "$a" = 0 ]; then
    mkdir -p "$SPOTRUN_CKPT_DIR/sub"
    echo "weights at 42" >"$SPOTRUN_CKPT_DIR/model.bin"
    echo "adam" >"$SPOTRUN_CKPT_DIR/sub/opt.bin"
    "$SPOTRUN_BIN" commit --step 42 || exit 9
    exit 3
fi
cp -r "$SPOTRUN_CKPT_DIR" "$OUT/restored"
JOB
chmod +x envjob.sh
mkdir out
export OUT=$PWD/out

# A plain shell script with no handler for any signal.
cat >plain.sh <<\JOB
#!/bin/sh
i=0
while [ $i -lt 12 ]; do sleep 0.1; i=$((i + 1)); done
echo survived >"$OUT/survived"
JOB
chmod +x plain.sh

# env.N VAR: the value the job saw in attempt N (fails when unset).
seen() { sed -n "s/^$2=//p" "out/env.$1" | grep . ; }

test_expect_success 'a job that saves, commits and crashes is restarted and finishes' '
    "$SPOTRUN" run --run-id envrun --backoff 10ms -- ./envjob.sh >run.log 2>&1 &&
    test -f out/env.0 && test -f out/env.1
'

test_expect_success 'fresh start: SPOTRUN_RUN_ID is the run id' '
    test "$(seen 0 SPOTRUN_RUN_ID)" = envrun
'

test_expect_success 'fresh start: SPOTRUN_CKPT_DIR exists and is empty' '
    test -n "$(seen 0 SPOTRUN_CKPT_DIR)" &&
    test -f out/ckpt.0 &&
    test ! -s out/ckpt.0
'

test_expect_success 'fresh start: SPOTRUN_RESUMED=0, SPOTRUN_ATTEMPT=0, no SPOTRUN_STEP' '
    test "$(seen 0 SPOTRUN_RESUMED)" = 0 &&
    test "$(seen 0 SPOTRUN_ATTEMPT)" = 0 &&
    ! grep "^SPOTRUN_STEP=" out/env.0
'

test_expect_success 'SPOTRUN_STEP given to spotrun itself does not leak into a fresh job' '
    SPOTRUN_STEP=999 "$SPOTRUN" run --run-id envrun2 -- \
        sh -c "echo \${SPOTRUN_STEP-unset} >\$OUT/step2" 2>/dev/null &&
    test "$(cat out/step2)" = unset
'

test_expect_success 'SPOTRUN_CONTROL is a socket' '
    test -n "$(seen 0 SPOTRUN_CONTROL)" &&
    test "$(cat out/control.0)" = socket
'

test_expect_success 'SPOTRUN_BIN is the spotrun binary' '
    bin=$(seen 0 SPOTRUN_BIN) &&
    test "$(readlink -f "$bin")" = "$(readlink -f "$SPOTRUN")"
'

test_expect_success 'after commit --step 42 and a crash: SPOTRUN_RESUMED=1, SPOTRUN_STEP=42' '
    test "$(seen 1 SPOTRUN_RESUMED)" = 1 &&
    test "$(seen 1 SPOTRUN_STEP)" = 42 &&
    test "$(seen 1 SPOTRUN_ATTEMPT)" = 1 &&
    test "$(seen 1 SPOTRUN_CKPT_DIR)" = "$(seen 0 SPOTRUN_CKPT_DIR)"
'

test_expect_success 'the restarted job finds the committed files' '
    test "$(cat out/restored/model.bin)" = "weights at 42" &&
    test "$(cat out/restored/sub/opt.bin)" = adam
'

test_expect_success 'SPOTRUN_SIGNAL is SIGUSR1 by default' '
    test "$(seen 0 SPOTRUN_SIGNAL)" = SIGUSR1
'

test_expect_success '--signal USR2 gives SPOTRUN_SIGNAL=SIGUSR2' '
    "$SPOTRUN" run --run-id sig2 --signal USR2 -- \
        sh -c "echo \$SPOTRUN_SIGNAL >\$OUT/sig" 2>/dev/null &&
    test "$(cat out/sig)" = SIGUSR2
'

test_expect_success '--signal with an unknown name: exit 64' '
    expect_code 64 "$SPOTRUN" run --run-id sig3 --signal NOPE -- true 2>err &&
    grep -- "--signal" err
'

test_expect_success 'LD_PRELOAD contains libspotrun.so' '
    seen 0 LD_PRELOAD | grep "libspotrun\.so"
'

test_expect_success 'LD_PRELOAD keeps what the user had preloaded' '
    LD_PRELOAD=/no/such/lib.so "$SPOTRUN" run --run-id pre2 -- \
        sh -c "echo \$LD_PRELOAD >\$OUT/pre2" 2>/dev/null &&
    grep "libspotrun\.so" out/pre2 &&
    grep "/no/such/lib\.so" out/pre2
'

test_expect_success '--no-preload: LD_PRELOAD does not contain libspotrun.so' '
    "$SPOTRUN" run --run-id nopre --no-preload -- \
        sh -c "echo \${LD_PRELOAD-unset} >\$OUT/nopre" 2>/dev/null &&
    ! grep "libspotrun" out/nopre
'

test_expect_success 'with the shim, a script without a handler survives the --every signal' '
    rm -f out/survived &&
    "$SPOTRUN" run --run-id plain --every 200ms --max-restarts 0 -- ./plain.sh >plain.log 2>&1 &&
    test "$(cat out/survived)" = survived
'

test_expect_success 'without the shim, a script that never asked is not sent the signal' '
    rm -f out/survived &&
    "$SPOTRUN" run --run-id plain2 --every 200ms --max-restarts 0 --no-preload \
        -- ./plain.sh >plain2.log 2>&1 &&
    test "$(cat out/survived)" = survived
'

test_done
