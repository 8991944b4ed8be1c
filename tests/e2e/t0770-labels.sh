#!/usr/bin/env bash
# Run labels (DESIGN.md, "Labels"): `run --label` and SPOTRUN_LABELS are
# recorded in the start event, `show` and `ls --json` carry them, `ls
# --label` filters on them, a bad label starts nothing, a sweep's labels go
# to every trial's run, and labels read from a tampered store are checked
# like the ones given. Each node of a multi-node run records them too.
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/lib-multinode.sh"

unset SPOTRUN_LABELS
S=$SPOTRUN_STORE
json() { "$PY" -c 'import json, sys; d = json.load(sys.stdin); print(json.dumps(eval(sys.argv[1]), sort_keys=True))' "$1"; }

test_expect_success 'run --label and SPOTRUN_LABELS: show and show --json carry them, the flag wins' '
    SPOTRUN_LABELS="team=nlp, user=ana" "$SPOTRUN" run --run-id a --label user=bob \
        --label project=x1 -- true &&
    grep "\"labels\":{\"project\":\"x1\",\"team\":\"nlp\",\"user\":\"bob\"}" "$S"/a/events/*.jsonl &&
    "$SPOTRUN" show a >show.out &&
    grep "^labels: *project=x1, team=nlp, user=bob$" show.out &&
    "$SPOTRUN" show a --json | json "d[\"labels\"]" >labels &&
    test "$(cat labels)" = "{\"project\": \"x1\", \"team\": \"nlp\", \"user\": \"bob\"}" &&
    "$SPOTRUN" ls --json | json "[r[\"labels\"] for r in d[\"runs\"] if r[\"run_id\"] == \"a\"]" >ls &&
    test "$(cat ls)" = "[{\"project\": \"x1\", \"team\": \"nlp\", \"user\": \"bob\"}]"
'

test_expect_success 'a run without labels: no labels line, "labels": {} in show --json, none in the event' '
    "$SPOTRUN" run --run-id plain -- true &&
    ! grep -q "\"labels\"" "$S"/plain/events/*.jsonl &&
    "$SPOTRUN" show plain >show.out &&
    ! grep -q "^labels:" show.out &&
    test "$("$SPOTRUN" show plain --json | json "d[\"labels\"]")" = "{}"
'

test_expect_success 'a multi-node run: each node'"'"'s start event carries the labels' '
    printf "#!/bin/sh\nexit 0\n" >nodejob.sh && chmod +x nodejob.sh &&
    start_node mn 2 0 n0.log --label team=mn && p0=${pid[0]} &&
    start_node mn 2 1 n1.log --label team=mn && p1=${pid[1]} &&
    wait $p0 && wait $p1 &&
    ls "$S"/mn/events/ &&
    test "$(grep -l "\"event\":\"start\".*\"labels\":{\"team\":\"mn\"}" "$S"/mn/events/*.jsonl | wc -l)" = 2 &&
    "$SPOTRUN" ls --label team=mn | awk "NR>1 {print \$1}" >mn && test "$(cat mn)" = mn
'

test_expect_success 'run --help lists --label with its environment twin' '
    "$SPOTRUN" run --help >help &&
    grep -- "--label KEY=VALUE.*\[SPOTRUN_LABELS\]" help
'

test_expect_success 'a bad label is a usage error (64) and nothing is started or written' '
    export SPOTRUN_STORE=$TRASH/store2 &&
    expect_code 64 "$SPOTRUN" run --run-id bad --label Team=x -- touch started 2>err &&
    cat err && grep "spotrun run: bad label \"Team=x\": a key is" err &&
    expect_code 64 env SPOTRUN_LABELS="team=nlp,zone=x" "$SPOTRUN" run --run-id bad -- touch started 2>err &&
    cat err && grep "SPOTRUN_LABELS: bad label \"zone=x\"" err &&
    expect_code 64 "$SPOTRUN" run --run-id bad --label "team=a b" -- touch started 2>err &&
    grep "bad label" err &&
    test ! -e started && test ! -e "$SPOTRUN_STORE" && test ! -e "$SPOTRUN_WORK_DIR/bad"
'

test_expect_success 'ls --label filters: one label, two labels (all must match), none matching' '
    "$SPOTRUN" run --run-id b --label team=cv --label user=ana -- true &&
    "$SPOTRUN" ls --label team=nlp | awk "NR>1 {print \$1}" >nlp &&
    test "$(cat nlp)" = a &&
    "$SPOTRUN" ls --label user=ana --json | json "[r[\"run_id\"] for r in d[\"runs\"]]" >ana &&
    test "$(cat ana)" = "[\"b\"]" &&
    "$SPOTRUN" ls --label team=cv --label user=ana | awk "NR>1 {print \$1}" >both &&
    test "$(cat both)" = b &&
    "$SPOTRUN" ls --label team=cv --label user=bob | awk "NR>1 {print \$1}" >none &&
    test ! -s none &&
    expect_code 64 "$SPOTRUN" ls --label "=x" 2>err && grep "bad label" err
'

test_expect_success 'sweep init --label: every trial run carries them, under the trial wrapper'"'"'s own' '
    "$SPOTRUN" sweep init sw --label team=rl --label cost-center=c7 --param n=0..1 -- true >init.out &&
    grep "\"labels\":{\"cost-center\":\"c7\",\"team\":\"rl\"}" "$S/sweeps/sw/def/000000.json" &&
    "$SPOTRUN" run --sweep sw --trial 0 >/dev/null 2>&1 &&
    "$SPOTRUN" run --sweep sw --trial 1 --label team=nlp >/dev/null 2>&1 &&
    test "$("$SPOTRUN" show sw-0 --json | json "d[\"labels\"]")" = "{\"cost-center\": \"c7\", \"team\": \"rl\"}" &&
    test "$("$SPOTRUN" show sw-1 --json | json "d[\"labels\"]")" = "{\"cost-center\": \"c7\", \"team\": \"nlp\"}" &&
    "$SPOTRUN" ls --label cost-center=c7 | awk "NR>1 {print \$1}" >c7 &&
    test "$(cat c7 | tr "\n" " ")" = "sw-0 sw-1 "
'

test_expect_success 'sweep init: a bad label is 64, other labels are a different definition (65), --add takes none' '
    expect_code 64 "$SPOTRUN" sweep init sw2 --label sweep=x --param n=0 -- true 2>err &&
    grep "bad label \"sweep=x\"" err && test ! -e "$S/sweeps/sw2" &&
    expect_code 65 "$SPOTRUN" sweep init sw --label team=cv --param n=0..1 -- true 2>err &&
    grep "different labels" err &&
    expect_code 64 "$SPOTRUN" sweep init sw --add --label team=rl --param n=5 2>err &&
    grep "not with --add" err
'

test_expect_success 'a tampered start event with hostile labels: show drops them (a valid one stays), no crash' '
    mkdir -p "$S/evil/events" &&
    printf "%s\n" "{\"event\":\"start\",\"attempt\":0,\"unix_ms\":1700000000000,\"host\":\"h\",\"pid\":1,\"labels\":{\"Bad Key\":\"v\",\"team\":7,\"user\":\"a\\nlabels: x=y\",\"zone\":\"z\",\"ok\":\"\",\"deep\":{\"a\":\"b\"},\"good\":\"yes\"}}" \
        >"$S/evil/events/000000.jsonl" &&
    "$SPOTRUN" show evil >show.out 2>show.err &&
    cat show.out show.err &&
    test "$(grep "^labels:" show.out)" = "labels:      good=yes" &&
    ! grep -q "x=y" show.out &&
    test "$("$SPOTRUN" show evil --json | json "d[\"labels\"]")" = "{\"good\": \"yes\"}" &&
    "$SPOTRUN" ls --label team=7 >ls.out && test "$(awk "NR>1" ls.out)" = ""
'

test_expect_success 'labelled runs are what stats groups by, priced at the price each recorded' '
    mkdir -p st2 &&
    SPOTRUN_STORE=$PWD/st2 "$SPOTRUN" run --run-id p1 --label team=nlp --price-per-hour 3.6 \
        -- sleep 1 &&
    SPOTRUN_STORE=$PWD/st2 "$SPOTRUN" run --run-id p2 --label team=cv -- true &&
    grep -q "\"price_per_hour\":3.6" st2/p1/events/000000.jsonl &&
    SPOTRUN_STORE=$PWD/st2 "$SPOTRUN" stats --by team --json >stats.json &&
    "$PY" - <<-PY
	import json
	d = json.load(open("stats.json"))
	g = {x["key"]["team"]: x for x in d["groups"]}
	assert sorted(g) == ["cv", "nlp"], g
	nlp, cv = g["nlp"], g["cv"]
	assert nlp["runs"] == 1 and cv["runs"] == 1
	assert nlp["instance_hours"] >= 1 / 3600, nlp
	assert abs(nlp["cost"] - 3.6 * nlp["instance_hours"]) < 1e-5, nlp
	assert nlp["unpriced_hours"] == 0
	assert cv["cost"] is None and cv["unpriced_hours"] > 0, cv
	PY
'

test_done
