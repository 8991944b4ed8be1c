/*
 * gpu_page.h - the shared accounting page: one per process that used CUDA
 * under the shim, a file <SPOTRUN_GPU_DIR>/<pid>.page that the process maps
 * MAP_SHARED and the wrapper reads (`spotrun show`, the manifest).
 *
 * Contract (this layout is pinned by tests/unit/test_preload_page.c):
 *  - magic and version first; a reader refuses any other magic, a version
 *    it does not know, or a size smaller than it expects. A layout change
 *    bumps the version (version 1 kept every counter in dev[]; version 2
 *    moved current / allocs / frees into per-thread slots).
 *  - Per-thread slots (version 2): the hot path must not bounce one cache
 *    line between threads, so each allocating thread owns a slot (slot[1..])
 *    and writes its own counters there, with plain atomic stores (one
 *    writer). Threads past the last slot share slot[0], updated with atomic
 *    read-modify-writes. A slot's `current` is what its threads allocated
 *    minus what they freed, modulo 2^64: a thread that frees another's
 *    memory drives its own slot "negative". Readers sum the slots
 *    (spotrun_gpu_page_sum below); at rest the sum is exact.
 *  - dev[].total[]: written only off the hot path. `granted` is the bytes
 *    handed to threads (their live bytes plus the unused `quota` each slot
 *    holds, a chunk at most 2 * SPOTRUN_GPU_CHUNK); --gpu-mem-limit is
 *    enforced on it, so the sum of grants never passes the limit. `peak` is
 *    the highest `current` seen, exact while one thread allocates, else an
 *    upper bound at most the other threads' quotas above the truth.
 *  - Every field is a naturally aligned 64-bit word (or a 32-bit header
 *    word); a reader may take a plain snapshot (read()/memcpy): each value
 *    is consistent, the set is not a transaction.
 *  - limit_bytes: the process's --gpu-mem-limit per device (0 = none);
 *    device + managed bytes count against it, pinned host bytes do not.
 */
#ifndef SPOTRUN_GPU_PAGE_H
#define SPOTRUN_GPU_PAGE_H

#include <stdint.h>

#define SPOTRUN_GPU_PAGE_MAGIC 0x0031454741505253ULL /* "SRPAGE1\0" little-endian */
#define SPOTRUN_GPU_PAGE_VERSION 2u
#define SPOTRUN_GPU_MAX_DEVICES 16
#define SPOTRUN_GPU_SLOTS 64           /* slot 0 shared, 1..63 one thread each */
#define SPOTRUN_GPU_CHUNK (2ULL << 20) /* quota a thread takes from `granted` */

enum spotrun_mem_kind {
    SPOTRUN_MEM_DEVICE,  /* cudaMalloc, cuMemAlloc, cuMemCreate, async, pools, pitch, 3D */
    SPOTRUN_MEM_MANAGED, /* cudaMallocManaged, cuMemAllocManaged */
    SPOTRUN_MEM_HOST,    /* pinned host: cudaMallocHost, cudaHostAlloc, cuMemHostAlloc... */
    SPOTRUN_MEM_KINDS
};

/* One slot's share of one device and kind. */
struct spotrun_gpu_count {
    uint64_t current; /* bytes allocated - bytes freed by this slot's threads (mod 2^64) */
    uint64_t allocs;  /* successful allocations */
    uint64_t frees;   /* frees of allocations the shim saw */
    uint64_t quota;   /* granted bytes the slot may still use (internal) */
};

struct spotrun_gpu_slot {
    uint64_t owner; /* writer's thread id, 0 = free (slot 0: always shared) */
    uint64_t reserved[15];
    struct spotrun_gpu_count dev[SPOTRUN_GPU_MAX_DEVICES][SPOTRUN_MEM_KINDS];
};

struct spotrun_gpu_total {
    uint64_t granted;
    uint64_t peak;
    uint64_t reserved[2];
};

struct spotrun_gpu_dev {
    struct spotrun_gpu_total total[SPOTRUN_MEM_KINDS];
    uint64_t failed;  /* allocations that failed (real error or limit) */
    uint64_t limited; /* of those, refused by --gpu-mem-limit */
    uint64_t granted; /* device + managed granted: what the limit is checked on */
    uint64_t reserved[5];
};

struct spotrun_gpu_page {
    uint64_t magic;
    uint32_t version;
    uint32_t size; /* sizeof(struct spotrun_gpu_page) of the writer */
    int32_t pid;
    uint32_t devices; /* SPOTRUN_GPU_MAX_DEVICES */
    uint64_t limit_bytes;
    uint64_t untracked; /* allocations the pointer map had no room for */
    uint32_t slots;     /* SPOTRUN_GPU_SLOTS */
    uint32_t slot_size; /* sizeof(struct spotrun_gpu_slot) */
    uint64_t reserved[10];
    struct spotrun_gpu_dev dev[SPOTRUN_GPU_MAX_DEVICES];
    struct spotrun_gpu_slot slot[SPOTRUN_GPU_SLOTS];
};

/* What a reader reports per device and kind. */
struct spotrun_gpu_sum {
    uint64_t current, peak, allocs, frees;
};

/* Sums the slots of a page snapshot for one device and kind. A snapshot
 * taken while threads run may catch a free before the allocation it undoes
 * (different slots): current is clamped at 0, and peak raised to current. */
static inline struct spotrun_gpu_sum spotrun_gpu_page_sum(const struct spotrun_gpu_page *p, int dev,
                                                          int kind)
{
    struct spotrun_gpu_sum s = {0, p->dev[dev].total[kind].peak, 0, 0};
    for (int i = 0; i < SPOTRUN_GPU_SLOTS; i++) {
        const struct spotrun_gpu_count *c = &p->slot[i].dev[dev][kind];
        s.current += c->current;
        s.allocs += c->allocs;
        s.frees += c->frees;
    }
    if ((int64_t)s.current < 0)
        s.current = 0;
    if (s.peak < s.current)
        s.peak = s.current;
    return s;
}

#endif
