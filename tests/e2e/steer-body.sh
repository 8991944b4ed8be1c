# steer-body.sh - the body of t0940 (file store) and t0941 (S3, the test
# server with conditional writes), sourced after storelib.sh's store_start
# (tests/README.md, "Running a case on every store backend").
#
# Steering a sweep (docs/sweeps.md, "Steering") with a `sweep work` worker
# in each state: a trial cancelled before it starts never runs; priorities
# decide what is claimed first; a pause holds the worker while its running
# trials go on; a cancel stops a running trial after a durable checkpoint
# (exit 124, end mark cancelled) and no worker takes it again; pause --stop
# stops the running trials and leaves them open, resume lets the worker
# take them again and they resume; retry puts a cancelled and a failed
# trial back and each resumes from its checkpoint; racing cancels both
# land; sweep show prints all of it.

# a test that fails leaves no worker behind
cleanup() {
    [ -s "$TRASH/w1.pid" ] && kill "$(cat "$TRASH/w1.pid")" 2>/dev/null
    store_stop
    return 0
}
trap cleanup EXIT

export PYTHONPATH=$SRCDIR/python SPOTRUN_NOTICE=none
unset CUDA_VISIBLE_DEVICES

# The trainer: sums its steps, one per 0.2 s (0.01 s once $OUT/hurry
# exists: the test decides when trials may finish), commits every 5 and when
# asked; each start appends "RUN STEP" (the step it resumed at) to
# $OUT/starts.log; with $OUT/fail-RUN present it fails (exit 3) at step 10,
# once that step is committed; a finished run writes "STEP SUM" to
# $OUT/result-RUN.
cat >train.py <<\EOF
import os, sys, time
import spotrun
out, run = os.environ["OUT"], os.environ["SPOTRUN_RUN_ID"]
state = os.path.join(os.environ["SPOTRUN_CKPT_DIR"], "state")
step, total = 0, 0
if os.path.exists(state):
    step, total = map(int, open(state).read().split())
with open(os.path.join(out, "starts.log"), "a") as f:
    f.write("%s %d\n" % (run, step))
while step < int(os.environ["STEPS"]):
    time.sleep(0.01 if os.path.exists(os.path.join(out, "hurry")) else 0.2)
    step += 1
    total += step
    if step % 5 == 0 or spotrun.checkpoint_due():
        with open(state, "w") as f:
            f.write("%d %d" % (step, total))
        spotrun.commit(step)
    if step == 10 and os.path.exists(os.path.join(out, "fail-" + run)):
        sys.exit(3)
with open(os.path.join(out, "result-" + run), "w") as f:
    f.write("%d %d\n" % (step, total))
EOF
export OUT=$TRASH STEPS=300 # 60 s a trial until hurried

# starts RUN: how many times RUN's job started; started_at RUN N: the step
# its Nth start resumed at.
starts() { count_lines starts.log "^$1 "; }
started_at() { grep "^$1 " starts.log | sed -n "$2p" | cut -d" " -f2; }
# ckpts RUN: the newest checkpoint's number of RUN (`spotrun ls`), 0 without.
ckpts() { "$SPOTRUN" ls | awk -v r="$1" '$1 == r {print ($5 == "-" ? 0 : $5)}'; }
has_ckpt() { ckpts_at_least "$1" 1; }
ckpts_at_least() { test "$(ckpts "$1")" -ge "$2" 2>/dev/null; }
# trial_json NAME K FIELD: a field of trial K in `sweep show --json`.
trial_json() {
    "$SPOTRUN" sweep show "$1" --json | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
t = [t for t in d["trials"] if t["trial"] == int(sys.argv[1])][0]
v = t[sys.argv[2]]
print(json.dumps(v) if isinstance(v, (dict, list)) or v is None else v)' "$2" "$3"
}
trial_is() { test "$(trial_json "$1" "$2" "$3")" = "$4"; }
# the one trial of 0..2 the worker runs now
other_running() {
    for k in 0 1 2; do
        if [ "$(starts st-$k)" -ge 1 ] && ! store_has "sweeps/st/end/$k.done"; then
            echo "$k"
            return 0
        fi
    done
    return 1
}

