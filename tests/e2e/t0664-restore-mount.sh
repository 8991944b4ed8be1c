#!/usr/bin/env bash
# A checkpoint directory that is a mount point (a local NVMe, a Kubernetes
# volume), or whose parent spotrun may not write, restores at a resume as
# it did on the first attempt: extracted inside it, its contents swapped.
. "$(dirname "$0")/lib.sh"

mkdir -p src && echo state >src/model

cat >job.sh <<'JOB'
#!/bin/sh
# First attempt: saves, commits, crashes. Later: reports what it resumed.
if [ "$SPOTRUN_RESUMED" = 1 ]; then
    ls -A "$SPOTRUN_CKPT_DIR" >"$OUT/seen"; cat "$SPOTRUN_CKPT_DIR/x" >>"$OUT/seen"; exit 0
fi
echo saved >"$SPOTRUN_CKPT_DIR/x" && echo junk >"$SPOTRUN_CKPT_DIR/later"
"$SPOTRUN_BIN" commit --step 1 && rm "$SPOTRUN_CKPT_DIR/later" && echo new >"$SPOTRUN_CKPT_DIR/y"
exit 3
JOB
chmod +x job.sh
cat >on-mount.sh <<'EOF2'
# Runs in a private mount namespace: a tmpfs on mnt is the checkpoint dir.
set -e
mount -t tmpfs tmpfs mnt
rc=0; "$SPOTRUN" run --run-id m -d mnt --max-restarts 0 -- ./job.sh 2>run1.err || rc=$?
echo "$rc" >rc1
"$SPOTRUN" run --run-id m -d mnt -- ./job.sh 2>run2.err
"$SPOTRUN" pull m mnt 2>pull.err
ls -A mnt >after-pull
EOF2
mkdir -p mnt

if unshare -m true 2>/dev/null; then
    test_expect_success 'a ckpt dir that is a mount point: the resume restores into it' '
        OUT=$PWD unshare -m sh on-mount.sh || { cat run1.err run2.err pull.err 2>/dev/null; false; } &&
        test "$(cat rc1)" = 3 &&
        printf "later\nsaved\nx\n" >want && sort seen | diff - want &&
        printf "later\nx\n" >want && diff after-pull want &&
        ! grep -e "cannot swap" -e warning run2.err pull.err
    '
else
    say "# skipped the mount point test: cannot make a private mount namespace here"
fi

nobody=65534
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
    setpriv --reuid=$nobody --regid=$nobody --clear-groups test -x "$SPOTRUN" 2>/dev/null; then
    as_nobody() { setpriv --reuid=$nobody --regid=$nobody --clear-groups env HOME="$TRASH/nb" "$@"; }
    test_expect_success 'a target whose parent is not writable: pull restores into it, again and again' '
        "$SPOTRUN" push -q p src --step 4 &&
        mkdir -p nb/ro/ckpt && chown -R $nobody:$nobody nb && chmod 555 nb/ro &&
        chown -R $nobody "$SPOTRUN_STORE" && chmod -R a+rwX "$SPOTRUN_STORE" &&
        as_nobody "$SPOTRUN" pull p nb/ro/ckpt 2>err || { cat err; false; } &&
        diff -r src nb/ro/ckpt &&
        as_nobody "$SPOTRUN" pull p nb/ro/ckpt 2>err || { cat err; false; } &&
        diff -r src nb/ro/ckpt &&
        test "$(ls -A nb/ro)" = ckpt
    '
else
    say "# skipped the unwritable-parent test: needs root and setpriv to act as an unprivileged user"
fi

test_done
