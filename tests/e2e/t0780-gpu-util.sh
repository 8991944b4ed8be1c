#!/usr/bin/env bash
# GPU utilization, measured: the wrapper samples NVML (here the fake
# libnvidia-ml.so.1 of tests/fakenvml, driven by a trace) for the devices
# of the job's CUDA_VISIBLE_DEVICES and records each attempt's mean, p50,
# p95 and idle share in a "gpu" event, which `show`, `show --json` and the
# metrics file read. Without NVML, or with NVML failing, nothing is said.
. "$(dirname "$0")/lib.sh"

if [ -z "${FAKENVML:-}" ]; then
    FAKENVML=$SRCDIR/build/tests/fakenvml
fi
UA=GPU-aaaaaaaa-1111-2222-3333-444444444444
UB=GPU-bbbbbbbb-1111-2222-3333-444444444444

# The trace whose statistics are worked out by hand: 20 samples,
# 6 x 0, 2 x 3, 4 x 40, 4 x 80, 4 x 100 (in a mixed order), then the GPU is
# lost (sampling stops; the 20 samples stand).
#   mean = (0 + 6 + 160 + 320 + 400) / 20 = 44.3
#   p50  = the 10th smallest (nearest rank) = 40
#   p95  = the 19th smallest = 100
#   idle = samples under 5 %: 8 of 20 = 0.4 (>= 0.3: "input-bound?")
#   power = 150 W every sample; memory used 3 GiB
cat >hand.trace <<T
gpu $UA 3221225472 150000 100,0,40,80,0,3,100,40,0,80,0,3,40,100,0,80,40,0,100,80
after lost
T
# Two GPUs that tell apart: 10 % busy and 70 % busy, 5 samples each.
cat >two.trace <<T
gpu $UA 1000 - 10,10,10,10,10
gpu $UB 2000 - 70,70,70,70,70
after lost
T

# gpu_run TRACE RUN [spotrun run options...]: a job that ends once the
# fake NVML has served its trace (its log says "lost"), sampled every 20 ms.
gpu_run() {
    local trace=$1 run=$2
    shift 2
    rm -f "nvml-$run.log"
    LD_LIBRARY_PATH=$FAKENVML FAKENVML_TRACE=$TRASH/$trace FAKENVML_LOG=$TRASH/nvml-$run.log \
        SPOTRUN_GPU_SAMPLE_MS=20 "$SPOTRUN" run --run-id "$run" --max-restarts 0 "$@" -- \
        sh -c "i=0; while ! grep -q lost '$TRASH/nvml-$run.log' 2>/dev/null; do
                   sleep 0.05; i=\$((i+1)); [ \$i -lt 600 ] || exit 9; done" \
        >"$run.out" 2>&1
}

