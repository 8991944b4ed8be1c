#!/usr/bin/env bash
# What `sweep work` asks of the store for each trial, counted by the S3
# test server (docs/sweeps.md, "What a trial costs"): a worker lists the
# end marks, the budget and the definition only when a slot is free to
# take a trial (while every slot is busy it looks at the steering alone, to
# say a pause as it comes), and writes its lifetime
# record at its start, its keep-alives and its end, never once a trial,
# yet the record lists every trial it started.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
s3rver_only 'counts the requests in the local server log' && test_done
S3_CONDITIONAL=1 s3_start

req=$TRASH/s3.requests
# The request log's lines after line $1 that match $2 (grep -E).
since() { tail -n +"$(($1 + 1))" "$req" | grep -cE -- "$2" || true; }

test_expect_success 'a worker lists no end marks, budget or definition while every slot runs a trial' '
    "$SPOTRUN" sweep init busy --param n=1 -- \
        sh -c "touch \"$TRASH/started\"; i=0; until [ -e \"$TRASH/go\" ] || [ \$i -ge 1200 ]; do sleep 0.1; i=\$((i+1)); done" &&
    SPOTRUN_KEEPALIVE_MS=200 "$SPOTRUN" sweep work busy --poll 20ms >busy.log 2>&1 &
    pid=$! &&
    wait_until 60 "the trial to start" test -e "$TRASH/started" &&
    at=$(wc -l <"$req") &&
    # three keep-alives of the worker: many polls went by meanwhile
    wait_until 60 "three keep-alives" sh -c "test \$(tail -n +$((at + 1)) \"$req\" | grep -c \"^PUT .*/sweeps/busy/workers/\") -ge 3" &&
    lists=$(since "$at" "^LIST .*sweeps%2Fbusy%2F(end|budget|def)%2F") &&
    touch "$TRASH/go" &&
    wait $pid &&
    say "sweep listings while the trial ran: $lists" &&
    test "$lists" = 0
'

test_expect_success 'a worker writes its record at start and end only, listing every trial' '
    "$SPOTRUN" sweep init five --param n=1..5 -- true &&
    at=$(wc -l <"$req") &&
    SPOTRUN_KEEPALIVE_MS=600000 "$SPOTRUN" sweep work five --until-empty --poll 20ms \
        >five.log 2>&1 &&
    puts=$(since "$at" "^PUT .*/sweeps/five/workers/") &&
    say "worker record writes for 5 trials: $puts" &&
    test "$puts" = 2 &&
    key=$(tail -n +"$((at + 1))" "$req" | sed -n "s|^PUT PUT /bkt/\([^ ?]*sweeps/five/workers/[^ ?]*\).*|\1|p" | tail -n 1) &&
    s3curl "$S3_URL/bkt/$key" >record.json &&
    "$PY" -c "import json; d=json.load(open(\"record.json\")); assert sorted(d[\"trials\"]) == [0, 1, 2, 3, 4] and d[\"end_ms\"] >= d[\"alive_ms\"], d"
'

# Four workers started together on 16 trivial trials: each claims its
# trial's lease itself (one conditional write), so a trial two workers
# choose at once costs the loser a request, never a wrapper that starts,
# loses the lease and exits 73 (before: 10-35% of starts, bench-sweep.sh).
test_expect_success 'workers racing for trials start one wrapper per trial' '
    "$SPOTRUN" sweep init race --param n=1..16 -- true &&
    for w in 1 2 3 4; do
        HOME=$TRASH/h$w SPOTRUN_WORK_DIR=$TRASH/w$w "$SPOTRUN" sweep work race --until-empty \
            --poll 50ms >race$w.log 2>&1 &
    done &&
    wait &&
    lost=$(cat race1.log race2.log race3.log race4.log | grep -c "is owned by" || true) &&
    starts=$(cat race1.log race2.log race3.log race4.log | grep -cE "sweep race: trial [0-9]+ \(" || true) &&
    say "wrappers started: $starts, lost the lease: $lost" &&
    test "$lost" = 0 &&
    test "$starts" = 16 &&
    "$SPOTRUN" sweep show race >race.show &&
    grep -q "16 done" race.show
'

test_done
