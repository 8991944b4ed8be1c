#!/usr/bin/env bash
# gpu-check.sh - the shim's checks against a real GPU, in one go (< 5 min):
# builds spotrun, libspotrun.so, the CUDA example and the allocation probe
# against the real CUDA runtime, runs the same checks the CI runs against
# the fake CUDA libraries, plus a PyTorch allocation count when PyTorch with
# CUDA is importable, plus the GPU utilization spotrun records (NVML, 1 s
# samples) against nvidia-smi's sampled alongside, and prints a pass/fail
# table (exit 1 if any failed).
# Paste the table, the date and the GPU model into docs/gpu-check.md.
#
# Environment: CUDA (default /usr/local/cuda), BUILD (default build-gpu),
# PY (default python3).
set -uo pipefail

CUDA=${CUDA:-/usr/local/cuda}
BUILD=${BUILD:-build-gpu}
PY=${PY:-python3}
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
MiB=1048576
results=()
failed=0

record() { # record NAME STATUS DETAIL
    results+=("$(printf '| %-44s | %-4s | %s |' "$1" "$2" "$3")")
    [ "$2" = FAIL ] && failed=$((failed + 1))
    return 0
}
check() { # check NAME DETAIL cmd...
    local name=$1 detail=$2
    shift 2
    if "$@" >"$WORK/last.log" 2>&1; then record "$name" PASS "$detail"; else
        record "$name" FAIL "$detail (see below)"
        sed 's/^/    /' "$WORK/last.log" | tail -n 15 >&2
    fi
}

echo "gpu-check: building into $BUILD" >&2
cmake -S "$SRC" -B "$BUILD" -DSPOTRUN_CUDA_ARCH=native -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    >"$WORK/cmake.log" 2>&1 && cmake --build "$BUILD" -j"$(nproc)" >>"$WORK/cmake.log" 2>&1 ||
    { tail -n 30 "$WORK/cmake.log" >&2; echo "gpu-check: build failed" >&2; exit 1; }
SPOTRUN=$SRC/$BUILD/runtime/spotrun
SHIM=$SRC/$BUILD/preload/libspotrun.so
PAGEDUMP=$SRC/$BUILD/tests/fakecuda/pagedump
MLP=$SRC/$BUILD/examples/mlp
PROBE=$WORK/cudaprobe
cc -O2 -I"$CUDA/include" "$SRC/tests/fakecuda/cudaprobe.c" -o "$PROBE" -L"$CUDA/lib64" \
    -Wl,-rpath,"$CUDA/lib64" -lcudart -ldl -lpthread || { echo "gpu-check: probe build failed" >&2; exit 1; }
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)

probe() { rm -rf "$WORK/gpu" && mkdir "$WORK/gpu" &&
    LD_PRELOAD=$SHIM SPOTRUN_GPU_DIR=$WORK/gpu "$PROBE" "$@" >"$WORK/probe.out" &&
    "$PAGEDUMP" "$WORK/gpu" >"$WORK/page" && cat "$WORK/probe.out" "$WORK/page"; }
has() { grep -q -- "$1" "$WORK/${2:-page}"; }

t_rt() { probe malloc 64M malloc 32M free 0 managed 16M host 8M &&
    has "^dev0 device current=$((32 * MiB)) peak=$((96 * MiB)) allocs=2 frees=1$" &&
    has "^dev0 managed current=$((16 * MiB)) " && has "^dev0 host current=$((8 * MiB)) "; }
t_proc() { probe proc-alloc 16M proc-create 2M free 0 &&
    has "^dev0 device current=$((2 * MiB)) peak=$((18 * MiB)) allocs=2 frees=1$"; }
t_host() { probe proc-hostalloc 8M proc-allochost 4M free 0 host 2M &&
    has "^dev0 host current=$((6 * MiB)) peak=$((12 * MiB)) allocs=3 frees=1$"; }
t_pool() { probe pool-alloc 0 8M proc-pool-alloc 0 4M free 0 &&
    has "^dev0 device current=$((4 * MiB)) peak=$((12 * MiB)) allocs=2 frees=1$"; }
t_once() { probe malloc 4M && has "^dev0 device current=$((4 * MiB)) .* allocs=1 frees=0$"; }
t_limit() { rm -rf "$WORK/gpu" && mkdir "$WORK/gpu" &&
    SPOTRUN_GPU_MEM_LIMIT=100M LD_PRELOAD=$SHIM SPOTRUN_GPU_DIR=$WORK/gpu "$PROBE" \
        malloc 64M malloc 64M meminfo proc-meminfo >"$WORK/probe.out" && cat "$WORK/probe.out" &&
    has "^malloc rc=2$" probe.out && has "^meminfo free=$((36 * MiB)) total=$((100 * MiB))$" probe.out &&
    has "^proc-meminfo free=$((36 * MiB)) total=$((100 * MiB))$" probe.out; }
