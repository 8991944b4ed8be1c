/*
 * account.c - GPU memory accounting: the shared page, per-thread slots and
 * quotas, and --gpu-mem-limit.
 *
 * DESIGN
 *  - The page is created lazily by the first allocation a hook sees, so the
 *    shells and tools of a job that never touch CUDA leave no file. Without
 *    SPOTRUN_GPU_DIR (the shim used outside `spotrun run`) the counters live
 *    in a private page. A fork()ed child starts its own page.
 *  - No shared cache line on the hot path. Each thread claims a slot of the
 *    page (gpu_page.h) on its first allocation or free and releases it at
 *    exit (a pthread key destructor; the next thread to claim it continues
 *    its counters, which are cumulative). It alone writes the slot's
 *    current / allocs / frees, with plain atomic stores. Threads past the
 *    last slot share slot 0 with atomic read-modify-writes (correct, just
 *    contended).
 *  - Quotas. dev[d].total[k].granted counts bytes handed to threads: their
 *    live allocations plus the quota each slot holds. An allocation takes
 *    its bytes from the slot's quota (one CAS on the thread's own line);
 *    only when that is short does it go to `granted`, taking what it needs
 *    plus a refill of `chunk`. A free puts the bytes back into the freeing
 *    thread's quota, and a quota above 2 * chunk returns all but a chunk.
 *    Shared-slot threads keep no quota (exact global accounting).
 *  - --gpu-mem-limit is checked with a CAS on dev[d].granted (device +
 *    managed), so grants never pass the limit and an allocation over it is
 *    refused without being made. Near the limit the refill is skipped
 *    (grants become exact), and before refusing, the refused thread takes
 *    every slot's device and managed quota back (an exchange on each): an
 *    allocation that fits is not refused because other threads hold
 *    quota. The owner's quota operations are atomic for that reason.
 *  - Peak: after each allocation, granted minus the thread's own quota is
 *    the live bytes plus the other threads' quotas; its maximum is the
 *    published peak. Exact while one thread allocates; with several, an
 *    upper bound by at most 2 * chunk per other thread. No write unless the
 *    peak rises, so the peak line is read-shared in a steady state.
 */
#include "account.h"
#include "ptrmap.h"
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

static struct spotrun_gpu_page private_page;
static struct spotrun_gpu_page *page_ptr;
static int page_state; /* 0 none, 1 being created */
static char gpu_dir[PATH_MAX];
static uint64_t limit_bytes;
static uint64_t chunk = SPOTRUN_GPU_CHUNK; /* refill; quotas are trimmed above 2 * chunk */
static pthread_key_t slot_key;
static int slot_key_ok;

/* This thread's slot (NULL until its first operation) and whether it owns
 * it (else it is the shared slot 0). */
static __thread struct spotrun_gpu_slot *my_slot __attribute__((tls_model("initial-exec")));
static __thread int my_owned __attribute__((tls_model("initial-exec")));

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)
#define SUB(p, v) __atomic_sub_fetch((p), (v), __ATOMIC_RELAXED)
#define XCHG(p, v) __atomic_exchange_n((p), (v), __ATOMIC_RELAXED)
#define CAS(p, e, v)                                                                               \
    __atomic_compare_exchange_n((p), (e), (v), 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)

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
    p->slots = SPOTRUN_GPU_SLOTS;
    p->slot_size = sizeof(struct spotrun_gpu_slot);
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
    struct spotrun_gpu_page *p = __atomic_load_n(&page_ptr, __ATOMIC_ACQUIRE);
    if (SHIM_LIKELY(p))
        return p;
    if (!__atomic_exchange_n(&page_state, 1, __ATOMIC_ACQ_REL)) {
        p = open_page();
        __atomic_store_n(&page_ptr, p, __ATOMIC_RELEASE);
        return p;
    }
    while (!(p = __atomic_load_n(&page_ptr, __ATOMIC_ACQUIRE)))
        sched_yield(); /* another thread is creating it: microseconds */
    return p;
}

static inline int is_limited(enum spotrun_mem_kind kind)
{
    return limit_bytes && kind != SPOTRUN_MEM_HOST;
}

/* Hands n more bytes of dev to threads; -1 when the limit refuses. */
static int grant(struct spotrun_gpu_dev *d, enum spotrun_mem_kind kind, uint64_t n, int check)
{
    if (is_limited(kind)) {
        uint64_t g = LOAD(&d->granted);
        do {
            if (check && (g + n < g || g + n > limit_bytes))
                return -1;
        } while (!CAS(&d->granted, &g, g + n));
    }
    ADD(&d->total[kind].granted, n);
    return 0;
}

static void ungrant(struct spotrun_gpu_dev *d, enum spotrun_mem_kind kind, uint64_t n)
{
    if (is_limited(kind))
        SUB(&d->granted, n);
    SUB(&d->total[kind].granted, n);
}

