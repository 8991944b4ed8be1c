#!/usr/bin/env bash
# Store URLs that look like a mistyped scheme are refused (exit 64) naming
# the URL the user most likely meant, never taken as a relative directory
# whose checkpoints would die with the VM; a local directory named like
# that is still reachable as ./s3:x or file:///abs/s3:x. Commands that only
# read (ls, show, pull, report, export, gc, sweep show/report/delete) never
# create a store: a missing one is "no store at ..." (exit 66) and nothing
# appears on disk.
. "$(dirname "$0")/lib.sh"

typo() { # typo URL INTENDED: run, ls and sweep show refuse URL, naming INTENDED, creating nothing
    expect_code 64 "$SPOTRUN" run --store "$1" -- touch ran 2>err &&
    grep -F "looks like a mistyped $2" err && grep -F "./$1" err &&
    test ! -e ran &&
    expect_code 64 "$SPOTRUN" ls --store "$1" 2>err &&
    grep -F "looks like a mistyped $2" err &&
    SPOTRUN_STORE=$1 expect_code 64 "$SPOTRUN" sweep show sw 2>err &&
    grep -F "looks like a mistyped $2" err &&
    test -z "$(ls -A | grep -v -e "^err$" -e "^test-")"
}

test_expect_success 's3:/bucket/x (one slash missing) is refused naming s3://bucket/x' '
    typo s3:/bucket/x s3://bucket/x
'

test_expect_success 's3:bucket/x is refused naming s3://bucket/x' '
    typo s3:bucket/x s3://bucket/x
'

test_expect_success 'S3://bucket (upper case) is refused naming s3://bucket' '
    typo S3://bucket s3://bucket
'

test_expect_success 's3//bucket (colon missing) is refused naming s3://bucket' '
    typo s3//bucket s3://bucket
'

test_expect_success 'file:/abs is refused naming file:///abs' '
    typo file:/abs/store file:///abs/store
'

test_expect_success 'an unknown scheme gs:bucket is refused naming it' '
    expect_code 64 "$SPOTRUN" ls --store gs:bucket 2>err &&
    grep -F "unknown scheme \"gs:\"" err && grep -F "./gs:bucket" err &&
    test ! -e gs:bucket
'

test_expect_success 'a directory named s3:x is a store when written ./s3:x or file:///abs/s3:x' '
    "$SPOTRUN" run --store ./s3:x --run-id r1 -- true 2>err &&
    test -d s3:x && "$SPOTRUN" ls --store ./s3:x >out && grep "^r1 " out &&
    "$SPOTRUN" ls --store "file://$PWD/s3:x" >out && grep "^r1 " out
'

test_expect_success 'ls on a missing store: exit 66 "no store at", nothing created' '
    expect_code 66 "$SPOTRUN" ls --store "$TRASH/none" 2>err &&
    grep -F "no store at $TRASH/none" err &&
    test ! -e "$TRASH/none" &&
    expect_code 66 "$SPOTRUN" ls --store none/deeper 2>err &&
    grep -F "no store at $TRASH/none/deeper" err &&
    test ! -e none
'

test_expect_success 'show, pull, report, export, gc on a missing store: exit 66, nothing created' '
    for c in "show r1" "pull r1 pulled" "report r1 -o r.svg" "export r1 r.tar.zst" "gc r1 --keep 1"; do
        expect_code 66 "$SPOTRUN" $c --store "$TRASH/none" 2>err &&
        grep -F "no store at $TRASH/none" err || { echo "$c"; exit 1; }
    done &&
    test ! -e "$TRASH/none" && test ! -e pulled && test ! -e r.svg && test ! -e r.tar.zst
'

test_expect_success 'sweep show, report and delete on a missing store: exit 66, nothing created' '
    for c in show report delete; do
        SPOTRUN_STORE=$TRASH/none expect_code 66 "$SPOTRUN" sweep $c sw 2>err &&
        grep -F "no store at $TRASH/none" err || { echo "$c"; exit 1; }
    done &&
    test ! -e "$TRASH/none"
'

test_expect_success 'run still creates a missing store' '
    "$SPOTRUN" run --store "$TRASH/new/store" --run-id r2 -- true &&
    "$SPOTRUN" ls --store "$TRASH/new/store" >out && grep "^r2 " out
'

test_done