test_expect_success 'a trial cancelled before it starts is marked cancelled at once and never runs' '
    "$SPOTRUN" sweep init st --param i=0..5 --label team=steer \
        -- "$PY" "$TRASH/train.py" {i} >init.out &&
    "$SPOTRUN" sweep cancel st 5 >cancel5.out &&
    grep "sweep st: trial 5 cancelled: it is not running, and no worker takes it" cancel5.out &&
    store_has sweeps/st/end/5.cancelled &&
    store_has sweeps/st/steer/000000.json &&
    expect_code 124 "$SPOTRUN" run --sweep st --trial 5 >hand5.log 2>&1 &&
    grep "spotrun run: trial 5 of sweep st was cancelled by [^ ]*@[^ ]*: not starting it (exit 124); \`spotrun sweep retry st 5\` runs it again" hand5.log &&
    test "$(starts st-5)" = 0 &&
    "$SPOTRUN" sweep cancel st 5 | grep "trial 5 is cancelled already"
'

test_expect_success 'workers claim the trials of the highest priority first' '
    "$SPOTRUN" sweep priority st 3 --set 10 &&
    "$SPOTRUN" sweep priority st 4 --set 5 | grep "sweep st: priority 5 for 1 trial" &&
    : >"$OUT/fail-st-4" &&
    (
        "$SPOTRUN" sweep work st --slots 2 --poll 200ms -- --budget-poll 300ms \
            --max-restarts 0 >w1.log 2>&1 &
        echo $! >w1.pid
        wait $!
        echo $? >w1.code
    ) &
    wait_until 10 "the worker to start" test -s w1.pid &&
    wait_lines starts.log "^st-" 2 &&
    test "$(head -n 2 starts.log | cut -d" " -f1 | sort | tr "\n" " ")" = "st-3 st-4 " &&
    test "$(grep -n "sweep st: trial 3 (i=3)" w1.log | cut -d: -f1)" -lt \
        "$(grep -n "sweep st: trial 4 (i=4)" w1.log | cut -d: -f1)"
'

test_expect_success 'a trial that fails past --max-restarts is marked failed; the worker takes the next' '
    wait_until 60 "trial 4 marked failed" store_has sweeps/st/end/4.failed &&
    wait_lines starts.log "^st-[012] " 1 &&
    test "$(starts st-4)" = 1
'

test_expect_success 'pause: the worker says so once and claims nothing; its running trials go on' '
    "$SPOTRUN" sweep pause st >pause.out &&
    grep "sweep st paused: workers start no trial; running trials go on" pause.out &&
    wait_for w1.log "sweep st: paused by [^ ]*@[^ ]* at .*; not starting trials until \`spotrun sweep resume st\`" &&
    "$SPOTRUN" sweep show st >show-paused.txt &&
    grep "^paused: *by [^ ]*@[^ ]* at .*; running trials go on" show-paused.txt &&
    test "$(trial_json st 3 state)" = running
'

test_expect_success 'retry of a running trial is refused (73), nothing recorded' '
    k=$(other_running) &&
    expect_code 73 "$SPOTRUN" sweep retry st "$k" 2>retry-running.err &&
    grep "spotrun sweep retry: trial $k of sweep st is running on .*: retry it once it has stopped; nothing recorded" retry-running.err
'

test_expect_success 'cancel of a running trial: it checkpoints, its wrapper exits 124, its end mark says cancelled' '
    wait_until 60 "a checkpoint of st-3" has_ckpt st-3 &&
    "$SPOTRUN" sweep cancel st 3 >cancel3.out &&
    grep "sweep st: trial 3 cancelled: it runs on .* and checkpoints and stops within seconds" cancel3.out &&
    wait_until 60 "trial 3 marked cancelled" store_has sweeps/st/end/3.cancelled &&
    wait_for w1.log "stopped at the sweep.s cancel of this trial (spotrun sweep cancel): run st-3 resumes from checkpoint [0-9]*; exit 124 (do not requeue; \`spotrun sweep retry st 3\` runs it again)" &&
    wait_for w1.log "trial 3 of sweep st cancelled" &&
    test "$(trial_json st 3 state)" = cancelled &&
    test "$(trial_json st 3 cause)" = cancelled &&
    trial_json st 3 end | grep "\"cause\": \"cancelled\", \"exit_code\": 124, \"by\": \"[^\"]*@" &&
    ! store_has sweeps/st/end/3.done
