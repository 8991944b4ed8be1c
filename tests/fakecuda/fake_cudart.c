/*
 * fake_cudart.c - a fake CUDA runtime (libcudart.so.13) on top of the
 * driver, shaped like the real one where the shim cares: libcuda.so.1 is
 * dlopen()ed privately (RTLD_LOCAL), cuGetProcAddress_v2 is taken from it
 * with dlsym() on that handle, and every other driver entry point is taken
 * through cuGetProcAddress. Signatures and error codes come from the real
 * cuda_runtime_api.h. Only allocation, copies, device selection and a few
 * queries exist; kernels do not.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

#define DRIVER_FUNCS(X)                                                                            \
    X(cuInit, (unsigned))                                                                          \
    X(cuDeviceGetCount, (int *))                                                                   \
    X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))                                           \
    X(cuCtxSetCurrent, (CUcontext))                                                                \
    X(cuMemAlloc, (CUdeviceptr *, size_t))                                                         \
    X(cuMemAllocManaged, (CUdeviceptr *, size_t, unsigned))                                        \
    X(cuMemAllocAsync, (CUdeviceptr *, size_t, CUstream))                                          \
    X(cuMemAllocPitch, (CUdeviceptr *, size_t *, size_t, size_t, unsigned))                        \
    X(cuMemFree, (CUdeviceptr))                                                                    \
    X(cuMemFreeAsync, (CUdeviceptr, CUstream))                                                     \
    X(cuMemGetInfo, (size_t *, size_t *))                                                          \
    X(cuMemcpy, (CUdeviceptr, CUdeviceptr, size_t))                                                \
    X(cuPointerGetAttribute, (void *, CUpointer_attribute, CUdeviceptr))                           \
    X(cuMemHostAlloc, (void **, size_t, unsigned))                                                 \
    X(cuMemFreeHost, (void *))                                                                     \
    X(cuMemPoolCreate, (CUmemoryPool *, const CUmemPoolProps *))                                   \
    X(cuMemPoolDestroy, (CUmemoryPool))                                                            \
    X(cuMemAllocFromPoolAsync, (CUdeviceptr *, size_t, CUmemoryPool, CUstream))

#define DECL(name, params) static CUresult(*d_##name) params;
DRIVER_FUNCS(DECL)
#undef DECL

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cudaError_t init_error = cudaSuccess;
static __thread int cur_dev;
static __thread cudaError_t last_error;

static void load_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        init_error = cudaErrorInsufficientDriver;
        return;
    }
    typedef CUresult (*gpa_t)(const char *, void **, int, cuuint64_t,
                              CUdriverProcAddressQueryResult *);
    const gpa_t gpa = (gpa_t)dlsym(h, "cuGetProcAddress_v2");
    if (!gpa) {
        init_error = cudaErrorInsufficientDriver;
        return;
    }
#define GET(name, params)                                                                          \
    if (gpa(#name, (void **)&d_##name, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, NULL) !=         \
        CUDA_SUCCESS)                                                                              \
        init_error = cudaErrorInsufficientDriver;
    DRIVER_FUNCS(GET)
#undef GET
    if (init_error == cudaSuccess && d_cuInit(0) != CUDA_SUCCESS)
        init_error = cudaErrorInitializationError;
}

static cudaError_t ready(void)
{
    pthread_once(&once, load_driver);
    return init_error;
}

static cudaError_t map(CUresult rc)
{
    switch (rc) {
    case CUDA_SUCCESS:
        return cudaSuccess;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return cudaErrorMemoryAllocation;
    case CUDA_ERROR_INVALID_VALUE:
        return cudaErrorInvalidValue;
    case CUDA_ERROR_INVALID_DEVICE:
        return cudaErrorInvalidDevice;
    default:
        return cudaErrorUnknown;
    }
}

#define CALL(expr)                                                                                 \
    do {                                                                                           \
        cudaError_t e_ = ready();                                                                  \
        if (e_ == cudaSuccess)                                                                     \
            e_ = map(expr);                                                                        \
        if (e_ != cudaSuccess)                                                                     \
            last_error = e_;                                                                       \
        return e_;                                                                                 \
    } while (0)

EXPORT cudaError_t cudaMalloc(void **p, size_t size)
{
    CALL(d_cuMemAlloc((CUdeviceptr *)p, size));
}
EXPORT cudaError_t cudaMallocManaged(void **p, size_t size, unsigned int flags)
{
    CALL(d_cuMemAllocManaged((CUdeviceptr *)p, size, flags));
}
EXPORT cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s)
{
    CALL(d_cuMemAllocAsync((CUdeviceptr *)p, size, (CUstream)s));
}
EXPORT cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t w, size_t h)
{
    CALL(d_cuMemAllocPitch((CUdeviceptr *)p, pitch, w, h, 4));
}
EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pp, struct cudaExtent e)
{
    size_t pitch = 0;
    void *p = NULL;
    const cudaError_t rc = cudaMallocPitch(&p, &pitch, e.width, e.height * e.depth);
    if (rc == cudaSuccess)
        *pp =
            (struct cudaPitchedPtr){.ptr = p, .pitch = pitch, .xsize = e.width, .ysize = e.height};
    return rc;
}
EXPORT cudaError_t cudaFree(void *p)
{
    if (!p)
        return ready();
    CALL(d_cuMemFree((CUdeviceptr)p));
}
EXPORT cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    CALL(d_cuMemFreeAsync((CUdeviceptr)p, (CUstream)s));
}
/* Pinned host memory goes through the driver, like the real runtime
 * (cudaHostAlloc's flags have the values of cuMemHostAlloc's). */
