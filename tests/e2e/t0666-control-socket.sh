#!/usr/bin/env bash
# The control socket never lives where another local user could bind its
# name first: beside the run, else in the user's own work root, runtime dir
# or a private directory of this user, never directly in a shared /tmp.
. "$(dirname "$0")/lib.sh"

cat >job.sh <<'JOB'
#!/bin/sh
echo "$SPOTRUN_CONTROL" >"$OUT/control"
echo x >"$SPOTRUN_CKPT_DIR/x"
"$SPOTRUN_BIN" commit --step 1
JOB
chmod +x job.sh
long=$(printf 'r%.0s' $(seq 1 120))

test_expect_success 'a long run id: the socket is in the work root, commit reaches it' '
    OUT=$PWD "$SPOTRUN" run --run-id "$long" -- ./job.sh 2>err || { cat err; false; } &&
    sock=$(cat control) && echo "$sock" &&
    case "$sock" in "$SPOTRUN_WORK_DIR"/*.sock) ;; *) exit 1 ;; esac &&
    "$SPOTRUN" show "$long" | grep -E "^ +1 +1 "
'

# A work dir so deep that even its root is too long for a socket path.
deep=$TRASH/$(printf 'd%.0s' $(seq 1 60))/$(printf 'e%.0s' $(seq 1 60))

test_expect_success 'a deep work dir: a private spotrun-UID dir in TMPDIR (0700), not TMPDIR itself' '
    mkdir -p tmp && chmod 1777 tmp &&
    OUT=$PWD TMPDIR=$TRASH/tmp XDG_RUNTIME_DIR= SPOTRUN_WORK_DIR=$deep \
        "$SPOTRUN" run --run-id deep -- ./job.sh 2>err || { cat err; false; } &&
    sock=$(cat control) && echo "$sock" &&
    case "$sock" in "$TRASH/tmp/spotrun-$(id -u)/"*.sock) ;; *) exit 1 ;; esac &&
    test "$(stat -c %a "$TRASH/tmp/spotrun-$(id -u)")" = 700
'

test_expect_success 'that directory made by someone else (or open to others): refused, says why' '
    rm -rf tmp && mkdir -p tmp "tmp/spotrun-$(id -u)" && chmod 777 "tmp/spotrun-$(id -u)" &&
    expect_code 77 env TMPDIR=$TRASH/tmp XDG_RUNTIME_DIR= SPOTRUN_WORK_DIR=$deep \
        "$SPOTRUN" run --run-id deep2 -- true 2>err &&
    cat err && grep "is not a private directory of this user" err &&
    rm -rf tmp && mkdir -p tmp && ln -s "$TRASH" "tmp/spotrun-$(id -u)" &&
    expect_code 77 env TMPDIR=$TRASH/tmp XDG_RUNTIME_DIR= SPOTRUN_WORK_DIR=$deep \
        "$SPOTRUN" run --run-id deep2 -- true 2>/dev/null
'

test_done
