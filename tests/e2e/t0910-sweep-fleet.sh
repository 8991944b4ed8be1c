#!/usr/bin/env bash
# A sweep on a plain fleet (docs/sweeps.md): three `spotrun sweep work`
# workers, each a "VM" with its own HOME and work dir, share a 12-trial grid
# through the S3 test server with conditional writes. A driver sends
# preemption notices to random workers (SIGTERM, as systemd does at a
# shutdown, and a cloud-style notice to one trial's wrapper) and kill -9s
# others (the whole VM: worker, wrappers and jobs at once); each is replaced
# by a fresh VM. Every trial must end done exactly once with the result of
# its uninterrupted run.
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/s3lib.sh"
S3_CONDITIONAL=1 s3_start

# The trial: STEPS steps of a recurrence seeded by its parameters, its state
# committed after every step; the result goes to the run's metrics and to
# $RESULTS/<trial>. A resumed trial continues from its checkpoint, so any
# interruption that loses a step or replays one wrongly changes the result.
STEPS=20
cat >trial.sh <<\EOF
#!/bin/bash
trap '' USR1 # listens: every step commits anyway
d=$SPOTRUN_CKPT_DIR
step=0 acc=$((SPOTRUN_PARAM_A * 7 + SPOTRUN_PARAM_B))
[ -f "$d/state" ] && read -r step acc <"$d/state"
while [ "$step" -lt "$STEPS" ]; do
    sleep 0.2
    step=$((step + 1))
    acc=$(((acc * 31 + step) % 1000003))
    echo "$step $acc" >"$d/state.tmp" && mv "$d/state.tmp" "$d/state"
    "$SPOTRUN_BIN" commit --step "$step" || exit 1
done
"$SPOTRUN_BIN" metric --step "$step" result="$acc"
echo "$acc" >>"$RESULTS/$SPOTRUN_TRIAL"
EOF
chmod +x trial.sh
export STEPS RESULTS=$TRASH/results
mkdir -p "$RESULTS"

expected() { # A B: the uninterrupted result
    "$PY" -c "
import sys
a, b = int(sys.argv[1]), int(sys.argv[2])
acc = a * 7 + b
for s in range(1, $STEPS + 1):
    acc = (acc * 31 + s) % 1000003
print(acc)" "$1" "$2"
}

declare -A vm_pid vm_sid vm_dir
vms=0
# start_vm SLOT: a fresh "VM" running the worker in its own session.
start_vm() {
    vms=$((vms + 1))
    local dir=$TRASH/vm$vms
    mkdir -p "$dir/home"
    HOME=$dir/home SPOTRUN_WORK_DIR=$dir/work setsid "$SPOTRUN" sweep work fleet --poll 300ms \
        -- --lease-ttl 3s --notice none >"$dir/log" 2>&1 &
    vm_pid[$1]=$!
    vm_sid[$1]=$!
    vm_dir[$1]=$dir
    echo "slot $1: vm$vms (pid $!)"
}
# kill_vm SLOT: the machine vanishes: every process of its session at once.
kill_vm() {
    pkill -STOP -s "${vm_sid[$1]}" || true
    pkill -KILL -s "${vm_sid[$1]}" || true
    wait "${vm_pid[$1]}" 2>/dev/null || true
}
# busy_vm SLOT: waits until the VM's trial has committed since it started
# (so that a notice interrupts work and a resume must continue it); 1 when
# the VM finished instead. Bounded generously: under a loaded CI a trial's
# first commit may take a while, and a driver that gave up on it would
# send no notice at all.
busy_vm() {
    local log=${vm_dir[$1]}/log i=0
    while [ $i -lt 600 ]; do
        kill -0 "${vm_pid[$1]}" 2>/dev/null || return 1
        tail -n 4 "$log" | grep "checkpoint .* durable" >/dev/null && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}
ended() { awscli s3 ls "s3://bkt/$test_name/sweeps/fleet/end/" 2>/dev/null | grep -c '\.done$' || true; }

test_expect_success 'sweep init: a 12-trial grid' '
    "$SPOTRUN" sweep init fleet --param a=1,2,3 --param b=0..3 -- ./trial.sh >init.out &&
    grep "sweep fleet: 12 trials" init.out
'

test_expect_success 'three workers, notices and kill -9s: every trial done exactly once' '
    start_vm 0
    start_vm 1
    start_vm 2
    disruptions="term kill notify term kill term"
    for what in $disruptions; do
        sleep "$("$PY" -c "import random; print(round(random.uniform(0.8, 2.0), 2))")"
        [ "$(ended)" -lt 12 ] || break
        slot=$((RANDOM % 3))
        busy_vm "$slot" || continue # this VM ran out of trials: the next disruption
        case $what in
        term) # the VM is being stopped: systemd sends the worker SIGTERM
            kill -TERM "${vm_pid[$slot]}"
            code=0; wait "${vm_pid[$slot]}" || code=$?
            echo "slot $slot: TERM -> exit $code"
            test "$code" = 75 ;;
        kill)
            kill_vm "$slot"
            echo "slot $slot: kill -9" ;;
        notify) # a cloud notice reaches one trial wrapper of the VM
            dir=${vm_dir[$slot]} sent=
            for run in $(ls "$dir/work" 2>/dev/null | grep "^fleet-[0-9]*$"); do
                HOME=$dir/home SPOTRUN_WORK_DIR=$dir/work "$SPOTRUN" notify --run-id "$run" \
                    --deadline 20s --wait 1s 2>/dev/null && sent=$run && break
            done
            [ -n "$sent" ] || kill -TERM "${vm_pid[$slot]}"
            code=0; wait "${vm_pid[$slot]}" || code=$?
            echo "slot $slot: notify ${sent:-none, TERM} -> exit $code"
            test "$code" = 75 ;;
        esac
        start_vm "$slot"
    done
    for slot in 0 1 2; do
        code=0; wait "${vm_pid[$slot]}" || code=$?
        echo "slot $slot: exit $code"
        test "$code" = 0
    done
    test "$(ended)" = 12
