#!/usr/bin/env bash
# Quotas per team or user (docs/cost.md, "Quotas and approvals"): `quota
# set` writes create-only versions (the newest in force); a run whose
# labels match a quota used up is refused before it starts (exit 79,
# naming the quota and its use), or held with --wait-quota until the quota
# is raised (the hold is its queue time); a running run over its quota
# checkpoints and stops with cause quota (exit 124); `quota show` says the
# use as `stats --label --since` does. A price of 3600 an hour makes every
# second cost 1.
. "$(dirname "$0")/lib.sh"

export PYTHONPATH=$SRCDIR/python SPOTRUN_NOTICE=none OUT=$TRASH
unset CUDA_VISIBLE_DEVICES

# The trainer (tests/e2e/sumsteps.py): sums its steps, commits every 5
# and whenever asked; 150 steps take 30 s at least.
cp "$SRCDIR/tests/e2e/sumsteps.py" train.py

test_expect_success 'quota set writes a new version each time; the newest keeps what it does not give' '
    "$SPOTRUN" quota set team=vision --max-cost 3 --per month --by ana >set1.out &&
    grep -x "quota team=vision version 1 (per month): max-cost 3.00; set by ana" set1.out &&
    "$SPOTRUN" quota set team=vision --gpu-hours 500 --by bo >set2.out &&
    grep -x "quota team=vision version 2 (per month): gpu-hours 500.00 max-cost 3.00; set by bo" set2.out &&
    test -f "$SPOTRUN_STORE/quotas/team/vision/000001.json" &&
    test -f "$SPOTRUN_STORE/quotas/team/vision/000002.json" &&
    grep "\"by\":\"ana\"" "$SPOTRUN_STORE/quotas/team/vision/000001.json" &&
    expect_code 64 "$SPOTRUN" quota set team=vision --by ana 2>none.err &&
    grep "nothing to set" none.err &&
    expect_code 64 "$SPOTRUN" quota set team=vision --per year --by ana 2>per.err &&
    grep "\-\-per takes day, week or month" per.err &&
    "$SPOTRUN" ls >ls.out &&
    refute grep "quotas" ls.out
'

test_expect_success 'a run over its quota checkpoints, then stops with cause quota (exit 124)' '
    STEPS=150 expect_code 124 "$SPOTRUN" run --run-id a --label team=vision \
        --price-per-hour 3600 --budget-poll 200ms -- "$PY" train.py >a.log 2>&1 &&
    cat a.log &&
    grep "run a reached the quota team=vision: cost [0-9.]* of 3.00; stopping after a checkpoint (raise it with \`spotrun quota set team=vision --max-cost AMOUNT\`)" a.log &&
    events a | grep "\"event\":\"limit\".*\"cause\":\"quota\",\"what\":\"quota\",\"quota\":\"team=vision\",\"measure\":\"cost\",\"limit\":3.0" &&
    events a | sed -n "/\"event\":\"limit\"/,\$p" | grep "\"event\":\"persisted\"" &&
    "$SPOTRUN" show a >show.out &&
    grep "^limit: *quota team=vision reached: cost [0-9.]* of 3.00$" show.out &&
    grep "^causes: *1 quota$" show.out &&
    "$SPOTRUN" ls | grep "^a  *stopped  *quota " &&
    "$SPOTRUN" show a --json | "$PY" -c "
