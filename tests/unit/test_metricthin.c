/*
 * test_metricthin.c - which reported metric values reach the event log
 * (storage/run/metricthin.h): every value up to the budget, then a
 * doubling stride; the last, lowest and highest always exact; a bounded
 * number of lines whatever the job reports.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "metricthin.h"

static void every_value_up_to_the_budget_then_a_doubling_stride(void **state)
{
    (void)state;
    /* budget 4: 0-3 all, 4-11 every 2nd, 12-27 every 4th, 28-59 every 8th */
    static const int want[] = {1, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 0, 1, 0,
                               0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
    for (uint64_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (sr_metric_keep(i, 4) != want[i])
            fail_msg("index %llu: keep %d, want %d", (unsigned long long)i, sr_metric_keep(i, 4),
                     want[i]);
}

static void kept_values_grow_with_the_log_of_the_count(void **state)
{
    (void)state;
    const uint64_t budget = 1000;
    uint64_t kept = 0;
    for (uint64_t i = 0; i < 1000 * 1023; i++) /* 10 segments */
        kept += (uint64_t)sr_metric_keep(i, budget);
    assert_int_equal(kept, 10 * budget);
    /* far indices work (no overflow), the stride is a power of two */
    assert_true(sr_metric_keep(UINT64_MAX / 2, 1) == 0 || sr_metric_keep(UINT64_MAX / 2, 1) == 1);
    assert_int_equal(sr_metric_keep(12345, 0), 1);
}

static void last_min_and_max_stay_exact_past_the_budget(void **state)
{
    (void)state;
    static struct sr_metric_thin t;
    sr_metric_thin_init(&t, 10);
    uint64_t written = 0;
    srand(7);
    for (int64_t step = 0; step < 100000; step++) {
        double v = 1.0 + (double)(rand() % 1000) / 1000.0;
        if (step == 77777)
            v = 0.125; /* the best loss, reached once among thinned values */
        if (step == 88888)
            v = 9.5;
        const int w = sr_metric_thin_add(&t, "loss", v, step, 1000 + step);
        assert_true(w == 0 || w == 1);
        written += (uint64_t)w;
    }
    assert_int_equal(sr_metric_thin_add(&t, "loss", 3.25, 100000, 999999), 0);
    assert_int_equal(t.n, 1);
    const struct sr_metric_name *m = &t.v[0];
    assert_int_equal(m->count, 100001);
    assert_int_equal(m->count - m->dropped, written);
    assert_true(written < 200); /* 10 x (1 + log2(10000)) */
    assert_true(m->min == 0.125);
    assert_int_equal(m->min_step, 77777);
    assert_true(m->max == 9.5);
    assert_int_equal(m->max_step, 88888);
    assert_true(m->last == 3.25);
    assert_int_equal(m->last_step, 100000);
    assert_int_equal(m->last_ms, 999999);
}

static void lines_are_bounded_whatever_the_names(void **state)
{
    (void)state;
    static struct sr_metric_thin t;
    sr_metric_thin_init(&t, 5);
    char name[32];
    for (int i = 0; i < SR_METRIC_NAMES_MAX; i++) {
        snprintf(name, sizeof(name), "m%d", i);
        for (int k = 0; k < 1000; k++)
            sr_metric_thin_add(&t, name, k, k, k);
    }
    assert_int_equal(t.lines, 5 * SR_METRIC_LINES_PER_BUDGET);
    /* a name past the cap is not recorded at all */
    assert_int_equal(sr_metric_thin_add(&t, "one_more", 1, 1, 1), -1);
    /* but every known name still sums up exactly */
    assert_int_equal(sr_metric_thin_add(&t, "m63", -4, 5000, 5000), 0);
    assert_true(t.v[63].min == -4);
    assert_true(t.v[63].last == -4);
    assert_int_equal(t.v[63].count, 1001);
}

static void the_budget_from_the_environment(void **state)
{
    (void)state;
    unsetenv("SPOTRUN_METRIC_BUDGET");
    assert_int_equal(sr_metric_budget_env(), 0);
    setenv("SPOTRUN_METRIC_BUDGET", "50", 1);
    assert_int_equal(sr_metric_budget_env(), 50);
    static const char *const bad[] = {"0", "-5", "5x", "99999999999", " 5", "+5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("SPOTRUN_METRIC_BUDGET", bad[i], 1);
        if (sr_metric_budget_env() != -EINVAL)
            fail_msg("SPOTRUN_METRIC_BUDGET=%s accepted", bad[i]);
    }
    unsetenv("SPOTRUN_METRIC_BUDGET");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_value_up_to_the_budget_then_a_doubling_stride),
        cmocka_unit_test(kept_values_grow_with_the_log_of_the_count),
        cmocka_unit_test(last_min_and_max_stay_exact_past_the_budget),
        cmocka_unit_test(lines_are_bounded_whatever_the_names),
        cmocka_unit_test(the_budget_from_the_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