/* Slot counters: plain stores by the owner, read-modify-writes in slot 0. */
static inline void bump(uint64_t *c, uint64_t v)
{
    if (SHIM_LIKELY(my_owned))
        __atomic_store_n(c, LOAD(c) + v, __ATOMIC_RELAXED);
    else
        ADD(c, v);
}

/* Returns the thread's quotas and frees its slot (thread exit). */
static void slot_release(void *arg)
{
    struct spotrun_gpu_slot *s = arg;
    struct spotrun_gpu_page *p = __atomic_load_n(&page_ptr, __ATOMIC_ACQUIRE);
    if (!p || s != my_slot)
        return; /* a slot of the page before a fork */
    for (int d = 0; d < SPOTRUN_GPU_MAX_DEVICES; d++)
        for (int k = 0; k < SPOTRUN_MEM_KINDS; k++) {
            const uint64_t q = XCHG(&s->dev[d][k].quota, 0);
            if (q)
                ungrant(&p->dev[d], (enum spotrun_mem_kind)k, q);
        }
    my_slot = NULL;
    my_owned = 0;
    __atomic_store_n(&s->owner, 0, __ATOMIC_RELEASE);
}

static __attribute__((noinline)) struct spotrun_gpu_slot *slot_claim(struct spotrun_gpu_page *p)
{
    const uint64_t me = (uint64_t)pthread_self();
    for (int i = 1; i < SPOTRUN_GPU_SLOTS; i++) {
        uint64_t none = 0;
        if (LOAD(&p->slot[i].owner) == 0 &&
            __atomic_compare_exchange_n(&p->slot[i].owner, &none, me, 0, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED)) {
            my_slot = &p->slot[i];
            my_owned = 1;
            if (slot_key_ok)
                pthread_setspecific(slot_key, my_slot);
            return my_slot;
        }
    }
    my_slot = &p->slot[0];
    my_owned = 0;
    return my_slot;
}

static inline struct spotrun_gpu_count *count_of(struct spotrun_gpu_page *p, int dev,
                                                 enum spotrun_mem_kind kind)
{
    struct spotrun_gpu_slot *s = my_slot;
    if (!SHIM_LIKELY(s))
        s = slot_claim(p);
    return &s->dev[dev][kind];
}

/* Takes bytes from the slot's quota: 1 when it held enough. */
static inline int quota_take(struct spotrun_gpu_count *c, uint64_t bytes)
{
    uint64_t q = LOAD(&c->quota);
    while (q >= bytes)
        if (CAS(&c->quota, &q, q - bytes))
            return 1;
    return 0;
}

/* Puts bytes back: into the slot's quota (trimmed to a chunk when above
 * two), or straight back to the device in the shared slot. */
static inline void quota_put(struct spotrun_gpu_dev *d, enum spotrun_mem_kind kind,
                             struct spotrun_gpu_count *c, uint64_t bytes)
{
    if (!SHIM_LIKELY(my_owned)) {
        ungrant(d, kind, bytes);
        return;
    }
    uint64_t q = ADD(&c->quota, bytes);
    while (q > 2 * chunk)
        if (CAS(&c->quota, &q, chunk)) {
            ungrant(d, kind, q - chunk);
            break;
        }
}

/* Takes every slot's quota of the limited kinds of dev back. */
static void steal_quotas(struct spotrun_gpu_page *p, int dev)
{
    for (int i = 0; i < SPOTRUN_GPU_SLOTS; i++)
        for (int k = SPOTRUN_MEM_DEVICE; k <= SPOTRUN_MEM_MANAGED; k++) {
            uint64_t *q = &p->slot[i].dev[dev][k].quota;
            if (LOAD(q)) {
                const uint64_t v = XCHG(q, 0);
                if (v)
                    ungrant(&p->dev[dev], (enum spotrun_mem_kind)k, v);
            }
        }
}

/* The quota was short: go to the device's grant. check = 0 forces it (the
 * bytes are in use already). */
static __attribute__((noinline)) int reserve_slow(struct spotrun_gpu_page *p, int dev,
                                                  enum spotrun_mem_kind kind,
                                                  struct spotrun_gpu_count *c, uint64_t bytes,
                                                  int check)
{
    struct spotrun_gpu_dev *d = &p->dev[dev];
    const uint64_t have = my_owned ? XCHG(&c->quota, 0) : 0;
    if (have >= bytes) { /* cannot happen (only we add to our quota); kept safe */
        quota_put(d, kind, c, have - bytes);
        return 0;
    }
    const uint64_t need = bytes - have;
    const uint64_t extra = my_owned && need <= UINT64_MAX - chunk ? chunk : 0;
    if (extra && grant(d, kind, need + extra, check) == 0) {
        ADD(&c->quota, extra);
        return 0;
    }
    if (grant(d, kind, need, check) == 0)
        return 0;
    steal_quotas(p, dev); /* only a limited kind gets here */
    if (grant(d, kind, need, check) == 0)
        return 0;
    if (have)
        ADD(&c->quota, have);
    ADD(&d->failed, 1);
    ADD(&d->limited, 1);
    return -1;
}

