#!/usr/bin/env bash
# t0615-full-disk-restore: the local disk fills up while a checkpoint is
# being restored (`spotrun pull` and the restore at `spotrun run` start),
# from the file store and from S3. The user gets exit 74 and a message that
# names the full disk; the target directory keeps what it had (restore
# extracts beside it and swaps only a complete tree in); no temp directory
# or spool file is left; the checkpoint stays listed and restores once there
# is room again. The disk fills two ways: libspotrun-inject.so (ENOSPC after
# the first few writes) everywhere, and a real small tmpfs where this
# machine lets us mount one in a private mount namespace.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"

SPOTRUN_INJECT_LIB=${SPOTRUN_INJECT_LIB:-$SRCDIR/build/tests/faults/libspotrun-inject.so}
# faulty PATH-SUBSTRING SPEC cmd...: runs cmd with the fault injected.
faulty() {
    local path=$1 spec=$2
    shift 2
    LD_PRELOAD=$SPOTRUN_INJECT_LIB SPOTRUN_INJECT=$spec SPOTRUN_INJECT_PATH=$path "$@"
}

# The checkpoint: 10 MiB that does not compress (so that S3 downloads it
# through the spool file, and it cannot fit the small disk) and a few files.
mkdir -p good/sub work
echo "good state" >good/state
head -c 10485760 /dev/urandom >good/blob
for i in 1 2 3 4 5; do echo "file $i" >good/sub/f$i; done

# earlier DIR: DIR holds something of its own, as before a restore.
earlier() { rm -rf "$1" && mkdir -p "$1" && spotrun_made "$1" && echo mine >"$1/mine"; }
# untouched DIR: DIR holds exactly what `earlier` put there.
untouched() { test "$(ls -A "$1")" = mine && test "$(cat "$1/mine")" = mine; }
# no_leftovers DIR: no restore temp dir beside DIR, no spool file in work/.
no_leftovers() {
    test -z "$(ls -d "$1".spotrun-tmp.* 2>/dev/null)" &&
        test -z "$(ls -A work | grep spotrun-s3)"
}
# restores_good DIR: the newest checkpoint restores into DIR, all of it.
restores_good() { "$SPOTRUN" pull -q r "$1" && diff -r good "$1"; }

cat >job.sh <<'JOB'
#!/bin/sh
touch "$TRASH/started"
cmp "$SPOTRUN_CKPT_DIR/blob" "$TRASH/good/blob" && echo "resumed=$SPOTRUN_RESUMED" >"$TRASH/resumed"
JOB
chmod +x job.sh
export TRASH

# A tmpfs in a private mount namespace (root, or a user namespace), or none.
can_mount=no
mkdir -p small
if unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs small' 2>/dev/null; then
    can_mount="unshare -m"
elif unshare -rm sh -c 'mount -t tmpfs -o size=1m tmpfs small' 2>/dev/null; then
    can_mount="unshare -rm"
fi
# on_small_disk CMD...: runs CMD (a shell command line) with a 6 MiB tmpfs
# on small/ that holds small/target (with earlier contents) and small/work;
# what CMD printed and its exit code land in small.out and small.rc, the
# paths under small/ in small.ls, small/target/mine in small.mine.
cat >on-small-disk.sh <<'EOF'
mount -t tmpfs -o size=6m tmpfs small || exit 99
mkdir -p small/target small/work && echo mine >small/target/mine
"$PY" -c 'import os; os.setxattr("small/target", "user.spotrun", b"1")' # spotrun's (lib.sh)
rc=0
SPOTRUN_WORK_DIR=$TRASH/small/work sh -c "$1" >small.out 2>&1 || rc=$?
echo "$rc" >small.rc
find small | sort >small.ls
cat small/target/mine >small.mine
EOF
on_small_disk() { $can_mount sh on-small-disk.sh "$1"; }
# small_kept: after on_small_disk, small/target holds only its own file and
# no restore temp dir or spool file is left on the small disk.
small_kept() {
    test "$(cat small.mine)" = mine &&
        test "$(grep -c "^small/target/" small.ls)" = 1 &&
        ! grep -e spotrun-tmp -e spotrun-s3 small.ls
}

# ---- the file store ---------------------------------------------------------

test_expect_success 'setup: one good checkpoint in the file store' '
    "$SPOTRUN" push -q r good --step 1 &&
    restores_good check && rm -rf check
'

test_expect_success 'file store: disk full midway through pull: exit 74, target kept, no temp dir' '
    earlier target &&
    expect_code 74 faulty spotrun-tmp write:ENOSPC:3 "$SPOTRUN" pull r target 2>err &&
    cat err &&
    grep "No space left on device" err &&
    untouched target &&
    no_leftovers target
'

