#!/usr/bin/env bash
# A closed stderr (spotrun run ... 2>&1 | head -1) never kills the wrapper:
# the job still commits, the run ends done and the lease is released; the
# job itself gets the default SIGPIPE.
. "$(dirname "$0")/lib.sh"

cat >job.sh <<'JOB'
#!/bin/sh
# Waits until the reader of the wrapper's stderr is gone, then checkpoints.
sleep 1
grep SigIgn /proc/self/status >"$OUT/sigign"
echo state >"$SPOTRUN_CKPT_DIR/state"
"$SPOTRUN_BIN" commit --step 3 || exit 5
echo finished >"$OUT/finished"
JOB
chmod +x job.sh

test_expect_success 'run with its stderr closed early: the job commits, exit 0, lease released' '
    OUT=$PWD "$SPOTRUN" run --run-id p -- ./job.sh 2>&1 | head -2 >first && # run + store, started (testlint: ok, head closes it on purpose)
    rc=${PIPESTATUS[0]} &&
    cat first && grep "started" first &&
    test "$rc" = 0 &&
    test "$(cat finished)" = finished &&
    "$SPOTRUN" show p >show.out && grep "^state: *done" show.out &&
    "$SPOTRUN" show p --json | grep -A1 "\"lease\"" | grep "\"released\""
'

test_expect_success 'the job gets the default SIGPIPE (not the wrapper'"'"'s ignore)' '
    mask=$(awk "{print \$2}" sigign) &&
    test $(( 0x$mask & 0x1000 )) = 0
'

test_expect_success 'push with its stderr closed: the checkpoint is made, the lease released' '
    mkdir -p src && head -c 100000 /dev/urandom >src/blob &&
    { "$SPOTRUN" push -v q src --step 1 2>&1; echo "rc=$?" >push.rc; } | head -c 1 >/dev/null && # testlint: ok, on purpose
    sleep 0.5 && cat push.rc && grep "rc=0" push.rc &&
    "$SPOTRUN" show q | grep "^checkpoints: *1$"
'

test_done
