#!/usr/bin/env bash
# Approvals for large runs (docs/cost.md, "Quotas and approvals"): a quota
# with --approve-above SIZE makes a run whose own limits exceed SIZE (its
# --time-limit x GPUs in GPU-hours, its --max-cost in cost; none given: no
# bound) wait for `spotrun approve RUN --by NAME`: refused (79) with that
# exact command, or held with --wait-quota until it is given; the approval
# is create-only (the first stands) and `show` prints who approved the run.
. "$(dirname "$0")/lib.sh"

export SPOTRUN_NOTICE=none
unset CUDA_VISIBLE_DEVICES

test_expect_success 'quota set --approve-above takes GPU-hours or a cost; anything else is refused' '
    "$SPOTRUN" quota set team=vision --approve-above 100gpu-hours --by lead >set.out &&
    grep -x "quota team=vision version 1 (per week): approve-above 100.00 gpu-hours; set by lead" set.out &&
    "$SPOTRUN" quota set user=ana --approve-above 50 --by lead >set2.out &&
    grep -x "quota user=ana version 1 (per week): approve-above 50.00; set by lead" set2.out &&
    expect_code 64 "$SPOTRUN" quota set team=vision --approve-above 100gpus --by lead 2>bad.err &&
    grep "\-\-approve-above takes a size like 100gpu-hours (GPU-hours) or 250 (cost), not \"100gpus\"" bad.err
'

test_expect_success 'a run above the size is refused (79) with the command that approves it' '
    CUDA_VISIBLE_DEVICES=0,1,2,3 expect_code 79 "$SPOTRUN" run --run-id big --label team=vision \
        --time-limit 48h -- true 2>big.err &&
    cat big.err &&
    grep "spotrun run: quota team=vision (version 1): run big needs an approval: its --time-limit x 4 GPU(s) is 192.00 GPU-hours, above 100.00 GPU-hours (--approve-above): not starting it (exit 79); to approve it: \`spotrun approve big --by NAME\`" big.err &&
    test ! -e "$SPOTRUN_STORE/big" &&
    expect_code 79 "$SPOTRUN" run --run-id open --label team=vision -- true 2>open.err &&
    grep "run open needs an approval: no --time-limit bounds its GPU-hours" open.err &&
    expect_code 79 "$SPOTRUN" run --run-id dear --label user=ana --max-cost 80 \
        --price-per-hour 1 -- true 2>dear.err &&
    grep "run dear needs an approval: its --max-cost is 80.00, above 50.00 in cost" dear.err &&
    # within the size: no approval needed
    CUDA_VISIBLE_DEVICES=0,1 "$SPOTRUN" run --run-id small --label team=vision \
        --time-limit 10h -- true &&
    "$SPOTRUN" show small --json | "$PY" -c "
import json, sys
assert json.load(sys.stdin)[\"approved\"] is None
"
'

test_expect_success 'spotrun approve: the run starts, and show says who approved it; the first approval stands' '
    "$SPOTRUN" approve big --by lead >ap.out &&
    grep "^big approved by lead at 20" ap.out &&
    "$SPOTRUN" approve big --by mallory >ap2.out &&
    grep "^big was already approved by lead at 20" ap2.out &&
    CUDA_VISIBLE_DEVICES=0,1,2,3 "$SPOTRUN" run --run-id big --label team=vision \
        --time-limit 48h -- true &&
    "$SPOTRUN" show big | grep "^approved: *by lead at 20[0-9-]*T[0-9:]*Z$" &&
    "$SPOTRUN" show big --json | "$PY" -c "
import json, sys
a = json.load(sys.stdin)[\"approved\"]
assert a[\"by\"] == \"lead\" and a[\"unix_ms\"] > 0, a
" &&
    "$SPOTRUN" ls >ls.out &&
    refute grep "^approvals" ls.out &&
    expect_code 64 "$SPOTRUN" approve big 2>noby.err &&
    grep "give --by NAME" noby.err
'

test_expect_success '--wait-quota holds a run above the size until it is approved' '
    "$SPOTRUN" run --run-id held --label team=vision --time-limit 200h --budget-poll 200ms \
        --wait-quota -- true >held.log 2>&1 &
    pid=$! &&
    test_bg $pid &&
    wait_for held.log "run held held by quota team=vision: run held needs an approval" &&
    test ! -e "$SPOTRUN_STORE/held/events" &&
    "$SPOTRUN" approve held --by lead &&
    wait $pid &&
    grep "run held starts after waiting" held.log &&
    "$SPOTRUN" show held | grep "^approved: *by lead"
'

test_expect_success 'a sweep'"'"'s trials: refused naming both commands; approve SWEEP covers every trial' '
    "$SPOTRUN" sweep init big-sweep --label team=vision --param n=1..2 -- true &&
    expect_code 79 "$SPOTRUN" run --sweep big-sweep --trial 0 2>t0.err &&
    cat t0.err &&
    grep "run big-sweep-0 needs an approval: no --time-limit bounds its GPU-hours" t0.err &&
    grep -F "\`spotrun approve big-sweep-0 --by NAME\` (or every trial of its sweep: \`spotrun approve big-sweep --by NAME\`)" t0.err &&
    "$SPOTRUN" approve big-sweep --by lead >aps.out &&
    grep "^big-sweep approved by lead at 20" aps.out &&
    "$SPOTRUN" run --sweep big-sweep --trial 0 &&
    "$SPOTRUN" run --sweep big-sweep --trial 1 &&
    "$SPOTRUN" show big-sweep-1 | grep "^approved: *by lead at 20" &&
    expect_code 79 "$SPOTRUN" run --run-id big-sweep-x --label team=vision -- true 2>x.err &&
    grep "run big-sweep-x needs an approval" x.err
'

test_done
