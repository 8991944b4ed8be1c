#!/usr/bin/env bash
# Quotas on an S3 store (docs/cost.md, "Quotas and approvals"): each
# `quota set` is a create-only object (If-None-Match: *), so a version
# another setter wrote first is never replaced: the set takes the next
# number. A run over its quota checkpoints and stops with cause quota
# (124), the next is refused (79), and `quota show` says what `stats`
# says, all through the S3 store.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
S3_CONDITIONAL=1 s3_start

export PYTHONPATH=$SRCDIR/python SPOTRUN_NOTICE=none OUT=$TRASH
unset CUDA_VISIBLE_DEVICES
cp "$SRCDIR/tests/e2e/sumsteps.py" train.py
key() { echo "$S3_URL/bkt/$test_name/$1"; }

test_expect_success 'quota set on S3: create-only versions; one written in between is kept' '
    "$SPOTRUN" quota set team=vision --max-cost 3 --per month --by ana >set1.out &&
    grep -x "quota team=vision version 1 (per month): max-cost 3.00; set by ana" set1.out &&
    s3curl -f "$(key quotas/team/vision/000001.json)" >v1.json &&
    sed "s/\"version\":1/\"version\":2/; s/\"by\":\"ana\"/\"by\":\"racer\"/" v1.json >v2.json &&
    s3curl -f -X PUT -H "If-None-Match: *" --data-binary @v2.json \
        "$(key quotas/team/vision/000002.json)" &&
    "$SPOTRUN" quota set team=vision --gpu-hours 500 --by bo >set3.out &&
    grep -x "quota team=vision version 3 (per month): gpu-hours 500.00 max-cost 3.00; set by bo" set3.out &&
    s3curl -f "$(key quotas/team/vision/000002.json)" | grep "\"by\":\"racer\""
'

test_expect_success 'on S3 a run over its quota stops with cause quota; the next is refused (79)' '
    STEPS=150 expect_code 124 "$SPOTRUN" run --run-id a --label team=vision \
        --price-per-hour 3600 --budget-poll 200ms -- "$PY" train.py >a.log 2>&1 &&
    cat a.log &&
    grep "run a reached the quota team=vision: cost [0-9.]* of 3.00; stopping after a checkpoint" a.log &&
    "$SPOTRUN" show a | grep "^limit: *quota team=vision reached: cost [0-9.]* of 3.00$" &&
    expect_code 79 "$SPOTRUN" run --run-id b --label team=vision --price-per-hour 3600 \
        -- true 2>b.err &&
    grep "spotrun run: quota team=vision (version 3) is used up: cost [0-9.]* of 3.00 used per month" b.err
'

test_expect_success 'on S3 quota show says what stats --label --since says' '
    "$SPOTRUN" quota show --json >q.json &&
    since=$("$PY" -c "import json; print(json.load(open(\"q.json\"))[\"quotas\"][0][\"since\"])") &&
    "$SPOTRUN" stats --label team=vision --since "$since" --json >s.json &&
    "$PY" -c "
import json
q = json.load(open(\"q.json\"))[\"quotas\"][0]
s = json.load(open(\"s.json\"))[\"total\"]
assert q[\"use\"][\"cost\"] == s[\"cost\"] and s[\"cost\"] >= 3, (q, s)
assert q[\"use\"][\"gpu_hours\"] == s[\"gpu_hours\"], (q, s)
assert q[\"version\"] == 3 and q[\"over\"] == \"cost\", q
"
'

test_done
