# claim-order-body.sh - the body of t0970 (file store) and t0972 (S3, the
# test server with conditional writes), sourced after storelib.sh's
# store_start (tests/README.md, "Running a case on every store backend").
#
# Claim order (docs/sweeps.md, "sweep work"): at equal priority a `sweep
# work` worker claims a trial that ran before (preempted, or stopped by
# `sweep pause --stop`) before any fresh one, and it resumes from its
# checkpoint. Trial 7 is the one that ran: a worker picks among the first
# open trials otherwise (0..3 here), so only the order can make it trial 7.
# Which trials ran before: a listing by key prefix on S3, the summaries/
# directory on a file store.

cleanup() {
    local f _
    for f in w1.pid w2.pid; do
        [ -s "$TRASH/$f" ] && kill "$(cat "$TRASH/$f")" 2>/dev/null
    done
    # a stopped worker drains (its trial checkpoints into the store) before
    # the store's server stops: else it retries a dead server past the end
    for f in w1.pid w2.pid; do
        [ -s "$TRASH/$f" ] || continue
        for _ in $(seq 1200); do
            kill -0 "$(cat "$TRASH/$f")" 2>/dev/null || break
            sleep 0.1
        done
    done
    store_stop
    return 0
}
trap cleanup EXIT

export PYTHONPATH=$SRCDIR/python SPOTRUN_NOTICE=none OUT=$TRASH
unset CUDA_VISIBLE_DEVICES

# The trainer: one step per 0.1 s, a checkpoint every 5 steps and when
# asked; each start appends "RUN STEP" (the step it resumed at) to
# $OUT/starts.log. It never ends by itself within the test.
cat >train.py <<\EOF
import os, time
import spotrun
out, run = os.environ["OUT"], os.environ["SPOTRUN_RUN_ID"]
state = os.path.join(os.environ["SPOTRUN_CKPT_DIR"], "state")
step = int(open(state).read()) if os.path.exists(state) else 0
with open(os.path.join(out, "starts.log"), "a") as f:
    f.write("%s %d\n" % (run, step))
while step < 100000:
    time.sleep(0.1)
    step += 1
    if step % 5 == 0 or spotrun.checkpoint_due():
        with open(state, "w") as f:
            f.write("%d" % step)
        spotrun.commit(step)
EOF

# worker N: a `sweep work co` worker with one slot, its log wN.log.
worker() {
    (
        "$SPOTRUN" sweep work co --slots 1 --poll 200ms -- --budget-poll 300ms >"w$1.log" 2>&1 &
        echo $! >"w$1.pid"
        wait $!
        echo $? >"w$1.code"
    ) &
    wait_until 10 "worker $1 to start" test -s "w$1.pid"
}
# claims N: the trials worker N claimed, in order.
claims() { sed -n "s/^spotrun: sweep co: trial \([0-9]*\) (i=.*/\1/p" "w$1.log" | tr "\n" " "; }
ckpt_of() { "$SPOTRUN" ls | awk -v r="$1" '$1 == r {print ($5 == "-" ? 0 : $5)}'; }
has_ckpt() { test "$(ckpt_of "$1")" -ge 1 2>/dev/null; }

test_expect_success 'a preempted trial: the replacement worker resumes it before any fresh trial' '
    "$SPOTRUN" sweep init co --param i=0..7 -- "$PY" "$TRASH/train.py" >init.out &&
    "$SPOTRUN" sweep priority co 7 --set 1 &&
    worker 1 &&
    wait_until 120 "trial 7 to checkpoint" has_ckpt co-7 &&
    test "$(claims 1)" = "7 " &&
    kill -TERM "$(cat w1.pid)" &&
    wait_until 120 "worker 1 to drain" test -s w1.code &&
    test "$(cat w1.code)" = 75 &&
    "$SPOTRUN" sweep show co --json >show1.json &&
    json show1.json "assert [t[\"state\"] for t in d[\"trials\"]] == [\"queued\"] * 7 + [\"preempted\"], d[\"trials\"]" &&
    "$SPOTRUN" sweep priority co 7 --set 0 &&
    worker 2 &&
    wait_lines starts.log "^co-" 2 &&
    test "$(claims 2)" = "7 " &&
    test "$(sed -n 2p starts.log | cut -d" " -f1)" = co-7 &&
    test "$(sed -n 2p starts.log | cut -d" " -f2)" -gt 0
'

# newer_ckpt: trial 7 has committed past the step it resumed at (a stop
# that lands while the resumed job is still starting has nothing newer to
# save, and the third start would resume at the second's step).
step_of() { "$SPOTRUN" ls | awk -v r="$1" '$1 == r {print ($6 == "-" ? 0 : $6)}'; }
newer_ckpt() { test "$(step_of co-7)" -gt "$(sed -n 2p starts.log | cut -d" " -f2)"; }

test_expect_success 'a trial stopped by pause --stop: after resume the worker takes it again before any fresh trial' '
    wait_until 120 "trial 7 to commit past its resume step" newer_ckpt &&
    "$SPOTRUN" sweep pause co --stop >pause.out &&
    wait_for w2.log "stopped at the sweep.s pause" 120 &&
    "$SPOTRUN" sweep show co --json >show2.json &&
    json show2.json "assert d[\"trials\"][7][\"state\"] == \"stopped\", d[\"trials\"][7]" &&
    n=$(count_lines starts.log "^co-7 ") &&
    "$SPOTRUN" sweep resume co &&
    wait_for w2.log "sweep co: resumed; taking trials again" 60 &&
    wait_lines starts.log "^co-" 3 &&
    test "$(claims 2)" = "7 7 " &&
    test "$(count_lines starts.log "^co-7 ")" = $((n + 1)) &&
    test "$(sed -n 3p starts.log | cut -d" " -f2)" -gt "$(sed -n 2p starts.log | cut -d" " -f2)" &&
    refute grep "^co-[0-6] " starts.log
'
