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

# A job that writes its checkpoint while spotrun reads it (an async saver):
# the fault injector rewrites torn.bin in place (same size) right after
# spotrun's first read() of it. The checkpoint would hold bytes the job
# never wrote together: it is refused, naming the file, and never published.
SPOTRUN_INJECT_LIB=${SPOTRUN_INJECT_LIB:-$SRCDIR/build/tests/faults/libspotrun-inject.so}
torn() { LD_PRELOAD=$SPOTRUN_INJECT_LIB SPOTRUN_INJECT_REWRITE=torn.bin "$@"; }
cat >torn-job.sh <<\JOB
#!/bin/sh
echo v1 >"$SPOTRUN_CKPT_DIR/version"
"$SPOTRUN_BIN" commit --step 1 || exit 9
cp "$TRASH/v1.bin" "$SPOTRUN_CKPT_DIR/torn.bin"
touch -d 2020-01-01 "$SPOTRUN_CKPT_DIR/torn.bin" # any rewrite now moves its mtime
rc=0
"$SPOTRUN_BIN" commit --step 2 >"$TRASH/commit2.out" 2>&1 || rc=$?
echo "$rc" >"$TRASH/commit2.rc"
exit 5
JOB
chmod +x torn-job.sh

test_expect_success 'a file rewritten while it is read: the commit fails naming it, the job is told' '
    expect_code 5 torn "$SPOTRUN" run --run-id tw --max-restarts 0 -- ./torn-job.sh \
        >torn.log 2>&1
    test "$(cat commit2.rc)" != 0
    grep "torn.bin changed while it was read; not archived (a torn checkpoint): the job must not write the checkpoint directory until commit returns" commit2.out
    grep "torn.bin changed while it was read" torn.log
'

test_expect_success 'the torn checkpoint never reaches the store: the previous one stays newest' '
    "$SPOTRUN" show tw >show-tw.out
    grep "^checkpoints: *1$" show-tw.out
    awk "\$1 == 1 && \$2 == 1" show-tw.out | grep .
    "$SPOTRUN" pull tw out-tw
    test "$(ls -A out-tw)" = version
'

test_expect_success 'push of a directory rewritten while it is read exits 75 and stores nothing' '
    mkdir -p pushdir
    cp v1.bin pushdir/torn.bin
    touch -d 2020-01-01 pushdir/torn.bin
    expect_code 75 torn "$SPOTRUN" push tp pushdir >push.log 2>&1
    grep "torn.bin changed while it was read" push.log
    # Either no run tp at all, or one without a checkpoint.
    "$SPOTRUN" show tp >show-tp.out 2>&1 || test $? = 66
    refute grep "^checkpoints: *[1-9]" show-tp.out
    # Once the directory is still, the same push works.
    "$SPOTRUN" push tp pushdir >push2.log 2>&1
    "$SPOTRUN" pull tp out-tp
    cmp pushdir/torn.bin out-tp/torn.bin
'

test_done
