/*
 * cuda_runtime.c - hooks of the CUDA runtime's allocation calls
 * (libcudart), interposed by symbol name.
 *
 * Each hook: forward at once when re-entered (shim_busy); otherwise find the
 * device, reserve the bytes against --gpu-mem-limit, call the real function
 * with the guard raised (so the driver calls the runtime makes are not
 * counted again), then record the pointer or undo. Frees forget the pointer
 * first (so a concurrent allocation that gets the same address back cannot
 * be confused with it) and restore it if the real free fails.
 * Calls whose size is known only afterwards (pitch, 3D) are checked
 * against the limit after the real call and undone when over it.
 * Threads: any; no locks. Not for use from signal handlers (nor is CUDA).
 */
#include "account.h"
#include "hooks.h"
#include "shim.h"

#include <string.h>

static int rt_device(void)
{
    int dev = 0;
    const cudaGetDevice_fn get = REAL(cudaGetDevice);
    if (get) {
        shim_enter();
        if (get(&dev) != SR_cudaSuccess)
            dev = 0;
        shim_leave();
    }
    return acct_dev(dev);
}

/* Reserve, then raise the guard; -1 when the limit refuses. */
static int alloc_begin(enum spotrun_mem_kind kind, size_t size, int *dev)
{
    *dev = rt_device();
    if (acct_reserve(*dev, kind, size) < 0)
        return -1;
    shim_enter();
    return 0;
}

static void alloc_end(int dev, enum spotrun_mem_kind kind, size_t size, sr_cudaError_t rc,
                      void *const *ptr)
{
    shim_leave();
    acct_finish(dev, kind, size, rc == SR_cudaSuccess,
                rc == SR_cudaSuccess && ptr ? (uintptr_t)*ptr : 0);
}

#define RT_PROLOGUE(name, ...)                                                                     \
    shim_init();                                                                                   \
    const name##_fn real = REAL(name);                                                             \
    if (!real)                                                                                     \
        return SR_cudaErrorSymbolNotFound;                                                         \
    if (shim_busy())                                                                               \
    return real(__VA_ARGS__)

#define RT_ALLOC(name, kind, size, ptr, ...)                                                       \
    RT_PROLOGUE(name, __VA_ARGS__);                                                                \
    int dev;                                                                                       \
    if (alloc_begin(kind, size, &dev) < 0)                                                         \
        return SR_cudaErrorMemoryAllocation;                                                       \
    const sr_cudaError_t rc = real(__VA_ARGS__);                                                   \
    alloc_end(dev, kind, size, rc, ptr);                                                           \
    return rc

#define RT_FREE(name, ptr, ...)                                                                    \
    RT_PROLOGUE(name, __VA_ARGS__);                                                                \
    uint64_t packed = 0;                                                                           \
    const int known = (ptr) ? acct_forget((uintptr_t)(ptr), &packed) : 0;                          \
    shim_enter();                                                                                  \
    const sr_cudaError_t rc = real(__VA_ARGS__);                                                   \
    shim_leave();                                                                                  \
    if (rc != SR_cudaSuccess && known)                                                             \
        acct_unforget((uintptr_t)(ptr), packed);                                                   \
    return rc

SPOTRUN_EXPORT sr_cudaError_t cudaMalloc(void **ptr, size_t size)
{
    RT_ALLOC(cudaMalloc, SPOTRUN_MEM_DEVICE, size, ptr, ptr, size);
}

SPOTRUN_EXPORT sr_cudaError_t cudaMallocAsync(void **ptr, size_t size, sr_cudaStream_t stream)
{
    RT_ALLOC(cudaMallocAsync, SPOTRUN_MEM_DEVICE, size, ptr, ptr, size, stream);
}

SPOTRUN_EXPORT sr_cudaError_t cudaMallocManaged(void **ptr, size_t size, unsigned int flags)
{
    RT_ALLOC(cudaMallocManaged, SPOTRUN_MEM_MANAGED, size, ptr, ptr, size, flags);
}

SPOTRUN_EXPORT sr_cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    RT_ALLOC(cudaMallocHost, SPOTRUN_MEM_HOST, size, ptr, ptr, size);
}

SPOTRUN_EXPORT sr_cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags)
{
    RT_ALLOC(cudaHostAlloc, SPOTRUN_MEM_HOST, size, ptr, ptr, size, flags);
}

SPOTRUN_EXPORT sr_cudaError_t cudaFree(void *ptr)
{
    RT_FREE(cudaFree, ptr, ptr);
}

