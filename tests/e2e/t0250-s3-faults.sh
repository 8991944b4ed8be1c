#!/usr/bin/env bash
# Store faults: a proxy between spotrun and the S3 server
# (tests/s3/faultproxy.py) answers 500 / 503 SlowDown, resets connections
# mid-body, stalls and truncates answers. Uploads and downloads complete or
# fail cleanly (69 / 74); no corrupt checkpoint is ever committed or
# restored, and a failed commit leaves the previous checkpoint the newest.
# Seeded: SPOTRUN_FAULT_SEED=N reruns with other faults.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
s3_start

SEED=${SPOTRUN_FAULT_SEED:-6250}
say "# fault seed $SEED (rerun with SPOTRUN_FAULT_SEED=$SEED)"
DIRECT=$S3_URL
# Small parts so that checkpoints of 12-16 MiB are multipart uploads (3-4 parts);
# a transfer stalled for 2 s is cut and retried (the proxy stalls for 3).
export SPOTRUN_S3_PART_SIZE=5M SPOTRUN_S3_SINGLE_MAX=5M SPOTRUN_S3_STALL_TIMEOUT_S=2

# proxy_start NAME ARGS...: a fault proxy in front of the S3 server, logging
# to proxy-NAME.log; PROXY_URL is its address. All stop when the script exits.
PROXY_PIDS=
proxy_start() {
    local name=$1
    shift
    python3 "$SRCDIR/tests/s3/faultproxy.py" --upstream "$DIRECT" --seed "$SEED" \
        --stall-seconds 3 "$@" >"$TRASH/proxy-$name.log" 2>&1 &
    PROXY_PIDS="$PROXY_PIDS $!"
    local i=0
    until grep -q '^port ' "$TRASH/proxy-$name.log" 2>/dev/null; do
        i=$((i + 1))
        if [ "$i" -gt 100 ]; then
            say "the fault proxy did not start:"
            cat "$TRASH/proxy-$name.log"
            exit 1
        fi
        sleep 0.1
    done
    PROXY_URL=http://127.0.0.1:$(sed -n 's/^port //p' "$TRASH/proxy-$name.log")
}
trap 'for p in $PROXY_PIDS; do kill $p 2>/dev/null; done; s3_stop' EXIT

# via URL CMD...: runs CMD with spotrun pointed at URL (a proxy or the server).
via() {
    local url=$1
    shift
    AWS_ENDPOINT_URL=$url "$@"
}

# seqs RUN: the committed checkpoints of RUN, as the server holds them.
seqs() { via "$DIRECT" "$SPOTRUN" show "$1" | awk '$1 ~ /^[0-9]+$/ {print $1}' | tr '\n' ' '; }

# tree DIR SIZE: a checkpoint directory: SIZE bytes of random data and a few small files.
tree() {
    mkdir -p "$1/sub" && head -c "$2" /dev/urandom >"$1/weights.bin" &&
        echo "$1" >"$1/sub/meta.txt" && : >"$1/empty"
}

# Scenario (a): multipart pushes and pulls under every kind of fault.
proxy_start mixed --rate 0.2
MIXED=$PROXY_URL

# The bodies below are plain statement lists (set -e): loops and case
# branches inside a && chain would not stop at a failing command.
test_expect_success 'a multipart push under faults either commits the exact tree or nothing' '
    tree v0 12M
    via "$DIRECT" "$SPOTRUN" push mp v0 --step 100
    for i in 1 2; do
        tree v$i 12M
        before=$(seqs mp)
        rc=0
        via "$MIXED" "$SPOTRUN" push mp v$i --step $((100 + i)) -v 2>push$i.log || rc=$?
        after=$(seqs mp)
        say "push $i: exit $rc, checkpoints \"$before\" -> \"$after\""
        case $rc in
        0)
            test "$after" != "$before"
            via "$DIRECT" "$SPOTRUN" pull mp got$i
            diff -r v$i got$i
            ;;
        69 | 74)
            # The message is the failure itself, not a later cleanup step.
            why=$(grep -v "^spotrun: s3: " push$i.log | tail -n 1)
            say "push $i: $why"
            test -n "$why"
            test -z "$(echo "$why" | grep -i "abort\|DELETE")"
            if [ "$after" != "$before" ]; then
                # The manifest landed but its answer was lost: then the
                # new checkpoint must be complete and exact.
                via "$DIRECT" "$SPOTRUN" pull mp got$i
                diff -r v$i got$i
            fi
            ;;
        *) exit 1 ;;
        esac
    done
    cat push1.log push2.log | grep "retrying"
