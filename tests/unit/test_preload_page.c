/*
 * test_preload_page.c - pins the layout of the shim's shared accounting
 * page (preload/gpu_page.h): the wrapper of one version reads the pages of
 * a shim of another, so offsets and sizes never move; new fields go into
 * the reserved space with a version bump.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gpu_page.h"

static void page_layout_is_pinned(void **state)
{
    (void)state;
    assert_int_equal(SPOTRUN_GPU_PAGE_MAGIC, 0x0031454741505253ULL);
    assert_int_equal(SPOTRUN_GPU_PAGE_VERSION, 1);
    assert_int_equal(SPOTRUN_GPU_MAX_DEVICES, 16);
    assert_int_equal(offsetof(struct spotrun_gpu_page, magic), 0);
    assert_int_equal(offsetof(struct spotrun_gpu_page, version), 8);
    assert_int_equal(offsetof(struct spotrun_gpu_page, size), 12);
    assert_int_equal(offsetof(struct spotrun_gpu_page, pid), 16);
    assert_int_equal(offsetof(struct spotrun_gpu_page, devices), 20);
    assert_int_equal(offsetof(struct spotrun_gpu_page, limit_bytes), 24);
    assert_int_equal(offsetof(struct spotrun_gpu_page, untracked), 32);
    assert_int_equal(offsetof(struct spotrun_gpu_page, dev), 128);
    assert_int_equal(sizeof(struct spotrun_gpu_kind), 32);
    assert_int_equal(offsetof(struct spotrun_gpu_dev, failed), 96);
    assert_int_equal(offsetof(struct spotrun_gpu_dev, limited), 104);
    assert_int_equal(sizeof(struct spotrun_gpu_dev), 160);
    assert_int_equal(sizeof(struct spotrun_gpu_page), 128 + 16 * 160);
    assert_int_equal(SPOTRUN_MEM_DEVICE, 0);
    assert_int_equal(SPOTRUN_MEM_MANAGED, 1);
    assert_int_equal(SPOTRUN_MEM_HOST, 2);
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
        cmocka_unit_test(counters_are_lock_free_sized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
