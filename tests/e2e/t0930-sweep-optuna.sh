#!/usr/bin/env bash
# Model-based search (docs/sweeps.md, "Model-based search (Optuna)"): a
# search space defined with `sweep init --random 0`, trials added by
# python3 -m spotrun.optuna_driver, which rebuilds its Optuna study from the
# store each time it runs. Drivers racing never lose, duplicate or
# overshoot a trial (--add --at); each trial's state reaches Optuna as the
# store says it (done, failed, preempted = still running); and 24 trials
# on two `sweep work --driver` workers, with a third driver looping beside
# them and trial wrappers preempted by SIGTERM, all end done, with the
# values of their uninterrupted runs, the rebuilt study equal to the store,
# and the best trial near the objective's known optimum.
. "$(dirname "$0")/lib.sh"
if ! "$PY" -c 'import optuna' 2>/dev/null; then
    say "python3-optuna is not installed (scripts/deps.sh installs it): skipped"
    say "0 passed, 0 failed"
    exit 0
fi
export PYTHONPATH=$SRCDIR/python SPOTRUN_BIN=$SPOTRUN
DRIVER=("$PY" -m spotrun.optuna_driver)

# The trial: STEPS steps of a learning curve whose floor is the objective
# f(x, y) = (x - 1)^2 + (y + 0.5)^2 (optimum 0 at x = 1, y = -0.5):
# loss(step) = f + 1/step, reported every step, the step committed every
# step, so a resumed trial continues where its checkpoint stands.
STEPS=6
cat >trial.sh <<\EOF
#!/bin/bash
trap '' USR1 # listens: every step commits anyway
d=$SPOTRUN_CKPT_DIR
step=0
[ -f "$d/step" ] && read -r step <"$d/step"
[ "${FAIL_IF_X:-}" = "$SPOTRUN_PARAM_X" ] && exit 3
while [ "$step" -lt "$STEPS" ]; do
    sleep "${STEP_SLEEP:-0.15}"
    step=$((step + 1))
    loss=$(awk -v x="$SPOTRUN_PARAM_X" -v y="$SPOTRUN_PARAM_Y" -v s="$step" \
        'BEGIN { printf "%.9f", (x - 1) ^ 2 + (y + 0.5) ^ 2 + 1 / s }')
    "$SPOTRUN_BIN" metric --step "$step" loss="$loss"
    echo "$step" >"$d/step.tmp" && mv "$d/step.tmp" "$d/step"
    "$SPOTRUN_BIN" commit --step "$step" || exit 1
done
EOF
chmod +x trial.sh
export STEPS

test_expect_success 'sweep init --random 0: a search space, no trials; the spec is in sweep show --json' '
    "$SPOTRUN" sweep init race --random 0 --seed 5 --param x=uniform:-4,4 \
        --param y=uniform:-4,4 -- ./trial.sh >init.out &&
    grep "sweep race: a search space of 2 parameters, no trials yet" init.out &&
    "$SPOTRUN" sweep show race --json >race.json &&
    "$PY" -c "
