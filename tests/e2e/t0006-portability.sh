#!/usr/bin/env bash
# What the binaries need of the machine they run on: the shim is
# LD_PRELOADed into every process of a job, whatever its image holds, so it
# links libc alone; the glibc version each needs is printed and documented.
. "$(dirname "$0")/lib.sh"

test_expect_success 'the shim links libc alone, and the check fails when it gains a library' '
    "$SRCDIR/scripts/portability.sh" --shim "$SPOTRUN_PRELOAD" >out &&
    cat out &&
    grep -E "^libspotrun.so: needs glibc >= 2\.[0-9]+; links libc.so.6$" out &&
    readelf -d "$SPOTRUN_PRELOAD" | grep NEEDED >needed &&
    test "$(wc -l <needed)" = 1 &&
    got=0 &&
    "$SRCDIR/scripts/portability.sh" --shim "$SPOTRUN" 2>err || got=$? &&
    test "$got" = 1 &&
    grep "must link libc alone; it also needs: .*libcurl" err
'

test_expect_success 'the glibc version docs/install.md promises covers what the binaries need' '
    promised=$(sed -n "s/.*needs glibc >= \\(2\\.[0-9]*\\) or newer.*/\\1/p" "$SRCDIR/docs/install.md" | sed -n 1p) &&
    test -n "$promised" &&
    for f in "$SPOTRUN" "$SPOTRUN_PRELOAD"; do
        need=$("$SRCDIR/scripts/portability.sh" "$f" | sed -n "s/.*needs glibc >= \\([0-9.]*\\);.*/\\1/p") &&
        echo "$f needs $need, docs promise $promised" &&
        test "$(printf "%s\n%s\n" "$need" "$promised" | sort -V | tail -n1)" = "$promised" || return 1
    done
'

test_done
