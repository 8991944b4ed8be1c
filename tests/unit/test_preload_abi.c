/*
 * test_preload_abi.c - the shim declares the few CUDA types and error codes
 * it needs itself (preload/cuda_abi.h, so it builds without CUDA); where the
 * real headers are installed, check that they agree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cuda_abi.h"

#ifdef SPOTRUN_HAVE_CUDA_HEADERS
#include <cuda.h>
#include <cuda_runtime_api.h>

static void constants_match_the_cuda_headers(void **state)
{
    (void)state;
    assert_int_equal(SR_cudaSuccess, cudaSuccess);
    assert_int_equal(SR_cudaErrorInvalidValue, cudaErrorInvalidValue);
    assert_int_equal(SR_cudaErrorMemoryAllocation, cudaErrorMemoryAllocation);
    assert_int_equal(SR_cudaErrorSymbolNotFound, cudaErrorSymbolNotFound);
    assert_int_equal(SR_cudaMemoryTypeDevice, cudaMemoryTypeDevice);
    assert_int_equal(SR_cudaMemcpyHostToDevice, cudaMemcpyHostToDevice);
    assert_int_equal(SR_cudaMemcpyDeviceToHost, cudaMemcpyDeviceToHost);
    assert_int_equal(SR_CUDA_SUCCESS, CUDA_SUCCESS);
    assert_int_equal(SR_CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(SR_CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(SR_CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND);
    assert_int_equal(SR_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
}

static void types_match_the_cuda_headers(void **state)
{
    (void)state;
    assert_int_equal(sizeof(sr_cudaError_t), sizeof(cudaError_t));
    assert_int_equal(sizeof(sr_CUresult), sizeof(CUresult));
    assert_int_equal(sizeof(sr_CUdeviceptr), sizeof(CUdeviceptr));
    assert_int_equal(sizeof(sr_CUmemoryPool), sizeof(CUmemoryPool));
    assert_int_equal(sizeof(sr_cudaMemPool_t), sizeof(cudaMemPool_t));
    assert_int_equal(sizeof(sr_CUmemGenericAllocationHandle), sizeof(CUmemGenericAllocationHandle));
    assert_int_equal(sizeof(struct sr_cudaExtent), sizeof(struct cudaExtent));
    assert_int_equal(sizeof(struct sr_cudaPitchedPtr), sizeof(struct cudaPitchedPtr));
    assert_int_equal(offsetof(struct sr_cudaPitchedPtr, pitch),
                     offsetof(struct cudaPitchedPtr, pitch));
    /* Ours may be larger (room for fields newer toolkits append), never smaller. */
    assert_true(sizeof(struct sr_cudaPointerAttributes) >= sizeof(struct cudaPointerAttributes));
    assert_int_equal(offsetof(struct sr_cudaPointerAttributes, type),
                     offsetof(struct cudaPointerAttributes, type));
    assert_int_equal(offsetof(struct sr_CUmemAllocationProp_head, location_id),
                     offsetof(CUmemAllocationProp, location.id));
}
#endif

static void abi_header_is_self_consistent(void **state)
{
    (void)state;
    assert_int_equal(sizeof(sr_CUdeviceptr), 8);
    assert_int_equal(SR_cudaErrorMemoryAllocation, SR_CUDA_ERROR_OUT_OF_MEMORY);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(abi_header_is_self_consistent),
#ifdef SPOTRUN_HAVE_CUDA_HEADERS
        cmocka_unit_test(constants_match_the_cuda_headers),
        cmocka_unit_test(types_match_the_cuda_headers),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
