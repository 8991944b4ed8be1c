/*
 * fake_cuda.c - a fake CUDA driver (libcuda.so.1) for machines without a
 * GPU: the handful of driver entry points the tests and the fake runtime
 * use, with the real signatures and error codes (compiled against the real
 * cuda.h), "device" memory being host memory.
 *
 * Knobs: FAKECUDA_TOTAL (bytes per device, default 16 GiB),
 * FAKECUDA_DEVICES (default 2). Live allocations are kept in a small
 * mutex-guarded hash so that cuPointerGetAttribute can tell device memory
 * from anything else, and frees of unknown pointers fail like the real one.
 */
#include <cuda.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define BUCKETS 4096

struct block {
    uintptr_t ptr;
    size_t size;
    int dev;
    CUmemorytype type;
    struct block *next;
};

static struct block *table[BUCKETS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t used[64];
static __thread int cur_dev;
static unsigned long long next_handle = 1;

static size_t total_bytes(void)
{
    const char *t = getenv("FAKECUDA_TOTAL");
    return t ? (size_t)strtoull(t, NULL, 10) : (size_t)16 << 30;
}

static int device_count(void)
{
    const char *t = getenv("FAKECUDA_DEVICES");
    return t ? atoi(t) : 2;
}

static unsigned bucket(uintptr_t p)
{
    return (unsigned)((p >> 4) * 2654435761u) % BUCKETS;
}

static CUresult track(uintptr_t p, size_t size, int dev, CUmemorytype type)
{
    struct block *b = malloc(sizeof *b);
    if (!b)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *b = (struct block){p, size, dev, type, NULL};
    pthread_mutex_lock(&lock);
    b->next = table[bucket(p)];
    table[bucket(p)] = b;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

static struct block *untrack(uintptr_t p)
{
    pthread_mutex_lock(&lock);
    struct block **pp = &table[bucket(p)];
    while (*pp && (*pp)->ptr != p)
        pp = &(*pp)->next;
    struct block *b = *pp;
    if (b) {
        *pp = b->next;
        used[b->dev] -= b->size;
    }
    pthread_mutex_unlock(&lock);
    return b;
}

static CUresult alloc(CUdeviceptr *dptr, size_t size, CUmemorytype type, int real_mem)
{
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    const int ok = used[cur_dev] + size <= total_bytes();
    if (ok)
        used[cur_dev] += size;
    pthread_mutex_unlock(&lock);
    if (!ok)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t p;
    if (real_mem) {
        void *m = malloc(size);
        if (!m)
            return CUDA_ERROR_OUT_OF_MEMORY;
        p = (uintptr_t)m;
    } else {
        pthread_mutex_lock(&lock);
        p = (uintptr_t)next_handle++;
        pthread_mutex_unlock(&lock);
    }
    if (track(p, size, cur_dev, type) != CUDA_SUCCESS) {
        if (real_mem)
            free((void *)p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

static CUresult release(uintptr_t p, int real_mem)
{
    struct block *b = untrack(p);
    if (!b)
        return CUDA_ERROR_INVALID_VALUE;
    if (real_mem)
        free((void *)p);
    free(b);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuInit(unsigned int flags)
{
    return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
    *v = CUDA_VERSION;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
    *n = device_count();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    if (dev < 0 || dev >= device_count())
        return CUDA_ERROR_INVALID_DEVICE;
    *ctx = (CUcontext)(uintptr_t)(dev + 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    cur_dev = (int)(uintptr_t)ctx - 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *dev)
{
    *dev = cur_dev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
    return alloc(dptr, size, CU_MEMORYTYPE_DEVICE, 1);
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags)
{
    (void)flags;
    return alloc(dptr, size, CU_MEMORYTYPE_UNIFIED, 1);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream s)
{
    (void)s;
    return alloc(dptr, size, CU_MEMORYTYPE_DEVICE, 1);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream s)
{
    return cuMemAllocAsync(dptr, size, s);
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                                   unsigned int elem)
{
    (void)elem;
    if (!pitch)
        return CUDA_ERROR_INVALID_VALUE;
    *pitch = (width + 511) & ~(size_t)511;
    return alloc(dptr, *pitch * height, CU_MEMORYTYPE_DEVICE, 1);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
    return release((uintptr_t)p, 1);
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    (void)s;
    return release((uintptr_t)p, 1);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
    return cuMemFreeAsync(p, s);
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size,
                            const CUmemAllocationProp *prop, unsigned long long flags)
{
    if (!prop || flags)
        return CUDA_ERROR_INVALID_VALUE;
    const int save = cur_dev;
    cur_dev = prop->location.id;
    CUdeviceptr p;
    const CUresult rc = alloc(&p, size, CU_MEMORYTYPE_DEVICE, 0);
    cur_dev = save;
    if (rc == CUDA_SUCCESS)
        *h = (CUmemGenericAllocationHandle)p;
    return rc;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
    return release((uintptr_t)h, 0);
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total_b)
{
    pthread_mutex_lock(&lock);
    const size_t u = used[cur_dev];
    pthread_mutex_unlock(&lock);
    *total_b = total_bytes();
    *free_b = *total_b - u;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr)
{
    if (attr != CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
        return CUDA_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&lock);
    struct block *b = table[bucket((uintptr_t)ptr)];
    while (b && b->ptr != (uintptr_t)ptr)
        b = b->next;
    const CUmemorytype t = b ? b->type : (CUmemorytype)0;
    pthread_mutex_unlock(&lock);
    if (!b)
        return CUDA_ERROR_INVALID_VALUE;
    *(CUmemorytype *)data = t;
    return CUDA_SUCCESS;
}

struct proc {
    const char *name;
    void *fn, *fn_ptsz;
};

#undef cuGetProcAddress
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int ver, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status);
EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver, cuuint64_t flags);

static const struct proc procs[] = {
    {"cuInit", (void *)cuInit, NULL},
    {"cuDriverGetVersion", (void *)cuDriverGetVersion, NULL},
    {"cuDeviceGetCount", (void *)cuDeviceGetCount, NULL},
    {"cuDevicePrimaryCtxRetain", (void *)cuDevicePrimaryCtxRetain, NULL},
    {"cuCtxSetCurrent", (void *)cuCtxSetCurrent, NULL},
    {"cuCtxGetDevice", (void *)cuCtxGetDevice, NULL},
    {"cuMemAlloc", (void *)cuMemAlloc_v2, NULL},
    {"cuMemAllocManaged", (void *)cuMemAllocManaged, NULL},
    {"cuMemAllocAsync", (void *)cuMemAllocAsync, (void *)cuMemAllocAsync_ptsz},
    {"cuMemAllocPitch", (void *)cuMemAllocPitch_v2, NULL},
    {"cuMemFree", (void *)cuMemFree_v2, NULL},
    {"cuMemFreeAsync", (void *)cuMemFreeAsync, (void *)cuMemFreeAsync_ptsz},
    {"cuMemCreate", (void *)cuMemCreate, NULL},
    {"cuMemRelease", (void *)cuMemRelease, NULL},
    {"cuMemGetInfo", (void *)cuMemGetInfo_v2, NULL},
    {"cuMemcpy", (void *)cuMemcpy, NULL},
    {"cuPointerGetAttribute", (void *)cuPointerGetAttribute, NULL},
    {"cuGetProcAddress", (void *)cuGetProcAddress_v2, NULL},
};

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int ver, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        if (strcmp(procs[i].name, symbol) != 0)
            continue;
        if (ver < 3020 && strcmp(symbol, "cuInit") != 0) {
            if (status)
                *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
            *pfn = NULL;
            return CUDA_ERROR_NOT_FOUND;
        }
        const int ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
        *pfn = ptsz && procs[i].fn_ptsz ? procs[i].fn_ptsz : procs[i].fn;
        if (status)
            *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    *pfn = NULL;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, ver, flags, NULL);
}
