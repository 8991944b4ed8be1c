#!/usr/bin/env bash
# `spotrun stats` over S3 in a number of requests that grows with the runs,
# not their objects (docs/store.md, "summaries/"): the first whole read
# writes a snapshot of summaries/, a repeated read lists summaries/ and GETs
# that snapshot, then reads one by one only the runs changed since. The
# numbers are those of the event logs whatever the path; a hostile or stale
# snapshot is never believed beyond the listing; a store written before
# summaries/ existed reads right. Requests are counted by the test server
# (S3RVER_REQUEST_LOG, s3lib.sh's s3_count).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
. "$(dirname "$0")/lib-multinode.sh"
s3_start
TOOL=${RUNSUM_TOOL:-$SRCDIR/build/tests/runsum_tool}
RUNS=40
key() { echo "$S3_URL/bkt/$test_name/$1"; }
stats() { "$SPOTRUN" stats --by team,week "$@"; }
# the snapshots' keys, oldest first
snaps() { s3curl -f "$S3_URL/bkt?list-type=2&prefix=$test_name%2Fsummaries%2Fsnap%2F" |
    grep -o "<Key>[^<]*" | sed "s|<Key>$test_name/||"; }
line() { grep "^$1 " load.out; }

test_expect_success 'a store of this version: stats from the snapshot says what the logs say' '
    "$PY" "$SRCDIR/tests/e2e/genstore.py" gen --synthetic $RUNS --summaries none &&
    cp -r gen logs-only &&
    "$TOOL" fold gen &&
    test -f gen/summaries/r00000.json &&
    test ! -e gen/r00000/SUMMARY.json &&
    "$PY" "$SRCDIR/tests/s3/seed.py" gen "$TRASH/s3data/bkt/$test_name" &&
    stats --store "$TRASH/logs-only" >want &&
    s3_count first.req stats >got1 &&
    cmp want got1 &&
    test "$(snaps | wc -l)" = 1 &&
    s3_count second.req stats >got2 &&
    cmp want got2 &&
    "$TOOL" load "$SPOTRUN_STORE" >load.out &&
    test "$(grep -c " snap=1 from_logs=0 " load.out)" = $RUNS
'

# What a repeated `stats` reads: summaries/ (a page per 1,000 runs), the
# snapshot, and sweeps/ (the sweeps whose labels its trials inherit).
BASE=$((1 + RUNS / 1000 + 1 + 1))

test_expect_success 'a repeated read: one listing page per 1,000 runs and one GET' '
    cat second.req &&
    test "$(s3_requests second.req LIST)" -le $((1 + RUNS / 1000 + 1)) &&
    test "$(s3_requests second.req GET)" -le 1 &&
    test "$(s3_requests second.req)" -le $BASE &&
    test "$(s3_requests first.req GET)" -ge $RUNS
'

test_expect_success 'runs changed since the snapshot: read one by one, the same numbers' '
    "$SPOTRUN" run --run-id new-a -- sh -c "exit 0" 2>a.log &&
    "$SPOTRUN" run --run-id new-b --max-restarts 1 -- \
        sh -c "test -e $TRASH/b.once && exit 0; touch $TRASH/b.once; exit 3" 2>b.log &&
    s3curl -f "$(key summaries/new-b.json)" >new-b.json &&
    grep "\"cause\":\"crashed\"" new-b.json &&
    changed=2 &&
    s3_count third.req stats >got3 &&
    cat third.req &&
    test "$(s3_requests third.req)" -le $((BASE + 2 * changed)) &&
    "$TOOL" load "$SPOTRUN_STORE" >load.out &&
    line new-b | grep " snap=0 from_logs=0 " &&
    line new-b | grep "attempts=0:crashed:[0-9]*:[0-9]*,1:done" &&
    line r00001 | grep " snap=1 " &&
    for s in $(snaps); do s3curl -f -X DELETE "$(key "$s")" || return 1; done &&
    test "$(snaps | wc -l)" = 0 &&
    s3_count full.req stats >got4 &&
    cmp got4 got3 &&
    test "$(s3_requests full.req GET)" -ge $((RUNS + 2))
'

