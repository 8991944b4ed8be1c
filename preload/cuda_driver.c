/*
 * cuda_driver.c - hooks of the CUDA driver's allocation calls (libcuda),
 * and of cuGetProcAddress, through which the CUDA runtime (and anyone
 * else) obtains driver entry points without going through the dynamic
 * linker.
 *
 * The runtime dlopen()s libcuda.so.1 privately and asks dlsym() for
 * cuGetProcAddress_v2 (dl.c hands out ours), then asks that for "cuMemAlloc"
 * & co. Our cuGetProcAddress forwards the query and, when the answer is a
 * function we hook, answers with the hook instead. "Is it one we hook" is
 * decided by pointer, not by name arithmetic: a row whose name is the
 * requested base name plus "" or an "_suffix" ("cuMemAlloc" -> cuMemAlloc_v2,
 * "cuMemAllocAsync" -> cuMemAllocAsync_ptsz) matches only if the real
 * function of that row is exactly the pointer returned. So a legacy v1 entry
 * point handed out for an old cudaVersion is passed through untouched.
 *
 * Driver calls made while the runtime is inside one of our runtime hooks
 * are forwarded without accounting (shim_busy), so nothing counts twice.
 */
#include "account.h"
#include "hooks.h"
#include "shim.h"

#include <dlfcn.h>
#include <string.h>

static int drv_device(void)
{
    int dev = 0;
    const cuCtxGetDevice_fn get = REAL(cuCtxGetDevice);
    if (get) {
        shim_enter();
        if (get(&dev) != SR_CUDA_SUCCESS)
            dev = 0;
        shim_leave();
    }
    return acct_dev(dev);
}

#define DRV_PROLOGUE(name, ...)                                                                    \
    shim_init();                                                                                   \
    const name##_fn real = REAL(name);                                                             \
    if (!real)                                                                                     \
        return SR_CUDA_ERROR_NOT_FOUND;                                                            \
    if (shim_busy())                                                                               \
    return real(__VA_ARGS__)

/* Allocation with the size known up front; `dev_expr` picks the device. */
#define DRV_ALLOC(name, kind, dev_expr, size, key_expr, ...)                                       \
    DRV_PROLOGUE(name, __VA_ARGS__);                                                               \
    const int dev = (dev_expr);                                                                    \
    if (acct_reserve(dev, kind, size) < 0)                                                         \
        return SR_CUDA_ERROR_OUT_OF_MEMORY;                                                        \
    shim_enter();                                                                                  \
    const sr_CUresult rc = real(__VA_ARGS__);                                                      \
    shim_leave();                                                                                  \
    acct_finish(dev, kind, size, rc == SR_CUDA_SUCCESS, rc == SR_CUDA_SUCCESS ? (key_expr) : 0);   \
    return rc

#define DRV_FREE(name, key, ...)                                                                   \
    DRV_PROLOGUE(name, __VA_ARGS__);                                                               \
    uint64_t packed = 0;                                                                           \
    const int known = (key) ? acct_forget((key), &packed) : 0;                                     \
    shim_enter();                                                                                  \
    const sr_CUresult rc = real(__VA_ARGS__);                                                      \
    shim_leave();                                                                                  \
    if (rc != SR_CUDA_SUCCESS && known)                                                            \
        acct_unforget((key), packed);                                                              \
    return rc

SPOTRUN_EXPORT sr_CUresult cuMemAlloc_v2(sr_CUdeviceptr *dptr, size_t size)
{
    DRV_ALLOC(cuMemAlloc_v2, SPOTRUN_MEM_DEVICE, drv_device(), size, (uintptr_t)*dptr, dptr, size);
}

SPOTRUN_EXPORT sr_CUresult cuMemAllocAsync(sr_CUdeviceptr *dptr, size_t size, sr_CUstream s)
{
    DRV_ALLOC(cuMemAllocAsync, SPOTRUN_MEM_DEVICE, drv_device(), size, (uintptr_t)*dptr, dptr, size,
              s);
}

SPOTRUN_EXPORT sr_CUresult cuMemAllocAsync_ptsz(sr_CUdeviceptr *dptr, size_t size, sr_CUstream s)
{
    DRV_ALLOC(cuMemAllocAsync_ptsz, SPOTRUN_MEM_DEVICE, drv_device(), size, (uintptr_t)*dptr, dptr,
              size, s);
}

