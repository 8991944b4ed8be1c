# pbt-body.sh - the body of t0995 (file store) and t0996 (S3): a sweep
# with population-based training (docs/sweeps.md, "Population-based
# training"). Sourced after storelib.sh's store_start (tests/README.md,
# "Running a case on every store backend").
#
# Three trials of a trainer whose state w grows by lr
# each step for 7 steps (loss = 100 - w), lr drawn per trial; a round
# every 4 steps (one round: step 4).
#   A (the best lr) runs first and waits after step 5 (its newest
#     checkpoint: step 5);
#   B (the middle lr) reaches round 1 second: the worse of two, it takes
#     A's step-5 checkpoint and goes on from step 6 with A's lr perturbed
#     (x0.8 or x1.2), in the same wrapper;
#   C (the worst lr) reaches round 1 third, decides to take A's checkpoint,
#     and its wrapper is killed (kill -9 of its process group) after the
#     decision is recorded, before the job starts again: run again, it
#     carries out that decision once (one decision record, the same donor).
# Then A goes on, and the views print each trial's lineage and schedule.

SYNC=$TRASH/sync
mkdir -p "$SYNC"
export SYNC
cat >trial.sh <<\EOF
#!/bin/bash
d=$SPOTRUN_CKPT_DIR
t=$SPOTRUN_TRIAL
asked=0
trap 'asked=1' USR1
serve() { [ "$asked" = 0 ] || { asked=0; "$SPOTRUN_BIN" commit; }; }
step=0
w=0
[ -f "$d/state" ] && read -r step w <"$d/state"
py=$(PYTHONPATH=$SRCDIR/python "$PY" -c "import json, spotrun; print(json.dumps(spotrun.params(), separators=(\",\", \":\")))")
echo "start step=$step w=$w lr=$SPOTRUN_PARAM_LR params=$SPOTRUN_PARAMS pyparams=$py" >>"$SYNC/log-$t"
while [ "$step" -lt 7 ]; do
    step=$((step + 1))
    w=$(awk -v w="$w" -v lr="$SPOTRUN_PARAM_LR" 'BEGIN { printf "%.6f", w + lr }')
    echo "$step $w" >"$d/state"
    "$SPOTRUN_BIN" metric --step "$step" loss="$(awk -v w="$w" 'BEGIN { printf "%.6f", 100 - w }')" || exit 1
    # C's first attempt: once its decision is recorded, it answers no
    # checkpoint request (its wrapper is killed while it waits)
    if [ "$t:$step" = "$KILL_AT" ] && [ ! -e "$SYNC/killed-$t" ]; then
        # a request after the report is served after the wrapper decided
        PYTHONPATH=$SRCDIR/python "$PY" -c "import spotrun; spotrun.status()" || exit 1
        echo $$ >"$SYNC/job-$t"
        touch "$SYNC/blocked-$t"
        while :; do sleep 1; done
    fi
    "$SPOTRUN_BIN" commit --step "$step" || exit 1
    serve
    if [ "$t:$step" = "$HOLD_AT" ]; then
        touch "$SYNC/at-$t-$step"
        for _ in $(seq 3000); do
            [ -e "$SYNC/go-$t" ] && break
            serve
            sleep 0.1
        done
    fi
done
echo "end step=$step w=$w lr=$SPOTRUN_PARAM_LR" >>"$SYNC/log-$t"
EOF
chmod +x trial.sh

trial_done() { # TRIAL: sweep show says it is done
    "$SPOTRUN" sweep show pb --json >state.json &&
        json state.json "assert [t for t in d[\"trials\"] if t[\"trial\"] == $1][0][\"state\"] == \"done\""
}

run_trial() { # TRIAL [env...]: the trial's wrapper, in the foreground
    local k=$1
    shift
    env "$@" "$SPOTRUN" run --sweep pb --trial "$k" --lease-ttl 5s --notice none --grace 120s \
        >>"run-$k.log" 2>&1
}