'

test_expect_success 'pulls under faults give the exact tree or fail cleanly, never a partial one' '
    newest=$(seqs mp | awk "{print \$NF}")
    step=$(via "$DIRECT" "$SPOTRUN" show mp | awk -v s="$newest" "\$1 == s {print \$2}")
    ok=0
    for i in 1 2; do
        rc=0
        via "$MIXED" "$SPOTRUN" pull mp pulled$i -v 2>pull$i.log || rc=$?
        say "pull $i: exit $rc"
        case $rc in
        0)
            diff -r v$((step - 100)) pulled$i
            ok=$((ok + 1))
            ;;
        69 | 74)
            test ! -e pulled$i
            grep -v "^spotrun: s3: " pull$i.log | tail -n 1 | grep "^spotrun: "
            ;;
        *) exit 1 ;;
        esac
    done
    test "$ok" -ge 1
    test -z "$(ls -a | grep spotrun-tmp)"
'

# Scenario (b): one part's upload is cut in the middle of its body.
proxy_start part --rate 1 --faults reset --path "partNumber=2&" --max-faults 1
test_expect_success 'a part reset mid-body is retried and the upload succeeds' '
    tree p1 16M &&
    via "$PROXY_URL" "$SPOTRUN" push parts p1 --step 1 -v 2>part.log &&
    grep "^fault reset .*PUT .*partNumber=2&" proxy-part.log &&
    grep "PUT s3://bkt/t0250-s3-faults/parts/ckpt/0000000001/data.tar.zst: .*attempt 1, retrying" part.log &&
    grep "pushed p1 as checkpoint 1 of parts" part.log &&
    via "$DIRECT" "$SPOTRUN" pull parts p1back && diff -r p1 p1back
'

# (curl judges the speed over the last 5 s: cutting takes up to ~7 s here)
proxy_start stallpart --rate 1 --faults stall --path "partNumber=3&" --max-faults 1 --stall-seconds 12
test_expect_success 'a part stalled mid-body is cut after the stall timeout and retried' '
    start=$(date +%s) &&
    via "$PROXY_URL" "$SPOTRUN" push parts p1 --step 2 -v 2>stall.log &&
    grep "^fault stall .*PUT .*partNumber=3&" proxy-stallpart.log &&
    grep "Timeout was reached.*attempt 1, retrying" stall.log &&
    test $(($(date +%s) - start)) -lt 30 &&
    via "$DIRECT" "$SPOTRUN" pull parts p2back && diff -r p1 p2back
'

proxy_start partbad --rate 1 --faults 500 --path "partNumber=2&"
test_expect_success 'a part that fails for good: 69 naming the upload, the previous checkpoint stands' '
    tree p3 12M &&
    before=$(seqs parts) &&
    expect_code 69 env AWS_ENDPOINT_URL=$PROXY_URL SPOTRUN_S3_RETRIES=1 \
        "$SPOTRUN" push parts p3 --step 3 2>partbad.log &&
    grep "spotrun: push: PUT s3://bkt/t0250-s3-faults/parts/ckpt/[0-9]*/data.tar.zst: 500 InternalError after retries" partbad.log &&
    test "$(seqs parts)" = "$before" &&
    via "$DIRECT" "$SPOTRUN" pull parts p3back && diff -r p1 p3back
'