SPOTRUN_EXPORT sr_cudaError_t cudaFreeAsync(void *ptr, sr_cudaStream_t stream)
{
    RT_FREE(cudaFreeAsync, ptr, ptr, stream);
}

SPOTRUN_EXPORT sr_cudaError_t cudaFreeHost(void *ptr)
{
    RT_FREE(cudaFreeHost, ptr, ptr);
}

/* The size of a pitched allocation is known only once it is made. */
static sr_cudaError_t account_after(int dev, sr_cudaError_t rc, void *ptr, size_t size)
{
    if (rc != SR_cudaSuccess) {
        acct_finish(dev, SPOTRUN_MEM_DEVICE, 0, 0, 0);
        return rc;
    }
    if (acct_reserve(dev, SPOTRUN_MEM_DEVICE, size) < 0) {
        const cudaFree_fn f = REAL(cudaFree);
        shim_enter();
        if (f)
            f(ptr);
        shim_leave();
        return SR_cudaErrorMemoryAllocation;
    }
    acct_finish(dev, SPOTRUN_MEM_DEVICE, size, 1, (uintptr_t)ptr);
    return rc;
}

SPOTRUN_EXPORT sr_cudaError_t cudaMallocPitch(void **ptr, size_t *pitch, size_t width,
                                              size_t height)
{
    RT_PROLOGUE(cudaMallocPitch, ptr, pitch, width, height);
    const int dev = rt_device();
    shim_enter();
    const sr_cudaError_t rc = real(ptr, pitch, width, height);
    shim_leave();
    const sr_cudaError_t out = account_after(dev, rc, rc ? NULL : *ptr, rc ? 0 : *pitch * height);
    if (out != rc)
        *ptr = NULL;
    return out;
}

SPOTRUN_EXPORT sr_cudaError_t cudaMalloc3D(sr_pitched_t *pp, sr_extent_t extent)
{
    RT_PROLOGUE(cudaMalloc3D, pp, extent);
    const int dev = rt_device();
    shim_enter();
    const sr_cudaError_t rc = real(pp, extent);
    shim_leave();
    const size_t size = rc ? 0 : pp->pitch * extent.height * extent.depth;
    const sr_cudaError_t out = account_after(dev, rc, rc ? NULL : pp->ptr, size);
    if (out != rc)
        pp->ptr = NULL;
    return out;
}

/* The pool's device need not be the current one: it is the pointer's,
 * asked once the allocation is made (the shim does not track pools); the
 * limit is checked then, and an allocation over it freed again on the
 * caller's stream. */
static int rt_device_of(const void *p)
{
    int dev = -1;
    const cudaPointerGetAttributes_fn get = REAL(cudaPointerGetAttributes);
    if (get) {
        struct sr_cudaPointerAttributes a;
        memset(&a, 0, sizeof a);
        shim_enter();
        if (get(&a, p) == SR_cudaSuccess)
            dev = a.device;
        shim_leave();
    }
    return dev >= 0 ? acct_dev(dev) : rt_device();
}

SPOTRUN_EXPORT sr_cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size,
                                                      sr_cudaMemPool_t pool, sr_cudaStream_t stream)
{
    RT_PROLOGUE(cudaMallocFromPoolAsync, ptr, size, pool, stream);
    shim_enter();
    const sr_cudaError_t rc = real(ptr, size, pool, stream);
    shim_leave();
    if (rc != SR_cudaSuccess || !*ptr) {
        acct_finish(rt_device(), SPOTRUN_MEM_DEVICE, 0, rc == SR_cudaSuccess, 0);
        return rc;
    }
    const int dev = rt_device_of(*ptr);
    if (acct_reserve(dev, SPOTRUN_MEM_DEVICE, size) < 0) {
        const cudaFreeAsync_fn f = REAL(cudaFreeAsync);
        shim_enter();
        if (f)
            f(*ptr, stream);
        shim_leave();
        *ptr = NULL;
        return SR_cudaErrorMemoryAllocation;
    }
    acct_finish(dev, SPOTRUN_MEM_DEVICE, size, 1, (uintptr_t)*ptr);
    return rc;
}

SPOTRUN_EXPORT sr_cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b)
{
    RT_PROLOGUE(cudaMemGetInfo, free_b, total_b);
    shim_enter();
    const sr_cudaError_t rc = real(free_b, total_b);
    shim_leave();
    if (rc == SR_cudaSuccess)
        acct_apply_limit(rt_device(), free_b, total_b);
    return rc;
}
