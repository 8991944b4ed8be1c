/*
 * account.c - GPU memory accounting: the shared page and the pointer map.
 *
 * DESIGN
 *  - The page is created lazily by the first allocation a hook sees, so the
 *    shells and tools of a job that never touch CUDA leave no file. Without
 *    SPOTRUN_GPU_DIR (the shim used outside `spotrun run`) the counters live
 *    in a private page. A fork()ed child starts its own page.
 *  - Pointer map: a fixed open-addressing table of {key, packed value}
 *    slots mapped on first use, with linear probing. Insert claims an empty
 *    or deleted slot with a CAS on the key; remove turns its key into a
 *    tombstone with a CAS. No lock anywhere, so threads never wait for each
 *    other; the cost is a table that never shrinks (tombstones are reused by
 *    later inserts). An allocation that finds no slot within MAX_PROBE is
 *    counted as untracked: its bytes stay in `current` (never under-count).
 *  - A key is the pointer (or a tagged cuMemCreate handle); the value packs
 *    size << 8 | device << 2 | kind, so a free needs no size from the app.
 */
#include "account.h"
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAP_BITS 20 /* 1M slots, 16 MiB of address space, touched as used */
#define MAP_SLOTS (1u << MAP_BITS)
#define MAX_PROBE 256
#define KEY_EMPTY 0
#define KEY_TOMB 1

struct slot {
    uintptr_t key;
    uint64_t val;
};

static struct spotrun_gpu_page private_page;
static struct spotrun_gpu_page *page_ptr;
static int page_state; /* 0 none, 1 being created */
static char gpu_dir[PATH_MAX];
static uint64_t limit_bytes;
static struct slot *map;
static int map_state;

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)
#define SUB(p, v) __atomic_sub_fetch((p), (v), __ATOMIC_RELAXED)

/* "4G", "512MiB", "1.5G" is not accepted; binary multiples, bare = bytes. */
static uint64_t parse_size(const char *s)
{
    if (!s || *s < '0' || *s > '9')
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return 0;
    int shift = 0;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    case 't':
    case 'T':
        shift = 40;
        end++;
        break;
    default:
        break;
    }
    if (shift && *end == 'i')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || (shift && v > (~0ULL >> shift)))
        return 0;
    return (uint64_t)v << shift;
}

static void fill_header(struct spotrun_gpu_page *p)
{
    p->version = SPOTRUN_GPU_PAGE_VERSION;
    p->size = sizeof(*p);
    p->pid = (int32_t)getpid();
    p->devices = SPOTRUN_GPU_MAX_DEVICES;
    p->limit_bytes = limit_bytes;
    __atomic_store_n(&p->magic, SPOTRUN_GPU_PAGE_MAGIC, __ATOMIC_RELEASE);
}

static struct spotrun_gpu_page *open_page(void)
{
    if (gpu_dir[0]) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/%d.page", gpu_dir, (int)getpid());
        const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd >= 0) {
            const size_t len = (sizeof(struct spotrun_gpu_page) + 4095) & ~(size_t)4095;
            void *m = MAP_FAILED;
            if (ftruncate(fd, (off_t)len) == 0)
                m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            close(fd);
            if (m != MAP_FAILED) {
                fill_header(m);
                return m;
            }
        }
    }
    memset(&private_page, 0, sizeof private_page);
    fill_header(&private_page);
    return &private_page;
}

struct spotrun_gpu_page *acct_page(void)
{
    struct spotrun_gpu_page *p = LOAD(&page_ptr);
    if (p)
        return p;
    if (!__atomic_exchange_n(&page_state, 1, __ATOMIC_ACQ_REL)) {
        p = open_page();
        __atomic_store_n(&page_ptr, p, __ATOMIC_RELEASE);
        return p;
    }
    while (!(p = LOAD(&page_ptr)))
        sched_yield(); /* another thread is creating it: microseconds */
    return p;
}

static void after_fork_child(void)
{
    /* The parent's page is shared with us: start our own. */
    page_ptr = NULL;
    page_state = 0;
}

void acct_init(void)
{
    limit_bytes = parse_size(getenv("SPOTRUN_GPU_MEM_LIMIT"));
    const char *dir = getenv("SPOTRUN_GPU_DIR");
    if (dir && *dir && strlen(dir) < sizeof gpu_dir)
        memcpy(gpu_dir, dir, strlen(dir) + 1);
    pthread_atfork(NULL, NULL, after_fork_child);
}