'

awscli s3 cp --recursive --quiet "s3://bkt/$test_name/" dump/ 2>/dev/null

test_expect_success 'each trial has the result of its uninterrupted run, and finished once' '
    for a in 1 2 3; do for b in 0 1 2 3; do
        k=$(( (a - 1) * 4 + b ))
        want=$(expected $a $b)
        echo "trial $k: want $want, got $(tr "\n" " " <"$RESULTS/$k")"
        test -s "$RESULTS/$k"
        refute grep -vx "$want" "$RESULTS/$k"
    done; done
    "$PY" - dump <<-\PYEOF
	import glob, json, os, sys
	root = sys.argv[1]
	for k in range(12):
	    done = results = 0
	    for f in glob.glob(os.path.join(root, "fleet-%d" % k, "events", "*.jsonl")):
	        for line in open(f):
	            ev = json.loads(line)
	            done += ev["event"] == "done"
	            if ev["event"] == "metric" and ev["name"] == "result":
	                results += 1
	    assert done == 1, (k, "done events", done)
	    assert results >= 1, (k, "no result metric")
	    assert os.path.exists(os.path.join(root, "sweeps/fleet/end/%d.done" % k)), k
	    assert not os.path.exists(os.path.join(root, "sweeps/fleet/end/%d.failed" % k)), k
	print("12 trials, each done once")
	PYEOF
'

test_expect_success 'the interruptions happened: trials were preempted and resumed from checkpoints' '
    "$PY" - dump <<-\PYEOF
	import glob, json, os, sys
	root = sys.argv[1]
	preempted = resumed = 0
	for k in range(12):
	    for f in glob.glob(os.path.join(root, "fleet-%d" % k, "events", "*.jsonl")):
	        for line in open(f):
	            ev = json.loads(line)
	            preempted += ev["event"] == "preempted"
	            resumed += ev["event"] == "start" and ev.get("resumed") is True
	print("preempted", preempted, "resumed", resumed)
	assert preempted >= 1 and resumed >= 1
	PYEOF
    cat vm*/log | grep -c "checkpointing the running trials and stopping"
'

test_expect_success 'sweep show --json agrees with the events (attempts, preemptions, result)' '
    "$SPOTRUN" sweep show fleet --json >show.json &&
    "$SPOTRUN" sweep show fleet &&
    "$PY" - dump show.json <<-\PYEOF
	import glob, json, os, sys
	root, show = sys.argv[1], json.load(open(sys.argv[2]))
	assert show["counts"]["done"] == 12, show["counts"]
	rows = {t["trial"]: t for t in show["trials"]}
	assert sorted(rows) == list(range(12)), sorted(rows)
	for k in range(12):
	    attempts, preempted, result = set(), 0, None
	    for f in glob.glob(os.path.join(root, "fleet-%d" % k, "events", "*.jsonl")):
	        for line in open(f):
	            ev = json.loads(line)
	            attempts.add(ev["attempt"])
	            preempted += ev["event"] == "preempted"
	            if ev["event"] == "metric" and ev["name"] == "result":
	                result = ev["value"]
	    t = rows[k]
	    assert t["state"] == "done", t
	    assert t["attempts"] == len(attempts), (k, t["attempts"], sorted(attempts))
	    assert t["preemptions"] == preempted, (k, t["preemptions"], preempted)
	    assert t["metrics"]["result"]["last"] == result, (k, t["metrics"], result)
	print("sweep show agrees with the event logs of 12 trials")
	PYEOF
'

test_expect_success 'two workers racing for one trial: one runs it' '
    "$SPOTRUN" sweep init race --param x=9 -- sh -c "echo ran >>$RESULTS/race; sleep 1"
    HOME=$TRASH/r1 SPOTRUN_WORK_DIR=$TRASH/r1/work "$SPOTRUN" sweep work race --until-empty \
        --poll 100ms >r1.log 2>&1 &
    p1=$!
    HOME=$TRASH/r2 SPOTRUN_WORK_DIR=$TRASH/r2/work "$SPOTRUN" sweep work race --until-empty \
        --poll 100ms >r2.log 2>&1 &
    p2=$!
    wait $p1
    wait $p2
    cat r1.log r2.log
    test "$(wc -l <"$RESULTS/race")" = 1
'

test_done
