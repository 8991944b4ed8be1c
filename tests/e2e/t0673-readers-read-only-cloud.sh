#!/usr/bin/env bash
# The readers work with read-only credentials on S3 and Azure. S3: the
# test server (s3rver) has one account and no per-key permissions, so a
# fault proxy (tests/s3/faultproxy.py) answers every write (PUT, POST,
# DELETE) 403 AccessDenied, as AWS answers a key whose policy allows only
# reads. Azure: Azurite checks an account SAS's permissions; a SAS with
# "rl" (read, list) is a read-only credential. The readers print what they
# print with full credentials, say nothing about their snapshots that could
# not be written (one debug line), and exit 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
. "$(dirname "$0")/azlib.sh"
export SPOTRUN_NOTICE=none
TOOL=${RUNSUM_TOOL:-$SRCDIR/build/tests/runsum_tool}

READERS='ls|show r00001|stats|show r1'
# out DIR: each reader's output into DIR/<n>.out and stderr into DIR/<n>.err;
# 1 when one failed (all run).
out() {
    local dir=$1 n=0 rc=0 c
    mkdir -p "$dir"
    while IFS= read -r c; do
        n=$((n + 1))
        # shellcheck disable=SC2086 # the reader's words
        "$SPOTRUN" $c >"$dir/$n.out" 2>"$dir/$n.err" || {
            say "spotrun $c: exit $?"
            cat "$dir/$n.err"
            rc=1
        }
    done <<EOF
$(echo "$READERS" | tr '|' '\n')
EOF
    return $rc
}
same() { for f in want/*.out; do cmp "$f" "$1/${f#want/}" || return 1; done; }

s3_start
trap 'kill "$proxy" 2>/dev/null; s3_stop' EXIT
python3 "$SRCDIR/tests/s3/faultproxy.py" --upstream "$S3_URL" --rate 1 --faults 403 \
    --methods PUT,POST,DELETE >proxy.log 2>&1 &
proxy=$!
wait_for proxy.log '^port ' 30 || exit 1
RO=http://127.0.0.1:$(sed -n 's/^port //p' proxy.log)
snaps() { s3curl -f "$S3_URL/bkt?list-type=2&prefix=$test_name%2Fsummaries%2Fsnap%2F" |
    grep -o "<Key>[^<]*" | sed "s|<Key>||" || true; }

test_expect_success 'S3 setup: 40 runs with summaries and one with a checkpoint' '
    "$PY" "$SRCDIR/tests/e2e/genstore.py" gen --synthetic 40 --summaries none &&
    "$TOOL" fold gen &&
    "$PY" "$SRCDIR/tests/s3/seed.py" gen "$TRASH/s3data/bkt/$test_name" &&
    mkdir -p src && echo hello >src/a.txt &&
    "$SPOTRUN" run --run-id r1 -- sh -c "cp src/a.txt \$SPOTRUN_CKPT_DIR/" >r1.log 2>&1 &&
    out want &&
    test -n "$(snaps)" &&
    for k in $(snaps); do s3curl -f -X DELETE "$S3_URL/bkt/$k" || return 1; done &&
    test -z "$(snaps)"
'

test_expect_success 'S3, read-only credentials: every reader answers as with full ones, quietly' '
    AWS_ENDPOINT_URL=$RO out s3ro &&
    same s3ro &&
    cat s3ro/*.err >s3ro.err && test ! -s s3ro.err &&
    test -z "$(snaps)"
'

test_expect_success 'S3, read-only credentials: the refused snapshot is one debug line' '
    AWS_ENDPOINT_URL=$RO "$SPOTRUN" -v stats >/dev/null 2>v.err &&
    grep "^fault 403 .*PUT .*summaries/snap/" proxy.log &&
    test "$(grep -c "snapshot" v.err)" = 1 &&
    grep "cannot write the snapshot .*AccessDenied\|cannot write the snapshot .*403" v.err
'

test_expect_success 'S3, read-only credentials: pull restores the checkpoint' '
    AWS_ENDPOINT_URL=$RO "$SPOTRUN" pull r1 pulled && cmp src/a.txt pulled/a.txt
'

test_expect_success 'S3, read-only credentials: a writer is refused with the 403 (push exits 77)' '
    expect_code 77 env AWS_ENDPOINT_URL=$RO "$SPOTRUN" push r2 src 2>push.err &&
    grep "403\|AccessDenied" push.err
'

kill "$proxy" 2>/dev/null
s3_stop
az_start
trap 'az_stop' EXIT
sas=$(azreq sas rl)
ro() {
    env -u AZURE_STORAGE_CONNECTION_STRING -u AZURE_STORAGE_KEY -u AZURE_STORAGE_ACCOUNT \
        AZURE_STORAGE_BLOB_ENDPOINT="$AZ_ENDPOINT" AZURE_STORAGE_SAS_TOKEN="$sas" "$@"
}

test_expect_success 'Azure setup: a run with a checkpoint, a sweep of two trials' '
    "$SPOTRUN" run --run-id r1 -- sh -c "cp src/a.txt \$SPOTRUN_CKPT_DIR/" >az-r1.log 2>&1 &&
    "$SPOTRUN" sweep init sw --param x=1,2 -- sh -c "exit 0" &&
    "$SPOTRUN" sweep work sw --until-empty >work.log 2>&1 &&
    READERS="ls|show r1|stats|sweep show sw" out azwant
'

test_expect_success 'Azure, a read-only SAS (rl): every reader answers as with the key, quietly' '
    (
        unset AZURE_STORAGE_CONNECTION_STRING AZURE_STORAGE_KEY AZURE_STORAGE_ACCOUNT &&
        export AZURE_STORAGE_BLOB_ENDPOINT="$AZ_ENDPOINT" AZURE_STORAGE_SAS_TOKEN="$sas" &&
        READERS="ls|show r1|stats|sweep show sw" out azro
    ) &&
    for f in azwant/*.out; do cmp "$f" "azro/${f#azwant/}" || return 1; done &&
    cat azro/*.err >azro.err && test ! -s azro.err &&
    ro "$SPOTRUN" pull r1 az-pulled && cmp src/a.txt az-pulled/a.txt &&
    ro "$SPOTRUN" sweep report sw -o sw.svg && grep "<svg" sw.svg
'

test_done
