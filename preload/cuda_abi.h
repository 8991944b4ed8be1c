/*
 * cuda_abi.h - the few CUDA types and constants the shim needs, written out
 * so that libspotrun.so builds without the CUDA headers and never links
 * CUDA. Values follow the CUDA 13 headers (cuda.h, driver_types.h); the
 * unit test test_preload_abi.c checks them against the real headers when
 * those are installed.
 */
#ifndef SPOTRUN_CUDA_ABI_H
#define SPOTRUN_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

/* Runtime API (cudaError_t is an enum: int-sized). */
typedef int sr_cudaError_t;
typedef void *sr_cudaStream_t;
typedef void *sr_cudaMemPool_t;
#define SR_cudaSuccess 0
#define SR_cudaErrorInvalidValue 1
#define SR_cudaErrorMemoryAllocation 2
#define SR_cudaErrorSymbolNotFound 500
#define SR_cudaMemoryTypeDevice 2
#define SR_cudaMemcpyHostToDevice 1
#define SR_cudaMemcpyDeviceToHost 2

struct sr_cudaExtent {
    size_t width, height, depth;
};
struct sr_cudaPitchedPtr {
    void *ptr;
    size_t pitch, xsize, ysize;
};
struct sr_cudaPointerAttributes {
    int type; /* enum cudaMemoryType */
    int device;
    void *devicePointer;
    void *hostPointer;
    long reserved[8]; /* room: newer toolkits may append fields */
};

/* Driver API. */
typedef int sr_CUresult;
typedef unsigned long long sr_CUdeviceptr;
typedef unsigned long long sr_CUmemGenericAllocationHandle;
typedef void *sr_CUstream;
typedef void *sr_CUmemoryPool;
typedef int sr_CUdevice;
typedef unsigned long long sr_cuuint64_t;
#define SR_CUDA_SUCCESS 0
#define SR_CUDA_ERROR_INVALID_VALUE 1
#define SR_CUDA_ERROR_OUT_OF_MEMORY 2
#define SR_CUDA_ERROR_NOT_FOUND 500
#define SR_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9

/* Leading part of CUmemAllocationProp: type, requestedHandleTypes,
 * location {type, id}. Only location.id (the device) is read. */
struct sr_CUmemAllocationProp_head {
    int type;
    int requested_handle_types;
    int location_type;
    int location_id;
};

#endif