EXPORT cudaError_t cudaMallocHost(void **p, size_t size)
{
    CALL(d_cuMemHostAlloc(p, size, 0));
}
EXPORT cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags)
{
    CALL(d_cuMemHostAlloc(p, size, flags));
}
EXPORT cudaError_t cudaFreeHost(void *p)
{
    if (!p)
        return ready();
    CALL(d_cuMemFreeHost(p));
}
EXPORT cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const struct cudaMemPoolProps *props)
{
    if (!props)
        return cudaErrorInvalidValue;
    CUmemPoolProps p;
    memset(&p, 0, sizeof p);
    p.allocType = (CUmemAllocationType)props->allocType;
    p.handleTypes = (CUmemAllocationHandleType)props->handleTypes;
    p.location.type = (CUmemLocationType)props->location.type;
    p.location.id = props->location.id;
    CALL(d_cuMemPoolCreate((CUmemoryPool *)pool, &p));
}
EXPORT cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool)
{
    CALL(d_cuMemPoolDestroy((CUmemoryPool)pool));
}
EXPORT cudaError_t cudaMallocFromPoolAsync(void **p, size_t size, cudaMemPool_t pool,
                                           cudaStream_t s)
{
    CALL(d_cuMemAllocFromPoolAsync((CUdeviceptr *)p, size, (CUmemoryPool)pool, (CUstream)s));
}
EXPORT cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b)
{
    CALL(d_cuMemGetInfo(free_b, total_b));
}
EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    (void)kind;
    CALL(d_cuMemcpy((CUdeviceptr)dst, (CUdeviceptr)src, n));
}
EXPORT cudaError_t cudaGetDeviceCount(int *n)
{
    CALL(d_cuDeviceGetCount(n));
}
EXPORT cudaError_t cudaSetDevice(int dev)
{
    cudaError_t e = ready();
    CUcontext ctx;
    if (e == cudaSuccess)
        e = map(d_cuDevicePrimaryCtxRetain(&ctx, dev));
    if (e == cudaSuccess)
        e = map(d_cuCtxSetCurrent(ctx));
    if (e == cudaSuccess)
        cur_dev = dev;
    return e;
}
EXPORT cudaError_t cudaGetDevice(int *dev)
{
    *dev = cur_dev;
    return ready();
}
EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    memset(a, 0, sizeof *a);
    cudaError_t e = ready();
    if (e != cudaSuccess)
        return e;
    CUmemorytype t;
    if (d_cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)p) ==
        CUDA_SUCCESS) {
        int dev = cur_dev;
        d_cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)p);
        a->type = t == CU_MEMORYTYPE_UNIFIED ? cudaMemoryTypeManaged
                  : t == CU_MEMORYTYPE_HOST  ? cudaMemoryTypeHost
                                             : cudaMemoryTypeDevice;
        a->device = dev;
        a->devicePointer = (void *)p;
        if (t == CU_MEMORYTYPE_HOST)
            a->hostPointer = (void *)p;
    } else {
        a->type = cudaMemoryTypeUnregistered;
        a->hostPointer = (void *)p;
    }
    return cudaSuccess;
}
EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    return ready();
}
EXPORT cudaError_t cudaGetLastError(void)
{
    const cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}
EXPORT const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess:
        return "no error";
    case cudaErrorMemoryAllocation:
        return "out of memory";
    case cudaErrorInsufficientDriver:
        return "CUDA driver version is insufficient";
    default:
        return "fake cuda error";
    }
}
