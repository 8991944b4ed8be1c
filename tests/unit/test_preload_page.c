/*
 * test_preload_page.c - pins the layout of the shim's shared accounting
 * page (preload/gpu_page.h): the wrapper of one version reads the pages of
 * a shim of another, so offsets and sizes never move without a version
 * bump (version 2: per-thread slots), and the readers' sum over slots.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gpu_page.h"
#include "job_page.h"
#include "signame.h"

#include <signal.h>

/* The job page: the shim, the wrapper and the Python module (which reads
 * these offsets with struct) must agree. */
static void job_page_layout_is_pinned(void **state)
{
    (void)state;
    assert_int_equal(SPOTRUN_JOB_PAGE_MAGIC, 0x0031424f4a525053ULL);
    assert_int_equal(SPOTRUN_JOB_PAGE_VERSION, 1);
    assert_int_equal(offsetof(struct spotrun_job_page, magic), 0);
    assert_int_equal(offsetof(struct spotrun_job_page, version), 8);
    assert_int_equal(offsetof(struct spotrun_job_page, size), 12);
    assert_int_equal(offsetof(struct spotrun_job_page, requested), 16);
    assert_int_equal(offsetof(struct spotrun_job_page, served), 24);
    assert_int_equal(offsetof(struct spotrun_job_page, listening), 32);
    assert_int_equal(offsetof(struct spotrun_job_page, signo), 40);
    assert_int_equal(offsetof(struct spotrun_job_page, progress), 48);
    assert_int_equal(offsetof(struct spotrun_job_page, progress_ms), 56);
    assert_int_equal(sizeof(struct spotrun_job_page), 256);
    assert_true(sizeof(struct spotrun_job_page) <= SPOTRUN_JOB_PAGE_SIZE);
}

/* Every name the wrapper writes into SPOTRUN_SIGNAL parses back to the
 * same number in the shim. */
static void signal_names_round_trip(void **state)
{
    (void)state;
    char buf[32];
    for (int sig = 1; sig <= SIGRTMAX; sig++) {
        if (sig > SIGSYS && sig < SIGRTMIN)
            continue; /* glibc reserves these */
        assert_int_equal(spotrun_signal_parse(spotrun_signal_name(sig, buf, sizeof buf)), sig);
    }
    assert_string_equal(spotrun_signal_name(SIGUSR1, buf, sizeof buf), "SIGUSR1");
    assert_string_equal(spotrun_signal_name(SIGRTMIN + 2, buf, sizeof buf), "SIGRTMIN+2");
    assert_int_equal(spotrun_signal_parse("usr2"), SIGUSR2);
    assert_int_equal(spotrun_signal_parse("RTMIN+2"), SIGRTMIN + 2);
    assert_int_equal(spotrun_signal_parse("SIGRTMAX-1"), SIGRTMAX - 1);
    assert_int_equal(spotrun_signal_parse("40"), 40);
    assert_int_equal(spotrun_signal_parse("0"), -1);
    assert_int_equal(spotrun_signal_parse("65"), -1);
    assert_int_equal(spotrun_signal_parse("RTMIN+99"), -1);
    assert_int_equal(spotrun_signal_parse("RTMIN-1"), -1);
    assert_int_equal(spotrun_signal_parse("10x"), -1);
    assert_int_equal(spotrun_signal_parse("NOPE"), -1);
    assert_int_equal(spotrun_signal_parse(""), -1);
}

