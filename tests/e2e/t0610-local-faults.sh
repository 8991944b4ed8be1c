#!/usr/bin/env bash
# Local disk faults (ENOSPC, EIO on write, fsync, rename, link/copy),
# injected with libspotrun-inject.so: every command fails with a clear
# message and exit 74, and the newest complete checkpoint survives.
. "$(dirname "$0")/lib.sh"

SPOTRUN_INJECT_LIB=${SPOTRUN_INJECT_LIB:-$SRCDIR/build/tests/faults/libspotrun-inject.so}
# faulty PATH-SUBSTRING SPEC cmd...: runs cmd with the fault injected.
faulty() {
    local path=$1 spec=$2
    shift 2
    LD_PRELOAD=$SPOTRUN_INJECT_LIB SPOTRUN_INJECT=$spec SPOTRUN_INJECT_PATH=$path "$@"
}

mkdir -p good new
echo "good state" >good/state
head -c 3000000 /dev/urandom >good/blob
echo "new state" >new/state

# newest_is_good: the newest checkpoint restores and is the good one.
newest_is_good() {
    rm -rf out
    "$SPOTRUN" pull -q r out && cmp good/state out/state && cmp good/blob out/blob
}

test_expect_success 'setup: one good checkpoint' '
    "$SPOTRUN" push -q r good --step 1 &&
    newest_is_good
'

test_expect_success 'disk full while staging: push fails with 74 and says so' '
    expect_code 74 faulty /work/push/ write:ENOSPC "$SPOTRUN" push r new --step 2 2>err &&
    grep "No space left on device" err &&
    newest_is_good
'

test_expect_success 'EIO on fsync in the store: push fails, nothing half-published' '
    expect_code 74 faulty /store/ fsync:EIO "$SPOTRUN" push r new --step 2 2>err &&
    grep "Input/output error" err &&
    newest_is_good &&
    test "$("$SPOTRUN" show r | awk "\$1 ~ /^[0-9]+\$/" | wc -l)" -eq 1
'

test_expect_success 'manifest rename fails (the commit point): the previous checkpoint stands' '
    expect_code 74 faulty MANIFEST.json rename:EIO "$SPOTRUN" push r new --step 2 2>err &&
    newest_is_good
'

test_expect_success 'store copy fails after the link fallback (other filesystem, disk full)' '
    expect_code 74 faulty /store/ link:EROFS,copy_file_range:ENOSPC,write:ENOSPC \
        "$SPOTRUN" push r new --step 2 2>err &&
    grep "No space left on device" err &&
    newest_is_good
'

test_expect_success 'after the faults clear, the next push works and is the newest' '
    "$SPOTRUN" push -q r new --step 3 &&
    rm -rf out && "$SPOTRUN" pull -q r out && cmp new/state out/state &&
    "$SPOTRUN" pull -q --seq 1 r out && cmp good/state out/state
'

test_expect_success 'disk full during restore: pull fails with 74, target untouched' '
    mkdir -p target && spotrun_made target && echo mine >target/mine &&
    expect_code 74 faulty spotrun-tmp write:ENOSPC "$SPOTRUN" pull r target 2>err &&
    grep -i "no space left" err &&
    test "$(cat target/mine)" = mine && test ! -e target/state &&
    test -z "$(ls -d target.spotrun-tmp.* 2>/dev/null)"
'

test_expect_success 'disk full during restore at run start: exit 74, job never started' '
    expect_code 74 faulty spotrun-tmp write:ENOSPC "$SPOTRUN" run --run-id r -- \
        sh -c "touch $TRASH/started" 2>err &&
    grep "cannot restore the newest checkpoint" err &&
    test ! -e started
'

cat >job.sh <<'JOB'
#!/bin/sh
echo "step one" >"$SPOTRUN_CKPT_DIR/state"
"$SPOTRUN_BIN" commit --step 1 2>"$SPOTRUN_CKPT_DIR/../commit.err"
echo "commit exit $?" >"$SPOTRUN_CKPT_DIR/../commit.code"
JOB
chmod +x job.sh

test_expect_success 'disk full during a commit: the job gets an error, the wrapper carries on' '
    faulty /spool/ write:ENOSPC "$SPOTRUN" run --run-id j --keep-work --no-preload -- ./job.sh 2>run.log &&
    grep "commit exit 74" work/j/commit.code &&
    grep "No space left on device" work/j/commit.err &&
    grep "checkpoint of .* failed" run.log &&
    grep "run j done" run.log
'

test_done