SPOTRUN_EXPORT sr_CUresult cuMemAllocManaged(sr_CUdeviceptr *dptr, size_t size, unsigned int fl)
{
    DRV_ALLOC(cuMemAllocManaged, SPOTRUN_MEM_MANAGED, drv_device(), size, (uintptr_t)*dptr, dptr,
              size, fl);
}

SPOTRUN_EXPORT sr_CUresult cuMemCreate(sr_CUmemGenericAllocationHandle *h, size_t size,
                                       sr_prop_t prop, unsigned long long fl)
{
    DRV_ALLOC(cuMemCreate, SPOTRUN_MEM_DEVICE, prop ? acct_dev(prop->location_id) : drv_device(),
              size, ACCT_HANDLE_KEY(*h), h, size, prop, fl);
}

SPOTRUN_EXPORT sr_CUresult cuMemFree_v2(sr_CUdeviceptr dptr)
{
    DRV_FREE(cuMemFree_v2, (uintptr_t)dptr, dptr);
}

SPOTRUN_EXPORT sr_CUresult cuMemFreeAsync(sr_CUdeviceptr dptr, sr_CUstream s)
{
    DRV_FREE(cuMemFreeAsync, (uintptr_t)dptr, dptr, s);
}

SPOTRUN_EXPORT sr_CUresult cuMemFreeAsync_ptsz(sr_CUdeviceptr dptr, sr_CUstream s)
{
    DRV_FREE(cuMemFreeAsync_ptsz, (uintptr_t)dptr, dptr, s);
}

SPOTRUN_EXPORT sr_CUresult cuMemRelease(sr_CUmemGenericAllocationHandle h)
{
    DRV_FREE(cuMemRelease, ACCT_HANDLE_KEY(h), h);
}

SPOTRUN_EXPORT sr_CUresult cuMemAllocPitch_v2(sr_CUdeviceptr *dptr, size_t *pitch, size_t width,
                                              size_t height, unsigned int elem)
{
    DRV_PROLOGUE(cuMemAllocPitch_v2, dptr, pitch, width, height, elem);
    const int dev = drv_device();
    shim_enter();
    const sr_CUresult rc = real(dptr, pitch, width, height, elem);
    shim_leave();
    if (rc != SR_CUDA_SUCCESS) {
        acct_finish(dev, SPOTRUN_MEM_DEVICE, 0, 0, 0);
        return rc;
    }
    const size_t size = *pitch * height;
    if (acct_reserve(dev, SPOTRUN_MEM_DEVICE, size) < 0) {
        const cuMemFree_v2_fn f = REAL(cuMemFree_v2);
        shim_enter();
        if (f)
            f(*dptr);
        shim_leave();
        *dptr = 0;
        return SR_CUDA_ERROR_OUT_OF_MEMORY;
    }
    acct_finish(dev, SPOTRUN_MEM_DEVICE, size, 1, (uintptr_t)*dptr);
    return rc;
}

/* Pinned host memory (what cudaMallocHost / cudaHostAlloc become), counted
 * on the current device like the runtime's; never limited. */
SPOTRUN_EXPORT sr_CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int fl)
{
    DRV_ALLOC(cuMemHostAlloc, SPOTRUN_MEM_HOST, drv_device(), size, (uintptr_t)*pp, pp, size, fl);
}

SPOTRUN_EXPORT sr_CUresult cuMemAllocHost_v2(void **pp, size_t size)
{
    DRV_ALLOC(cuMemAllocHost_v2, SPOTRUN_MEM_HOST, drv_device(), size, (uintptr_t)*pp, pp, size);
}

SPOTRUN_EXPORT sr_CUresult cuMemFreeHost(void *p)
{
    DRV_FREE(cuMemFreeHost, (uintptr_t)p, p);
}

/* A pool's memory lives on the pool's device, which need not be the
 * current one (that is what cuMemAllocFromPoolAsync is for), and the shim
 * does not track pools: the device is the pointer's, asked once the
 * allocation is made; the limit is checked then, and an allocation over it
 * is freed again (stream-ordered, on the caller's stream). */
static int drv_device_of(sr_CUdeviceptr p)
{
    int dev = -1;
    const cuPointerGetAttribute_fn get = REAL(cuPointerGetAttribute);
    if (get) {
        shim_enter();
        if (get(&dev, SR_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) != SR_CUDA_SUCCESS)
            dev = -1;
        shim_leave();
    }
    return dev >= 0 ? acct_dev(dev) : drv_device();
}

