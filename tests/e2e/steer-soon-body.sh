# steer-soon-body.sh - the body of t0942 (file store) and t0943 (S3, the
# test server with conditional writes, where it also counts the steering's
# requests), sourced after storelib.sh's store_start (tests/README.md,
# "Running a case on every store backend").
#
# Steering reaches a running trial within seconds (docs/sweeps.md,
# "Steering"), not at the budget's poll: a cancel of a trial run by hand
# (`spotrun run --sweep`, no worker) and a `pause --stop` of a trial under
# `sweep work` each stop a trial with ~25 s left, checkpointed, before it
# ends: its end is cancelled / stopped (paused), never done; its one
# checkpoint is the one the stop asked for; it never reached its last
# step. The wrappers run with --budget-poll 1m, so steering read on the
# budget's poll (the old way) would come after each trial has ended done.
# On S3 it also counts the steering's requests.

# a test that fails leaves no worker or wrapper behind
cleanup() {
    for p in w1.pid hand.pid; do
        [ -s "$TRASH/$p" ] && kill "$(cat "$TRASH/$p")" 2>/dev/null
    done
    store_stop
    return 0
}
trap cleanup EXIT

export PYTHONPATH=$SRCDIR/python SPOTRUN_NOTICE=none
unset CUDA_VISIBLE_DEVICES

# The trainer: STEPS steps of 0.2 s (0.01 s once $OUT/hurry exists); it
# commits only when asked (so a checkpoint is the stop's); each start
# appends "RUN STEP" to $OUT/starts.log; a finished run writes "STEP" to
# $OUT/result-RUN.
cat >train.py <<\EOF
import os, time
import spotrun
out, run = os.environ["OUT"], os.environ["SPOTRUN_RUN_ID"]
state = os.path.join(os.environ["SPOTRUN_CKPT_DIR"], "state")
step = int(open(state).read()) if os.path.exists(state) else 0
with open(os.path.join(out, "starts.log"), "a") as f:
    f.write("%s %d\n" % (run, step))
while step < int(os.environ["STEPS"]):
    time.sleep(0.01 if os.path.exists(os.path.join(out, "hurry")) else 0.2)
    step += 1
    if spotrun.checkpoint_due():
        with open(state, "w") as f:
            f.write("%d" % step)
        spotrun.commit(step)
with open(os.path.join(out, "result-" + run), "w") as f:
    f.write("%d\n" % step)
EOF
export OUT=$TRASH STEPS=125 # 25 s a trial until hurried

# ended K: trial K of sweep ss has an end mark, whichever
ended() { store_has "sweeps/ss/end/$1.done" || store_has "sweeps/ss/end/$1.cancelled"; }
starts() { count_lines starts.log "^$1 "; }
ckpts() { "$SPOTRUN" ls | awk -v r="$1" '$1 == r {print ($5 == "-" ? 0 : $5)}'; }
trial_json() {
    "$SPOTRUN" sweep show ss --json | "$PY" -c '
import json, sys
t = [t for t in json.load(sys.stdin)["trials"] if t["trial"] == int(sys.argv[1])][0]
print(t[sys.argv[2]])' "$1" "$2"
}
trial_is() { test "$(trial_json "$1" "$2")" = "$3"; }

test_expect_success 'cancel of a trial run by hand with ~25 s left: it checkpoints and ends cancelled, not done' '
    "$SPOTRUN" sweep init ss --param i=0..1 -- "$PY" "$TRASH/train.py" {i} >init.out &&
    (
        "$SPOTRUN" run --sweep ss --trial 0 --budget-poll 1m --max-restarts 0 >hand.log 2>&1 &
        echo $! >hand.pid
        code=0
        wait $! || code=$?
        echo $code >hand.code
    ) &
    wait_until 30 "the wrapper to start" test -s hand.pid &&
    wait_lines starts.log "^ss-0 " 1 &&
    "$SPOTRUN" sweep cancel ss 0 >cancel.out &&
    grep "sweep ss: trial 0 cancelled: it runs on .* and checkpoints and stops within seconds" cancel.out &&
    wait_until 120 "trial 0 to end" ended 0 &&
    wait_until 60 "the wrapper to exit" test -s hand.code &&
    cat hand.log &&
    if store_has sweeps/ss/end/0.done; then say "trial 0 ended done: the cancel came too late"; false; fi &&
    test ! -e "$OUT/result-ss-0" &&
    test "$(cat hand.code)" = 124 &&
    grep "stopped at the sweep.s cancel of this trial (spotrun sweep cancel): run ss-0 resumes from checkpoint 1; exit 124" hand.log &&
    test "$(ckpts ss-0)" = 1 &&
    test "$(trial_json 0 state)" = cancelled
'