'

test_expect_success 'paused with a free slot: no new claim while the other trial goes on' '
    k=$(other_running) &&
    n=$(ckpts st-$k) &&
    wait_until 60 "two more checkpoints of st-$k" ckpts_at_least st-$k $((n + 2)) &&
    test "$(wc -l <starts.log)" = 3 &&
    test "$(count_lines w1.log "sweep st: paused by")" = 1
'

test_expect_success 'pause --stop: the running trial checkpoints and stops (exit 124), stays open; the worker waits' '
    k=$(other_running) && echo "$k" >stopped.k &&
    "$SPOTRUN" sweep pause st --stop >pause2.out &&
    grep "running trials checkpoint and stop within seconds (exit 124)" pause2.out &&
    wait_for w1.log "stopped at the sweep.s pause (spotrun sweep pause --stop): run st-$k resumes from checkpoint [0-9]*; exit 124 (do not requeue; \`spotrun sweep resume st\` lets workers take it again)" &&
    wait_until 60 "st-$k shown stopped" trial_is st $k state stopped &&
    test "$(trial_json st $k cause)" = paused &&
    ! store_has sweeps/st/end/$k.cancelled && ! store_has sweeps/st/end/$k.done &&
    test ! -e w1.code &&
    "$SPOTRUN" sweep show st --json | "$PY" -c "
