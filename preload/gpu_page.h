/*
 * gpu_page.h - the shared accounting page: one per process that used CUDA
 * under the shim, a file <SPOTRUN_GPU_DIR>/<pid>.page that the process maps
 * MAP_SHARED and the wrapper reads (`spotrun show`, the manifest).
 *
 * Contract (this layout is pinned by tests/unit/test_preload_page.c):
 *  - magic and version first; a reader refuses any other magic, a version
 *    it does not know, or a size smaller than it expects. Fields are only
 *    ever added in the reserved space, with a version bump.
 *  - Every counter is a naturally aligned uint64_t updated by the shim with
 *    atomic read-modify-write operations (__atomic builtins); a reader may
 *    take a plain snapshot (read()/memcpy): each value is consistent, the
 *    set is not a transaction.
 *  - Sizes are bytes. `peak` is the highest `current` seen by this process.
 *  - limit_bytes: the process's --gpu-mem-limit per device (0 = none);
 *    device + managed bytes count against it, pinned host bytes do not.
 */
#ifndef SPOTRUN_GPU_PAGE_H
#define SPOTRUN_GPU_PAGE_H

#include <stdint.h>

#define SPOTRUN_GPU_PAGE_MAGIC 0x0031454741505253ULL /* "SRPAGE1\0" little-endian */
#define SPOTRUN_GPU_PAGE_VERSION 1u
#define SPOTRUN_GPU_MAX_DEVICES 16

enum spotrun_mem_kind {
    SPOTRUN_MEM_DEVICE,  /* cudaMalloc, cuMemAlloc, cuMemCreate, async, pitch, 3D */
    SPOTRUN_MEM_MANAGED, /* cudaMallocManaged, cuMemAllocManaged */
    SPOTRUN_MEM_HOST,    /* pinned host: cudaMallocHost, cudaHostAlloc */
    SPOTRUN_MEM_KINDS
};

struct spotrun_gpu_kind {
    uint64_t current;
    uint64_t peak;
    uint64_t allocs; /* successful allocations */
    uint64_t frees;  /* frees of allocations we saw */
};

struct spotrun_gpu_dev {
    struct spotrun_gpu_kind kind[SPOTRUN_MEM_KINDS];
    uint64_t failed;  /* allocations that failed (real error or limit) */
    uint64_t limited; /* of those, refused by --gpu-mem-limit */
    uint64_t reserved[6];
};

struct spotrun_gpu_page {
    uint64_t magic;
    uint32_t version;
    uint32_t size; /* sizeof(struct spotrun_gpu_page) of the writer */
    int32_t pid;
    uint32_t devices; /* SPOTRUN_GPU_MAX_DEVICES */
    uint64_t limit_bytes;
    uint64_t untracked; /* allocations the pointer map had no room for */
    uint64_t reserved[11];
    struct spotrun_gpu_dev dev[SPOTRUN_GPU_MAX_DEVICES];
};

#endif
