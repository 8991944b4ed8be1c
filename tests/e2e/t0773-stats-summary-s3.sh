#!/usr/bin/env bash
# A run's summary (summaries/<run>.json) on an S3 store (docs/store.md): the wrapper PUTs it after
# each flush, and the reader of `spotrun stats` (sr_runsum_load_all, here
# through tests/tools/runsum_tool) takes it from one listing of every key
# plus one GET per run; a stale, garbage or edited one, or one whose logs
# are not the size the listing says, falls back to the logs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
s3_start
TOOL=${RUNSUM_TOOL:-$SRCDIR/build/tests/runsum_tool}
line() { "$TOOL" load "$SPOTRUN_STORE" "$1" 2>/dev/null | awk -v r="$1" '$1 == r'; }
attempts() { line "$1" | sed 's/.* attempts=//' | tr ',' '\n' | cut -d: -f1,2 | paste -sd, -; }
key() { echo "$S3_URL/bkt/$test_name/$1"; }

test_expect_success 'runs on S3 keep a summary that load_all believes' '
    "$SPOTRUN" run --run-id a -- sh -c "exit 0" 2>a.log &&
    "$SPOTRUN" run --run-id b --max-restarts 1 -- \
        sh -c "test -e $TRASH/b.once && exit 0; touch $TRASH/b.once; exit 3" 2>b.log &&
    s3curl -f "$(key summaries/b.json)" >b.json &&
    grep "\"cause\":\"crashed\"" b.json &&
    line a | grep " from_logs=0 state=done " &&
    line b | grep " from_logs=0 " &&
    test "$(attempts b)" = "0:crashed,1:done"
'

test_expect_success 'a stale or garbage summary on S3: the logs say' '
    sed "s/,{\"attempt\":1[^]]*//" b.json >stale.json &&
    ! grep "\"attempt\":1" stale.json &&
    s3curl -f -X PUT --data-binary @stale.json "$(key summaries/b.json)" &&
    line b | grep " from_logs=1 " &&
    test "$(attempts b)" = "0:crashed,1:done" &&
    printf "{garbage" >g.json &&
    s3curl -f -X PUT --data-binary @g.json "$(key summaries/a.json)" &&
    line a | grep " from_logs=1 state=done "
'

test_expect_success 'an edited summary, or a log grown since it was folded, on S3: the logs say' '
    s3curl -f -X PUT --data-binary @b.json "$(key summaries/b.json)" &&
    line b | grep " from_logs=0 " &&
    "$PY" -c "
import json
d = json.load(open(\"b.json\"))
d[\"labels\"] = {\"team\": \"vision\"}
d[\"attempts\"][0][\"end_ms\"] += 100 * 3600 * 1000
json.dump(d, open(\"edited.json\", \"w\"))
" &&
    s3curl -f -X PUT --data-binary @edited.json "$(key summaries/b.json)" &&
    line b | grep " from_logs=1 " &&
    test "$(attempts b)" = "0:crashed,1:done" &&
    s3curl -f -X PUT --data-binary @b.json "$(key summaries/b.json)" &&
    line b | grep " from_logs=0 " &&
    s3curl -f "$(key b/events/000001.jsonl)" >log1 &&
    echo "{\"event\":\"rebalance\",\"unix_ms\":1,\"attempt\":1}" >>log1 &&
    s3curl -f -X PUT --data-binary @log1 "$(key b/events/000001.jsonl)" &&
    line b | grep " from_logs=1 " &&
    test "$(attempts b)" = "0:crashed,1:done"
'

test_done
