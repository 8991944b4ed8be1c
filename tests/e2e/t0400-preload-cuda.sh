#!/usr/bin/env bash
# The shim's CUDA allocation accounting, against the fake CUDA runtime and
# driver (tests/fakecuda): interception, the cuGetProcAddress path, no double
# counting, pinned host and pool allocations, limits (with other threads
# holding quota), threads, and a missing real CUDA.
. "$(dirname "$0")/lib.sh"

if [ -z "${FAKECUDA:-}" ]; then
    say "ok 1 # skip: no fake CUDA libraries (CUDA headers not found at configure time)"
    exit 0
fi
probe() { LD_PRELOAD=$SPOTRUN_PRELOAD SPOTRUN_GPU_DIR=$PWD/gpu "$FAKECUDA/cudaprobe" "$@"; }
pages() { "$FAKECUDA/pagedump" gpu; }
fresh() { rm -rf gpu && mkdir gpu; }
MiB=1048576

test_expect_success 'runtime allocations are counted per kind with current and peak' '
    fresh &&
    probe malloc 1M malloc 2M free 0 managed 1M host 1M >out &&
    ! grep -v "rc=0" out &&
    pages >p && cat p &&
    grep "^dev0 device current=$((2 * MiB)) peak=$((3 * MiB)) allocs=2 frees=1$" p &&
    grep "^dev0 managed current=$MiB peak=$MiB allocs=1 frees=0$" p &&
    grep "^dev0 host current=$MiB peak=$MiB allocs=1 frees=0$" p
'

test_expect_success 'async, pitched and 3D allocations count their real size' '
    fresh &&
    probe async 1M pitch 1000 10 3d 100 10 10 free 0 >out &&
    ! grep -v "rc=0" out &&
    pages >p && cat p &&
    grep "^dev0 device current=$((10240 + 51200)) peak=$((MiB + 10240 + 51200)) allocs=3 frees=1$" p
'

test_expect_success 'the runtime calling the driver through cuGetProcAddress counts once' '
    fresh &&
    probe malloc 4M >out &&
    pages >p && grep "^dev0 device current=$((4 * MiB)) .* allocs=1 frees=0$" p
'

test_expect_success 'driver calls obtained with dlsym + cuGetProcAddress are counted' '
    fresh &&
    probe proc-alloc 1M proc-create 2M free 0 >out &&
    ! grep -v "rc=0" out &&
    pages >p && cat p &&
    grep "^dev0 device current=$((2 * MiB)) peak=$((3 * MiB)) allocs=2 frees=1$" p
'

test_expect_success 'pinned host memory from the driver (cuMemHostAlloc, cuMemAllocHost) is counted as host' '
    fresh &&
    probe proc-hostalloc 1M proc-allochost 2M free 0 >out &&
    ! grep -v "rc=0" out &&
    pages >p && cat p &&
    grep "^dev0 host current=$((2 * MiB)) peak=$((3 * MiB)) allocs=2 frees=1$" p &&
    ! grep "^dev0 device" p
'

test_expect_success 'cudaMallocHost and cudaHostAlloc reaching cuMemHostAlloc count once' '
    fresh &&
    probe host 1M hostalloc 1M free 0 >out &&
    ! grep -v "rc=0" out &&
    pages >p && cat p &&
    grep "^dev0 host current=$MiB peak=$((2 * MiB)) allocs=2 frees=1$" p
'

test_expect_success 'pool allocations count on the pool device, not the current one' '
    fresh &&
    probe pool-alloc 1 1M proc-pool-alloc 1 2M free 0 >out &&
    ! grep -v "rc=0" out &&
    pages >p && cat p &&
    grep "^dev1 device current=$((2 * MiB)) peak=$((3 * MiB)) allocs=2 frees=1$" p &&
    ! grep "^dev0" p
'

test_expect_success 'pool allocations over --gpu-mem-limit fail with 2 and are given back' '
    fresh &&
    FAKECUDA_TOTAL=$((5 * MiB)) SPOTRUN_GPU_MEM_LIMIT=4M \
        probe pool-alloc 0 3M pool-alloc 0 2M proc-pool-alloc 0 2M pool-alloc 0 1M >out &&
    cat out &&
    test "$(sed -n 1p out)" = "pool-alloc rc=0" &&
    test "$(sed -n 2p out)" = "pool-alloc rc=2" &&
    test "$(sed -n 3p out)" = "proc-pool-alloc rc=2" &&
    test "$(sed -n 4p out)" = "pool-alloc rc=0" &&
    pages >p && cat p &&
    grep "^dev0 device current=$((4 * MiB)) peak=$((4 * MiB)) allocs=2 frees=0$" p &&
    grep "^dev0 failed=2 limited=2$" p
