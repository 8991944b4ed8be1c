/*
 * ptrmap.c - the pointer map (see ptrmap.h).
 *
 * DESIGN
 *  - A fixed open-addressing table of {key, value} slots, mapped
 *    MAP_NORESERVE on first use (pages are touched as used), with linear
 *    probing from a multiplicative hash of the key. Insert claims an empty
 *    or deleted slot with a CAS on the key, then stores the value; remove
 *    turns its key into a tombstone with a CAS. No lock anywhere, so threads
 *    never wait for each other, and two threads touch the same cache line
 *    only when their keys hash within four slots of each other. The cost is
 *    a table that never shrinks (tombstones are reused by later inserts).
 *  - An insert that finds no slot within MAX_PROBE fails; the caller counts
 *    the allocation as untracked (its bytes are never subtracted: an
 *    over-count, never an under-count).
 *  - A key appears once: the real allocator hands out an address again only
 *    after its free, and the hooks remove a key before the real free.
 */
#include "ptrmap.h"

#include <sched.h>
#include <sys/mman.h>

#define MAP_BITS 20 /* 1M slots, 16 MiB of address space, touched as used */
#define MAP_SLOTS (1u << MAP_BITS)
#define MAX_PROBE 256
#define KEY_EMPTY 0
#define KEY_TOMB 1

struct slot {
    uintptr_t key;
    uint64_t val;
};

static struct slot *map;
static int map_state; /* 0 none, 1 being mapped, 2 failed */

#define ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)

static struct slot *map_get(void)
{
    struct slot *m = ACQ(&map);
    if (m)
        return m;
    if (!__atomic_exchange_n(&map_state, 1, __ATOMIC_ACQ_REL)) {
        m = mmap(NULL, sizeof(struct slot) * MAP_SLOTS, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            m = NULL;
        __atomic_store_n(&map, m, __ATOMIC_RELEASE);
        if (!m)
            __atomic_store_n(&map_state, 2, __ATOMIC_RELEASE);
        return m;
    }
    while (!(m = ACQ(&map)) && ACQ(&map_state) != 2)
        sched_yield(); /* another thread is mapping it: microseconds */
    return m;
}

static inline uint32_t slot_of(uintptr_t key)
{
    return (uint32_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> (64 - MAP_BITS));
}

int ptrmap_insert(uintptr_t key, uint64_t val)
{
    struct slot *m = map_get();
    if (!m)
        return -1;
    uint32_t i = slot_of(key);
    for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & (MAP_SLOTS - 1)) {
        uintptr_t k = ACQ(&m[i].key);
        while (k == KEY_EMPTY || k == KEY_TOMB) {
            if (__atomic_compare_exchange_n(&m[i].key, &k, key, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                __atomic_store_n(&m[i].val, val, __ATOMIC_RELEASE);
                return 0;
            }
        }
    }
    return -1;
}

int ptrmap_remove(uintptr_t key, uint64_t *val)
{
    struct slot *m = ACQ(&map);
    if (!m)
        return 0;
    uint32_t i = slot_of(key);
    for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & (MAP_SLOTS - 1)) {
        uintptr_t k = ACQ(&m[i].key);
        if (k == KEY_EMPTY)
            return 0;
        if (k != key)
            continue;
        const uint64_t v = ACQ(&m[i].val);
        if (__atomic_compare_exchange_n(&m[i].key, &k, (uintptr_t)KEY_TOMB, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            *val = v;
            return 1;
        }
        return 0; /* a concurrent free of the same pointer won */
    }
    return 0;
}