# json FILE EXPR: a value of show --json's output, printed by Python.
json() { "$PY" -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1"; }

test_expect_success 'a known trace gives its mean, p50, p95 and idle share in show' '
    gpu_run hand.trace hand && cat hand.out &&
    "$SPOTRUN" show hand >show.txt && cat show.txt &&
    grep -x "gpu busy:    44 % (idle 40 % of the time: input-bound?)" show.txt
'

test_expect_success 'NVML failing mid-run stops sampling quietly: nothing about it without -v' '
    ! grep -e GPU -e NVML -e "gpu busy" hand.out
'

test_expect_success 'show --json has the attempt'"'"'s numbers and the run'"'"'s' '
    "$SPOTRUN" show hand --json >show.json &&
    test "$(json show.json "d[\"attempt_list\"][0][\"gpu_utilization\"]")" = \
        "{'"'"'samples'"'"': 20, '"'"'devices'"'"': 1, '"'"'util_mean'"'"': 44.3, '"'"'util_p50'"'"': 40.0, '"'"'util_p95'"'"': 100.0, '"'"'idle_share'"'"': 0.4, '"'"'mem_used_max'"'"': 3221225472, '"'"'power_mean_w'"'"': 150.0}" &&
    test "$(json show.json "d[\"gpu_utilization\"]")" = \
        "{'"'"'samples'"'"': 20, '"'"'util_mean'"'"': 44.3, '"'"'idle_share'"'"': 0.4, '"'"'input_bound'"'"': True}"
'

test_expect_success 'the event log has the final gpu event right before the exit' '
    "$PY" -c "
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
names = [e[\"event\"] for e in ev]
i = names.index(\"exit\")
assert names[i - 1] == \"gpu\", names
g = ev[i - 1]
assert (g[\"samples\"], g[\"devices\"], g[\"util_mean\"]) == (20, 1, 44.3), g
" "$SPOTRUN_STORE/hand/events/000000.jsonl"
'

test_expect_success 'CUDA_VISIBLE_DEVICES by index samples that device only' '
    CUDA_VISIBLE_DEVICES=1 gpu_run two.trace byindex &&
    "$SPOTRUN" show byindex --json >j &&
    test "$(json j "d[\"attempt_list\"][0][\"gpu_utilization\"][\"util_mean\"]")" = 70.0 &&
    test "$(json j "d[\"attempt_list\"][0][\"gpu_utilization\"][\"devices\"]")" = 1 &&
    test "$(json j "d[\"attempt_list\"][0][\"gpu_utilization\"][\"mem_used_max\"]")" = 2000 &&
    ! grep "^util 0" nvml-byindex.log
'

test_expect_success 'CUDA_VISIBLE_DEVICES by UUID samples that device only' '
    CUDA_VISIBLE_DEVICES=$UA gpu_run two.trace byuuid &&
    "$SPOTRUN" show byuuid >s && grep -x "gpu busy:    10 % (idle 0 % of the time)" s &&
    "$SPOTRUN" show byuuid --json >j &&
    test "$(json j "d[\"attempt_list\"][0][\"gpu_utilization\"][\"power_mean_w\"]")" = None &&
    ! grep "^util 1" nvml-byuuid.log
'

test_expect_success 'CUDA_VISIBLE_DEVICES unset samples every device' '
    (unset CUDA_VISIBLE_DEVICES; gpu_run two.trace all) &&
    "$SPOTRUN" show all --json >j &&
    test "$(json j "d[\"attempt_list\"][0][\"gpu_utilization\"][\"devices\"]")" = 2 &&
    test "$(json j "d[\"attempt_list\"][0][\"gpu_utilization\"][\"util_mean\"]")" = 40.0
'

test_expect_success 'CUDA_VISIBLE_DEVICES empty or -1 selects no GPU: no gpu event' '
    CUDA_VISIBLE_DEVICES=-1 LD_LIBRARY_PATH=$FAKENVML FAKENVML_TRACE=$TRASH/two.trace \
        SPOTRUN_GPU_SAMPLE_MS=20 "$SPOTRUN" -v run --run-id none1 -- sleep 0.3 >n1.out 2>&1 &&
    grep "GPU utilization is not sampled: CUDA_VISIBLE_DEVICES=\"-1\" selects no GPU" n1.out &&
    ! grep -q "\"event\":\"gpu\"" "$SPOTRUN_STORE"/none1/events/*.jsonl &&
    CUDA_VISIBLE_DEVICES= LD_LIBRARY_PATH=$FAKENVML FAKENVML_TRACE=$TRASH/two.trace \
        SPOTRUN_GPU_SAMPLE_MS=20 "$SPOTRUN" run --run-id none2 -- sleep 0.3 &&
    ! grep -q "\"event\":\"gpu\"" "$SPOTRUN_STORE"/none2/events/*.jsonl &&
    "$SPOTRUN" show none2 >s && ! grep "gpu busy" s
'

test_expect_success 'a MIG id is skipped with a note under -v' '
    CUDA_VISIBLE_DEVICES=MIG-0123,1 gpu_run two.trace mig -v && cat mig.out &&
    grep "MIG-0123 is a MIG instance: not sampled" mig.out &&
    "$SPOTRUN" show mig --json >j &&
    test "$(json j "d[\"attempt_list\"][0][\"gpu_utilization\"][\"util_mean\"]")" = 70.0
'

test_expect_success 'no NVML: no gpu line, no gpu event, one quiet line with -v only' '
    LD_LIBRARY_PATH=$TRASH SPOTRUN_GPU_SAMPLE_MS=20 "$SPOTRUN" run --run-id nolib -- sleep 0.3 \
        >nl.out 2>&1 &&
    ! grep -e GPU -e NVML nl.out &&
    ! grep -q "\"event\":\"gpu\"" "$SPOTRUN_STORE"/nolib/events/*.jsonl &&
    "$SPOTRUN" show nolib >s && ! grep "gpu busy" s &&
    "$SPOTRUN" show nolib --json >j && test "$(json j "d[\"gpu_utilization\"]")" = None &&
    LD_LIBRARY_PATH=$TRASH SPOTRUN_GPU_SAMPLE_MS=20 "$SPOTRUN" -v run --run-id nolib2 -- sleep 0.3 \
        >nl2.out 2>&1 &&
    test "$(grep -c -e GPU -e NVML nl2.out)" = 1 &&
    grep "GPU utilization is not sampled: no NVML" nl2.out
'

test_expect_success 'nvmlInit failing: quiet, nothing sampled' '
    printf "init fail\ngpu %s 1 - 50\n" "$UA" >fail.trace &&
    LD_LIBRARY_PATH=$FAKENVML FAKENVML_TRACE=$TRASH/fail.trace SPOTRUN_GPU_SAMPLE_MS=20 \
        "$SPOTRUN" run --run-id initfail -- sleep 0.3 >if.out 2>&1 &&
    ! grep -e GPU -e NVML if.out &&
    ! grep -q "\"event\":\"gpu\"" "$SPOTRUN_STORE"/initfail/events/*.jsonl &&
    LD_LIBRARY_PATH=$FAKENVML FAKENVML_TRACE=$TRASH/fail.trace SPOTRUN_GPU_SAMPLE_MS=20 \
        "$SPOTRUN" -v run --run-id initfail2 -- sleep 0.3 >if2.out 2>&1 &&
    grep "GPU utilization is not sampled: NVML did not start: Driver Not Loaded (9)" if2.out
'

test_expect_success 'while the job runs: live gauges per device and a periodic gpu event' '
    printf "gpu %s 5000 200000 30,50\ngpu %s 7000 - 90\nafter cycle\n" "$UA" "$UB" >live.trace &&
    rm -f stop &&
    (LD_LIBRARY_PATH=$FAKENVML FAKENVML_TRACE=$TRASH/live.trace SPOTRUN_GPU_SAMPLE_MS=20 \
        "$SPOTRUN" run --run-id live --metrics-file "$TRASH/live.prom" -- \
        sh -c "while [ ! -e \"$TRASH/stop\" ]; do sleep 0.05; done" >live.out 2>&1 &) &&
    wait_for live.prom "^spotrun_gpu_utilization_percent{run=\"live\",gpu=\"1\"} 90$" 30 &&
    grep "^spotrun_gpu_utilization_percent{run=\"live\",gpu=\"0\"} \(30\|50\)$" live.prom &&
    grep "^spotrun_gpu_memory_used_bytes{run=\"live\",gpu=\"0\"} 5000$" live.prom &&
    grep "^spotrun_gpu_memory_used_bytes{run=\"live\",gpu=\"1\"} 7000$" live.prom &&
    grep "^spotrun_gpu_power_watts{run=\"live\",gpu=\"0\"} 200$" live.prom &&
    ! grep "^spotrun_gpu_power_watts{run=\"live\",gpu=\"1\"}" live.prom &&
    "$PY" "$SRCDIR/tests/e2e/promcheck.py" live.prom >/dev/null &&
    wait_for "$SPOTRUN_STORE/live/events/000000.jsonl" "\"event\":\"gpu\"" 30 &&
    wait_for live.prom "^spotrun_gpu_attempt_utilization_mean_percent{run=\"live\"} " 30 &&
    touch stop &&
    wait_for live.out "run live done" 30 &&
    "$SPOTRUN" show live --json >j &&
    "$PY" -c "
import json, sys
g = json.load(open(\"j\"))[\"attempt_list\"][0][\"gpu_utilization\"]
assert g[\"devices\"] == 2 and g[\"samples\"] % 2 == 0, g
assert 50 < g[\"util_mean\"] < 70 and g[\"util_p95\"] == 90 and g[\"idle_share\"] == 0, g
assert g[\"power_mean_w\"] == 200.0 and g[\"mem_used_max\"] == 7000, g
" &&
    ! grep "^spotrun_gpu_utilization_percent" live.prom &&
    grep "^spotrun_gpu_attempt_utilization_mean_percent{run=\"live\"} " live.prom
'

test_expect_success 'a tampered gpu event in a log is ignored: show says nothing wrong' '
    mkdir -p "$SPOTRUN_STORE/planted/events" &&
    printf "%s\n" \
        "{\"event\":\"start\",\"time\":\"x\",\"unix_ms\":1700000000000,\"attempt\":0}" \
        "{\"event\":\"gpu\",\"time\":\"x\",\"unix_ms\":1700000001000,\"attempt\":0,\"samples\":9,\"devices\":1,\"util_mean\":250,\"util_p50\":40,\"util_p95\":90,\"idle_share\":0.1,\"mem_used_max\":1,\"power_mean_w\":1}" \
        "{\"event\":\"gpu\",\"time\":\"x\",\"unix_ms\":1700000002000,\"attempt\":0,\"samples\":9,\"devices\":1,\"util_mean\":50,\"util_p50\":40,\"util_p95\":90,\"idle_share\":7,\"mem_used_max\":1,\"power_mean_w\":1}" \
        "{\"event\":\"exit\",\"time\":\"x\",\"unix_ms\":1700000003000,\"attempt\":0,\"code\":0}" \
        >"$SPOTRUN_STORE/planted/events/000000.jsonl" &&
    "$SPOTRUN" show planted >s && ! grep "gpu busy" s &&
    "$SPOTRUN" show planted --json >j && test "$(json j "d[\"gpu_utilization\"]")" = None
'

test_expect_success 'an invalid SPOTRUN_GPU_SAMPLE_MS is a usage error' '
    SPOTRUN_GPU_SAMPLE_MS=fast expect_code 64 "$SPOTRUN" run --run-id bad -- true 2>err &&
    grep "invalid SPOTRUN_GPU_SAMPLE_MS=\"fast\"" err &&
    SPOTRUN_GPU_SAMPLE_MS=5 expect_code 64 "$SPOTRUN" run --run-id bad -- true &&
    SPOTRUN_GPU_SAMPLE_MS=0 LD_LIBRARY_PATH=$FAKENVML FAKENVML_TRACE=$TRASH/two.trace \
        "$SPOTRUN" run --run-id off -- sleep 0.2 &&
    ! grep -q "\"event\":\"gpu\"" "$SPOTRUN_STORE"/off/events/*.jsonl
'

test_done