'

test_expect_success 'under --gpu-mem-limit, quota another thread holds does not refuse what fits' '
    fresh &&
    SPOTRUN_GPU_MEM_LIMIT=4M probe park 1M malloc 4M meminfo malloc 1 >out &&
    cat out &&
    grep "^malloc rc=0$" out && grep "^malloc rc=2$" out &&
    grep "^meminfo free=0 total=$((4 * MiB))$" out &&
    pages >p && cat p &&
    grep "^dev0 device current=$((4 * MiB)) peak=$((4 * MiB)) allocs=2 frees=1$" p
'

test_expect_success '8 threads under --gpu-mem-limit: nothing refused that fits, exact counts' '
    fresh &&
    SPOTRUN_GPU_MEM_LIMIT=1M probe threads 8 20000 4096 >out && grep "threads rc=0" out &&
    pages >p && cat p &&
    grep "^dev0 device current=0 peak=[0-9]* allocs=160000 frees=160000$" p &&
    peak=$(sed -n "s/^dev0 device .*peak=\([0-9]*\).*/\1/p" p) &&
    test "$peak" -le $MiB && ! grep failed p
'

test_expect_success 'allocations are counted on the current device' '
    fresh &&
    probe device 1 malloc 1M >out &&
    pages >p && grep "^dev1 device current=$MiB" p && ! grep "^dev0" p
'

test_expect_success 'over --gpu-mem-limit: cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY (2)' '
    fresh &&
    SPOTRUN_GPU_MEM_LIMIT=4M probe malloc 3M malloc 2M proc-alloc 2M managed 2M malloc 1M >out &&
    cat out &&
    test "$(sed -n 1p out)" = "malloc rc=0" &&
    test "$(sed -n 2p out)" = "malloc rc=2" &&
    test "$(sed -n 3p out)" = "proc-alloc rc=2" &&
    test "$(sed -n 4p out)" = "managed rc=2" &&
    test "$(sed -n 5p out)" = "malloc rc=0" &&
    pages >p && grep "^dev0 failed=3 limited=3$" p
'

test_expect_success 'under a limit, MemGetInfo reports the limit as total (runtime and driver)' '
    fresh &&
    SPOTRUN_GPU_MEM_LIMIT=64M probe malloc 16M meminfo proc-meminfo >out &&
    grep "^meminfo free=$((48 * MiB)) total=$((64 * MiB))$" out &&
    grep "^proc-meminfo free=$((48 * MiB)) total=$((64 * MiB))$" out
'

test_expect_success 'without a limit MemGetInfo is the real answer' '
    "$FAKECUDA/cudaprobe" meminfo >ref && probe meminfo >got && cmp ref got
'

test_expect_success '8 threads x 20000 alloc/free pairs: exact counts, nothing left' '
    fresh &&
    probe threads 8 20000 4096 >out && grep "threads rc=0" out &&
    pages >p && cat p &&
    grep "^dev0 device current=0 peak=[0-9]* allocs=160000 frees=160000$" p &&
    grep "untracked=0" p
'

test_expect_success 'a real error is passed through and counted as a failure' '
    fresh &&
    FAKECUDA_TOTAL=$MiB probe malloc 2M >out && grep "malloc rc=2" out &&
    pages >p && grep "^dev0 failed=1 limited=0$" p
'

test_expect_success 'no CUDA loaded: the hook returns cudaErrorSymbolNotFound (500), no crash' '
    LD_PRELOAD=$SPOTRUN_PRELOAD "$PY" -c "
import ctypes
lib = ctypes.CDLL(None)
p = ctypes.c_void_p()
print(lib.cudaMalloc(ctypes.byref(p), 16), lib.cuMemAlloc_v2(ctypes.byref(p), 16))
" >out && test "$(cat out)" = "500 500"
'

test_expect_success 'dlsym(RTLD_NEXT) through the shim still resolves from the caller' '
    LD_PRELOAD=$SPOTRUN_PRELOAD "$PY" -c "
import ctypes
libc = ctypes.CDLL(None)
libc.dlsym.restype = ctypes.c_void_p
libc.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
a = libc.dlsym(ctypes.c_void_p(0), b\"getpid\")
b = libc.dlsym(ctypes.c_void_p(-1), b\"getpid\")
print(a is not None and b is not None and a == b)
" >out && test "$(cat out)" = True
'

test_done