#define DRV_POOL_ALLOC(name, free_name)                                                            \
    DRV_PROLOGUE(name, dptr, size, pool, s);                                                       \
    shim_enter();                                                                                  \
    const sr_CUresult rc = real(dptr, size, pool, s);                                              \
    shim_leave();                                                                                  \
    if (rc != SR_CUDA_SUCCESS || !*dptr) {                                                         \
        acct_finish(drv_device(), SPOTRUN_MEM_DEVICE, 0, rc == SR_CUDA_SUCCESS, 0);                \
        return rc;                                                                                 \
    }                                                                                              \
    const int dev = drv_device_of(*dptr);                                                          \
    if (acct_reserve(dev, SPOTRUN_MEM_DEVICE, size) < 0) {                                         \
        const free_name##_fn f = REAL(free_name);                                                  \
        shim_enter();                                                                              \
        if (f)                                                                                     \
            f(*dptr, s);                                                                           \
        shim_leave();                                                                              \
        *dptr = 0;                                                                                 \
        return SR_CUDA_ERROR_OUT_OF_MEMORY;                                                        \
    }                                                                                              \
    acct_finish(dev, SPOTRUN_MEM_DEVICE, size, 1, (uintptr_t)*dptr);                               \
    return rc

SPOTRUN_EXPORT sr_CUresult cuMemAllocFromPoolAsync(sr_CUdeviceptr *dptr, size_t size,
                                                   sr_CUmemoryPool pool, sr_CUstream s)
{
    DRV_POOL_ALLOC(cuMemAllocFromPoolAsync, cuMemFreeAsync);
}

SPOTRUN_EXPORT sr_CUresult cuMemAllocFromPoolAsync_ptsz(sr_CUdeviceptr *dptr, size_t size,
                                                        sr_CUmemoryPool pool, sr_CUstream s)
{
    DRV_POOL_ALLOC(cuMemAllocFromPoolAsync_ptsz, cuMemFreeAsync_ptsz);
}

SPOTRUN_EXPORT sr_CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total_b)
{
    DRV_PROLOGUE(cuMemGetInfo_v2, free_b, total_b);
    shim_enter();
    const sr_CUresult rc = real(free_b, total_b);
    shim_leave();
    if (rc == SR_CUDA_SUCCESS)
        acct_apply_limit(drv_device(), free_b, total_b);
    return rc;
}

/* The real function of row id, learning it from the object that holds
 * `p` when it is not known yet. */
static void *real_near(int id, void *p)
{
    void *real = __atomic_load_n(&shim_reals[id], __ATOMIC_ACQUIRE);
    if (real)
        return real;
    Dl_info info;
    if (!dladdr(p, &info) || !info.dli_fname)
        return NULL;
    void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return NULL;
    real = shim_libc_dlsym(h, shim_hooks[id].name);
    dlclose(h);
    shim_real_offer((enum shim_id)id, real);
    return real;
}

/* The pointer to hand out for a cuGetProcAddress answer `p` to `sym`. */
static void *swap_proc(const char *sym, void *p)
{
    const size_t n = strlen(sym);
    for (int id = 0; id < SHIM_NHOOKS; id++) {
        const char *name = shim_hooks[id].name;
        if (shim_hooks[id].family != SHIM_DRV || strncmp(name, sym, n) != 0 ||
            (name[n] != '\0' && name[n] != '_'))
            continue;
        if (p == shim_hooks[id].hook)
            return p;
        if (real_near(id, p) == p)
            return shim_hooks[id].hook;
    }
    return p;
}

SPOTRUN_EXPORT sr_CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver,
                                               sr_cuuint64_t flags, int *status)
{
    shim_init();
    const cuGetProcAddress_v2_fn real = REAL(cuGetProcAddress_v2);
    if (!real)
        return SR_CUDA_ERROR_NOT_FOUND;
    const sr_CUresult rc = real(sym, pfn, ver, flags, status);
    if (rc == SR_CUDA_SUCCESS && sym && pfn && *pfn)
        *pfn = swap_proc(sym, *pfn);
    return rc;
}

SPOTRUN_EXPORT sr_CUresult cuGetProcAddress(const char *sym, void **pfn, int ver,
                                            sr_cuuint64_t flags)
{
    shim_init();
    const cuGetProcAddress_fn real = REAL(cuGetProcAddress);
    if (!real)
        return SR_CUDA_ERROR_NOT_FOUND;
    const sr_CUresult rc = real(sym, pfn, ver, flags);
    if (rc == SR_CUDA_SUCCESS && sym && pfn && *pfn)
        *pfn = swap_proc(sym, *pfn);
    return rc;
}