test_expect_success 'pause --stop of a trial under sweep work with ~25 s left: it checkpoints and stops, open' '
    (
        "$SPOTRUN" sweep work ss --slots 1 --poll 200ms -- --budget-poll 1m --max-restarts 0 \
            >w1.log 2>&1 &
        echo $! >w1.pid
        code=0
        wait $! || code=$?
        echo $code >w1.code
    ) &
    wait_until 30 "the worker to start" test -s w1.pid &&
    wait_lines starts.log "^ss-1 " 1 &&
    "$SPOTRUN" sweep pause ss --stop >pause.out &&
    grep "running trials checkpoint and stop within seconds (exit 124)" pause.out &&
    wait_until 120 "trial 1 to stop or end" \
        grep -e "stopped at the sweep.s pause" -e "trial 1 of sweep ss is done" w1.log &&
    cat w1.log &&
    if store_has sweeps/ss/end/1.done; then say "trial 1 ended done: the pause came too late"; false; fi &&
    test ! -e "$OUT/result-ss-1" &&
    grep "stopped at the sweep.s pause (spotrun sweep pause --stop): run ss-1 resumes from checkpoint 1; exit 124" w1.log &&
    test "$(ckpts ss-1)" = 1 &&
    wait_until 60 "trial 1 shown stopped" trial_is 1 state stopped &&
    test "$(trial_json 1 cause)" = paused
'

test_expect_success 'resume: the paused trial resumes from its checkpoint and ends done' '
    : >"$OUT/hurry" &&
    "$SPOTRUN" sweep resume ss >resume.out &&
    wait_until 180 "the worker to finish" test -s w1.code &&
    cat w1.log && test "$(cat w1.code)" = 0 &&
    test "$(starts ss-1)" = 2 &&
    test "$(grep "^ss-1 " starts.log | sed -n 2p | cut -d" " -f2)" -gt 0 &&
    test "$(cat "$OUT/result-ss-1")" = 125 &&
    test ! -e "$OUT/result-ss-0"
'

# The request cost: a trial lists the steering once, at its start; then
# it looks every 3 s with one HEAD of the next action's key (no LIST,
# no GET while nothing changes). The old way was one LIST per
# --budget-poll (30 s): 120 LISTs per trial-hour, now 1200 HEADs (a
# HEAD is billed at 1/12.5 of a LIST on S3, GCS and Azure: $0.00048
# against $0.0006 per trial-hour on S3).
store_only s3 'S3 only (the test server counts the requests)' ||
    test_expect_success 'a trial lists the steering once; while nothing changes each look is one HEAD' '
    "$SPOTRUN" sweep init rq --param i=0..0 -- "$PY" "$TRASH/train.py" {i} >/dev/null &&
    rm -f "$OUT/hurry" &&
    start=$(date +%s) &&
    STEPS=60 s3_count rq.requests "$SPOTRUN" run --sweep rq --trial 0 >rq.log 2>&1 &&
    secs=$(($(date +%s) - start)) &&
    grep -e "/sweeps/rq/steer/" -e "%2Fsweeps%2Frq%2Fsteer%2F" rq.requests >rq.steer &&
    lists=$(s3_requests rq.steer LIST) &&
    heads=$(s3_requests rq.steer HEAD) &&
    echo "steering requests of a lone trial: $lists LIST, $heads HEAD in ${secs}s: $((heads * 3600 / secs)) HEADs per trial-hour (before: 120 LISTs)" >rq.line &&
    test "$lists" = 1 &&
    test "$(wc -l <rq.steer)" = $((lists + heads)) &&
    test "$heads" -ge 2 &&
    test "$heads" -le $((secs / 3 + 1))
'
[ -s rq.line ] && say "# $(cat rq.line)"

# A worker with its slot full looks at the steering at every --poll: one
# HEAD while nothing changed, no LIST (it listed at every --poll before).
store_only s3 'S3 only (the test server counts the requests)' ||
    test_expect_success 'a worker with a full slot looks at the steering with one HEAD, not a listing' '
    "$SPOTRUN" sweep init wq --param i=0..0 -- "$PY" "$TRASH/train.py" {i} >/dev/null &&
    STEPS=40 s3_count wq.requests "$SPOTRUN" sweep work wq --poll 500ms >wq.log 2>&1 &&
    grep -e "/sweeps/wq/steer/" -e "%2Fsweeps%2Fwq%2Fsteer%2F" wq.requests >wq.steer &&
    lists=$(s3_requests wq.steer LIST) &&
    heads=$(s3_requests wq.steer HEAD) &&
    echo "steering requests of a worker and its trial: $lists LIST, $heads HEAD" >wq.line &&
    test "$lists" -le 3 &&
    test "$heads" -ge 4
'
[ -s wq.line ] && say "# $(cat wq.line)"
