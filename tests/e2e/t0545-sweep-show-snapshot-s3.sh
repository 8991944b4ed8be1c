#!/usr/bin/env bash
# `spotrun sweep show` over S3 in a number of requests that grows with the
# trials' summaries, not their objects (docs/store.md, "sweeps/<name>/view/"):
# a first show reads every trial from its logs and keeps a snapshot of its
# ended trials; a repeated show lists summaries/<sweep>- and reads that
# snapshot instead of any trial, and reads again only the trials whose
# summary changed since. The output is the logs' whatever the path; an
# edited snapshot is not believed; a sweep written before summaries/ reads
# right. Requests are counted by the test server (S3RVER_REQUEST_LOG,
# s3lib.sh's s3_count).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
s3_start
TRIALS=12 # 9 done, 2 failed (after a restart), 1 cancelled before it started
ACTIONS=1 # steering actions (the cancel)

cat >job.sh <<'JOB'
#!/bin/sh
k=$1
"$SPOTRUN_BIN" metric --step 1 loss=0.$k acc=0.5
"$SPOTRUN_BIN" metric --step 2 loss=0.0$k
if [ $((k % 5)) = 3 ]; then echo "boom $k" >&2; exit 3; fi
exit 0
JOB
chmod +x job.sh

key() { echo "$S3_URL/bkt/$test_name/$1"; }
# the keys under a prefix of the test's store, without the store's prefix
keys() { s3curl -f "$S3_URL/bkt?list-type=2&prefix=$test_name%2F$1" |
    grep -o "<Key>[^<]*" | sed "s|<Key>$test_name/||"; }
views() { keys sweeps%2Fsw%2Fview%2F; }
drop() { for k in "$@"; do s3curl -f -X DELETE "$(key "$k")" || return 1; done; }
show() { "$SPOTRUN" sweep show sw "$@"; }
# what the trials' logs say: a show with no snapshot to read
from_logs() { drop $(views) && show "$@"; }

# What a repeated show reads: the definition (a listing and part 0), the
# end marks, the steering (a listing and each action), summaries/<sweep>-
# (a page per 1,000 trials), the snapshot (a listing and a GET), the
# workers' records (a listing: the snapshot holds each one unchanged
# since), the budget (a listing).
BASE=$((2 + 1 + 1 + ACTIONS + (1 + TRIALS / 1000) + 2 + 1 + 1))

test_expect_success 'a sweep of 12 trials run on S3' '
    "$SPOTRUN" sweep init sw --param k=0..$((TRIALS - 1)) -- "$TRASH/job.sh" {k} &&
    "$SPOTRUN" sweep cancel sw 11 &&
    "$SPOTRUN" sweep work sw --until-empty -- --max-restarts 1 >work.log 2>&1 &&
    test "$(keys summaries%2Fsw- | wc -l)" = $((TRIALS - 1))
'

test_expect_success 'the first show reads every trial from its logs and keeps a snapshot' '
    s3_count first.req show >logs.out &&
    cat logs.out &&
    grep -E "^ +3 +3 +failed \(exit 3\) " logs.out &&
    grep "| boom 8" logs.out &&
    test "$(grep -c "/events/" first.req)" -ge $((TRIALS - 1)) &&
    test "$(views | wc -l)" = 1
'

test_expect_success 'a repeated show reads the snapshot, not the trials: the same output' '
    s3_count second.req show >snap.out &&
    cat second.req &&
    cmp logs.out snap.out &&
    ! grep -E "/(events|end|workers)/" second.req &&
    test "$(s3_requests second.req GET)" -le $((2 + ACTIONS)) &&
    test "$(s3_requests second.req)" -le $BASE &&
    from_logs --json >logs.json &&
    s3_count json.req show --json >snap.json &&
    cmp logs.json snap.json &&
    test "$(s3_requests json.req)" -le $BASE
'

# appended to a trial's first log: a later loss, as its wrapper would flush
more_loss() {
    s3curl -f "$(key "$1/events/000000.jsonl")" >log.jsonl &&
        "$PY" - log.jsonl <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
m = json.loads([l for l in lines if '"metric"' in l][-1])
m.update(value=0.0002, step=3, unix_ms=m["unix_ms"] + 1)
open(sys.argv[1], "a").write(json.dumps(m) + "\n")
PY
}

test_expect_success 'trials changed since: only they are read again, from their logs' '
    for r in sw-2 sw-8; do
        more_loss $r &&
        s3curl -f -X PUT --data-binary @log.jsonl "$(key $r/events/000000.jsonl)" &&
        s3curl -f "$(key summaries/$r.json)" >sum.json &&
        echo >>sum.json &&
        s3curl -f -X PUT --data-binary @sum.json "$(key summaries/$r.json)" || return 1
    done &&
    changed=2 &&
    s3_count changed.req show >changed.out &&
    cat changed.req &&
    grep -E "^ +2 +2 +done .* 0\.0002/0\.0002 " changed.out &&
    grep "/sw-2/events/" changed.req &&
    ! grep "/sw-3/events/" changed.req &&
    test "$(s3_requests changed.req)" -le $((BASE + 3 * changed)) &&
    from_logs >logs2.out &&
    cmp logs2.out changed.out
'

test_expect_success 'a snapshot edited by hand is not believed: that trial and the workers are read again' '
    show >/dev/null &&
    snap=$(views | tail -n 1) &&
    test -n "$snap" &&
    s3curl -f "$(key "$snap")" >snap.json &&
    "$PY" - snap.json <<-\PY &&
	import json, sys
	o = json.load(open(sys.argv[1]))
	for e in o["trials"]:
	    if e["trial"] == 0:
	        e["h"]["met"][0]["last"] = 123.0
	for r in o["workers"]["records"].values():
	    r["record"]["alive_ms"] += 3600 * 1000
	json.dump(o, open(sys.argv[1], "w"))
	PY
    s3curl -f -X PUT --data-binary @snap.json "$(key "$snap")" &&
    s3_count hostile.req show >hostile.out &&
    cmp logs2.out hostile.out &&
    grep "/sw-0/events/" hostile.req &&
    grep "/workers/.*\.json" hostile.req &&
    ! grep "/sw-1/events/" hostile.req
'

test_expect_success 'a sweep written before summaries/ existed shows what its logs say' '
    drop $(keys summaries%2Fsw-) $(views) &&
    test "$(keys summaries%2Fsw- | wc -l)" = 0 &&
    show >old1.out &&
    cmp logs2.out old1.out &&
    show >old2.out &&
    cmp logs2.out old2.out &&
    show --json >old.json &&
    "$SPOTRUN" sweep show sw --json >old2.json &&
    cmp old.json old2.json
'

test_expect_success 'sweep delete takes the snapshots with the sweep' '
    show >/dev/null &&
    test "$(views | wc -l)" -ge 1 &&
    "$SPOTRUN" sweep delete sw &&
    test "$(keys sweeps%2Fsw%2F | wc -l)" = 0
'

test_done