static void after_fork_child(void)
{
    /* The parent's page is shared with us: start our own. Only this thread
     * exists in the child. */
    page_ptr = NULL;
    page_state = 0;
    my_slot = NULL;
    my_owned = 0;
    if (slot_key_ok)
        pthread_setspecific(slot_key, NULL);
}

void acct_init(void)
{
    limit_bytes = parse_size(getenv("SPOTRUN_GPU_MEM_LIMIT"));
    if (limit_bytes && limit_bytes / 64 < chunk)
        chunk = limit_bytes / 64; /* quotas stay a small part of the limit */
    const char *dir = getenv("SPOTRUN_GPU_DIR");
    if (dir && *dir && strlen(dir) < sizeof gpu_dir)
        memcpy(gpu_dir, dir, strlen(dir) + 1);
    slot_key_ok = pthread_key_create(&slot_key, slot_release) == 0;
    pthread_atfork(NULL, NULL, after_fork_child);
}

uint64_t acct_limit(void)
{
    return limit_bytes;
}

uint64_t acct_used(int dev)
{
    const struct spotrun_gpu_page *p = acct_page();
    uint64_t used = 0;
    for (int i = 0; i < SPOTRUN_GPU_SLOTS; i++)
        for (int k = SPOTRUN_MEM_DEVICE; k <= SPOTRUN_MEM_MANAGED; k++)
            used += LOAD(&p->slot[i].dev[dev][k].current);
    return (int64_t)used < 0 ? 0 : used;
}

int acct_reserve(int dev, enum spotrun_mem_kind kind, size_t bytes)
{
    struct spotrun_gpu_page *p = acct_page();
    struct spotrun_gpu_count *c = count_of(p, dev, kind);
    if (SHIM_LIKELY(quota_take(c, bytes)))
        return 0;
    return reserve_slow(p, dev, kind, c, bytes, 1);
}

static inline void raise_peak(struct spotrun_gpu_total *t, const struct spotrun_gpu_count *c)
{
    const uint64_t g = LOAD(&t->granted), q = LOAD(&c->quota);
    const uint64_t est = g > q ? g - q : 0;
    uint64_t peak = LOAD(&t->peak);
    while (est > peak && !CAS(&t->peak, &peak, est)) {
    }
}

static inline uint64_t pack(int dev, enum spotrun_mem_kind kind, uint64_t bytes)
{
    return (bytes << 8) | ((uint64_t)dev << 2) | (uint64_t)kind;
}

void acct_finish(int dev, enum spotrun_mem_kind kind, size_t bytes, int ok, uintptr_t key)
{
    struct spotrun_gpu_page *p = acct_page();
    struct spotrun_gpu_dev *d = &p->dev[dev];
    struct spotrun_gpu_count *c = count_of(p, dev, kind);
    if (!ok || !key) {
        quota_put(d, kind, c, bytes);
        if (!ok)
            ADD(&d->failed, 1);
        return;
    }
    if ((uint64_t)bytes >= (1ULL << 56) || ptrmap_insert(key, pack(dev, kind, bytes)) < 0)
        ADD(&p->untracked, 1);
    bump(&c->current, bytes);
    bump(&c->allocs, 1);
    raise_peak(&d->total[kind], c);
}

int acct_forget(uintptr_t key, uint64_t *packed)
{
    if (!ptrmap_remove(key, packed))
        return 0;
    const uint64_t bytes = *packed >> 8;
    const int dev = (int)((*packed >> 2) & 15);
    const enum spotrun_mem_kind kind = (enum spotrun_mem_kind)(*packed & 3);
    struct spotrun_gpu_page *p = acct_page();
    struct spotrun_gpu_count *c = count_of(p, dev, kind);
    bump(&c->current, -bytes);
    bump(&c->frees, 1);
    quota_put(&p->dev[dev], kind, c, bytes);
    return 1;
}

void acct_unforget(uintptr_t key, uint64_t packed)
{
    const uint64_t bytes = packed >> 8;
    const int dev = (int)((packed >> 2) & 15);
    const enum spotrun_mem_kind kind = (enum spotrun_mem_kind)(packed & 3);
    struct spotrun_gpu_page *p = acct_page();
    struct spotrun_gpu_count *c = count_of(p, dev, kind);
    if (!quota_take(c, bytes))
        reserve_slow(p, dev, kind, c, bytes, 0); /* still allocated: never refused */
    bump(&c->current, bytes);
    bump(&c->frees, (uint64_t)-1);
    if (ptrmap_insert(key, packed) < 0)
        ADD(&p->untracked, 1);
}