static void page_layout_is_pinned(void **state)
{
    (void)state;
    assert_int_equal(SPOTRUN_GPU_PAGE_MAGIC, 0x0031454741505253ULL);
    assert_int_equal(SPOTRUN_GPU_PAGE_VERSION, 2);
    assert_int_equal(SPOTRUN_GPU_MAX_DEVICES, 16);
    assert_int_equal(SPOTRUN_GPU_SLOTS, 64);
    assert_int_equal(offsetof(struct spotrun_gpu_page, magic), 0);
    assert_int_equal(offsetof(struct spotrun_gpu_page, version), 8);
    assert_int_equal(offsetof(struct spotrun_gpu_page, size), 12);
    assert_int_equal(offsetof(struct spotrun_gpu_page, pid), 16);
    assert_int_equal(offsetof(struct spotrun_gpu_page, devices), 20);
    assert_int_equal(offsetof(struct spotrun_gpu_page, limit_bytes), 24);
    assert_int_equal(offsetof(struct spotrun_gpu_page, untracked), 32);
    assert_int_equal(offsetof(struct spotrun_gpu_page, slots), 40);
    assert_int_equal(offsetof(struct spotrun_gpu_page, slot_size), 44);
    assert_int_equal(offsetof(struct spotrun_gpu_page, dev), 128);
    assert_int_equal(sizeof(struct spotrun_gpu_total), 32);
    assert_int_equal(offsetof(struct spotrun_gpu_dev, failed), 96);
    assert_int_equal(offsetof(struct spotrun_gpu_dev, limited), 104);
    assert_int_equal(offsetof(struct spotrun_gpu_dev, granted), 112);
    assert_int_equal(sizeof(struct spotrun_gpu_dev), 160);
    assert_int_equal(offsetof(struct spotrun_gpu_page, slot), 128 + 16 * 160);
    assert_int_equal(sizeof(struct spotrun_gpu_count), 32);
    assert_int_equal(offsetof(struct spotrun_gpu_slot, dev), 128);
    assert_int_equal(sizeof(struct spotrun_gpu_slot), 128 + 16 * 3 * 32);
    assert_int_equal(sizeof(struct spotrun_gpu_page), 128 + 16 * 160 + 64 * (128 + 16 * 3 * 32));
    assert_int_equal(SPOTRUN_MEM_DEVICE, 0);
    assert_int_equal(SPOTRUN_MEM_MANAGED, 1);
    assert_int_equal(SPOTRUN_MEM_HOST, 2);
}

static void slots_do_not_share_cache_lines(void **state)
{
    (void)state;
    /* The page is mapped page-aligned; each thread's slot starts on its own
     * pair of 64-byte lines (adjacent-line prefetch), so two threads'
     * counters never share one. */
    assert_int_equal(offsetof(struct spotrun_gpu_page, slot) % 128, 0);
    assert_int_equal(sizeof(struct spotrun_gpu_slot) % 128, 0);
}

static void readers_sum_slots_modulo_2_64(void **state)
{
    (void)state;
    static struct spotrun_gpu_page pg;
    /* Thread A allocated 3 MiB, thread B freed 1 MiB of it: B's slot is
     * "negative", the sum is what is live. */
    pg.slot[1].dev[2][SPOTRUN_MEM_MANAGED].current = 3u << 20;
    pg.slot[1].dev[2][SPOTRUN_MEM_MANAGED].allocs = 3;
    pg.slot[5].dev[2][SPOTRUN_MEM_MANAGED].current = (uint64_t) - (1 << 20);
    pg.slot[5].dev[2][SPOTRUN_MEM_MANAGED].frees = 1;
    pg.slot[0].dev[2][SPOTRUN_MEM_MANAGED].allocs = 1; /* the shared slot counts too */
    pg.dev[2].total[SPOTRUN_MEM_MANAGED].peak = 3u << 20;
    struct spotrun_gpu_sum s = spotrun_gpu_page_sum(&pg, 2, SPOTRUN_MEM_MANAGED);
    assert_int_equal(s.current, 2u << 20);
    assert_int_equal(s.peak, 3u << 20);
    assert_int_equal(s.allocs, 4);
    assert_int_equal(s.frees, 1);
    /* A snapshot that caught the free but not yet the allocation: 0, not 2^64 - 1 MiB. */
    pg.slot[1].dev[2][SPOTRUN_MEM_MANAGED].current = 0;
    s = spotrun_gpu_page_sum(&pg, 2, SPOTRUN_MEM_MANAGED);
    assert_int_equal(s.current, 0);
}

static void counters_are_lock_free_sized(void **state)
{
    (void)state;
    /* Every counter is a naturally aligned 8-byte word: atomic without a lock. */
    assert_true(__atomic_always_lock_free(sizeof(uint64_t), 0));
    assert_int_equal(offsetof(struct spotrun_gpu_page, dev) % 8, 0);
    assert_int_equal(sizeof(struct spotrun_gpu_page) % 8, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(page_layout_is_pinned),
        cmocka_unit_test(job_page_layout_is_pinned),
        cmocka_unit_test(signal_names_round_trip),
        cmocka_unit_test(counters_are_lock_free_sized),
        cmocka_unit_test(slots_do_not_share_cache_lines),
        cmocka_unit_test(readers_sum_slots_modulo_2_64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
