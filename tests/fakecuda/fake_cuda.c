/*
 * fake_cuda.c - a fake CUDA driver (libcuda.so.1) for machines without a
 * GPU: the handful of driver entry points the tests and the fake runtime
 * use, with the real signatures and error codes (compiled against the real
 * cuda.h), "device" memory being host memory.
 *
 * Knobs: FAKECUDA_TOTAL (bytes per device, enforced; default 16 GiB
 * reported, not enforced), FAKECUDA_DEVICES (default 2). Live allocations
 * are kept in a hash with striped locks so that cuPointerGetAttribute can
 * tell device memory from anything else (and its device), and frees of
 * unknown pointers fail like the real one.
 */
#include <cuda.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define BUCKETS 4096
#define STRIPES 64 /* locks: threads allocating at once rarely meet */
#define MAX_DEV 64

struct block {
    uintptr_t ptr;
    size_t size;
    int dev;
    CUmemorytype type;
    struct block *next;
};

/* One lock per stripe of buckets, and the bytes its blocks hold per device,
 * so that the fake itself scales with threads (the benchmark measures the
 * shim against it). FAKECUDA_TOTAL turns the capacity check on, which
 * takes the global lock (tests only). */
struct stripe {
    pthread_mutex_t lock;
    size_t used[MAX_DEV];
} __attribute__((aligned(64)));

static struct block *table[BUCKETS];
static struct stripe stripes[STRIPES];
static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t total_used[MAX_DEV]; /* under total_lock, with FAKECUDA_TOTAL only */
static __thread int cur_dev;
static unsigned long long next_handle = 1;
static pthread_once_t stripes_once = PTHREAD_ONCE_INIT;

static size_t limit_env; /* FAKECUDA_TOTAL, read once (getenv per call would dominate) */

static void stripes_init(void)
{
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&stripes[i].lock, NULL);
    const char *t = getenv("FAKECUDA_TOTAL");
    limit_env = t ? (size_t)strtoull(t, NULL, 10) : 0;
}

/* 0 = no capacity check (the default: 16 GiB reported, not enforced). */
static size_t total_limit(void)
{
    pthread_once(&stripes_once, stripes_init);
    return limit_env;
}