import json, sys
d = json.load(open(\"race.json\"))
assert d[\"trials\"] == [], d[\"trials\"]
assert d[\"spec\"] == {\"param\": [\"x=uniform:-4,4\", \"y=uniform:-4,4\"], \"random\": 0,
                     \"seed\": 5, \"search\": True}, d[\"spec\"]
"
'

test_expect_success 'sweep init --add --at N: only while the sweep has N trials, else 75 and nothing written' '
    expect_code 75 "$SPOTRUN" sweep init race --add --at 1 --param x=1 --param y=2 2>at.err &&
    grep "sweep race has 0 trials, not 1: nothing added" at.err &&
    expect_code 64 "$SPOTRUN" sweep init race --at 0 --param x=1 --param y=2 &&
    test "$("$SPOTRUN" sweep show race --json | "$PY" -c "import json,sys; print(len(json.load(sys.stdin)[\"trials\"]))")" = 0
'

test_expect_success 'sweep work --driver: a driver that keeps failing stops the worker with its code' '
    "$SPOTRUN" sweep init broken --random 0 --param x=uniform:0,1 -- ./trial.sh &&
    expect_code 3 "$SPOTRUN" sweep work broken --poll 100ms --driver "echo ran >>driver.log; exit 3" \
        2>broken.err &&
    cat broken.err &&
    test "$(count_lines driver.log ran)" = 3 &&
    test "$(count_lines broken.err "the driver .* failed (exit 3)")" = 3 &&
    grep "failed (exit 3): three times in a row, claiming no more trials (run it by hand" broken.err
'

test_expect_success 'two drivers at once add exactly --trials trials, each index once' '
    ("${DRIVER[@]}" race --trials 6 --ahead 6 --sampler random >d1.out 2>d1.err &
     "${DRIVER[@]}" race --trials 6 --ahead 6 --sampler random >d2.out 2>d2.err &
     wait) &&
    cat d1.out d2.out d1.err d2.err &&
    "$SPOTRUN" sweep show race --json >race.json &&
    "$PY" - <<-\PYEOF
	import json, re
	d = json.load(open("race.json"))
	assert [t["trial"] for t in d["trials"]] == list(range(6)), d["trials"]
	added = [int(m) for f in ("d1.out", "d2.out")
	         for m in re.findall(r"^sweep race: trial (\d+):", open(f).read(), re.M)]
	assert sorted(added) == list(range(6)), added
	params = {(t["params"]["x"], t["params"]["y"]) for t in d["trials"]}
	assert len(params) == 6, params
	for t in d["trials"]:
	    assert -4 <= float(t["params"]["x"]) <= 4 and -4 <= float(t["params"]["y"]) <= 4, t
	PYEOF
'

# One trial in each state the store can show, run by hand.
test_expect_success 'the rebuilt study tells Optuna what the store says: done, failed, preempted, queued' '
    "$SPOTRUN" sweep init states --random 0 --param x=uniform:-4,4 --param y=uniform:-4,4 \
        -- ./trial.sh &&
    for xy in "1 0" "2 0" "3 0" "0 0"; do
        set -- $xy
        "$SPOTRUN" sweep init states --add --param x=$1 --param y=$2
    done &&
    "$SPOTRUN" run --sweep states --trial 0 --notice none &&
    FAIL_IF_X=2 expect_code 3 "$SPOTRUN" run --sweep states --trial 1 --max-restarts 0 --notice none &&
    (STEP_SLEEP=0.5 "$SPOTRUN" run --sweep states --trial 2 --notice none --grace 20s >t2.log 2>&1 &
     echo $! >t2.pid; wait) &
    wait_for t2.log "checkpoint .* durable" 60 &&
    kill -TERM "$(cat t2.pid)" &&
    wait_until 60 "trial 2 preempted" sh -c "\"$SPOTRUN\" sweep show states | grep -E \"^ +2 .*preempted\"" &&
    "${DRIVER[@]}" states --trials 4 --dry-run >study.json &&
    "$SPOTRUN" sweep show states --json >states.json &&
    "$PY" - <<-\PYEOF
	import json
	study = {t["trial"]: t for t in json.load(open("study.json"))}
	store = {t["trial"]: t for t in json.load(open("states.json"))["trials"]}
	print({k: (store[k]["state"], study[k]["state"], study[k]["value"]) for k in store})
	assert [store[k]["state"] for k in range(4)] == ["done", "failed", "preempted", "queued"]
	assert [study[k]["state"] for k in range(4)] == ["COMPLETE", "FAIL", "RUNNING", "RUNNING"]
	assert study[0]["value"] == store[0]["metrics"]["loss"]["last"]
	assert abs(study[0]["value"] - (0.25 + 1 / 6)) < 1e-6, study[0]
	assert all(study[k]["value"] is None for k in (1, 2, 3))
	for k in range(4):
	    assert study[k]["params"] == {p: float(v) for p, v in store[k]["params"].items()}
	PYEOF
'

declare -A w_pid w_dir
workers=0
start_worker() { # SLOT SLOTS: a worker with its own work dir that drives the study
    workers=$((workers + 1))
    local dir=$TRASH/w$workers
    mkdir -p "$dir"
    SPOTRUN_WORK_DIR=$dir/work "$SPOTRUN" sweep work search --slots "$2" --poll 300ms \
        --driver "$PY -m spotrun.optuna_driver --trials 24 --ahead 4 --startup 8 >>$dir/driver.out" \
        -- --lease-ttl 3s --notice none --grace 20s >"$dir/log" 2>&1 &
    w_pid[$1]=$!
    w_dir[$1]=$dir
    echo $! >>"$TRASH/pids"
    echo "slot $1: worker $workers (pid $!)"
}
done_count() { ls "$SPOTRUN_STORE/sweeps/search/end/" 2>/dev/null | grep -c "\.done$" || true; }
# busy_wrapper SLOT: a trial wrapper of the slot's worker that is past its
# start (its trial made a checkpoint while we watched, so its notice handling
# is up) and far from its end (at most step 3 of 6), so that a SIGTERM is a
# preemption that interrupts work; fails when the sweep ended first.
busy_wrapper() {
    local i p k seq
    local -A first
    for i in $(seq 600); do
        [ "$(done_count)" -lt 24 ] || return 1
        for p in $(pgrep -P "${w_pid[$1]}"); do
            k=$(tr "\0" "\n" </proc/$p/cmdline 2>/dev/null | grep -x -A1 -- --trial | tail -n 1)
            [ -n "$k" ] || continue
            seq=$(ls "$SPOTRUN_STORE/search-$k/ckpt" 2>/dev/null | tail -n 1)
            seq=$((10#${seq:-0}))
            [ -n "${first[$p]:-}" ] || first[$p]=$seq
            if [ "$seq" -gt "${first[$p]}" ] && [ "$seq" -le 3 ]; then
                echo "$p"
                return 0
            fi
        done
        sleep 0.1
    done
    return 1
}

test_expect_success '24 trials on two workers with --driver and a looping driver, preempted three times: all done' '
    "$SPOTRUN" sweep init search --random 0 --param x=uniform:-4,4 --param y=uniform:-4,4 \
        -- ./trial.sh
    start_worker 0 2
    start_worker 1 1
    ("${DRIVER[@]}" search --trials 24 --ahead 4 --startup 8 --loop --poll 1 >loop.out 2>&1;
     echo "exit $?" >>loop.out) &
    echo $! >>"$TRASH/pids"
    preempted=0
    for round in 1 2 3; do
        slot=$((round % 2))
        victim=$(busy_wrapper "$slot") || break
        kill -TERM "$victim"
        code=0; wait "${w_pid[$slot]}" || code=$?
        echo "round $round: wrapper $victim of slot $slot preempted; worker exit $code"
        test "$code" = 75
        preempted=$((preempted + 1))
        start_worker "$slot" $((2 - slot))
    done
    test "$preempted" -ge 2 &&
    for slot in 0 1; do
        code=0; wait "${w_pid[$slot]}" || code=$?
        echo "slot $slot: exit $code"
        test "$code" = 0
    done &&
    wait_for loop.out "^exit 0" 120 &&
    cat loop.out | tail -n 3 &&
    test "$(done_count)" = 24
'

test_expect_success 'no trial lost or duplicated: each index added once, each ended done once' '
    "$SPOTRUN" sweep show search --json >search.json &&
    "$SPOTRUN" sweep show search --sort loss | sed -n 1,12p &&
    cat loop.out w*/driver.out >added.out &&
    "$PY" - "$SPOTRUN_STORE" <<-\PYEOF
	import glob, json, os, re, sys
	store = sys.argv[1]
	d = json.load(open("search.json"))
	assert [t["trial"] for t in d["trials"]] == list(range(24)), [t["trial"] for t in d["trials"]]
	assert d["counts"]["done"] == 24, d["counts"]
	added = [int(k) for k in re.findall(r"^sweep search: trial (\d+):", open("added.out").read(), re.M)]
	assert sorted(added) == list(range(24)), sorted(added)
	# which driver adds which trial is a race; that several ran is not
	outs = ["loop.out"] + glob.glob("w*/driver.out")
	for f in outs:
	    print(f, "added", len(re.findall(r"^sweep search: trial", open(f).read(), re.M)))
	ran = sum(bool(re.search(r"^sweep search: \d+ of 24 trials", open(f).read(), re.M))
	          for f in outs)
	assert ran >= 3, ran  # the looping driver and both first workers drivers
	parts = [p for p in os.listdir(os.path.join(store, "sweeps/search/def"))
	         if re.fullmatch(r"\d{6}\.json", p)]
	assert len(parts) == 25, sorted(parts)  # part 0 (the space) and one per trial
	for t in d["trials"]:
	    k = t["trial"]
	    dones = 0
	    for f in glob.glob(os.path.join(store, "search-%d" % k, "events", "*.jsonl")):
	        dones += sum(json.loads(l)["event"] == "done" for l in open(f))
	    assert dones == 1, (k, dones)
	    x, y = float(t["params"]["x"]), float(t["params"]["y"])
	    want = (x - 1) ** 2 + (y + 0.5) ** 2 + 1 / 6
	    assert abs(t["metrics"]["loss"]["last"] - want) < 1e-6, (k, t["metrics"], want)
	    assert t["metrics"]["loss"]["last_step"] == 6, t
	pre = [t["trial"] for t in d["trials"] if t["preemptions"]]
	print("preempted and resumed to the end:", pre)
	assert len(pre) >= 2, pre
	PYEOF
'

test_expect_success 'the study a driver rebuilds equals the store, and its best trial is near the optimum' '
    "${DRIVER[@]}" search --trials 24 --dry-run >study.json &&
    "${DRIVER[@]}" search --trials 24 >final.out &&
    cat final.out &&
    grep "sweep search: 24 of 24 trials: 24 complete, 0 pruned, 0 failed, 0 open; best trial" final.out &&
    "$PY" - <<-\PYEOF
	import json
	study = json.load(open("study.json"))
	store = json.load(open("search.json"))["trials"]
	assert [t["trial"] for t in study] == [t["trial"] for t in store] == list(range(24))
	for s, t in zip(study, store):
	    assert s["number"] == t["trial"], (s, t)
	    assert s["state"] == "COMPLETE", s
	    assert s["value"] == t["metrics"]["loss"]["last"], (s, t)
	    assert s["params"] == {p: float(v) for p, v in t["params"].items()}, (s, t)
	best = min(study, key=lambda s: s["value"])
	f = best["value"] - 1 / 6
	print("best trial", best["trial"], "f =", f, best["params"])
	# random search over the 8 x 8 square reaches f < 1 in 24 trials only
	# about 2 times in 3; the sampler must get there
	assert f < 1.0, best
	PYEOF
'

# Leave no worker behind a failed case.
[ -f pids ] && xargs -r kill -TERM <pids 2>/dev/null
test_done
