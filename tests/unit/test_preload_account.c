/*
 * test_preload_account.c - the shim's accounting (preload/account.c,
 * ptrmap.c) driven directly, many threads at once: per-thread slots and
 * quotas must add up exactly, and grants must never pass --gpu-mem-limit.
 * The two files are compiled into this test (they have no other
 * dependency), so it also runs under the sanitizers and TSan.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../preload/account.c"
#include "../../preload/ptrmap.c"

#define LIMIT (64u << 20) /* chunk = LIMIT / 64 = 1 MiB */
#define THREADS 8

static void setup_once(void)
{
    setenv("SPOTRUN_GPU_MEM_LIMIT", "64M", 1);
    unsetenv("SPOTRUN_GPU_DIR");
    acct_init();
}

static struct spotrun_gpu_sum sum(int dev, enum spotrun_mem_kind kind)
{
    return spotrun_gpu_page_sum(acct_page(), dev, kind);
}

/* One allocation as a hook makes it: reserve, then record under key. */
static int alloc(int dev, enum spotrun_mem_kind kind, size_t bytes, uintptr_t key)
{
    if (acct_reserve(dev, kind, bytes) < 0)
        return -1;
    acct_finish(dev, kind, bytes, 1, key);
    return 0;
}

static void release(uintptr_t key)
{
    uint64_t packed;
    assert_int_equal(acct_forget(key, &packed), 1);
}

static void single_thread_peak_is_exact(void **state)
{
    (void)state;
    assert_int_equal(alloc(3, SPOTRUN_MEM_DEVICE, 100, 0x1000), 0);
    assert_int_equal(alloc(3, SPOTRUN_MEM_DEVICE, 300, 0x2000), 0);
    release(0x1000);
    assert_int_equal(alloc(3, SPOTRUN_MEM_DEVICE, 50, 0x3000), 0);
    const struct spotrun_gpu_sum s = sum(3, SPOTRUN_MEM_DEVICE);
    assert_int_equal(s.current, 350);
    assert_int_equal(s.peak, 400);
    assert_int_equal(s.allocs, 3);
    assert_int_equal(s.frees, 1);
    release(0x2000);
    release(0x3000);
    assert_int_equal(sum(3, SPOTRUN_MEM_DEVICE).current, 0);
}

struct job {
    int id;
    int refused;
};

/* Every thread holds its first 16 blocks before any goes on, so that the
 * threads overlap however the scheduler runs them (on a busy machine each
 * could otherwise run its whole loop alone and never meet the limit). */
static pthread_barrier_t all_hold;

/* Each thread keeps up to 64 blocks of up to 2 MiB live on device 5
 * (device and managed), allocating and freeing at random: 8 threads can
 * want up to 1 GiB, sixteen times the limit, so some allocations are
 * refused; the 8 x 16 blocks of 2 MiB held at the barrier alone are four
 * times the limit. */
static void *churn(void *arg)
{
    struct job *j = arg;
    uintptr_t live[64] = {0};
    unsigned seed = (unsigned)j->id * 7919u + 1;
    for (int k = 0; k < 16; k++) {
        const uintptr_t key = ((uintptr_t)(j->id + 1) << 32) | ((uintptr_t)k << 8) | 0x10;
        if (alloc(5, SPOTRUN_MEM_DEVICE, 2u << 20, key) == 0)
            live[k] = key;
        else
            j->refused++;
    }
    pthread_barrier_wait(&all_hold);
    for (int i = 0; i < 20000; i++) {
        const int k = rand_r(&seed) % 64;
        if (live[k]) {
            release(live[k]);
            live[k] = 0;
            continue;
        }
        const size_t size = 1 + (size_t)rand_r(&seed) % (2u << 20);
        const uintptr_t key = ((uintptr_t)(j->id + 1) << 32) | ((uintptr_t)k << 8) | 0x10;
        if (alloc(5, (k & 1) ? SPOTRUN_MEM_MANAGED : SPOTRUN_MEM_DEVICE, size, key) == 0)
            live[k] = key;
        else
            j->refused++;
        const struct spotrun_gpu_dev *d = &acct_page()->dev[5];
        assert_true(__atomic_load_n(&d->granted, __ATOMIC_RELAXED) <= LIMIT);
    }
    for (int k = 0; k < 64; k++)
        if (live[k])
            release(live[k]);
    return NULL;
}

