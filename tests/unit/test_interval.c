/*
 * test_interval.c - the checkpoint interval of `--every auto`
 * (common/interval.h): Young/Daly's sqrt(2 C M), its bounds, the expected
 * loss per preemption, and the MTBF with its prior.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "interval.h"

#define S INT64_C(1000)
#define H (3600 * S)

static void test_optimum_is_sqrt_2_cost_mtbf(void **state)
{
    (void)state;
    int bound = 99;
    /* cost 10s, MTBF 6h: sqrt(2 * 10 * 21600) = 657.3s */
    const int64_t t = sr_interval_optimum(10 * S, 6 * H, 30 * S, 4 * H, &bound);
    assert_in_range(t, 657 * S, 658 * S);
    assert_int_equal(bound, 0);
    /* cost 2s, MTBF 1h: sqrt(2 * 2 * 3600) = 120s exactly */
    assert_int_equal(sr_interval_optimum(2 * S, 1 * H, 30 * S, 4 * H, NULL), 120 * S);
}

static void test_optimum_grows_as_sqrt(void **state)
{
    (void)state;
    /* four times the cost (or the MTBF): twice the interval */
    const int64_t a = sr_interval_optimum(1 * S, 2 * H, 1, 100 * H, NULL);
    assert_int_equal(sr_interval_optimum(4 * S, 2 * H, 1, 100 * H, NULL), 2 * a);
    assert_int_equal(sr_interval_optimum(1 * S, 8 * H, 1, 100 * H, NULL), 2 * a);
}

static void test_optimum_lower_bound(void **state)
{
    (void)state;
    int bound = 0;
    /* cost 100ms, MTBF 6h: 65.7s is under a 2-minute floor */
    assert_int_equal(sr_interval_optimum(100, 6 * H, 120 * S, 4 * H, &bound), 120 * S);
    assert_int_equal(bound, -1);
}

static void test_optimum_upper_bound(void **state)
{
    (void)state;
    int bound = 0;
    /* cost 10min, MTBF 100h: 2.7h, over a 1h ceiling */
    assert_int_equal(sr_interval_optimum(600 * S, 100 * H, 30 * S, 1 * H, &bound), 1 * H);
    assert_int_equal(bound, 1);
}

static void test_optimum_at_most_half_the_mtbf(void **state)
{
    (void)state;
    int bound = 0;
    /* cost 10s prior, MTBF 20s: sqrt(400) = 20s, beyond MTBF / 2 */
    assert_int_equal(sr_interval_optimum(10 * S, 20 * S, 1 * S, 4 * H, &bound), 10 * S);
    assert_int_equal(bound, 1);
}

static void test_lower_bound_wins_when_bounds_cross(void **state)
{
    (void)state;
    int bound = 0;
    /* MTBF 20s: MTBF / 2 = 10s is below a 30s floor; the floor stands */
    assert_int_equal(sr_interval_optimum(10 * S, 20 * S, 30 * S, 4 * H, &bound), 30 * S);
    assert_int_equal(bound, -1);
}

static void test_no_cost_or_mtbf_gives_the_floor(void **state)
{
    (void)state;
    assert_int_equal(sr_interval_optimum(0, 6 * H, 30 * S, 4 * H, NULL), 30 * S);
    assert_int_equal(sr_interval_optimum(-5, 6 * H, 30 * S, 4 * H, NULL), 30 * S);
    assert_int_equal(sr_interval_optimum(10 * S, 0, 30 * S, 4 * H, NULL), 30 * S);
}

static void test_huge_values_do_not_overflow(void **state)
{
    (void)state;
    /* 100 years of cost and MTBF: the ceiling, not a wrapped number */
    const int64_t y = INT64_C(3153600000000);
    assert_int_equal(sr_interval_optimum(y, y, 30 * S, 4 * H, NULL), 4 * H);
}

static void test_loss_is_half_the_interval_plus_the_cost(void **state)
{
    (void)state;
    assert_int_equal(sr_interval_loss_ms(600 * S, 10 * S), 310 * S);
    assert_int_equal(sr_interval_loss_ms(60 * S, 0), 30 * S);
    assert_int_equal(sr_interval_loss_ms(60 * S, -1), 30 * S);
}

static void test_overhead_is_cost_over_interval(void **state)
{
    (void)state;
    assert_true(sr_interval_overhead(100 * S, 5 * S) > 0.0499);
    assert_true(sr_interval_overhead(100 * S, 5 * S) < 0.0501);
    assert_true(sr_interval_overhead(0, 5 * S) == 0.0);
}

static void test_mtbf_from_instance_time_and_preemptions(void **state)
{
    (void)state;
    assert_int_equal(sr_interval_mtbf(12 * H, 4, 6 * H), 3 * H);
    assert_int_equal(sr_interval_mtbf(90 * S, 1, 6 * H), 90 * S);
}

static void test_mtbf_without_preemptions_is_the_prior(void **state)
{
    (void)state;
    assert_int_equal(sr_interval_mtbf(0, 0, 6 * H), 6 * H);
    assert_int_equal(sr_interval_mtbf(100 * H, 0, 6 * H), 6 * H);
    assert_int_equal(sr_interval_mtbf(0, 3, 20 * S), 20 * S); /* no instance time: no measure */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_optimum_is_sqrt_2_cost_mtbf),
        cmocka_unit_test(test_optimum_grows_as_sqrt),
        cmocka_unit_test(test_optimum_lower_bound),
        cmocka_unit_test(test_optimum_upper_bound),
        cmocka_unit_test(test_optimum_at_most_half_the_mtbf),
        cmocka_unit_test(test_lower_bound_wins_when_bounds_cross),
        cmocka_unit_test(test_no_cost_or_mtbf_gives_the_floor),
        cmocka_unit_test(test_huge_values_do_not_overflow),
        cmocka_unit_test(test_loss_is_half_the_interval_plus_the_cost),
        cmocka_unit_test(test_overhead_is_cost_over_interval),
        cmocka_unit_test(test_mtbf_from_instance_time_and_preemptions),
        cmocka_unit_test(test_mtbf_without_preemptions_is_the_prior),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
