# early-stop-body.sh - the body of t0950 (file store) and t0951 (S3):
# a sweep with an early-stopping rule (docs/sweeps.md, "Early stopping")
# on three `sweep work` workers. Sourced after storelib.sh's store_start
# (tests/README.md, "Running a case on every store backend").
#
# Six trials: kind=good,bad x seed=0..2. The job reports
# loss = 1/step (+5 when bad; +0.02 from step 6 on for trial 2) at every
# step and saves its state every 4 steps (steps 1 and 5), so a resume
# starts before the rung it passed last and reports that rung's step
# again. The rule loss:min,grace=2,eta=3,max=18 puts rungs at steps 2, 6
# and 18 (the job stops at 8: the last rung, where nobody is stopped, is
# never reached). The order in which the trials reach a rung is fixed through files in
# $SYNC (each job writes one once its report was answered, after the
# wrapper judged it: the job's commit after the report is served after the
# report), so every decision is known:
#   rung 0 (step 2): the three good trials first (a tie: all go on), then
#     each bad one (worse than 3 good values with floor(n/3) <= 2: pruned);
#   rung 1 (step 6): trial 2 first (alone: goes on), then trials 0 and 1
#     (better than it; a tie between them: both go on). Trial 2 is then
#     preempted (SIGTERM to its wrapper) and resumes from step 5: it
#     reports step 6 again after the other two. Judged again it would be
#     pruned (the worst of three, floor(3/3) = 1); its record stands, so it
#     goes on and is done.

STEPS=8
SYNC=$TRASH/sync
mkdir -p "$SYNC"
export STEPS SYNC
cat >trial.sh <<\EOF
#!/bin/bash
d=$SPOTRUN_CKPT_DIR
asked=0
trap 'asked=1' USR1
# serve a checkpoint request: the state as saved last
serve() { [ "$asked" = 0 ] || { asked=0; "$SPOTRUN_BIN" commit; }; }
# wait_files N GLOB: until N files match (bounded: 300 s)
wait_files() {
    for _ in $(seq 3000); do
        [ "$(ls $SYNC/$2 2>/dev/null | wc -l)" -ge "$1" ] && return 0
        serve
        sleep 0.1
    done
    echo "trial $SPOTRUN_TRIAL: gave up waiting for $1 of $2" >&2
    exit 1
}
echo "$PPID" >"$SYNC/wrapper-$SPOTRUN_TRIAL.tmp" && mv "$SYNC/wrapper-$SPOTRUN_TRIAL.tmp" "$SYNC/wrapper-$SPOTRUN_TRIAL"
step=0
[ -f "$d/step" ] && read -r step <"$d/step"
while [ "$step" -lt "$STEPS" ]; do
    step=$((step + 1))
    case "$SPOTRUN_PARAM_KIND:$step:$SPOTRUN_TRIAL" in
    bad:2:*) wait_files 3 "rung0-*" ;;
    good:6:2) [ "${SPOTRUN_RESUMED:-0}" = 0 ] || wait_files 2 "rung1-[01]" ;;
    good:6:*) wait_files 1 "rung1-2" ;;
    esac
    loss=$(awk -v s="$step" -v k="$SPOTRUN_PARAM_KIND" -v t="$SPOTRUN_TRIAL" \
        'BEGIN { l = 1 / s; if (k == "bad") l += 5; if (t == 2 && s >= 6) l += 0.02; printf "%.6f", l }')
    "$SPOTRUN_BIN" metric --step "$step" loss="$loss" || exit 1
    case $step in 1 | 5) echo "$step" >"$d/step" ;; esac
    "$SPOTRUN_BIN" commit --step "$step" || exit 1 # answered after the report was judged
    case $step in 2) touch "$SYNC/rung0-$SPOTRUN_TRIAL" ;; 6) touch "$SYNC/rung1-$SPOTRUN_TRIAL" ;; esac
    # trial 2's first attempt waits here for its preemption
    if [ "$SPOTRUN_TRIAL:$step:${SPOTRUN_RESUMED:-0}" = "2:7:0" ]; then
        wait_files 1 never
    fi
done
EOF
chmod +x trial.sh

declare -A vm_pid vm_dir
vms=0
start_vm() { # SLOT: a worker with two slots, its own HOME and work dir
    vms=$((vms + 1))
    local dir=$TRASH/vm$vms
    mkdir -p "$dir/home"
    HOME=$dir/home SPOTRUN_WORK_DIR=$dir/work CUDA_VISIBLE_DEVICES= "$SPOTRUN" sweep work es \
        --slots 2 --poll 300ms -- --lease-ttl 5s --notice none --grace 30s >"$dir/log" 2>&1 &
    vm_pid[$1]=$!
    vm_dir[$1]=$dir
}