test_expect_success 'sweep init --pbt: bad rules are usage errors naming them' '
    expect_code 64 "$SPOTRUN" sweep init x --param lr=uniform:0.1,1 --random 3 --pbt loss -- true 2>err &&
    grep "invalid --pbt \"loss\": it needs METRIC:min or METRIC:max" err &&
    expect_code 64 "$SPOTRUN" sweep init x --param lr=uniform:0.1,1 --random 3 --pbt loss:min -- true 2>err &&
    grep "it needs interval=K" err &&
    expect_code 64 "$SPOTRUN" sweep init x --param lr=uniform:0.1,1 --random 3 \
        --pbt loss:min,interval=4,quantile=0.7 -- true 2>err &&
    grep "quantile=\"0.7\" is not a number in (0, 0.5\]" err &&
    expect_code 64 "$SPOTRUN" sweep init x --param lr=uniform:0.1,1 --random 3 \
        --pbt loss:min,interval=4 --perturb lr=0,2 -- true 2>err &&
    grep "invalid --perturb \"lr=0,2\"" err &&
    expect_code 64 "$SPOTRUN" sweep init x --param lr=uniform:0.1,1 --random 3 \
        --pbt loss:min,interval=4 --perturb mom=resample -- true 2>err &&
    grep "the sweep has no parameter mom" err &&
    expect_code 64 "$SPOTRUN" sweep init x --param lr=uniform:0.1,1 --random 3 \
        --pbt loss:min,interval=4 --early-stop loss:min -- true 2>err &&
    grep "do not go together" err &&
    expect_code 64 "$SPOTRUN" sweep init x --param lr=uniform:0.1,1 --random 3 \
        --perturb lr=resample -- true 2>err &&
    grep "perturb needs --pbt" err &&
    expect_code 66 "$SPOTRUN" sweep show x
'

test_expect_success 'sweep init --pbt: stored with the definition' '
    "$SPOTRUN" sweep init pb --param lr=uniform:0.1,1 --random 3 --seed 7 \
        --pbt loss:min,interval=4,quantile=0.25 --perturb lr=0.8,1.2 -- ./trial.sh &&
    rm -rf dump && store_dump dump &&
    json dump/sweeps/pb/def/000000.json "