# The answer to CompleteMultipartUpload is lost after the server completed
# it: the retries find no upload, yet the object is there and complete.
proxy_start complete --rate 1 --methods POST --faults truncate --path "[?]uploadId=" --max-faults 1
test_expect_success 'a lost CompleteMultipartUpload answer: the completed object is recognised' '
    via "$PROXY_URL" "$SPOTRUN" push parts p3 --step 4 -v 2>complete.log &&
    grep "^fault truncate .*POST .*[?]uploadId=" proxy-complete.log &&
    # Ceph RGW answers a retried CompleteMultipartUpload of a completed
    # upload with 200 (and ignores its If-None-Match), so the retry itself
    # succeeds there; s3rver (and S3 with the condition) refuses it.
    if test "$S3_SERVER" = rgw; then
        grep "POST .*data.tar.zst: .*(attempt 1, retrying)" complete.log
    else
        grep "was completed by an attempt whose answer was lost" complete.log
    fi &&
    via "$DIRECT" "$SPOTRUN" pull parts p4back && diff -r p3 p4back
'

# Scenario (c): downloads whose bodies are truncated, stalled or reset: the
# first three GETs of the data object each get one (a drawn rate left it to
# the request keys, which vary with the seq the earlier cases made: seen
# with no fault at all, and so no retry to see).
proxy_start get --rate 1 --methods GET --path "data[.]tar[.]zst" --faults truncate,stall,reset \
    --max-faults 3
test_expect_success 'truncated, stalled and reset downloads are retried: the restore is exact' '
    via "$PROXY_URL" "$SPOTRUN" pull parts pget -v 2>get.log &&
    diff -r p3 pget &&
    grep -q "^fault" proxy-get.log &&
    grep -q "retrying" get.log
'

