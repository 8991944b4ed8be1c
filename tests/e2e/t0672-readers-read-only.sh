#!/usr/bin/env bash
# The readers (ls, show, stats, report, pull, sweep show, sweep report)
# work on a file store they may not write: a read-only mount, a user with
# read permission only, a store its owner made read-only. They print what
# they print on a writable store, say nothing about it (one debug line),
# and leave the store as it was. Writers still refuse such a store.
. "$(dirname "$0")/lib.sh"
export SPOTRUN_NOTICE=none

READERS='ls|show r1|stats|sweep show sw|show sw-0'
# out DIR STORE: each reader's output into DIR/<n>.out, its stderr into
# DIR/<n>.err; the first failing reader's code (after running them all).
out() {
    local dir=$1 store=$2 n=0 rc=0 c
    mkdir -p "$dir"
    while IFS= read -r c; do
        n=$((n + 1))
        # shellcheck disable=SC2086 # the reader's words
        "$SPOTRUN" --store "$store" $c >"$dir/$n.raw" 2>"$dir/$n.err" || {
            say "spotrun $c: exit $?"
            cat "$dir/$n.err"
            rc=1
        }
        sed "s|^store: .*|store: (here)|" "$dir/$n.raw" >"$dir/$n.out"
    done <<EOF
$(echo "$READERS" | tr '|' '\n')
EOF
    return $rc
}
# the store's files and their times, to compare before and after
snapshot() { (cd "$1" && find . -printf '%p %s %T@ %m\n' | sort); }

test_expect_success 'setup: a run with a checkpoint and a sweep of two trials' '
    mkdir -p src && echo hello >src/a.txt &&
    "$SPOTRUN" run --run-id r1 -- sh -c "cp src/a.txt \$SPOTRUN_CKPT_DIR/" >r1.log 2>&1 &&
    "$SPOTRUN" sweep init sw --param x=1,2 -- sh -c "exit 0" &&
    "$SPOTRUN" sweep work sw --until-empty >work.log 2>&1 &&
    out want "$SPOTRUN_STORE" &&
    grep "^r1 " want/1.out && grep "trials: .* 2 done" want/4.out
'

MNT=$TRASH/ro-mount
mkdir -p "$MNT"
if mount --bind -o ro "$SPOTRUN_STORE" "$MNT" 2>mount.err && ! touch "$MNT/probe" 2>/dev/null; then
    trap 'umount "$MNT" 2>/dev/null' EXIT
    test_expect_success 'a read-only mount: every reader answers as on the writable store' '
        out ro "$MNT" &&
        for f in want/*.out; do cmp "$f" "ro/${f#want/}" || return 1; done &&
        cat ro/*.err >ro.err && test ! -s ro.err
    '
    test_expect_success 'a read-only mount: report and pull write their own files, not the store' '
        "$SPOTRUN" --store "$MNT" report r1 -o r1.svg &&
        grep "<svg" r1.svg &&
        "$SPOTRUN" --store "$MNT" sweep report sw -o sw.html &&
        grep "<svg" sw.html &&
        "$SPOTRUN" --store "$MNT" pull r1 pulled &&
        diff -r src pulled &&
        "$SPOTRUN" --store "$MNT" export r1 r1.tar.zst &&
        zstd -dc r1.tar.zst | tar -t | grep a.txt
    '
    test_expect_success 'a read-only mount: -v says once that the store is read-only' '
        "$SPOTRUN" -v --store "$MNT" stats >/dev/null 2>v.err &&
        test "$(grep -c "read-only" v.err)" = 1 &&
        grep "store $MNT is not writable (Read-only file system): reading it read-only" v.err
    '
    test_expect_success 'a read-only mount: a writer still refuses it (push exits 74)' '
        expect_code 74 "$SPOTRUN" --store "$MNT" push r2 src 2>push.err &&
        grep "not writable" push.err
    '
    umount "$MNT"
    trap - EXIT
else
    test_skip 'a read-only mount: every reader answers as on the writable store' \
        "mount --bind -o ro is not allowed here: $(cat mount.err)"
fi

# A user with read permission only: another user (nobody) reads the
# store root's copy, which it may read but not write.
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
cp -a "$SPOTRUN_STORE" ro-store && chmod -R a+rX,go-w ro-store
mkdir -p nobody-out && chmod 777 nobody-out
if as_nobody test -r ro-store/r1/LEASE 2>/dev/null && ! as_nobody test -w ro-store 2>/dev/null; then
    test_expect_success 'read permission only: every reader answers as on the writable store' '
        before=$(snapshot ro-store) &&
        as_nobody bash -c "$(declare -f out say); SPOTRUN=$SPOTRUN; READERS=\"$READERS\"; out nobody-out/ro $TRASH/ro-store" &&
        for f in want/*.out; do cmp "$f" "nobody-out/ro/${f#want/}" || return 1; done &&
        cat nobody-out/ro/*.err >perm.err && test ! -s perm.err &&
        as_nobody "$SPOTRUN" --store ro-store pull r1 nobody-out/pulled &&
        diff -r src nobody-out/pulled &&
        test "$(snapshot ro-store)" = "$before"
    '
    test_expect_success 'read permission only: a writer still refuses it (push exits 77)' '
        expect_code 77 as_nobody "$SPOTRUN" --store ro-store push r2 src 2>push2.err &&
        grep "not writable" push2.err
    '
    test_expect_success 'its owner made it read-only (chmod -R a-w): the readers still read it' '
        cp -a "$SPOTRUN_STORE" own-store && chown -R nobody own-store && chmod -R a-w own-store &&
        before=$(snapshot own-store) &&
        as_nobody bash -c "$(declare -f out say); SPOTRUN=$SPOTRUN; READERS=\"$READERS\"; out nobody-out/own $TRASH/own-store" &&
        for f in want/*.out; do cmp "$f" "nobody-out/own/${f#want/}" || return 1; done &&
        test "$(snapshot own-store)" = "$before"
    '
else
    test_skip 'read permission only: every reader answers as on the writable store' \
        'no user nobody who may read this directory (setpriv)'
fi

test_done
