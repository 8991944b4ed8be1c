/*
 * account.h - per-device GPU memory accounting of this process (see
 * gpu_page.h for what is published) and the optional --gpu-mem-limit.
 *
 * Hot path contract: lock-free, and no cache line shared between threads
 * in a steady state (account.c: per-thread slots and quotas). A
 * reservation takes bytes from the thread's quota, going to the device's
 * grant (checked against the limit) only when that is short; a successful
 * allocation enters the pointer map (ptrmap.h); a free removes it and
 * gives back what was recorded, so frees need no size from the caller.
 */
#ifndef SPOTRUN_ACCOUNT_H
#define SPOTRUN_ACCOUNT_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_page.h"

/* Reads SPOTRUN_GPU_MEM_LIMIT and SPOTRUN_GPU_DIR (called by shim_init). */
void acct_init(void);
/* Bytes allowed per device, 0 = no limit. */
uint64_t acct_limit(void);
/* Device + managed bytes this process holds on dev. */
uint64_t acct_used(int dev);

/* Before an allocation of known size: 0, or -1 when the limit refuses it
 * (counted as failed and limited). */
int acct_reserve(int dev, enum spotrun_mem_kind kind, size_t bytes);
/* After it: ok with key != 0 records a success (the map remembers
 * key -> bytes); ok with key == 0 (a zero-byte allocation) just undoes the
 * reservation; !ok undoes it and counts a failure. */
void acct_finish(int dev, enum spotrun_mem_kind kind, size_t bytes, int ok, uintptr_t key);
/* Before a free: forgets key and subtracts its bytes. Returns 1 when the
 * key was known (the caller may then undo with acct_unforget if the real
 * free fails), else 0. */
int acct_forget(uintptr_t key, uint64_t *packed);
void acct_unforget(uintptr_t key, uint64_t packed);

/* Handles of cuMemCreate live in their own key space. */
#define ACCT_HANDLE_KEY(h) ((uintptr_t)((h) | (1ULL << 63)))

/* The page (for tests and the registry; never NULL). */
struct spotrun_gpu_page *acct_page(void);

/* Hook helpers: a device index clamped to the page's range. */
static inline int acct_dev(int dev)
{
    return dev >= 0 && dev < SPOTRUN_GPU_MAX_DEVICES ? dev
                                                     : (dev < 0 ? 0 : SPOTRUN_GPU_MAX_DEVICES - 1);
}
/* The --gpu-mem-limit view of a MemGetInfo answer. */
static inline void acct_apply_limit(int dev, size_t *free_b, size_t *total_b)
{
    const uint64_t lim = acct_limit();
    if (!lim)
        return;
    const uint64_t used = acct_used(dev);
    const uint64_t avail = used >= lim ? 0 : lim - used;
    if (free_b && *free_b > avail)
        *free_b = (size_t)avail;
    if (total_b && *total_b > lim)
        *total_b = (size_t)lim;
}

#endif