static void threads_add_up_and_never_pass_the_limit(void **state)
{
    (void)state;
    pthread_t th[THREADS];
    struct job jobs[THREADS];
    pthread_barrier_init(&all_hold, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (struct job){i, 0};
        pthread_create(&th[i], NULL, churn, &jobs[i]);
    }
    int refused = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        refused += jobs[i].refused;
    }
    pthread_barrier_destroy(&all_hold);
    const struct spotrun_gpu_sum dv = sum(5, SPOTRUN_MEM_DEVICE), mg = sum(5, SPOTRUN_MEM_MANAGED);
    assert_int_equal(dv.current + mg.current, 0);
    assert_int_equal(dv.allocs, dv.frees);
    assert_int_equal(mg.allocs, mg.frees);
    assert_true(dv.peak + mg.peak > 0 && dv.peak <= LIMIT && mg.peak <= LIMIT);
    /* Exited threads gave their quota back: nothing is granted. */
    assert_int_equal(acct_page()->dev[5].granted, 0);
    assert_true(refused > 0);
    assert_int_equal(acct_page()->dev[5].limited, (uint64_t)refused);
}

static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static int hold_state;

static void *holder(void *arg)
{
    (void)arg;
    assert_int_equal(alloc(7, SPOTRUN_MEM_MANAGED, 4096, 0x7000), 0);
    release(0x7000); /* keeps a chunk of quota */
    pthread_mutex_lock(&hold_lock);
    hold_state = 1;
    pthread_cond_broadcast(&hold_cond);
    while (hold_state != 2)
        pthread_cond_wait(&hold_cond, &hold_lock);
    pthread_mutex_unlock(&hold_lock);
    return NULL;
}

static void quota_held_elsewhere_is_taken_back_at_the_limit(void **state)
{
    (void)state;
    pthread_t th;
    pthread_create(&th, NULL, holder, NULL);
    pthread_mutex_lock(&hold_lock);
    while (hold_state != 1)
        pthread_cond_wait(&hold_cond, &hold_lock);
    pthread_mutex_unlock(&hold_lock);
    assert_true(acct_page()->dev[7].granted > 0); /* the holder's quota */
    assert_int_equal(alloc(7, SPOTRUN_MEM_DEVICE, LIMIT, 0x8000), 0);
    assert_int_equal(acct_used(7), LIMIT);
    assert_int_equal(alloc(7, SPOTRUN_MEM_DEVICE, 1, 0x9000), -1);
    assert_int_equal(acct_page()->dev[7].limited, 1);
    release(0x8000);
    pthread_mutex_lock(&hold_lock);
    hold_state = 2;
    pthread_cond_broadcast(&hold_cond);
    pthread_mutex_unlock(&hold_lock);
    pthread_join(th, NULL);
    assert_int_equal(acct_used(7), 0);
}

static void pinned_host_is_not_limited(void **state)
{
    (void)state;
    assert_int_equal(alloc(9, SPOTRUN_MEM_HOST, 2ull * LIMIT, 0xA000), 0);
    assert_int_equal(alloc(9, SPOTRUN_MEM_DEVICE, LIMIT, 0xB000), 0);
    assert_int_equal(sum(9, SPOTRUN_MEM_HOST).current, 2ull * LIMIT);
    release(0xA000);
    release(0xB000);
}

int main(void)
{
    setup_once();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(single_thread_peak_is_exact),
        cmocka_unit_test(threads_add_up_and_never_pass_the_limit),
        cmocka_unit_test(quota_held_elsewhere_is_taken_back_at_the_limit),
        cmocka_unit_test(pinned_host_is_not_limited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
