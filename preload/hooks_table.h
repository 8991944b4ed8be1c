/*
 * hooks_table.h - THE table of every foreign symbol the shim touches, as one
 * X-macro (see hooks.h for the families and what is generated from it).
 * Each row: family, return type, name, parameter list. Kept free of
 * includes so that the linker's version script (the exports) is generated
 * from it too (exports.map.c).
 */
#ifndef SPOTRUN_HOOKS_TABLE_H
#define SPOTRUN_HOOKS_TABLE_H

#define SHIM_HOOKS(X)                                                                              \
    X(RT, sr_cudaError_t, cudaMalloc, (void **ptr, size_t size))                                   \
    X(RT, sr_cudaError_t, cudaFree, (void *ptr))                                                   \
    X(RT, sr_cudaError_t, cudaMallocAsync, (void **ptr, size_t size, sr_cudaStream_t stream))      \
    X(RT, sr_cudaError_t, cudaFreeAsync, (void *ptr, sr_cudaStream_t stream))                      \
    X(RT, sr_cudaError_t, cudaMallocManaged, (void **ptr, size_t size, unsigned int flags))        \
    X(RT, sr_cudaError_t, cudaMallocPitch,                                                         \
      (void **ptr, size_t *pitch, size_t width, size_t height))                                    \
    X(RT, sr_cudaError_t, cudaMalloc3D, (sr_pitched_t * pp, sr_extent_t extent))                   \
    X(RT, sr_cudaError_t, cudaMallocHost, (void **ptr, size_t size))                               \
    X(RT, sr_cudaError_t, cudaHostAlloc, (void **ptr, size_t size, unsigned int flags))            \
    X(RT, sr_cudaError_t, cudaFreeHost, (void *ptr))                                               \
    X(RT, sr_cudaError_t, cudaMallocFromPoolAsync,                                                 \
      (void **ptr, size_t size, sr_cudaMemPool_t pool, sr_cudaStream_t stream))                    \
    X(RT, sr_cudaError_t, cudaMemGetInfo, (size_t * free_b, size_t * total_b))                     \
    X(DRV, sr_CUresult, cuMemAlloc_v2, (sr_CUdeviceptr * dptr, size_t size))                       \
    X(DRV, sr_CUresult, cuMemFree_v2, (sr_CUdeviceptr dptr))                                       \
    X(DRV, sr_CUresult, cuMemAllocAsync, (sr_CUdeviceptr * dptr, size_t size, sr_CUstream s))      \
    X(DRV, sr_CUresult, cuMemAllocAsync_ptsz, (sr_CUdeviceptr * dptr, size_t size, sr_CUstream s)) \
    X(DRV, sr_CUresult, cuMemFreeAsync, (sr_CUdeviceptr dptr, sr_CUstream s))                      \
    X(DRV, sr_CUresult, cuMemFreeAsync_ptsz, (sr_CUdeviceptr dptr, sr_CUstream s))                 \
    X(DRV, sr_CUresult, cuMemAllocFromPoolAsync,                                                   \
      (sr_CUdeviceptr * dptr, size_t size, sr_CUmemoryPool pool, sr_CUstream s))                   \
    X(DRV, sr_CUresult, cuMemAllocFromPoolAsync_ptsz,                                              \
      (sr_CUdeviceptr * dptr, size_t size, sr_CUmemoryPool pool, sr_CUstream s))                   \
    X(DRV, sr_CUresult, cuMemAllocManaged, (sr_CUdeviceptr * dptr, size_t size, unsigned int fl))  \
    X(DRV, sr_CUresult, cuMemAllocPitch_v2,                                                        \
      (sr_CUdeviceptr * dptr, size_t * pitch, size_t width, size_t height, unsigned int elem))     \
    X(DRV, sr_CUresult, cuMemCreate,                                                               \
      (sr_CUmemGenericAllocationHandle * h, size_t size, sr_prop_t prop, unsigned long long fl))   \
    X(DRV, sr_CUresult, cuMemRelease, (sr_CUmemGenericAllocationHandle h))                         \
    X(DRV, sr_CUresult, cuMemHostAlloc, (void **pp, size_t size, unsigned int fl))                 \
    X(DRV, sr_CUresult, cuMemAllocHost_v2, (void **pp, size_t size))                               \
    X(DRV, sr_CUresult, cuMemFreeHost, (void *p))                                                  \
    X(DRV, sr_CUresult, cuMemGetInfo_v2, (size_t * free_b, size_t * total_b))                      \
    X(DRV, sr_CUresult, cuGetProcAddress,                                                          \
      (const char *sym, void **pfn, int ver, sr_cuuint64_t flags))                                 \
    X(DRV, sr_CUresult, cuGetProcAddress_v2,                                                       \
      (const char *sym, void **pfn, int ver, sr_cuuint64_t flags, int *status))                    \
    X(SIG, int, sigaction, (int sig, const struct sigaction *act, struct sigaction *old))          \
    X(SIG, sighandler_t, signal, (int sig, sighandler_t handler))                                  \
    X(SIG, sighandler_t, bsd_signal, (int sig, sighandler_t handler))                              \
    X(SIG, sighandler_t, sysv_signal, (int sig, sighandler_t handler))                             \
    X(SIG, sighandler_t, sigset, (int sig, sighandler_t disp))                                     \
    X(DL, void *, dlsym, (void *handle, const char *name))                                         \
    X(USE, sr_cudaError_t, cudaGetDevice, (int *dev))                                              \
    X(USE, sr_cudaError_t, cudaPointerGetAttributes, (sr_attrs_t attrs, const void *ptr))          \
    X(USE, sr_cudaError_t, cudaMemcpy, (void *dst, const void *src, size_t n, int kind))           \
    X(USE, sr_CUresult, cuCtxGetDevice, (sr_CUdevice * dev))                                       \
    X(USE, sr_CUresult, cuPointerGetAttribute, (void *data, int attr, sr_CUdeviceptr ptr))

#endif