t_threads() { probe threads 8 2000 1M && has "^dev0 device current=0 .* allocs=16000 frees=16000$"; }
t_mlp() {
    local d=$WORK/mlp && mkdir -p "$d" && cd "$d" &&
    "$MLP" --steps 1500 --save-every 0 --out ref.bin >ref.log &&
    export SPOTRUN_STORE=$d/store SPOTRUN_WORK_DIR=$d/work &&
    { "$SPOTRUN" run --run-id mlp -- "$MLP" --steps 1500 --save-every 0 --out w.bin >run1.log 2>&1 &
      local pid=$! i=0
      while ! grep -q "step 300 " run1.log && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
      "$SPOTRUN" notify --run-id mlp --deadline 30s; wait $pid; test $? = 75; } &&
    "$SPOTRUN" run --run-id mlp -- "$MLP" --steps 1500 --save-every 0 --out w.bin >run2.log 2>&1 &&
    grep "resumed from step" run2.log && cmp ref.bin w.bin && "$SPOTRUN" show mlp | grep "gpu peak"; }
# GPU utilization: the CUDA example kept busy for ~15 s on GPU 0 under
# spotrun sampling NVML every second, while nvidia-smi samples the same
# GPU every second; the two means must agree within 25 points.
t_util() {
    local d=$WORK/util && mkdir -p "$d" && cd "$d" &&
    export SPOTRUN_STORE=$d/store SPOTRUN_WORK_DIR=$d/work &&
    nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -i 0 -lms 1000 \
        >smi.txt 2>smi.err &
    local smi=$!
    CUDA_VISIBLE_DEVICES=0 CUDA_DEVICE_ORDER=PCI_BUS_ID SPOTRUN_GPU_SAMPLE_MS=1000 \
        "$SPOTRUN" run --run-id util --max-restarts 0 -- sh -c '
        end=$(($(date +%s) + 15))
        while [ "$(date +%s)" -lt "$end" ]; do "$1" --steps 200000 --save-every 0 >/dev/null || exit 1; done' \
        sh "$MLP" >run.log 2>&1
    local rc=$?
    kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
    [ "$rc" = 0 ] || { cat run.log; return 1; }
    "$SPOTRUN" show util --json >show.json && "$SPOTRUN" show util | grep "gpu busy" &&
    "$PY" - show.json smi.txt <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["attempt_list"][0]["gpu_utilization"]
smi = [float(l) for l in open(sys.argv[2]) if l.strip().replace(".", "", 1).isdigit()]
assert g and g["samples"] >= 5 and g["devices"] == 1, f"spotrun recorded {g}"
assert len(smi) >= 5, f"nvidia-smi gave {len(smi)} samples"
ours, theirs = g["util_mean"], sum(smi) / len(smi)
print(f"spotrun util_mean {ours:.1f} % over {g['samples']} samples (p50 {g['util_p50']}, "
      f"p95 {g['util_p95']}, idle {g['idle_share']:.2f}); nvidia-smi {theirs:.1f} % over {len(smi)}")
assert abs(ours - theirs) <= 25, "more than 25 points apart"
PY
}
t_torch() {
    LD_PRELOAD=$SHIM SPOTRUN_GPU_DIR=$WORK/gpu "$PY" -c "
import torch
x = torch.empty(256 * 2**20, dtype=torch.uint8, device='cuda'); torch.cuda.synchronize(); print('ok')" &&
    "$PAGEDUMP" "$WORK/gpu" | tee "$WORK/page" && has "^dev0 device .*allocs=[1-9]"; }

rm -rf "$WORK/gpu"; mkdir "$WORK/gpu"
check "runtime allocs counted (device/managed/host)" "cudaMalloc/Managed/Host, current+peak" t_rt
check "driver via dlsym + cuGetProcAddress" "cuMemAlloc, cuMemCreate" t_proc
check "driver pinned host counted" "cuMemHostAlloc, cuMemAllocHost, cuMemFreeHost" t_host
check "pool allocations counted" "cudaMallocFromPoolAsync, cuMemAllocFromPoolAsync" t_pool
check "runtime -> driver counted once" "1 cudaMalloc = 1 alloc" t_once
check "--gpu-mem-limit: OOM + MemGetInfo total" "limit 100 MiB" t_limit
check "threads: exact counts" "8 x 2000 pairs" t_threads
check "CUDA example: preempt + resume bit-exact" "examples/cuda/mlp, spotrun_register" t_mlp
check "GPU utilization vs nvidia-smi" "NVML 1 s samples, means within 25 points" t_util
util=$(grep "^spotrun util_mean" "$WORK/last.log")
if "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    rm -rf "$WORK/gpu"; mkdir "$WORK/gpu"
    check "PyTorch on GPU: allocation counted" "torch.empty(256 MiB, cuda)" t_torch
    save=$(DEVICE=cuda "$SRC/scripts/bench-save.sh" "$BUILD" 2>/dev/null | sed -n 3p)
else
    record "PyTorch on GPU: allocation counted" SKIP "PyTorch with CUDA not importable"
fi
bench=$(BUILD=$BUILD PAIRS=500000 REPEAT=2 "$SRC/scripts/bench-preload.sh" 2>/dev/null | sed -n 2p)

echo
echo "spotrun gpu-check $(date -u +%Y-%m-%d) on ${GPU:-unknown GPU}, CUDA $("$CUDA/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
echo
echo "| check | result | detail |"
echo "| --- | --- | --- |"
printf '%s\n' "${results[@]}"
echo
echo "bench-preload (fake runtime, threads / no shim ns / shim ns / overhead ns): ${bench:-n/a}"
echo "GPU utilization: ${util:-n/a}"
echo "bench-save on the GPU (GiB / sync s / bg s / floor s / bg:floor / sync:bg / slowdown / n2d s): ${save:-n/a}"
[ "$failed" -eq 0 ]
