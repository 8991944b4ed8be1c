/*
 * test_every.c - the supervisor's `--every auto` state
 * (runtime/supervise/every.h): where cost and MTBF come from, the median of
 * the measured stage times, the history's MTBF growing with this wrapper's
 * time, and when a new interval is worth saying.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "every.h"
#include "interval.h"

#define S INT64_C(1000)
#define H (3600 * S)

static struct sr_every_auto cfg(void)
{
    return (struct sr_every_auto){
        .on = 1, .mtbf_prior_ms = 6 * H, .min_ms = 30 * S, .max_ms = 4 * H};
}

static void test_priors_before_anything_is_measured(void **state)
{
    (void)state;
    const struct sr_every_auto a = cfg();
    struct sr_every e;
    sr_every_init(&e, &a, 0);
    assert_int_equal(sr_every_update(&e, 0), 1); /* the first choice is said */
    assert_int_equal(e.cost_ms, SR_INTERVAL_COST_PRIOR_MS);
    assert_string_equal(e.cost_from, "prior");
    assert_int_equal(e.mtbf_ms, 6 * H);
    assert_string_equal(e.mtbf_from, "prior");
    assert_in_range(e.interval_ms, 657 * S, 658 * S);
    char buf[160];
    sr_every_describe(&e, buf, sizeof(buf));
    assert_string_equal(buf, "10m57s (auto: cost 10.0s prior, MTBF 6h00m prior)");
}

static void test_history_cost_then_measured_median(void **state)
{
    (void)state;
    struct sr_every_auto a = cfg();
    a.hist_cost_ms = 2 * S;
    struct sr_every e;
    sr_every_init(&e, &a, 0);
    sr_every_update(&e, 0);
    assert_string_equal(e.cost_from, "history");
    assert_int_equal(e.cost_ms, 2 * S);
    sr_every_sample(&e, 2 * S);
    assert_int_equal(sr_every_update(&e, 0), 1); /* the source changed */
    assert_string_equal(e.cost_from, "measured");
    sr_every_sample(&e, 60 * S); /* one slow commit does not set the pace */
    sr_every_sample(&e, 3 * S);
    sr_every_update(&e, 0);
    assert_int_equal(e.cost_ms, 3 * S);
}

/* A job that saves in the background reports its pause: from then on the
 * pauses are the cost, and the (long) stage times the job did not wait for
 * no longer count. */
static void test_reported_pauses_replace_stage_times(void **state)
{
    (void)state;
    struct sr_every_auto a = cfg();
    struct sr_every e;
    sr_every_init(&e, &a, 0);
    sr_every_sample(&e, 20 * S);
    sr_every_update(&e, 0);
    assert_int_equal(e.cost_ms, 20 * S);
    sr_every_sample_pause(&e, S / 2);
    sr_every_sample(&e, 20 * S); /* that commit's stage: not a pause */
    sr_every_sample_pause(&e, S / 2);
    assert_int_equal(sr_every_update(&e, 0), 1);
    assert_int_equal(e.cost_ms, S / 2);
    assert_string_equal(e.cost_from, "measured");
}

static void test_small_moves_are_not_said(void **state)
{
    (void)state;
    const struct sr_every_auto a = cfg();
    struct sr_every e;
    sr_every_init(&e, &a, 0);
    sr_every_sample(&e, 10 * S);
    sr_every_update(&e, 0);
    sr_every_sample(&e, 11 * S); /* median of 10, 11: 10 */
    assert_int_equal(sr_every_update(&e, 0), 0);
    /* three commits of 40s out of five: the median is 40s, twice the
     * interval (sqrt) */
    sr_every_sample(&e, 40 * S);
    sr_every_sample(&e, 40 * S);
    sr_every_sample(&e, 40 * S);
    assert_int_equal(sr_every_update(&e, 0), 1);
}

static void test_history_mtbf_grows_with_this_wrappers_time(void **state)
{
    (void)state;
    struct sr_every_auto a = cfg();
    a.hist_instance_ms = 1 * H;
    a.hist_preemptions = 1;
    struct sr_every e;
    sr_every_init(&e, &a, 5000);
    sr_every_update(&e, 5000);
    assert_int_equal(e.mtbf_ms, 1 * H);
    assert_string_equal(e.mtbf_from, "history");
    sr_every_update(&e, 5000 + 1 * H);
    assert_int_equal(e.mtbf_ms, 2 * H);
    a.mtbf_scope = "sweep";
    sr_every_init(&e, &a, 0);
    sr_every_update(&e, 0);
    assert_string_equal(e.mtbf_from, "sweep");
}

static void test_bounds_are_said(void **state)
{
    (void)state;
    struct sr_every_auto a = cfg();
    a.mtbf_prior_ms = 20 * S;
    a.min_ms = 1 * S;
    struct sr_every e;
    sr_every_init(&e, &a, 0);
    sr_every_update(&e, 0);
    assert_int_equal(e.interval_ms, 10 * S); /* MTBF / 2 */
    char buf[160];
    sr_every_describe(&e, buf, sizeof(buf));
    assert_non_null(strstr(buf, "at its upper bound"));
    json_t *ev = sr_every_event(&e);
    assert_int_equal(json_integer_value(json_object_get(ev, "loss_ms")), 15 * S);
    json_decref(ev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_priors_before_anything_is_measured),
        cmocka_unit_test(test_history_cost_then_measured_median),
        cmocka_unit_test(test_reported_pauses_replace_stage_times),
        cmocka_unit_test(test_small_moves_are_not_said),
        cmocka_unit_test(test_history_mtbf_grows_with_this_wrappers_time),
        cmocka_unit_test(test_bounds_are_said),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