test_expect_success 'sweep init --early-stop: a bad rule is a usage error naming it' '
    expect_code 64 "$SPOTRUN" sweep init x --param a=1 --early-stop loss -- true 2>err &&
    grep "invalid --early-stop \"loss\": it needs METRIC:min or METRIC:max" err &&
    expect_code 64 "$SPOTRUN" sweep init x --param a=1 --early-stop loss:min,eta=1 -- true 2>err &&
    grep "eta=\"1\" is not an integer >= 2" err &&
    expect_code 64 "$SPOTRUN" sweep init x --param a=1 --early-stop loss:low -- true 2>err &&
    grep "the mode \"low\" is not min or max" err &&
    expect_code 64 "$SPOTRUN" sweep init x --early-stop loss:min -- true 2>err &&
    grep "no --param given" err &&
    expect_code 66 "$SPOTRUN" sweep show x
'

test_expect_success 'sweep init --early-stop: stored with the definition; another rule is another sweep' '
    "$SPOTRUN" sweep init es --param kind=good,bad --param seed=0..2 \
        --early-stop loss:min,grace=2,eta=3,max=18 -- ./trial.sh &&
    "$SPOTRUN" sweep init es --param kind=good,bad --param seed=0..2 \
        --early-stop loss:min,grace=2,eta=3,max=18 -- ./trial.sh >again.out &&
    grep "already defined, unchanged" again.out &&
    expect_code 65 "$SPOTRUN" sweep init es --param kind=good,bad --param seed=0..2 \
        --early-stop loss:min,grace=2,eta=2,max=18 -- ./trial.sh 2>err &&
    grep "different early-stopping rule" err &&
    expect_code 65 "$SPOTRUN" sweep init es --param kind=good,bad --param seed=0..2 \
        -- ./trial.sh 2>err &&
    expect_code 64 "$SPOTRUN" sweep init es --add --param kind=good --param seed=9 \
        --early-stop loss:min 2>err &&
    grep "not with --add" err &&
    store_dump def &&
    "$PY" -c "
