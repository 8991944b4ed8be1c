#!/usr/bin/env bash
# Deep directory trees never crash spotrun: a tree nested deeper than the
# 512 levels spotrun archives is refused with a clear error (push, the
# job's commit), a tree at the limit round-trips with few descriptors, a
# checkpoint directory the job left holding a 2000-level tree is replaced
# by the next restore, and a planted checkpoint with 2000 nested directories is a
# bad checkpoint: pull and run fall back to the previous good one.
. "$(dirname "$0")/lib.sh"

# deep DIR N: DIR/a/a/.../a (N levels) holding a file "leaf" (1-char names:
# paths stay under PATH_MAX).
cat >deep.py <<\PY
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
os.makedirs(root, exist_ok=True)
fd = os.open(root, os.O_RDONLY)
for _ in range(n):
    os.mkdir("a", dir_fd=fd)
    sub = os.open("a", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = sub
with open(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
    f.write("deep\n")
PY
deep() { "$PY" "$TRASH/deep.py" "$1" "$2"; }

# The leaf at depth N under DIR.
leaf() { cat "$1/$("$PY" -c "import sys; print('/'.join(['a'] * int(sys.argv[1])))" "$2")/leaf"; }

test_expect_success 'push of a 2000-level tree: exit 65 and a clear error, no crash' '
    deep d2000 2000 &&
    expect_code 65 "$SPOTRUN" push p d2000 --step 1 2>err &&
    cat err &&
    grep "nested deeper than 512 directory levels" err &&
    test ! -e "$SPOTRUN_STORE/p/ckpt/0000000001/MANIFEST.json"
'

test_expect_success 'a 511-level tree round-trips through push and pull with 48 descriptors' '
    deep d511 511 &&
    (ulimit -n 48 && "$SPOTRUN" push p d511 --step 1 && "$SPOTRUN" pull p out) &&
    test "$(leaf out 511)" = deep
'

test_expect_success 'a job that commits a 2000-level tree: the commit fails with a clear error, the wrapper lives on' '
    cat >job.sh <<-\JOB &&
	#!/bin/sh
	if [ "$SPOTRUN_RESUMED" = 1 ]; then
	    echo "resumed step=$SPOTRUN_STEP $(cat "$SPOTRUN_CKPT_DIR/x")" >"$TRASH/seen"
	    exit 0
	fi
	echo good >"$SPOTRUN_CKPT_DIR/x"
	"$SPOTRUN_BIN" commit --step 1 || exit 9
	"$PY" "$TRASH/deep.py" "$SPOTRUN_CKPT_DIR" 2000
	"$SPOTRUN_BIN" commit --step 2 && exit 8
	exit 3
	JOB
    chmod +x job.sh &&
    TRASH=$TRASH expect_code 0 "$SPOTRUN" run --run-id j --max-restarts 1 -- ./job.sh >run.log 2>&1 &&
    cat run.log &&
    grep "nested deeper than 512 directory levels" run.log &&
    grep "the job exited with code 3" run.log &&
    test "$(cat seen)" = "resumed step=1 good"
'

test_expect_success 'a planted checkpoint of 2000 nested directories is refused; pull falls back' '
    "$SPOTRUN" push h d511 --step 1 2>/dev/null &&
    "$PY" "$SRCDIR/tests/e2e/mkhostile.py" "$SPOTRUN_STORE" h 2 2 deep:2000 &&
    rm -rf out &&
    "$SPOTRUN" pull h out 2>err &&
    cat err &&
    grep "warning" err | grep "seq 2" | grep "nested deeper than 512" &&
    test "$(leaf out 511)" = deep
'

test_expect_success 'pull --seq of the deep one: exit 65, the target (pulled before) untouched' '
    expect_code 65 "$SPOTRUN" pull --seq 2 h out 2>err &&
    grep "nested deeper than 512" err &&
    test "$(leaf out 511)" = deep
'

test_expect_success 'spotrun run resumes from the good checkpoint, not the deep one' '
    cat >job2.sh <<-\JOB &&
	#!/bin/sh
	echo "step=$SPOTRUN_STEP" >"$TRASH/seen2"
	JOB
    chmod +x job2.sh &&
    TRASH=$TRASH "$SPOTRUN" run --run-id h -- ./job2.sh >run2.log 2>&1 &&
    test "$(cat seen2)" = "step=1" &&
    grep "warning" run2.log | grep "seq 2"
'

test_done
