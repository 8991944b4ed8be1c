#!/usr/bin/env bash
# Small mishaps, each answered plainly: an oversized LEASE is malformed
# (taken over, as a small malformed one), a reader whose stdout pipe closes
# dies of SIGPIPE quietly (as cat or git: the shell says 141), `sweep
# show`'s counts agree with its table for a cancel whose end mark was never
# written, a missing S3 bucket or Azure container is named with the
# command that creates it, and --version lists every store.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
. "$(dirname "$0")/azlib.sh"
export SPOTRUN_NOTICE=none

test_expect_success '--version lists every store scheme: file, s3, az' '
    "$SPOTRUN" --version >v.out &&
    grep -E "^stores: file, s3, az " v.out
'

test_expect_success 'a LEASE over 64 KiB is malformed: the next run takes it over and runs' '
    "$SPOTRUN" run --run-id big --max-restarts 0 -- sh -c "exit 3" >big0.log 2>&1 || test $? = 3 &&
    head -c 100000 /dev/zero | tr "\0" x >"$SPOTRUN_STORE/big/LEASE" &&
    "$SPOTRUN" run --run-id big -- true >big.log 2>&1 &&
    grep "the lease of run big is unreadable (big/LEASE is over 64 KiB.*); taking it over" big.log &&
    grep "\"owner\"" "$SPOTRUN_STORE/big/LEASE" &&
    "$SPOTRUN" ls >ls.out && grep "^big .*done" ls.out
'

test_expect_success 'ls --json | head -c 100: ls dies of SIGPIPE quietly, no message' '
    mkdir -p src && echo x >src/a &&
    for i in $(seq 1 150); do "$SPOTRUN" -q push "run-with-a-rather-long-name-$i" src || return 1; done &&
    { "$SPOTRUN" ls --json 2>pipe.err; echo $? >pipe.rc; } | head -c 100 >head.out && # testlint: ok, head closes it on purpose
    test "$(stat -c %s head.out)" = 100 &&
    test "$(cat pipe.rc)" = 141 &&
    test ! -s pipe.err
'

test_expect_success 'ls | head -1: the same for the table' '
    { "$SPOTRUN" ls 2>pipe2.err; echo $? >pipe2.rc; } | head -n 1 >head2.out && # testlint: ok, on purpose
    grep "^RUN" head2.out &&
    rc=$(cat pipe2.rc) && { test "$rc" = 141 || test "$rc" = 0; } &&
    test ! -s pipe2.err
'

test_expect_success 'sweep show: a cancel whose end mark was never written counts as cancelled' '
    "$SPOTRUN" sweep init sw --param x=1,2,3 -- sh -c "exit 0" &&
    "$SPOTRUN" sweep cancel sw 1 &&
    find "$SPOTRUN_STORE/sweeps/sw" -path "*end*" -type f >marks &&
    test -s marks &&
    xargs rm <marks &&
    "$SPOTRUN" sweep show sw >show.out &&
    grep -E "^ +1 +2 +cancelled" show.out &&
    grep "trials: .*2 queued, .*1 cancelled" show.out &&
    "$SPOTRUN" sweep show sw --json >show.json &&
    json show.json "t = [x for x in d[\"trials\"] if x[\"trial\"] == 1][0]; assert t[\"state\"] == \"cancelled\", t"
'

s3_start
test_expect_success 'a missing S3 bucket is named, with the command that creates it' '
    expect_code 66 "$SPOTRUN" --store s3://nosuch/p run --run-id a -- true 2>nb.err &&
    cat nb.err &&
    grep "s3://nosuch.*NoSuchBucket (the bucket does not exist: create it with \`aws s3 mb s3://nosuch\`" nb.err
'
s3_stop

az_start
test_expect_success 'a missing Azure container is named, with the command that creates it' '
    if "$SPOTRUN" --store "az://$AZ_ACCOUNT/nosuch/p" run --run-id a -- true 2>nc.err; then
        say "ran against a missing container"; false
    fi &&
    cat nc.err &&
    grep "the container nosuch does not exist: create it with \`az storage container create --account-name $AZ_ACCOUNT --name nosuch\`" nc.err &&
    if grep "No such file or directory" nc.err; then say "ENOENT said"; false; fi
'

test_done