uint64_t acct_limit(void)
{
    return limit_bytes;
}

uint64_t acct_used(int dev)
{
    const struct spotrun_gpu_dev *d = &acct_page()->dev[dev];
    return LOAD(&d->kind[SPOTRUN_MEM_DEVICE].current) + LOAD(&d->kind[SPOTRUN_MEM_MANAGED].current);
}

int acct_reserve(int dev, enum spotrun_mem_kind kind, size_t bytes)
{
    struct spotrun_gpu_dev *d = &acct_page()->dev[dev];
    const uint64_t now = ADD(&d->kind[kind].current, bytes);
    if (!limit_bytes || kind == SPOTRUN_MEM_HOST)
        return 0;
    const enum spotrun_mem_kind other =
        kind == SPOTRUN_MEM_DEVICE ? SPOTRUN_MEM_MANAGED : SPOTRUN_MEM_DEVICE;
    if (now + LOAD(&d->kind[other].current) <= limit_bytes)
        return 0;
    SUB(&d->kind[kind].current, bytes);
    ADD(&d->failed, 1);
    ADD(&d->limited, 1);
    return -1;
}

static struct slot *map_get(void)
{
    struct slot *m = LOAD(&map);
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
    while (!(m = LOAD(&map)) && LOAD(&map_state) != 2)
        sched_yield();
    return m;
}

static inline uint32_t slot_of(uintptr_t key)
{
    return (uint32_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> (64 - MAP_BITS));
}

static int map_insert(uintptr_t key, uint64_t val)
{
    struct slot *m = map_get();
    if (!m)
        return -1;
    uint32_t i = slot_of(key);
    for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & (MAP_SLOTS - 1)) {
        uintptr_t k = LOAD(&m[i].key);
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

static int map_remove(uintptr_t key, uint64_t *val)
{
    struct slot *m = LOAD(&map);
    if (!m)
        return 0;
    uint32_t i = slot_of(key);
    for (int n = 0; n < MAX_PROBE; n++, i = (i + 1) & (MAP_SLOTS - 1)) {
        uintptr_t k = LOAD(&m[i].key);
        if (k == KEY_EMPTY)
            return 0;
        if (k != key)
            continue;
        const uint64_t v = LOAD(&m[i].val);
        if (__atomic_compare_exchange_n(&m[i].key, &k, (uintptr_t)KEY_TOMB, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            *val = v;
            return 1;
        }
        return 0; /* a concurrent free of the same pointer won */
    }
    return 0;
}

static void raise_peak(struct spotrun_gpu_kind *k)
{
    const uint64_t cur = LOAD(&k->current);
    uint64_t peak = LOAD(&k->peak);
    while (cur > peak && !__atomic_compare_exchange_n(&k->peak, &peak, cur, 1, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED)) {
    }
}

void acct_finish(int dev, enum spotrun_mem_kind kind, size_t bytes, int ok, uintptr_t key)
{
    struct spotrun_gpu_page *p = acct_page();
    struct spotrun_gpu_dev *d = &p->dev[dev];
    if (!ok || !key) {
        SUB(&d->kind[kind].current, bytes);
        if (!ok)
            ADD(&d->failed, 1);
        return;
    }
    const uint64_t packed = ((uint64_t)bytes << 8) | ((uint64_t)dev << 2) | (uint64_t)kind;
    if ((uint64_t)bytes >= (1ULL << 56) || map_insert(key, packed) < 0)
        ADD(&p->untracked, 1);
    ADD(&d->kind[kind].allocs, 1);
    raise_peak(&d->kind[kind]);
}

int acct_forget(uintptr_t key, uint64_t *packed)
{
    if (!map_remove(key, packed))
        return 0;
    const uint64_t bytes = *packed >> 8;
    const int dev = (int)((*packed >> 2) & 15);
    const int kind = (int)(*packed & 3);
    struct spotrun_gpu_kind *k = &acct_page()->dev[dev].kind[kind];
    SUB(&k->current, bytes);
    ADD(&k->frees, 1);
    return 1;
}

void acct_unforget(uintptr_t key, uint64_t packed)
{
    const int dev = (int)((packed >> 2) & 15);
    struct spotrun_gpu_kind *k = &acct_page()->dev[dev].kind[packed & 3];
    ADD(&k->current, packed >> 8);
    SUB(&k->frees, 1);
    if (map_insert(key, packed) < 0)
        ADD(&acct_page()->untracked, 1);
}