test_expect_success 'file store: disk full at run start: exit 74, job not started, ckpt dir kept' '
    earlier work/r/ckpt && spotrun_work_made work/r r &&
    rm -f started &&
    expect_code 74 faulty spotrun-tmp write:ENOSPC:3 "$SPOTRUN" run --run-id r -- \
        "$TRASH/job.sh" 2>err &&
    cat err &&
    grep "cannot restore the newest checkpoint" err &&
    grep "No space left on device" err &&
    test ! -e started &&
    untouched work/r/ckpt &&
    no_leftovers work/r/ckpt
'

test_expect_success 'file store: with room again the checkpoint is listed and restores' '
    "$SPOTRUN" show r >show.out &&
    grep "^checkpoints: *1$" show.out &&
    restores_good target &&
    test ! -e target/mine &&
    rm -f started resumed &&
    "$SPOTRUN" run --run-id r -- "$TRASH/job.sh" &&
    test -e started && grep "resumed=1" resumed
'

if [ "$can_mount" != no ]; then
    test_expect_success 'file store: a real full disk (small tmpfs) during pull' '
        on_small_disk "\"\$SPOTRUN\" pull r \"\$TRASH/small/target\"" &&
        cat small.out small.ls &&
        test "$(cat small.rc)" = 74 &&
        grep "No space left on device" small.out &&
        small_kept
    '

    test_expect_success 'file store: a real full disk (small tmpfs) at run start' '
        rm -f started &&
        "$SPOTRUN" push -q r2 good --step 1 &&
        on_small_disk "\"\$SPOTRUN\" run --run-id r2 --ckpt-dir \"\$TRASH/small/target\" -- \"\$TRASH/job.sh\"" &&
        cat small.out small.ls &&
        test "$(cat small.rc)" = 74 &&
        grep "No space left on device" small.out &&
        test ! -e started &&
        small_kept
    '
else
    say "# skipped the small-tmpfs tests: cannot mount a tmpfs in a private mount namespace here"
fi

# ---- S3 ---------------------------------------------------------------------

s3_start

test_expect_success 'setup: the same checkpoint in S3' '
    "$SPOTRUN" push -q r good --step 1 &&
    restores_good check && rm -rf check
'

test_expect_success 'S3: disk full midway through extraction: exit 74, target kept, no temp dir' '
    earlier target &&
    expect_code 74 faulty spotrun-tmp write:ENOSPC:3 "$SPOTRUN" pull r target 2>err &&
    cat err &&
    grep "No space left on device" err &&
    untouched target &&
    no_leftovers target
'

# Whatever the download itself keeps on local disk (nothing, or a spool
# file in the work dir), a disk full from the first write must end the same.
test_expect_success 'S3: disk full from the first local write: exit 74, target kept, nothing left' '
    earlier target &&
    expect_code 74 faulty "$TRASH/" write:ENOSPC,pwrite:ENOSPC "$SPOTRUN" pull r target 2>err &&
    cat err &&
    grep "No space left on device" err &&
    untouched target &&
    no_leftovers target
'

test_expect_success 'S3: disk full at run start: exit 74, job not started, ckpt dir kept' '
    earlier work/r/ckpt && spotrun_work_made work/r r &&
    rm -f started &&
    expect_code 74 faulty spotrun-tmp write:ENOSPC:3 "$SPOTRUN" run --run-id r -- \
        "$TRASH/job.sh" 2>err &&
    cat err &&
    grep "cannot restore the newest checkpoint" err &&
    grep "No space left on device" err &&
    test ! -e started &&
    untouched work/r/ckpt &&
    no_leftovers work/r/ckpt
'

test_expect_success 'S3: with room again the checkpoint is listed and restores' '
    "$SPOTRUN" show r >show.out &&
    grep "^checkpoints: *1$" show.out &&
    restores_good target &&
    test ! -e target/mine &&
    rm -f started resumed &&
    "$SPOTRUN" run --run-id r -- "$TRASH/job.sh" &&
    test -e started && grep "resumed=1" resumed
'

if [ "$can_mount" != no ]; then
    test_expect_success 'S3: a real full disk (small tmpfs holds the work dir and target)' '
        on_small_disk "\"\$SPOTRUN\" pull r \"\$TRASH/small/target\"" &&
        cat small.out small.ls &&
        test "$(cat small.rc)" = 74 &&
        grep "No space left on device" small.out &&
        small_kept &&
        "$SPOTRUN" push -q r3 good --step 1 &&
        rm -f started &&
        on_small_disk "\"\$SPOTRUN\" run --run-id r3 -- \"\$TRASH/job.sh\"" &&
        cat small.out small.ls &&
        test "$(cat small.rc)" = 74 &&
        grep "No space left on device" small.out &&
        test ! -e started &&
        ! grep -e spotrun-tmp -e spotrun-s3 small.ls
    '
fi

test_done