import json, sys
l = json.load(sys.stdin)[\"limit\"]
assert l[\"cause\"] == \"quota\" and l[\"quota\"] == \"team=vision\" and l[\"measure\"] == \"cost\", l
assert l[\"limit\"] == 3.0 and l[\"used\"] >= 3.0, l
"
'

test_expect_success 'the next run of the label is refused before it starts (exit 79); another team runs' '
    expect_code 79 "$SPOTRUN" run --run-id b --label team=vision --label user=ana \
        --price-per-hour 3600 -- true 2>b.err &&
    cat b.err &&
    grep "spotrun run: quota team=vision (version 2) is used up: cost [0-9.]* of 3.00 used per month since 20[0-9]*-[0-9]*-01: not starting run b (exit 79); raise it with \`spotrun quota set team=vision --max-cost AMOUNT\`, or give --wait-quota to wait for it" b.err &&
    test ! -e "$SPOTRUN_STORE/b" &&
    "$SPOTRUN" run --run-id n --label team=nlp --price-per-hour 3600 -- true
'

test_expect_success 'quota show: the use is what stats --label --since the period start adds up' '
    "$SPOTRUN" quota show >show.txt &&
    cat show.txt &&
    grep "^team=vision  *month  *20[0-9-]*T00:00:00Z  *0.00 of 500.00  *[0-9.]* of 3.00  *0  *-  *2 bo  OVER: cost$" show.txt &&
    "$SPOTRUN" quota show --json >q.json &&
    since=$("$PY" -c "import json; print(json.load(open(\"q.json\"))[\"quotas\"][0][\"since\"])") &&
    "$SPOTRUN" stats --label team=vision --since "$since" --json >s.json &&
    "$PY" -c "
import json
q = json.load(open(\"q.json\"))[\"quotas\"]
assert len(q) == 1 and q[0][\"label\"] == \"team=vision\" and q[0][\"version\"] == 2, q
s = json.load(open(\"s.json\"))[\"total\"]
assert q[0][\"use\"][\"cost\"] == s[\"cost\"] and s[\"cost\"] >= 3, (q, s)
assert q[0][\"use\"][\"gpu_hours\"] == s[\"gpu_hours\"], (q, s)
assert q[0][\"over\"] == \"cost\" and q[0][\"by\"] == \"bo\", q
"
'

test_expect_success 'a sweep worker whose trial is refused by the quota stops claiming (79)' '
    "$SPOTRUN" sweep init sw --param i=0..3 --label team=vision -- true >init.out &&
    expect_code 79 "$SPOTRUN" sweep work sw --slots 1 --poll 200ms >work.log 2>&1 &&
    cat work.log &&
    grep "sweep sw: trial [0-9]: a quota of its labels is used up (exit 79); not starting more trials" work.log &&
    test "$(grep -c "not starting run sw-" work.log)" = 1
'

test_expect_success '--wait-quota holds the run until a new version raises the quota; the hold is queue time' '
    "$SPOTRUN" run --run-id w --label team=vision --price-per-hour 3600 --budget-poll 200ms \
        --wait-quota -- true >w.log 2>&1 &
    pid=$! &&
    test_bg $pid &&
    wait_for w.log "run w held by quota team=vision: cost [0-9.]* of 3.00 used per month" &&
    test ! -e "$SPOTRUN_STORE/w/events" &&
    "$SPOTRUN" quota set team=vision --max-cost 1000 --by ana &&
    wait $pid &&
    cat w.log &&
    grep "run w starts after waiting [0-9.]*m*s for its quota (queue time)" w.log &&
    events w | grep "\"event\":\"start\".*\"quota_wait_ms\":[1-9]" &&
    "$SPOTRUN" show w --json | "$PY" -c "
import json, sys
d = json.load(sys.stdin)
assert d[\"queued_seconds\"] >= 0.2, d[\"queued_seconds\"]
" &&
    "$SPOTRUN" show w | grep "queued [1-9]"
'

test_expect_success 'more GPUs than a run may have, or one run too many at once: refused (79)' '
    "$SPOTRUN" quota set user=ana --max-gpus-per-run 2 --max-concurrent 1 --per day --by ana &&
    CUDA_VISIBLE_DEVICES=0,1,2 expect_code 79 "$SPOTRUN" run --run-id g --label user=ana \
        -- true 2>g.err &&
    grep "quota user=ana (version 1) is used up: this run.s 3 GPUs are more than its 2 GPUs per run: not starting run g (exit 79); raise it with \`spotrun quota set user=ana --max-gpus-per-run N\`" g.err &&
    CUDA_VISIBLE_DEVICES=0,1 "$SPOTRUN" run --run-id c1 --label user=ana -- \
        sh -c "until test -e $TRASH/go; do sleep 0.1; done" >c1.log 2>&1 &
    pid=$! &&
    test_bg $pid &&
    wait_until 60 "run c1 running in quota show" sh -c \
        "\"$SPOTRUN\" quota show --json | grep \"\\\"running\\\": 1\"" &&
    expect_code 79 "$SPOTRUN" run --run-id c2 --label user=ana -- true 2>c2.err &&
    grep "quota user=ana (version 1) is used up: 2 runs would run at once, 1 allowed: not starting run c2" c2.err &&
    touch "$TRASH/go" &&
    wait $pid &&
    "$SPOTRUN" run --run-id c2 --label user=ana -- true
'

test_done
