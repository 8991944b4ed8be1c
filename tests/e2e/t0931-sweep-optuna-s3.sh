#!/usr/bin/env bash
# Model-based search on S3 (docs/sweeps.md, "Model-based search (Optuna)"):
# the study is driven by the workers alone (`sweep work --driver`, no other
# driver), through the S3 test server with conditional writes, and a trial
# wrapper is preempted. 12 trials, each added once and done once; the study
# a driver rebuilds from S3 equals the store's records.
. "$(dirname "$0")/lib.sh"
if ! "$PY" -c 'import optuna' 2>/dev/null; then
    say "python3-optuna is not installed (scripts/deps.sh installs it): skipped"
    say "0 passed, 0 failed"
    exit 0
fi
. "$SRCDIR/tests/e2e/s3lib.sh"
S3_CONDITIONAL=1 s3_start
export PYTHONPATH=$SRCDIR/python SPOTRUN_BIN=$SPOTRUN

# The trial: the learning curve of t0930 (floor (x - 1)^2 + (y + 0.5)^2),
# each step committed, so a resumed trial continues where it stood. Trials
# wait at step 2 until the preemption is done ($PROGRESS/go).
cat >trial.sh <<\EOF
#!/bin/bash
trap '' USR1
d=$SPOTRUN_CKPT_DIR
step=0
[ -f "$d/step" ] && read -r step <"$d/step"
while [ "$step" -lt 5 ]; do
    # Past step 2 only once the test opened the gate: the preempted trial
    # cannot end done before its wrapper's stop (a loaded machine).
    while [ "$step" -ge 2 ] && [ ! -e "$PROGRESS/go" ]; do sleep 0.1; done
    sleep 0.2
    step=$((step + 1))
    loss=$(awk -v x="$SPOTRUN_PARAM_X" -v y="$SPOTRUN_PARAM_Y" -v s="$step" \
        'BEGIN { printf "%.9f", (x - 1) ^ 2 + (y + 0.5) ^ 2 + 1 / s }')
    "$SPOTRUN_BIN" metric --step "$step" loss="$loss"
    echo "$step" >"$d/step.tmp" && mv "$d/step.tmp" "$d/step"
    "$SPOTRUN_BIN" commit --step "$step" || exit 1
    echo "$step" >"$PROGRESS/$SPOTRUN_TRIAL"
done
EOF
chmod +x trial.sh
export PROGRESS=$TRASH/progress
mkdir -p "$PROGRESS"

declare -A w_pid w_dir
workers=0
start_worker() { # SLOT
    workers=$((workers + 1))
    local dir=$TRASH/w$workers
    mkdir -p "$dir"
    SPOTRUN_WORK_DIR=$dir/work "$SPOTRUN" sweep work s3opt --slots 2 --poll 300ms \
        --driver "$PY -m spotrun.optuna_driver --trials 12 --ahead 3 --startup 4 >>$dir/driver.out" \
        -- --lease-ttl 3s --notice none --grace 20s >"$dir/log" 2>&1 &
    w_pid[$1]=$!
    w_dir[$1]=$dir
    echo $! >>"$TRASH/pids"
}

# busy_wrapper SLOT: a trial wrapper of the slot's worker whose trial
# committed a step while we watched (its notice handling is up) and is at
# most at step 2 of 5 (far from its end).
busy_wrapper() {
    local i p k step
    local -A first
    for i in $(seq 600); do
        for p in $(pgrep -P "${w_pid[$1]}"); do
            k=$(tr "\0" "\n" </proc/$p/cmdline 2>/dev/null | grep -x -A1 -- --trial | tail -n 1)
            [ -n "$k" ] || continue
            step=$(cat "$PROGRESS/$k" 2>/dev/null || echo 0)
            [ -n "${first[$p]:-}" ] || first[$p]=$step
            if [ "$step" -gt "${first[$p]}" ] && [ "$step" -le 2 ]; then
                echo "$p"
                return 0
            fi
        done
        sleep 0.1
    done
    return 1
}

test_expect_success 'two workers drive a 12-trial study over S3, one trial preempted: all done' '
    "$SPOTRUN" sweep init s3opt --random 0 --param x=uniform:-4,4 --param y=uniform:-4,4 \
        -- ./trial.sh
    start_worker 0
    start_worker 1
    victim=$(busy_wrapper 0)
    kill -TERM "$victim"
    code=0; wait "${w_pid[0]}" || code=$?
    echo "worker 0: exit $code after its trial wrapper $victim was preempted"
    test "$code" = 75
    touch "$PROGRESS/go"
    start_worker 0
    for slot in 0 1; do
        code=0; wait "${w_pid[$slot]}" || code=$?
        echo "slot $slot: exit $code"
        test "$code" = 0
    done
'

test_expect_success 'each trial added once and done once; the rebuilt study equals the store' '
    "$SPOTRUN" sweep show s3opt --json >show.json &&
    "$PY" -m spotrun.optuna_driver s3opt --trials 12 --dry-run >study.json &&
    cat w*/driver.out >added.out &&
    "$PY" - <<-\PYEOF
	import json, re
	show = json.load(open("show.json"))
	assert [t["trial"] for t in show["trials"]] == list(range(12)), show["trials"]
	assert show["counts"]["done"] == 12, show["counts"]
	assert sum(t["preemptions"] for t in show["trials"]) >= 1, "no trial was preempted"
	added = [int(k) for k in re.findall(r"^sweep s3opt: trial (\d+):", open("added.out").read(), re.M)]
	assert sorted(added) == list(range(12)), sorted(added)
	study = json.load(open("study.json"))
	for s, t in zip(study, show["trials"]):
	    assert (s["trial"], s["state"]) == (t["trial"], "COMPLETE"), (s, t)
	    assert s["value"] == t["metrics"]["loss"]["last"], (s, t)
	    assert s["params"] == {p: float(v) for p, v in t["params"].items()}, (s, t)
	    x, y = s["params"]["x"], s["params"]["y"]
	    assert abs(s["value"] - ((x - 1) ** 2 + (y + 0.5) ** 2 + 1 / 5)) < 1e-6, s
	print("12 trials: each added once, done, and told to Optuna as stored")
	PYEOF
'

# Leave no worker behind a failed case.
[ -f pids ] && xargs -r kill -TERM <pids 2>/dev/null
test_done