static size_t total_bytes(void)
{
    const size_t t = total_limit();
    return t ? t : (size_t)16 << 30;
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

static struct stripe *stripe_of(unsigned bucket_index)
{
    pthread_once(&stripes_once, stripes_init);
    return &stripes[bucket_index % STRIPES];
}

static size_t used_bytes(int dev)
{
    size_t u = 0;
    for (int i = 0; i < STRIPES; i++) {
        struct stripe *s = stripe_of((unsigned)i);
        pthread_mutex_lock(&s->lock);
        u += s->used[dev];
        pthread_mutex_unlock(&s->lock);
    }
    return u;
}

static CUresult track(uintptr_t p, size_t size, int dev, CUmemorytype type)
{
    struct block *b = malloc(sizeof *b);
    if (!b)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *b = (struct block){p, size, dev, type, NULL};
    const unsigned i = bucket(p);
    struct stripe *s = stripe_of(i);
    pthread_mutex_lock(&s->lock);
    b->next = table[i];
    table[i] = b;
    if (type != CU_MEMORYTYPE_HOST)
        s->used[dev] += size;
    pthread_mutex_unlock(&s->lock);
    return CUDA_SUCCESS;
}

static struct block *untrack(uintptr_t p, int want_host)
{
    const unsigned i = bucket(p);
    struct stripe *s = stripe_of(i);
    pthread_mutex_lock(&s->lock);
    struct block **pp = &table[i];
    while (*pp && (*pp)->ptr != p)
        pp = &(*pp)->next;
    struct block *b = *pp;
    if (b && (b->type == CU_MEMORYTYPE_HOST) != want_host)
        b = NULL; /* cuMemFree of pinned host memory, or the reverse */
    if (b) {
        *pp = b->next;
        if (b->type != CU_MEMORYTYPE_HOST)
            s->used[b->dev] -= b->size;
    }
    pthread_mutex_unlock(&s->lock);
    if (b && b->type != CU_MEMORYTYPE_HOST && total_limit()) {
        pthread_mutex_lock(&total_lock);
        total_used[b->dev] -= b->size;
        pthread_mutex_unlock(&total_lock);
    }
    return b;
}

/* The block holding p (its type), or 0. */
static CUmemorytype lookup(uintptr_t p, int *dev)
{
    const unsigned i = bucket(p);
    struct stripe *s = stripe_of(i);
    pthread_mutex_lock(&s->lock);
    struct block *b = table[i];
    while (b && b->ptr != p)
        b = b->next;
    const CUmemorytype t = b ? b->type : (CUmemorytype)0;
    if (b && dev)
        *dev = b->dev;
    pthread_mutex_unlock(&s->lock);
    return t;
}

static CUresult alloc_on(int dev, CUdeviceptr *dptr, size_t size, CUmemorytype type, int real_mem)
{
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    const size_t limit = type == CU_MEMORYTYPE_HOST ? 0 : total_limit();
    if (limit) {
        pthread_mutex_lock(&total_lock);
        const int ok = total_used[dev] + size <= limit;
        if (ok)
            total_used[dev] += size;
        pthread_mutex_unlock(&total_lock);
        if (!ok)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    uintptr_t p = 0;
    if (real_mem) {
        void *m = malloc(size);
        p = (uintptr_t)m;
    } else {
        p = (uintptr_t)__atomic_fetch_add(&next_handle, 1, __ATOMIC_RELAXED);
    }
    if (!p || track(p, size, dev, type) != CUDA_SUCCESS) {
        if (real_mem)
            free((void *)p);
        if (limit) {
            pthread_mutex_lock(&total_lock);
            total_used[dev] -= size;
            pthread_mutex_unlock(&total_lock);
        }
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

static CUresult alloc(CUdeviceptr *dptr, size_t size, CUmemorytype type, int real_mem)
{
    return alloc_on(cur_dev, dptr, size, type, real_mem);
}

static CUresult release_as(uintptr_t p, int real_mem, int want_host)
{
    struct block *b = untrack(p, want_host);
    if (!b)
        return CUDA_ERROR_INVALID_VALUE;
    if (real_mem)
        free((void *)p);
    free(b);
    return CUDA_SUCCESS;
}

static CUresult release(uintptr_t p, int real_mem)
{
    return release_as(p, real_mem, 0);
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

/* Pinned host memory: malloc'd, tracked as CU_MEMORYTYPE_HOST (so that
 * cuMemFree refuses it and cuMemFreeHost refuses device memory). */
EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
    if (!pp || (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                                    CU_MEMHOSTALLOC_WRITECOMBINED)))
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr p;
    const CUresult rc = alloc(&p, bytesize, CU_MEMORYTYPE_HOST, 1);
    if (rc == CUDA_SUCCESS)
        *pp = (void *)(uintptr_t)p;
    return rc;
}

EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return cuMemHostAlloc(pp, bytesize, 0);
}

EXPORT CUresult cuMemFreeHost(void *p)
{
    return release_as((uintptr_t)p, 1, 1);
}

/* Memory pools: a pool is its location; allocations from it land on the
 * pool's device, whatever the current one. */
struct CUmemPoolHandle_st {
    int dev;
};

EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || props->location.id < 0 ||
        props->location.id >= device_count())
        return CUDA_ERROR_INVALID_VALUE;
    struct CUmemPoolHandle_st *p = malloc(sizeof *p);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p->dev = props->location.id;
    *pool = p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    free(pool);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                        CUstream s)
{
    (void)s;
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_on(pool->dev, dptr, bytesize, CU_MEMORYTYPE_DEVICE, 1);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream s)
{
    return cuMemAllocFromPoolAsync(dptr, bytesize, pool, s);
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total_b)
{
    const size_t u = used_bytes(cur_dev);
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
    if (attr != CU_POINTER_ATTRIBUTE_MEMORY_TYPE && attr != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = 0;
    const CUmemorytype t = lookup((uintptr_t)ptr, &dev);
    if (!t)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
        *(CUmemorytype *)data = t;
    else
        *(int *)data = dev;
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
    {"cuMemHostAlloc", (void *)cuMemHostAlloc, NULL},
    {"cuMemAllocHost", (void *)cuMemAllocHost_v2, NULL},
    {"cuMemFreeHost", (void *)cuMemFreeHost, NULL},
    {"cuMemPoolCreate", (void *)cuMemPoolCreate, NULL},
    {"cuMemPoolDestroy", (void *)cuMemPoolDestroy, NULL},
    {"cuMemAllocFromPoolAsync", (void *)cuMemAllocFromPoolAsync,
     (void *)cuMemAllocFromPoolAsync_ptsz},
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