assert d[\"pbt\"] == {\"metric\": \"loss\", \"mode\": \"min\", \"interval\": 4, \"quantile\": 0.25,
                      \"perturb\": {\"lr\": \"0.8,1.2\"}}, d[\"pbt\"]" &&
    expect_code 65 "$SPOTRUN" sweep init pb --param lr=uniform:0.1,1 --random 3 --seed 7 \
        --pbt loss:min,interval=2 --perturb lr=0.8,1.2 -- ./trial.sh 2>err &&
    grep "PBT rule" err &&
    "$SPOTRUN" sweep show pb --json >def.json &&
    "$PY" - <<-\PYEOF
	import json
	v = json.load(open("def.json"))
	lr = {t["trial"]: float(t["params"]["lr"]) for t in v["trials"]}
	order = sorted(lr, key=lambda k: -lr[k])
	print(lr, order)
	open("order", "w").write(" ".join(map(str, order)))
	PYEOF
'

read -r A B C <order 2>/dev/null || true

test_expect_success 'the bottom trial takes the checkpoint of the top one and goes on with its lr perturbed' '
    (run_trial "$A" HOLD_AT="$A:5" &) &&
    wait_until 300 "trial A at step 5" test -e "$SYNC/at-$A-5" &&
    run_trial "$B" &&
    cat "run-$B.log" &&
    cat "$SYNC/log-$B" &&
    grep "pbt: trial $B took trial $A.s checkpoint" "run-$B.log" &&
    rm -rf dump && store_dump dump &&
    json "dump/sweeps/pb/pbt/lineage/$B/1.json" "
a = open(\"$SYNC/log-$A\").read().split()
lrA = float(a[3].split(\"=\")[1])
assert d[\"donor\"] == $A and d[\"donor_step\"] == 5 and d[\"round\"] == 1 and d[\"step\"] == 4, d
new = float(d[\"params\"][\"lr\"])
assert any(abs(new - min(max(lrA * f, 0.1), 1)) < 1e-5 for f in (0.8, 1.2)), (new, lrA)
assert d[\"from\"][\"lr\"] != d[\"params\"][\"lr\"], d
print(\"ok\", d)" &&
    "$PY" - "$SYNC/log-$A" "$SYNC/log-$B" "dump/sweeps/pb/pbt/lineage/$B/1.json" <<-\PYEOF
	import json, sys
	la, lb = open(sys.argv[1]).read().splitlines(), open(sys.argv[2]).read().splitlines()
	d = json.load(open(sys.argv[3]))
	kv = lambda line: dict(x.split("=", 1) for x in line.split()[1:] if "=" in x)
	lrA = float(kv(la[0])["lr"])
	starts = [kv(l) for l in lb if l.startswith("start")]
	assert len(starts) == 2, lb
	# the second start: the state of A at its step 5, the lr of the decision
	assert starts[1]["step"] == "5", starts
	assert abs(float(starts[1]["w"]) - 5 * lrA) < 1e-4, (starts, lrA)
	assert starts[1]["lr"] == d["params"]["lr"], (starts, d)
	assert json.loads(starts[1]["params"]) == {"lr": d["params"]["lr"]}, starts
	assert json.loads(starts[1]["pyparams"]) == {"lr": float(d["params"]["lr"])}, starts
	end = kv([l for l in lb if l.startswith("end")][-1])
	assert end["step"] == "7" and abs(float(end["w"]) - (5 * lrA + 2 * float(d["params"]["lr"]))) < 1e-4, end
	PYEOF
'

test_expect_success 'a wrapper killed after the decision: run again, the same decision is carried out once' '
    (KILL_AT="$C:4" setsid "$SPOTRUN" run --sweep pb --trial "$C" --lease-ttl 5s --notice none --grace 120s \
        >"run-$C-1.log" 2>&1 & echo $! >"$SYNC/wrapper-$C"; wait) &
    wait_until 300 "trial C blocked after its decision" test -e "$SYNC/blocked-$C" &&
    touch "$SYNC/killed-$C" &&
    kill -9 -- "-$(cat "$SYNC/wrapper-$C")" &&
    { kill -9 "$(cat "$SYNC/job-$C")" 2>/dev/null || :; } && # gone already if it died with the wrapper
    cat "run-$C-1.log" &&
    grep "bottom" "run-$C-1.log" &&
    rm -rf dump && store_dump dump &&
    ls "dump/sweeps/pb/pbt/lineage/$C" >lineage-before &&
    test "$(cat lineage-before)" = "1.json" &&
    cp "dump/sweeps/pb/pbt/lineage/$C/1.json" decision-before.json &&
    run_trial "$C" &&
    cat "run-$C.log" &&
    grep "pbt: trial $C took trial $A.s checkpoint" "run-$C.log" &&
    rm -rf dump && store_dump dump &&
    ls "dump/sweeps/pb/pbt/lineage/$C" | tr "\n" " " >lineage-after &&
    test "$(cat lineage-after)" = "1.applied.json 1.json " &&
    cmp decision-before.json "dump/sweeps/pb/pbt/lineage/$C/1.json" &&
    test "$(grep -c "took trial" "run-$C.log")" = 1 &&
    "$PY" - "$SYNC/log-$A" "$SYNC/log-$C" decision-before.json "$A" <<-\PYEOF
	import json, sys
	la, lc = open(sys.argv[1]).read().splitlines(), open(sys.argv[2]).read().splitlines()
	d = json.load(open(sys.argv[3]))
	assert d["donor"] == int(sys.argv[4]) and d["donor_step"] == 5, d
	kv = lambda line: dict(x.split("=", 1) for x in line.split()[1:] if "=" in x)
	lrA = float(kv(la[0])["lr"])
	starts = [kv(l) for l in lc if l.startswith("start")]
	assert len(starts) == 2, lc
	assert starts[1]["step"] == "5" and abs(float(starts[1]["w"]) - 5 * lrA) < 1e-4, starts
	assert starts[1]["lr"] == d["params"]["lr"], (starts, d)
	PYEOF
'

test_expect_success 'the top trial goes on; every trial done' '
    touch "$SYNC/go-$A" &&
    wait_until 300 "trial A done" grep "^end" "$SYNC/log-$A" &&
    wait_until 60 "trial A marked done" trial_done "$A" &&
    rm -rf dump && store_dump dump &&
    ls dump/sweeps/pb/end | sort | tr "\n" " " >ends &&
    test "$(cat ends)" = "0.done 1.done 2.done " &&
    ls dump/sweeps/pb/pbt/lineage >with-lineage &&
    test "$(sort with-lineage | tr "\n" " ")" = "$(printf "%s\n" "$B" "$C" | sort | tr "\n" " ")"
'

test_expect_success 'sweep show: the lineage of each trial; sweep show TRIAL: its schedule; --json: both' '
    "$SPOTRUN" sweep show pb >show.out && cat show.out &&
    grep "^lineage (PBT loss:min every 4 steps, quantile 0.25): 2 exploits" show.out &&
    lrB=$(json "dump/sweeps/pb/pbt/lineage/$B/1.json" "print(d[\"from\"][\"lr\"], \"->\", d[\"params\"][\"lr\"])") &&
    grep -F "  trial $B: from trial $A @ step 4 (round 1, its checkpoint at step 5; lr $lrB)" show.out &&
    grep -F "  trial $C: from trial $A @ step 4 (round 1, its checkpoint at step 5; lr" show.out &&
    "$SPOTRUN" sweep show pb "$B" >trial.out && cat trial.out &&
    grep -F "  from step 5: lr=${lrB##* } (taken from trial $A at round 1)" trial.out &&
    "$SPOTRUN" sweep show pb --json >show.json &&
    "$PY" - "$A" "$B" "$C" <<-\PYEOF
	import json, sys
	a, b, c = map(int, sys.argv[1:])
	v = json.load(open("show.json"))
	rows = {t["trial"]: t for t in v["trials"]}
	assert rows[a]["lineage"] == [], rows[a]
	for k in (b, c):
	    (d,) = rows[k]["lineage"]
	    assert d["donor"] == a and d["round"] == 1 and d["donor_step"] == 5 and d["applied"], d
	    s = rows[k]["schedule"]
	    assert [e["from_step"] for e in s] == [0, 5], s
	    assert s[0]["params"] == rows[k]["params"] and s[1]["params"] == d["params"], s
	    assert s[1]["donor"] == a, s
	PYEOF
'

test_expect_success 'the exploited attempt ends with cause exploit; sweep report draws each exploit' '
    "$SPOTRUN" show "pb-$B" --json >b.json &&
    json b.json "
a = d[\"attempt_list\"]
assert [x[\"cause\"] for x in a] == [\"exploit\", \"done\"], a
assert \"PBT, at its round of step 4\" in a[0][\"cause_detail\"], a[0]
" &&
    "$SPOTRUN" sweep report pb -o pb.svg &&
    grep -c "class=\"exploit\" data-trial=\"$B\" data-donor=\"$A\"" pb.svg >arrows-b &&
    test "$(cat arrows-b)" = 1 &&
    grep -c "class=\"exploit\" data-trial=\"$C\" data-donor=\"$A\"" pb.svg >arrows-c &&
    test "$(cat arrows-c)" = 1 &&
    grep "exploit (PBT): takes the checkpoint of the arrow" pb.svg &&
    grep "look-exploited" pb.svg &&
    lrB=$(json "dump/sweeps/pb/pbt/lineage/$B/1.json" "print(\"%.4g\" % float(d[\"params\"][\"lr\"]))") &&
    grep -F "trial $B takes trial $A" pb.svg &&
    grep -F "lr=$lrB" pb.svg &&
    if command -v rsvg-convert >/dev/null; then rsvg-convert pb.svg -o pb.png; fi
'

