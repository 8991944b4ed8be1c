/*
 * test_summary.c - the price a view of a run uses (summary.h,
 * sr_hist_view_prices): the viewer's flag, else the price the run's start
 * events recorded, per session, never a guess for hours nobody priced.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>

#include "histutil.h"
#include "summary.h"

#define T0 INT64_C(1796000000000)
#define HOUR INT64_C(3600000)

/* Two sessions (wrapper processes) of one hour each: the first at price
 * p0, the second at p1 ("" = no price in its start event). */
static void two_sessions(struct sr_history *h, const char *p0, const char *p1)
{
    sr_hist_init(h);
    tu_hist_add(h, "{\"event\":\"start\",\"time\":\"x\",\"unix_ms\":%lld,\"attempt\":0%s}",
                (long long)T0, p0);
    EV(h, HOUR, 0, "notice", ",\"source\":\"aws\"");
    EV(h, HOUR, 0, "preempted", "");
    tu_hist_add(h, "{\"event\":\"start\",\"time\":\"x\",\"unix_ms\":%lld,\"attempt\":1%s}",
                (long long)(T0 + 2 * HOUR), p1);
    EV(h, 3 * HOUR, 1, "exit", ",\"code\":0");
    EV(h, 3 * HOUR, 1, "done", "");
    sr_hist_derive(h);
    assert_int_equal(h->sessions, 2);
}

static void test_the_flag_wins(void **state)
{
    (void)state;
    struct sr_history h;
    two_sessions(&h, ",\"price_per_hour\":2.0", ",\"price_per_hour\":2.0");
    const struct sr_hist_prices flag = {.spot_per_hour = 5, .on_demand_per_hour = 9};
    struct sr_hist_prices out;
    assert_int_equal(sr_hist_view_prices(&h, &flag, &out), 0);
    assert_true(out.spot_per_hour == 5 && out.on_demand_per_hour == 9);
    sr_hist_free(&h);
}

static void test_recorded_prices_weighted_by_hours(void **state)
{
    (void)state;
    struct sr_history h;
    two_sessions(&h, ",\"price_per_hour\":2.0", ",\"price_per_hour\":4.0");
    const struct sr_hist_prices none = {.on_demand_per_hour = 9};
    struct sr_hist_prices out;
    assert_int_equal(sr_hist_view_prices(&h, &none, &out), 1);
    assert_true(fabs(out.spot_per_hour - 3.0) < 1e-9); /* (2 + 4) / 2 hours */
    assert_true(out.on_demand_per_hour == 9);
    double spot, od;
    sr_hist_cost(&h, &out, &spot, &od);
    assert_true(fabs(spot - 6.0) < 1e-9);
    sr_hist_free(&h);
}

static void test_an_unpriced_session_leaves_the_cost_unknown(void **state)
{
    (void)state;
    struct sr_history h;
    two_sessions(&h, ",\"price_per_hour\":2.0", "");
    const struct sr_hist_prices none = {0};
    struct sr_hist_prices out;
    assert_int_equal(sr_hist_view_prices(&h, &none, &out), 0);
    assert_true(out.spot_per_hour == 0);
    sr_hist_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_flag_wins),
        cmocka_unit_test(test_recorded_prices_weighted_by_hours),
        cmocka_unit_test(test_an_unpriced_session_leaves_the_cost_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