import json, sys
d = json.load(open(\"def/sweeps/es/def/000000.json\"))
assert d[\"early_stop\"] == {\"metric\": \"loss\", \"mode\": \"min\", \"grace\": 2, \"eta\": 3, \"max\": 18}, d
"
'

test_expect_success 'three workers: the bad trials are pruned at the first rung, the good ones run to the end, a preemption changes nothing' '
    start_vm 0 && start_vm 1 && start_vm 2 &&
    wait_until 300 "trial 2 past its second rung" test -e "$SYNC/rung1-2" &&
    victim=$(cat "$SYNC/wrapper-2") &&
    kill -TERM "$victim" &&
    for slot in 0 1 2; do
        code=0; wait "${vm_pid[$slot]}" || code=$?
        echo "slot $slot: exit $code"
        if [ "$code" = 75 ]; then # the worker of the preempted trial drained
            start_vm "$slot"; wait "${vm_pid[$slot]}"
        else
            test "$code" = 0
        fi
    done &&
    cat vm*/log | grep "early stopping" &&
    cat vm*/log | grep "trial 2 recorded loss 0.186667 at rung 1 before; not judged again there"
'

test_expect_success 'the store says so: end marks, one record per trial and rung, the decisions' '
    rm -rf dump && store_dump dump &&
    ls dump/sweeps/es/end | sort | tr "\n" " " >ends &&
    cat ends &&
    test "$(cat ends)" = "0.done 1.done 2.done 3.pruned 4.pruned 5.pruned " &&
    "$PY" - dump <<-\PYEOF
	import glob, json, os, sys
	root = sys.argv[1] + "/sweeps/es/rungs"
	rec = {}
	for f in glob.glob(root + "/*/*.json"):
	    r = json.load(open(f))
	    rung, trial = int(f.split("/")[-2]), int(os.path.basename(f)[:-5])
	    assert (r["rung"], r["trial"]) == (rung, trial), (f, r)
	    rec[rung, trial] = r
	print(sorted(rec))
	assert sorted(rec) == [(0, t) for t in range(6)] + [(1, 0), (1, 1), (1, 2)], sorted(rec)
	assert all(rec[0, t]["go_on"] for t in (0, 1, 2)) and not any(rec[0, t]["go_on"] for t in (3, 4, 5))
	assert all(rec[1, t]["go_on"] for t in (0, 1, 2))
	# trial 2 was judged first at rung 1 (alone) and is the worst there now:
	# judged again it would have been pruned
	assert rec[1, 2]["seen"] == 0, rec[1, 2]
	assert max(rec[1, t]["value"] for t in (0, 1, 2)) == rec[1, 2]["value"]
	PYEOF
'

test_expect_success 'a pruned trial stopped as at a limit: its limit event, a checkpoint, exit 124; the preempted one resumed' '
    "$PY" - dump <<-\PYEOF
	import glob, json, sys
	root = sys.argv[1]
	for k in range(6):
	    evs = [json.loads(l) for f in sorted(glob.glob("%s/es-%d/events/*.jsonl" % (root, k))) for l in open(f)]
	    limits = [e for e in evs if e["event"] == "limit"]
	    done = [e for e in evs if e["event"] == "done"]
	    if k >= 3:
	        assert len(limits) == 1 and limits[0]["cause"] == "pruned" and limits[0]["what"] == "sweep", limits
	        assert limits[0]["limit"] == 2 and not done, (limits, done)
	    else:
	        assert not limits and len(done) == 1, (k, limits, done)
	evs = [json.loads(l) for f in sorted(glob.glob("%s/es-2/events/*.jsonl" % root)) for l in open(f)]
	assert any(e["event"] == "preempted" for e in evs)
	assert any(e["event"] == "start" and e.get("resumed") is True for e in evs)
	print("pruned: 3, done: 3, trial 2 preempted and resumed")
	PYEOF
    "$SPOTRUN" show es-4 >show.out && cat show.out &&
    grep "pruned" show.out &&
    cat vm*/log | grep -E "stopped at the sweep.s early stopping .*exit 124"
'

test_expect_success 'sweep show: the highest rung of each trial, the pruned ones' '
    "$SPOTRUN" sweep show es >show.out && cat show.out &&
    grep "^trials: .* 3 done, 0 failed, 3 pruned" show.out &&
    test "$(grep -c "pruned (rung 0)" show.out)" = 3 &&
    test "$(grep -c "done (rung 1)" show.out)" = 3 &&
    "$SPOTRUN" sweep show es --json >show.json &&
    "$PY" -c "
import json
v = json.load(open(\"show.json\"))
assert v[\"counts\"][\"pruned\"] == 3, v[\"counts\"]
rows = {t[\"trial\"]: t for t in v[\"trials\"]}
assert [rows[k][\"state\"] for k in range(6)] == [\"done\"] * 3 + [\"pruned\"] * 3, rows
assert [rows[k][\"rung\"] for k in range(6)] == [1, 1, 1, 0, 0, 0], rows
assert rows[3][\"cause\"] == \"pruned\", rows[3]
"
'

test_expect_success 'a pruned trial run again is refused (124) until its mark is removed' '
    expect_code 124 "$SPOTRUN" run --sweep es --trial 3 2>err &&
    grep "trial 3 of sweep es was pruned by its early stopping; not starting it" err
'

test_expect_success 'sweep retry of a pruned trial: it resumes, is not judged again at its rung, and is judged at the next' '
    "$SPOTRUN" sweep retry es 3 &&
    rm -rf dumpr && store_dump dumpr &&
    test ! -e dumpr/sweeps/es/end/3.pruned &&
    expect_code 124 "$SPOTRUN" run --sweep es --trial 3 --notice none 2>retry.err &&
    cat retry.err &&
    grep "resum" retry.err &&
    grep "trial 3 recorded loss 5.5 at rung 0 before; not judged again there" retry.err &&
    grep "loss 5.16667 at step 6 is not in the top 1 of the 4 values at rung 1" retry.err &&
    rm -rf dump2 && store_dump dump2 &&
    test -e dump2/sweeps/es/end/3.pruned &&
    grep "\"go_on\":false" dump2/sweeps/es/rungs/1/3.json
'

test_expect_success 'run --fresh of a pruned trial: judged again from scratch' '
    expect_code 124 "$SPOTRUN" run --sweep es --trial 3 --notice none --fresh 2>fresh.err &&
    cat fresh.err &&
    grep "loss 5.5 at step 2 is not in the top 2 of the 6 values at rung 0" fresh.err &&
    rm -rf dump3 && store_dump dump3 &&
    test -e dump3/sweeps/es/end/3.pruned &&
    test ! -e dump3/sweeps/es/rungs/1/3.json &&
    grep "\"seen\":5" dump3/sweeps/es/rungs/0/3.json
'

test_expect_success 'sweep delete removes the rung records with the sweep' '
    "$SPOTRUN" sweep delete es &&
    rm -rf dump4 && mkdir dump4 && store_dump dump4 &&
    test ! -e dump4/sweeps/es/rungs &&
    test ! -e dump4/sweeps/es/def
'
