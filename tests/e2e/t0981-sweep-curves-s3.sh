#!/usr/bin/env bash
# Learning curves through `sweep show`'s view snapshot on S3 (docs/store.md,
# "sweeps/<name>/view/"; docs/sweeps.md, "Learning curves"): the first
# show reads the trials' logs and keeps their curves in the snapshot, a
# repeated `--json` gives the same curves without reading a log, and a
# snapshot of the older version (no curves) is not used.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
s3_start

# job.sh N: N steps of loss = 1/step (+ the trial's k / 10)
cat >job.sh <<'JOB'
#!/bin/sh
i=1
while [ "$i" -le "$1" ]; do
    "$SPOTRUN_BIN" metric --step "$i" loss="$(awk -v s="$i" -v k="$2" 'BEGIN { printf "%.6f", 1 / s + k / 10 }')" || exit 1
    i=$((i + 1))
done
JOB
chmod +x job.sh

key() { echo "$S3_URL/bkt/$test_name/$1"; }
keys() { s3curl -f "$S3_URL/bkt?list-type=2&prefix=$test_name%2F$1" |
    grep -o "<Key>[^<]*" | sed "s|<Key>$test_name/||"; }
views() { keys sweeps%2Fsw%2Fview%2F; }

test_expect_success 'a sweep of 3 trials on S3, one of 150 values' '
    "$SPOTRUN" sweep init sw --param n=5,4,150 -- "$TRASH/job.sh" {n} {n} &&
    "$SPOTRUN" sweep work sw --until-empty >work.log 2>&1
'

test_expect_success 'the first show --json reads the logs; the snapshot it keeps holds the curves' '
    s3_count first.req "$SPOTRUN" sweep show sw --json >logs.json &&
    grep "/events/" first.req &&
    test "$(views | wc -l)" = 1 &&
    s3curl -f "$(key "$(views)")" >snap.json &&
    "$PY" - logs.json snap.json <<-\PY
	import json, sys
	d = json.load(open(sys.argv[1]))
	t = {x["trial"]: x for x in d["trials"]}
	assert t[1]["curves"] == {"loss": [[s, round(1 / s + 0.4, 6)] for s in range(1, 5)]}, t[1]
	c = t[2]["curves"]["loss"]
	assert 64 < len(c) <= 128 and c[0][0] == 1, c  # thinned evenly
	s = json.load(open(sys.argv[2]))
	assert s["version"] == 3, s["version"]
	for e in s["trials"]:
	    met = e["h"]["met"][0]
	    assert len(met["pts"]) == len(t[e["trial"]]["curves"]["loss"]), e
	PY
'

test_expect_success 'a repeated show --json reads the snapshot, no log: the same curves' '
    s3_count second.req "$SPOTRUN" sweep show sw --json >snap1.json &&
    if grep "/events/" second.req; then say "a log was read"; false; fi &&
    cmp logs.json snap1.json &&
    "$PY" -c "
import json
t = json.load(open(\"snap1.json\"))[\"trials\"]
assert [len(x[\"curves\"][\"loss\"]) for x in t][:2] == [5, 4], t
"
'

test_expect_success 'a snapshot of the older version is not used: the trials are read from their logs' '
    snap=$(views) &&
    "$PY" - snap.json <<-\PY &&
	import json, sys
	o = json.load(open(sys.argv[1]))
	o["version"] = 2
	for e in o["trials"]:
	    for m in e["h"]["met"]:
	        del m["pts"], m["stride"]
	json.dump(o, open(sys.argv[1], "w"))
	PY
    s3curl -f -X PUT --data-binary @snap.json "$(key "$snap")" &&
    s3_count old.req "$SPOTRUN" sweep show sw --json >old.json &&
    grep "/sw-2/events/" old.req &&
    cmp logs.json old.json
'

test_done
