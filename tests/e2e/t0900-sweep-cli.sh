#!/usr/bin/env bash
# Sweeps from the command line (docs/sweeps.md): `sweep init` (create-only,
# --add, random search, bad specs), `run --sweep` (the trial from the
# engines' index variables, the job's variables, the trial's command, failed
# trials), and the plain-fleet worker `sweep work` (each trial once, two
# workers never run one trial twice, --max-trials, --slots and GPUs).
. "$(dirname "$0")/lib.sh"

S=$SPOTRUN_STORE/sweeps
unset CUDA_VISIBLE_DEVICES
# a job that appends its trial and parameters to $OUT/ran (the stored
# command escapes the shell's braces: {{ and }})
export OUT=$TRASH/out
mkdir -p "$OUT"
ENVJOB='echo "$SPOTRUN_TRIAL $SPOTRUN_SWEEP $SPOTRUN_PARAM_LR $SPOTRUN_PARAM_SEED ${{CUDA_VISIBLE_DEVICES-none}} $0 $*" >>"$OUT/ran"'

test_expect_success 'sweep init writes a grid; the same definition again is a no-op' '
    "$SPOTRUN" sweep init g --param lr=1e-4,3e-4 --param seed=0..2 \
        -- sh -c "$ENVJOB" job {lr} {seed} >1.out &&
    grep "sweep g: 6 trials" 1.out &&
    cp "$S/g/def/000000.json" def0 &&
    "$SPOTRUN" sweep init g --param lr=1e-4,3e-4 --param seed=0..2 \
        -- sh -c "$ENVJOB" job {lr} {seed} >2.out &&
    grep "already defined, unchanged" 2.out &&
    cmp def0 "$S/g/def/000000.json" &&
    test "$(ls "$S/g/def")" = 000000.json
'

test_expect_success 'a different definition under the same name: exit 65, nothing changed' '
    expect_code 65 "$SPOTRUN" sweep init g --param lr=1e-4,1e-3 --param seed=0..2 \
        -- sh -c "$ENVJOB" job {lr} {seed} 2>err &&
    grep "sweep init" err && cat err &&
    cmp def0 "$S/g/def/000000.json"
'

test_expect_success '--add appends trials whose indices continue' '
    "$SPOTRUN" sweep init g --add --param lr=1e-2 --param seed=7 >add.out &&
    grep "added trials 6..6" add.out &&
    test -f "$S/g/def/000001.json" &&
    "$SPOTRUN" run --sweep g --trial 6 -- sh -c "$ENVJOB" >/dev/null 2>&1 &&
    grep "^6 g 1e-2 7 " "$OUT/ran"
'

test_expect_success '--add with other parameter names: exit 65 (a different definition)' '
    expect_code 65 "$SPOTRUN" sweep init g --add --param lr=1 --param batch=2 2>err &&
    grep "same parameters" err &&
    expect_code 65 "$SPOTRUN" sweep init g --add --param lr=1 2>err
'

trials_of() { python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["trials"]))' "$1"; }