# put_snap FILE MS NONCE: a snapshot dated MS from now, with body FILE
put_snap() { s3curl -f -X PUT --data-binary @"$1" \
    "$(key "summaries/snap/$(($(date +%s%3N) + $2))-$3.json")"; }

test_expect_success 'a hostile or stale snapshot: those runs are read from the store, as the logs say' '
    stats >want &&
    "$TOOL" load "$SPOTRUN_STORE" >want.load &&
    s3curl -f "$(key "$(snaps | tail -n 1)")" >snap.json &&
    "$PY" -c "
import json
s = json.load(open(\"snap.json\"))
runs = {e[\"run\"]: e for e in s[\"runs\"]}
runs[\"r00001\"][\"summary\"][\"attempts\"][0][\"end_ms\"] += 100 * 3600 * 1000
runs[\"r00002\"][\"summary\"] = runs[\"r00003\"][\"summary\"]
runs[\"r00004\"][\"summary\"][\"labels\"] = {\"team\": \"hostile\"}
runs[\"ghost\"] = {\"run\": \"ghost\", \"etag\": \"\", \"logs\": [], \"done\": True,
                  \"summary\": runs[\"r00005\"][\"summary\"]}
s[\"runs\"] = [runs[k] for k in sorted(runs)]
json.dump(s, open(\"hostile.json\", \"w\"))
" &&
    put_snap hostile.json 1000 beef &&
    "$TOOL" load "$SPOTRUN_STORE" >load.out &&
    line r00001 | grep " snap=0 from_logs=0 " &&
    line r00002 | grep " snap=0 from_logs=0 " &&
    line r00004 | grep " snap=0 from_logs=0 " &&
    line r00006 | grep " snap=1 " &&
    ! grep "^ghost " load.out &&
    sed "s/ snap=[01]//" want.load >a && sed "s/ snap=[01]//" load.out >b && cmp a b &&
    stats >got &&
    cmp want got &&
    ! grep hostile got
'

test_expect_success 'a snapshot that is garbage (read whole once: the next snapshot supersedes it), or dated in the future, is not believed' '
    printf "{garbage" >g.json &&
    put_snap g.json 60000 bad &&
    s3_count garbage.req stats >got && cmp want got &&
    grep "^GET .*-bad.json" garbage.req &&
    test "$(s3_requests garbage.req GET)" -ge $RUNS &&
    s3_count after.req stats >got && cmp want got &&
    ! grep "^GET .*-bad.json" after.req &&
    test "$(s3_requests after.req)" -le $BASE &&
    put_snap hostile.json $((3 * 86400 * 1000)) f00d &&
    s3_count future.req stats >got && cmp want got &&
    ! grep "^GET .*f00d" future.req
'

test_expect_success 'a multi-node run started after the snapshot is read (from its logs)' '
    for s in $(snaps); do s3curl -f -X DELETE "$(key "$s")" || return 1; done &&
    "$TOOL" load "$SPOTRUN_STORE" >/dev/null &&
    test "$(snaps | wc -l)" = 1 &&
    printf "#!/bin/sh\nexit 0\n" >nodejob.sh && chmod +x nodejob.sh &&
    start_node mn 2 0 mn0.log && start_node mn 2 1 mn1.log &&
    wait ${pid[0]} && wait ${pid[1]} &&
    s3_count mn.req "$TOOL" load "$SPOTRUN_STORE" >load.out &&
    grep "^GET .*summaries/snap/" mn.req &&
    line mn | grep " snap=0 from_logs=1 state=done " &&
    "$TOOL" load "$SPOTRUN_STORE" >load2.out &&
    grep "^mn snap=0 from_logs=1 state=done " load2.out
'

test_expect_success 'and once in a snapshot, it costs one listing of its own, not its logs again' '
    for s in $(snaps); do s3curl -f -X DELETE "$(key "$s")" || return 1; done &&
    "$TOOL" load "$SPOTRUN_STORE" >/dev/null &&
    s3_count mn2.req "$TOOL" load "$SPOTRUN_STORE" >load.out &&
    cat mn2.req &&
    line mn | grep " snap=1 from_logs=1 state=done " &&
    test "$(s3_requests mn2.req)" -le $((BASE - 1 + 1)) &&
    grep "^LIST .*prefix=$test_name%2Fmn%2F" mn2.req
'

test_done