# A delta's older object is downloaded on the ring over just its listed
# frames (a planned download): through truncated, stalled and reset
# answers, the restore is still exact. Its many ranged GETs each fail with
# the proxy's rate, so the faults are bounded (4: fewer than one request's
# 5 tries) or, now and then, one range fails every try and the pull gives up
# (69), as it should; that is the "always break" case below.
proxy_start getdelta --rate 0.4 --methods GET,HEAD --faults truncate,stall,reset --max-faults 4
test_expect_success 'a delta restore under faults (planned reads of the older object) is exact' '
    mkdir -p dbase && head -c 13M /dev/urandom >dbase/frozen.bin &&
    cat >deltajob.sh <<-JOB &&
	#!/bin/sh
	set -e
	cp $TRASH/dbase/frozen.bin "\$SPOTRUN_CKPT_DIR/"
	echo 1 >"\$SPOTRUN_CKPT_DIR/step" && "\$SPOTRUN_BIN" commit --step 1
	echo 2 >"\$SPOTRUN_CKPT_DIR/step" && "\$SPOTRUN_BIN" commit --step 2
	JOB
    chmod +x deltajob.sh &&
    via "$DIRECT" "$SPOTRUN" run -q --run-id dl --no-preload -- ./deltajob.sh &&
    test "$(via "$DIRECT" "$SPOTRUN" show dl --json | "$PY" -c "import json,sys; print(json.load(sys.stdin)[\"checkpoints\"][-1][\"kind\"])")" = delta &&
    via "$PROXY_URL" "$SPOTRUN" pull dl dpulled -v 2>dget.log &&
    cmp dbase/frozen.bin dpulled/frozen.bin && test "$(cat dpulled/step)" = 2 &&
    grep -q "retrying" dget.log
'

# A HEAD answer cut inside its headers looks complete to curl (no
# Content-Length: size 0); taken as such, the newest checkpoint would be
# skipped as truncated and an older one restored.
proxy_start head --rate 1 --methods HEAD --faults truncate --max-faults 2
test_expect_success 'answers cut inside their headers are retried, not taken as empty' '
    via "$PROXY_URL" "$SPOTRUN" pull parts phead -v 2>head.log &&
    test "$(grep -c "^fault truncate #[0-9]* HEAD" proxy-head.log)" -eq 2 &&
    grep "restored checkpoint .* (step 4," head.log &&
    ! grep "unusable" head.log &&
    diff -r p3 phead
'

proxy_start getbad --rate 1 --methods GET --faults truncate --path "data.tar.zst"
test_expect_success 'downloads that always break fail cleanly: 69, no target, no leftovers' '
    mkdir keep && spotrun_made keep && echo mine >keep/file &&
    expect_code 69 env AWS_ENDPOINT_URL=$PROXY_URL SPOTRUN_S3_RETRIES=2 \
        "$SPOTRUN" pull parts pbad 2>bad.log &&
    grep "spotrun: pull: .*after retries" bad.log &&
    test ! -e pbad && ls -a >here.ls && refute grep "spotrun-tmp" here.ls &&
    expect_code 69 env AWS_ENDPOINT_URL=$PROXY_URL SPOTRUN_S3_RETRIES=2 \
        "$SPOTRUN" pull parts keep 2>bad2.log &&
    test "$(ls keep)" = file && test "$(cat keep/file)" = mine
'

test_expect_success 'a job whose restore keeps failing is not started from scratch' '
    expect_code 69 env AWS_ENDPOINT_URL=$PROXY_URL SPOTRUN_S3_RETRIES=2 SPOTRUN_WORK_DIR=$TRASH/wb \
        "$SPOTRUN" run --run-id parts -- sh -c "echo started >$TRASH/job-started" 2>runbad.log &&
    grep "cannot restore the newest checkpoint" runbad.log &&
    test ! -e job-started
'

# Scenario (d): a job commits through faults and dies; another node resumes.
test_expect_success 'uninterrupted reference run' '
    "$LOGREG" --steps 1200 --out ref.bin >/dev/null
'

proxy_start jobA --rate 0.25
test_expect_success 'node A: the job commits through faults, then crashes for good' '
    mkdir nodeA &&
    (cd nodeA && expect_code 3 env AWS_ENDPOINT_URL=$PROXY_URL SPOTRUN_WORK_DIR=$PWD/work \
        "$SPOTRUN" run --run-id job --max-restarts 0 -- "$LOGREG" --steps 1200 \
        --save-every 100 --crash-at 750 --out w.bin >run1.log 2>&1) &&
    grep "crashing at step 750" nodeA/run1.log &&
    grep -q "^fault" proxy-jobA.log &&
    test "$(seqs job | wc -w)" -ge 3
'

proxy_start jobB --rate 0.25
test_expect_success 'node B: resumes the newest complete checkpoint through faults, bit-exact' '
    newest=$(seqs job | awk "{print \$NF}") &&
    step=$(via "$DIRECT" "$SPOTRUN" show job | awk -v s="$newest" "\$1 == s {print \$2}") &&
    mkdir nodeB &&
    (cd nodeB && AWS_ENDPOINT_URL=$PROXY_URL SPOTRUN_WORK_DIR=$PWD/work "$SPOTRUN" run \
        --run-id job -- "$LOGREG" --steps 1200 --save-every 0 --out w.bin >run2.log 2>&1) &&
    grep "restored checkpoint $newest (step $step" nodeB/run2.log &&
    grep "resumed from step $step" nodeB/run2.log &&
    cmp ref.bin nodeB/w.bin
'

# Scenario (e): the store answers nothing but 500.
proxy_start down --rate 1 --faults 500
test_expect_success 'a store that always fails: 69 in bounded time, a clear message, nothing committed' '
    before=$(seqs mp) &&
    start=$(date +%s) &&
    expect_code 69 via "$PROXY_URL" "$SPOTRUN" push mp v1 --step 999 2>down.log &&
    test $(($(date +%s) - start)) -lt 20 &&
    grep "^spotrun: .*: 500 InternalError after retries" down.log &&
    test "$(seqs mp)" = "$before" &&
    expect_code 69 via "$PROXY_URL" "$SPOTRUN" ls 2>down2.log &&
    grep "500 InternalError after retries" down2.log &&
    expect_code 69 via "$PROXY_URL" "$SPOTRUN" pull mp pdown 2>down3.log &&
    test ! -e pdown &&
    expect_code 69 env AWS_ENDPOINT_URL=$PROXY_URL SPOTRUN_WORK_DIR=$TRASH/wd \
        "$SPOTRUN" run --run-id down -- sh -c "echo started >$TRASH/down-started" 2>down4.log &&
    test ! -e down-started &&
    test $(($(date +%s) - start)) -lt 60
'

test_expect_success 'every kind of fault was injected' '
    for kind in 500 503 reset stall truncate; do
        n=$(cat proxy-*.log | grep -c "^fault $kind ") &&
        say "$kind: $n" &&
        test "$n" -ge 1 || exit 1
    done
'

test_done