test_expect_success 'random search is reproducible from its seed' '
    "$SPOTRUN" sweep init r1 --random 8 --seed 42 --param lr=loguniform:1e-5,1e-2 \
        --param drop=uniform:0,0.5 --param layers=int:2,8 --param opt=choice:adam,sgd >/dev/null &&
    SPOTRUN_STORE=$TRASH/store2 "$SPOTRUN" sweep init r1 --random 8 --seed 42 \
        --param lr=loguniform:1e-5,1e-2 --param drop=uniform:0,0.5 --param layers=int:2,8 \
        --param opt=choice:adam,sgd >/dev/null &&
    trials_of "$S/r1/def/000000.json" >a.json &&
    trials_of "$TRASH/store2/sweeps/r1/def/000000.json" >b.json &&
    cmp a.json b.json &&
    test "$(python3 -c "import json; print(len(json.load(open(\"a.json\"))))")" = 8 &&
    "$SPOTRUN" sweep init r2 --random 8 --seed 43 --param lr=loguniform:1e-5,1e-2 \
        --param drop=uniform:0,0.5 --param layers=int:2,8 --param opt=choice:adam,sgd >/dev/null &&
    trials_of "$S/r2/def/000000.json" >c.json &&
    ! cmp -s a.json c.json
'

test_expect_success 'random values stay in their ranges' '
    python3 - a.json <<-EOF
	import json, sys
	for t in json.load(open(sys.argv[1])):
	    assert 1e-5 <= float(t["lr"]) <= 1e-2, t
	    assert 0 <= float(t["drop"]) <= 0.5, t
	    assert 2 <= int(t["layers"]) <= 8, t
	    assert t["opt"] in ("adam", "sgd"), t
	EOF
'

test_expect_success 'bad parameter specs: exit 64, the message names the spec' '
    for spec in "lr=" "x=1.." "x=uniform:2,1" "x=loguniform:0,1" "1x=3"; do
        expect_code 64 "$SPOTRUN" sweep init bad --random 2 --param "$spec" 2>err || exit 1
        grep -F -- "$spec" err || { cat err; exit 1; }
    done &&
    expect_code 64 "$SPOTRUN" sweep init bad --param x=uniform:0,1 2>err &&
    grep -- "needs --random" err &&
    expect_code 64 "$SPOTRUN" sweep init bad --param a=1 --param A=2 2>err &&
    grep "given twice" err &&
    test ! -e "$S/bad"
'

test_expect_success 'an unknown placeholder: exit 64' '
    expect_code 64 "$SPOTRUN" sweep init ph --param a=1 -- echo {nope} 2>err &&
    grep nope err &&
    test ! -e "$S/ph"
'

test_expect_success 'run --sweep without a trial index: exit 64' '
    expect_code 64 "$SPOTRUN" run --sweep g 2>err &&
    grep "which trial" err
'

test_expect_success 'the trial comes from SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX' '
    : >"$OUT/ran" &&
    SLURM_ARRAY_TASK_ID=1 "$SPOTRUN" run --sweep g >/dev/null 2>&1 &&
    JOB_COMPLETION_INDEX=2 "$SPOTRUN" run --sweep g >/dev/null 2>&1 &&
    AWS_BATCH_JOB_ARRAY_INDEX=3 "$SPOTRUN" run --sweep g >/dev/null 2>&1 &&
    cat "$OUT/ran" &&
    test "$(cut -d" " -f1 "$OUT/ran" | tr "\n" " ")" = "1 2 3 " &&
    test -f "$S/g/end/1.done" && test -f "$S/g/end/2.done" && test -f "$S/g/end/3.done"
'

test_expect_success 'the job gets SPOTRUN_SWEEP, SPOTRUN_TRIAL, SPOTRUN_PARAM_* and the filled-in command' '
    grep -x "1 g 1e-4 1 none job 1e-4 1" "$OUT/ran" &&
    grep -x "3 g 3e-4 0 none job 3e-4 0" "$OUT/ran" &&
    "$SPOTRUN" ls | grep -w g-3
'

test_expect_success 'a trial index out of range: exit 64' '
    expect_code 64 "$SPOTRUN" run --sweep g --trial 7 2>err &&
    grep "has 7 trials" err &&
    SLURM_ARRAY_TASK_ID=9 expect_code 64 "$SPOTRUN" run --sweep g 2>err &&
    grep SLURM_ARRAY_TASK_ID err &&
    expect_code 64 "$SPOTRUN" run --sweep g --trial 1x 2>err &&
    grep "not a trial index" err && ! grep "has 7 trials" err
'

test_expect_success 'a command after -- replaces the stored one, placeholders filled in' '
    "$SPOTRUN" run --sweep g --trial 4 -- sh -c "echo other {lr} {{x}} >\"\$OUT/other\"" >/dev/null 2>&1 &&
    test "$(cat "$OUT/other")" = "other 3e-4 {x}"
'

test_expect_success 'a done trial run again exits 0 at once' '
    : >"$OUT/ran" &&
    "$SPOTRUN" run --sweep g --trial 1 >/dev/null 2>&1 &&
    test ! -s "$OUT/ran"
'

test_expect_success 'a missing sweep: exit 66' '
    expect_code 66 "$SPOTRUN" run --sweep nosuch --trial 0 -- true 2>err &&
    grep nosuch err
'

test_expect_success 'a trial that keeps failing is marked failed; a rerun is refused with its code' '
    "$SPOTRUN" sweep init f --param a=1,2 -- sh -c "test -e \"\$OUT/heal\" || exit 3" >/dev/null &&
    expect_code 3 "$SPOTRUN" run --sweep f --trial 0 --max-restarts 1 --backoff 10ms 2>err &&
    test -f "$S/f/end/0.failed" &&
    expect_code 3 "$SPOTRUN" run --sweep f --trial 0 2>err &&
    grep "left alone" err
'

test_expect_success '--fresh runs a failed trial again' '
    touch "$OUT/heal" &&
    "$SPOTRUN" run --sweep f --trial 0 --fresh >/dev/null 2>&1 &&
    test -f "$S/f/end/0.done" &&
    test ! -e "$S/f/end/0.failed"
'

test_expect_success 'sweep work --until-empty runs every trial once' '
    "$SPOTRUN" sweep init w --param k=0..4 -- sh -c "echo {k} >>\"\$OUT/w\"" >/dev/null &&
    "$SPOTRUN" sweep work w --until-empty --poll 100ms 2>work.err &&
    test "$(sort "$OUT/w" | tr "\n" " ")" = "0 1 2 3 4 " &&
    for k in 0 1 2 3 4; do test -f "$S/w/end/$k.done" || exit 1; done
'

test_expect_success 'two workers started at once on 6 trials never run a trial twice' '
    "$SPOTRUN" sweep init two --param k=0..5 \
        -- sh -c "echo {k} >>\"\$OUT/two\"; sleep 0.3" >/dev/null
    "$SPOTRUN" sweep work two --poll 100ms 2>w1.err &
    p1=$!
    "$SPOTRUN" sweep work two --poll 100ms 2>w2.err &
    p2=$!
    wait $p1 && wait $p2 &&
    cat "$OUT/two" &&
    test "$(sort "$OUT/two" | tr "\n" " ")" = "0 1 2 3 4 5 " &&
    grep "sweep two: trial . (k=" w1.err && grep "sweep two: trial . (k=" w2.err
'

test_expect_success 'sweep work --max-trials 2 stops after two trials' '
    "$SPOTRUN" sweep init mx --param k=0..4 -- sh -c "echo {k} >>\"\$OUT/mx\"" >/dev/null &&
    "$SPOTRUN" sweep work mx --max-trials 2 --poll 100ms 2>/dev/null &&
    test "$(wc -l <"$OUT/mx")" -eq 2
'

# Which GPUs a machine has comes from NVML: here the fake one of
# tests/fakenvml, with no device (no trace) or with two.
FAKENVML=${FAKENVML:-$SRCDIR/build/tests/fakenvml}
printf 'gpu GPU-aaaaaaaa-1111-2222-3333-444444444444 1000 - 10\ngpu GPU-bbbbbbbb-1111-2222-3333-444444444444 1000 - 10\n' >two.trace

test_expect_success 'sweep work --slots 2 with no GPU and no CUDA_VISIBLE_DEVICES: no pinning, said so' '
    "$SPOTRUN" sweep init sl --param k=0..3 \
        -- sh -c "echo \"[\${{CUDA_VISIBLE_DEVICES-unset}}]\" >>\"\$OUT/sl\"; sleep 0.3" >/dev/null &&
    (unset CUDA_VISIBLE_DEVICES; LD_LIBRARY_PATH=$FAKENVML \
        "$SPOTRUN" sweep work sl --slots 2 --poll 100ms 2>sl.err) &&
    test "$(sort -u "$OUT/sl" | tr "\n" " ")" = "[unset] " &&
    grep "sweep sl: no GPU found (no NVML device, no /dev/nvidia0): the 2 slots run their trials without GPU pinning (CUDA_VISIBLE_DEVICES left unset)" sl.err &&
    test "$(count_lines sl.err "sweep sl: trial [0-3] (k=[0-3])$")" = 4 &&
    refute grep "GPU [0-9]" sl.err
'

test_expect_success 'sweep work --slots 2 on a machine with two GPUs, no CUDA_VISIBLE_DEVICES: the slots get 0 and 1' '
    "$SPOTRUN" sweep init slg --param k=0..3 \
        -- sh -c "echo \$CUDA_VISIBLE_DEVICES >>\"\$OUT/slg\"; sleep 0.3" >/dev/null &&
    (unset CUDA_VISIBLE_DEVICES; LD_LIBRARY_PATH=$FAKENVML FAKENVML_TRACE=$TRASH/two.trace \
        "$SPOTRUN" sweep work slg --slots 2 --poll 100ms 2>slg.err) &&
    test "$(sort -u "$OUT/slg" | tr "\n" " ")" = "0 1 " &&
    test "$(count_lines slg.err "sweep slg: trial [0-3] (k=[0-3]) on GPU [01]$")" = 4
'

test_expect_success 'from CUDA_VISIBLE_DEVICES=4,5 the slots get 4 and 5' '
    "$SPOTRUN" sweep init sl2 --param k=0..3 \
        -- sh -c "echo \$CUDA_VISIBLE_DEVICES >>\"\$OUT/sl2\"; sleep 0.3" >/dev/null &&
    CUDA_VISIBLE_DEVICES=4,5 "$SPOTRUN" sweep work sl2 --slots 2 --poll 100ms 2>/dev/null &&
    test "$(sort -u "$OUT/sl2" | tr "\n" " ")" = "4 5 "
'

test_expect_success 'CUDA_VISIBLE_DEVICES= (no GPU): the slots get none, and the worker says so' '
    "$SPOTRUN" sweep init sl3 --param k=0..3 \
        -- sh -c "echo \"[\${{CUDA_VISIBLE_DEVICES-unset}}]\" >>\"\$OUT/sl3\"" >/dev/null &&
    CUDA_VISIBLE_DEVICES= "$SPOTRUN" sweep work sl3 --slots 2 --poll 100ms 2>sl3.err &&
    test "$(sort -u "$OUT/sl3" | tr "\n" " ")" = "[] " &&
    grep "CUDA_VISIBLE_DEVICES is empty" sl3.err
'

test_expect_success '--slots 3 on one visible GPU: shared, and the worker says so' '
    "$SPOTRUN" sweep init sl4 --param k=0..2 \
        -- sh -c "echo \$CUDA_VISIBLE_DEVICES >>\"\$OUT/sl4\"" >/dev/null &&
    CUDA_VISIBLE_DEVICES=7 "$SPOTRUN" sweep work sl4 --slots 3 --poll 100ms 2>sl4.err &&
    test "$(sort -u "$OUT/sl4")" = 7 &&
    grep "3 slots share 1 GPU" sl4.err
'

# a job that counts to 20, committing every step (so it answers a
# checkpoint request within one step of {pace} seconds)
COUNTER='trap "echo requested" USR1
i=$(cat "$SPOTRUN_CKPT_DIR/i" 2>/dev/null || echo 0)
[ "$i" -gt 0 ] && echo "resumed from $i"
while [ "$i" -lt 20 ]; do
    i=$((i + 1)); echo "$i" >"$SPOTRUN_CKPT_DIR/i"
    "$SPOTRUN_BIN" commit --step "$i" >/dev/null & c=$!
    wait $c || wait $c
    sleep {pace}
done'

# The job commits in the background and waits for it: a shell runs its
# trap only once a foreground child returns, so a request that arrived
# while a commit was in flight would be echoed after that commit, which the
# wrapper may already take as the checkpoint and stop the job on (seen
# under ASan). `wait` is interrupted by the trap; the second one waits for
# the commit itself.
# Trial 0 is back (75) long before trial 1 has checkpointed: the worker
# must not send trial 1 a second TERM then (it would stop waiting).
test_expect_success 'SIGTERM drains sweep work: exit 75, trials checkpointed and released, one notice each' '
    "$SPOTRUN" sweep init dr --param pace=0.05,1.5 -- sh -c "$COUNTER" >/dev/null
    "$SPOTRUN" sweep work dr --slots 2 --poll 100ms >dr1.out 2>dr1.err &
    p=$!
    wait_until 60 "checkpoint 3 of dr-0 and checkpoint 1 of dr-1" \
        test -s "$SPOTRUN_STORE/dr-0/ckpt/0000000003/MANIFEST.json" \
        -a -s "$SPOTRUN_STORE/dr-1/ckpt/0000000001/MANIFEST.json" || { kill -TERM $p; wait $p; exit 1; }
    kill -TERM $p &&
    expect_code 75 wait $p &&
    test "$(grep -c "preempted: checkpoint [0-9]* is durable" dr1.err)" -eq 2 &&
    test "$(grep -c "^requested" dr1.out)" -eq 2 &&
    ! grep "second notice" dr1.err &&
    grep -q "\"released\": *true" "$SPOTRUN_STORE/dr-0/LEASE" &&
    grep -q "\"released\": *true" "$SPOTRUN_STORE/dr-1/LEASE" &&
    test ! -e "$S/dr/end/0.done"
'

test_expect_success 'the next worker takes the released trials at once and resumes them' '
    timeout 120 "$SPOTRUN" sweep work dr --slots 2 --until-empty --poll 100ms >dr2.out 2>dr2.err &&
    test "$(grep -c "^resumed from" dr2.out)" -eq 2 &&
    test -f "$S/dr/end/0.done" && test -f "$S/dr/end/1.done"
'

test_done