import json, sys
d = json.load(sys.stdin)
assert d[\"paused\"][\"stop\"] is True, d[\"paused\"]
assert \"@\" in d[\"paused\"][\"by\"]
"
'

test_expect_success 'resume: the worker takes the stopped trial again, it resumes from its checkpoint; every trial ends' '
    k=$(cat stopped.k) &&
    : >"$OUT/hurry" &&
    "$SPOTRUN" sweep resume st | grep "sweep st resumed" &&
    "$SPOTRUN" sweep resume st | grep "sweep st is not paused" &&
    wait_for w1.log "sweep st: resumed; taking trials again" &&
    wait_until 180 "the worker to finish" test -s w1.code &&
    cat w1.log && test "$(cat w1.code)" = 0 &&
    test "$(starts st-$k)" = 2 && test "$(started_at st-$k 2)" -gt 0 &&
    for t in 0 1 2; do test "$(cat "$OUT/result-st-$t")" = "300 45150" || exit 1; done &&
    test "$(starts st-3)" = 1 && test "$(starts st-5)" = 0 &&
    test ! -e "$OUT/result-st-3"
'

test_expect_success 'retry and cancel are refused for a done trial (65), nothing recorded' '
    expect_code 65 "$SPOTRUN" sweep retry st 0 2>retry-done.err &&
    grep "spotrun sweep retry: trial 0 of sweep st is done: nothing to retry" retry-done.err &&
    expect_code 65 "$SPOTRUN" sweep cancel st 0 2>cancel-done.err &&
    grep "spotrun sweep cancel: trial 0 of sweep st has ended (done): nothing to cancel" cancel-done.err &&
    expect_code 64 "$SPOTRUN" sweep retry st 6 2>retry-range.err &&
    grep "sweep st has 6 trials (0..5): no trial 6" retry-range.err
'

test_expect_success 'retry of a cancelled and a failed trial: each resumes from its checkpoint and finishes; a never-started one says it starts from scratch' '
    rm "$OUT/fail-st-4" && : >"$OUT/hurry" &&
    "$SPOTRUN" sweep resume st >/dev/null && # (after a failed test above)
    "$SPOTRUN" sweep retry st 3 4 5 >retry.out &&
    grep "sweep st: trial 3 (cancelled) is back in the queue; it resumes from its newest checkpoint" retry.out &&
    grep "sweep st: trial 4 (failed) is back in the queue; it resumes from its newest checkpoint" retry.out &&
    grep "sweep st: trial 5 (cancelled) is back in the queue; it starts from scratch (no checkpoint)" retry.out &&
    ! store_has sweeps/st/end/3.cancelled && ! store_has sweeps/st/end/4.failed &&
    "$SPOTRUN" sweep work st --slots 3 --poll 200ms -- --budget-poll 300ms >w2.log 2>&1 ||
        { cat w2.log; exit 1; }
    test "$(started_at st-3 2)" -gt 0 &&
    test "$(started_at st-4 2)" = 10 &&
    test "$(started_at st-5 1)" = 0 &&
    for t in 3 4 5; do test "$(cat "$OUT/result-st-$t")" = "300 45150" || exit 1; done &&
    test "$(trial_json st 3 state)" = done
'

test_expect_success 'sweep show prints the steering history, the priorities and the labels (--json too)' '
    "$SPOTRUN" sweep show st >show.txt &&
    cat show.txt &&
    grep "^steering (8 actions, oldest first):" show.txt &&
    grep "^  0  *[-0-9T:]*Z  *[^ ]*@[^ ]*  *cancel 5$" show.txt &&
    grep "^  1 .* priority 3 --set 10$" show.txt &&
    grep "^  5 .* pause --stop$" show.txt &&
    grep "^  7 .* retry 3 4 5$" show.txt &&
    "$SPOTRUN" sweep show st --json >show.json &&
    "$PY" -c "
import json, sys
d = json.load(open(\"show.json\"))
assert d[\"labels\"] == {\"team\": \"steer\"}, d[\"labels\"]
assert d[\"paused\"] is None
acts = [(s[\"seq\"], s[\"action\"], s[\"trials\"]) for s in d[\"steer\"]]
assert acts[0] == (0, \"cancel\", [5]) and acts[7] == (7, \"retry\", [3, 4, 5]), acts
assert all(\"@\" in s[\"by\"] and s[\"unix_ms\"] > 0 for s in d[\"steer\"])
pr = {t[\"trial\"]: t[\"priority\"] for t in d[\"trials\"]}
assert pr[3] == 10 and pr[4] == 5 and pr[0] == 0, pr
"
'

test_expect_success 'two cancels racing both land, each its own numbered action' '
    "$SPOTRUN" sweep init rc --param i=0..3 -- true >/dev/null
    "$SPOTRUN" sweep cancel rc 1 >race1.out 2>&1 &
    p1=$!
    "$SPOTRUN" sweep cancel rc 2 >race2.out 2>&1 &
    p2=$!
    wait $p1 && wait $p2 &&
    store_has sweeps/rc/steer/000000.json && store_has sweeps/rc/steer/000001.json &&
    store_has sweeps/rc/end/1.cancelled && store_has sweeps/rc/end/2.cancelled &&
    "$SPOTRUN" sweep show rc --json | "$PY" -c "
import json, sys
d = json.load(sys.stdin)
assert sorted(s[\"trials\"][0] for s in d[\"steer\"]) == [1, 2], d[\"steer\"]
assert [t[\"state\"] for t in d[\"trials\"]] == [\"queued\", \"cancelled\", \"cancelled\", \"queued\"]
" &&
    expect_code 65 "$SPOTRUN" sweep retry rc 0 2>retry-open.err &&
    grep "trial 0 of sweep rc has not ended (not failed, cancelled or pruned): it is in the queue already; nothing recorded" retry-open.err
'

test_expect_success 'sweep delete removes the steering history with the sweep' '
    store_has sweeps/rc/steer/000001.json &&
    "$SPOTRUN" sweep delete rc &&
    ! store_has sweeps/rc/steer/000000.json && ! store_has sweeps/rc/steer/000001.json &&
    ! store_has sweeps/rc/end/1.cancelled
'
