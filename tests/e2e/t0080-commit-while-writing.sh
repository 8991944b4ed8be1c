#!/usr/bin/env bash
# `spotrun commit` returns only once the directory is staged: a job that
# overwrites its checkpoint right after commit returns still gets exactly
# what it committed.
. "$(dirname "$0")/lib.sh"

# v1 and v2: 16 MiB each of incompressible data (staging takes a while),
# stamped so that any mix of the two shows.
{ echo v1; head -c 16M /dev/urandom; echo v1-end; } >v1.bin
{ echo v2; head -c 16M /dev/urandom; echo v2-end; } >v2.bin

# Writes v1, commits, overwrites with v2 (model.bin in place, and adds and
# removes files) at once, then fails so that nothing else is committed.
cat >job.sh <<\JOB
#!/bin/sh
cp "$TRASH/v1.bin" "$SPOTRUN_CKPT_DIR/model.bin"
echo v1 >"$SPOTRUN_CKPT_DIR/version"
"$SPOTRUN_BIN" commit --step 1 || exit 9
echo "commit returned" >"$TRASH/committed"
cp "$TRASH/v2.bin" "$SPOTRUN_CKPT_DIR/model.bin.tmp" &&
    cat "$TRASH/v2.bin" >"$SPOTRUN_CKPT_DIR/model.bin"
echo v2 >"$SPOTRUN_CKPT_DIR/version"
echo v2 >"$SPOTRUN_CKPT_DIR/only-in-v2"
rm -f "$SPOTRUN_CKPT_DIR/model.bin.tmp"
exit 5
JOB
chmod +x job.sh
export TRASH

test_expect_success 'the job commits v1, overwrites it with v2 and fails: exit 5' '
    expect_code 5 "$SPOTRUN" run --run-id cw --max-restarts 0 -- ./job.sh >run.log 2>&1 &&
    test -f committed
'

test_expect_success 'exactly one checkpoint, at step 1' '
    "$SPOTRUN" show cw >show.out &&
    grep "^checkpoints: *1$" show.out &&
    awk "\$1 == 1 && \$2 == 1" show.out | grep .
'

test_expect_success 'the checkpoint holds exactly v1' '
    "$SPOTRUN" pull cw out &&
    cmp v1.bin out/model.bin &&
    test "$(cat out/version)" = v1 &&
    test "$(ls -A out | sort | tr "\n" " ")" = "model.bin version "
'

test_done
