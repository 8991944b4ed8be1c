#!/usr/bin/env bash
# A GPU-hour quota (docs/cost.md, "Quotas and approvals"): the GPU-hours
# are those `stats` counts, the attempts' hours times the GPUs the wrapper
# sampled (here the fake libnvidia-ml.so.1 of tests/fakenvml, driven by a
# trace). Once a team used its GPU-hours, its next run is refused (79),
# and `quota show` says the hours `stats --json` says.
. "$(dirname "$0")/lib.sh"

if [ -z "${FAKENVML:-}" ]; then
    FAKENVML=$SRCDIR/build/tests/fakenvml
fi
export SPOTRUN_NOTICE=none
unset CUDA_VISIBLE_DEVICES
UA=GPU-aaaaaaaa-1111-2222-3333-444444444444
UB=GPU-bbbbbbbb-1111-2222-3333-444444444444

# Two GPUs busy for 60 samples of 20 ms each: the job runs at least 1.2 s,
# so the run uses at least 2 x 1.2 s = 0.00067 GPU-hours.
samples=$(printf '50,%.0s' $(seq 59))50
printf 'gpu %s 1000 - %s\ngpu %s 1000 - %s\nafter lost\n' "$UA" "$samples" "$UB" "$samples" >two.trace

test_expect_success 'a team that used its GPU-hours is refused its next run (79)' '
    "$SPOTRUN" quota set team=gpu --gpu-hours 0.0005 --per month --by ana &&
    LD_LIBRARY_PATH=$FAKENVML FAKENVML_TRACE=$TRASH/two.trace FAKENVML_LOG=$TRASH/nvml.log \
        SPOTRUN_GPU_SAMPLE_MS=20 "$SPOTRUN" run --run-id g1 --label team=gpu -- \
        sh -c "i=0; while ! grep -q lost \"$TRASH/nvml.log\" 2>/dev/null; do
                   sleep 0.05; i=\$((i+1)); [ \$i -lt 600 ] || exit 9; done" >g1.log 2>&1 &&
    "$SPOTRUN" stats --label team=gpu --json >s.json &&
    "$PY" -c "
import json
t = json.load(open(\"s.json\"))[\"total\"]
assert t[\"gpu_hours\"] >= 0.0006, t
" &&
    expect_code 79 "$SPOTRUN" run --run-id g2 --label team=gpu -- true 2>g2.err &&
    cat g2.err &&
    grep "spotrun run: quota team=gpu (version 1) is used up: gpu-hours [0-9.e-]* of 0.0005 used per month since 20[0-9-]*: not starting run g2 (exit 79); raise it with \`spotrun quota set team=gpu --gpu-hours HOURS\`" g2.err
'

test_expect_success 'quota show: the GPU-hours of stats --label --since the month'"'"'s start' '
    "$SPOTRUN" quota show --json >q.json &&
    since=$("$PY" -c "import json; print(json.load(open(\"q.json\"))[\"quotas\"][0][\"since\"])") &&
    "$SPOTRUN" stats --label team=gpu --since "$since" --json >s2.json &&
    "$PY" -c "
import json
q = json.load(open(\"q.json\"))[\"quotas\"][0]
s = json.load(open(\"s2.json\"))[\"total\"]
assert q[\"use\"][\"gpu_hours\"] == s[\"gpu_hours\"] and s[\"gpu_hours\"] > 0, (q, s)
assert q[\"over\"] == \"gpu-hours\", q
"
'

test_done
