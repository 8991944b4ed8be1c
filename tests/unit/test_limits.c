/*
 * test_limits.c - time limits and budgets: the checks of
 * runtime/supervise/limit.h on a given clock, the price table parser and a
 * run's cost from synthetic event logs (runtime/record/prices.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "history.h"
#include "limit.h"
#include "prices.h"

#define T0 1700000000000LL

/* --attempt-time-limit fires at the attempt's start + limit, never before. */
static void attempt_limit(void **state)
{
    (void)state;
    struct sr_limits l;
    const struct sr_limits_config c = {.attempt_time_limit_ms = 5000};
    sr_limits_init(&l, &c, 1000);
    struct sr_limit_hit hit;
    assert_int_equal(sr_limits_check(&l, 5999, 1000, &hit), 0);
    assert_int_equal(sr_limits_next(&l, 5500, 1000), 6000);
    assert_int_equal(sr_limits_check(&l, 6000, 1000, &hit), 1);
    assert_string_equal(hit.cause, "time-limit");
    assert_string_equal(hit.what, "attempt");
    assert_int_equal((int)hit.limit, 5000);
    /* a new attempt (a restart) starts its own count */
    assert_int_equal(sr_limits_check(&l, 6000, 5000, &hit), 0);
}

/* --time-limit counts the time recorded before this wrapper. */
static void run_limit_counts_history(void **state)
{
    (void)state;
    struct sr_limits l;
    const struct sr_limits_config c = {.time_limit_ms = 10000, .used_ms = 7000};
    sr_limits_init(&l, &c, 0);
    struct sr_limit_hit hit;
    assert_int_equal(sr_limits_check(&l, 2999, 0, &hit), 0);
    assert_int_equal(sr_limits_next(&l, 2000, 0), 3000);
    assert_int_equal(sr_limits_check(&l, 3000, 0, &hit), 1);
    assert_string_equal(hit.what, "run");
    assert_int_equal((int)hit.used, 10000);
    char buf[160];
    sr_limit_describe(&hit, buf, sizeof(buf));
    assert_non_null(strstr(buf, "--time-limit 10.0s"));
    sr_limit_extend(&l, &hit, buf, sizeof(buf));
    assert_string_equal(buf, "give --time-limit larger to extend it");
}

/* A budget: the cost before plus this wrapper's hours at the price; the
 * wake-up is when it runs out. */
static void budget(void **state)
{
    (void)state;
    struct sr_limits l;
    /* 3600 an hour: 1 a second; 2 spent before, 5 allowed: 3 s left */
    const struct sr_limits_config c = {.max_cost = 5, .price_per_hour = 3600, .cost_before = 2};
    sr_limits_init(&l, &c, 0);
    struct sr_limit_hit hit;
    assert_int_equal(sr_limits_check(&l, 2900, 0, &hit), 0);
    assert_int_equal(sr_limits_next(&l, 1000, 0), 2000); /* at most a second away */
    assert_int_equal(sr_limits_next(&l, 2500, 0), 3000);
    assert_int_equal(sr_limits_check(&l, 3000, 0, &hit), 1);
    assert_string_equal(hit.cause, "budget");
    json_t *ev = sr_limit_event(&hit);
    assert_string_equal(json_string_value(json_object_get(ev, "cause")), "budget");
    assert_true(json_real_value(json_object_get(ev, "limit")) == 5.0);
    json_decref(ev);
}

static int calls;
static int poll_fn(void *ctx, double *used, double *limit)
{
    (void)ctx;
    calls++;
    *used = 9;
    *limit = 10;
    return 0;
}

/* A sweep's budget: polled at most every sweep_poll_ms; the others' cost
 * plus this run's reaches it. */
static void sweep_budget(void **state)
{
    (void)state;
    struct sr_limits l;
    const struct sr_limits_config c = {.price_per_hour = 3600,
                                       .sweep_poll = poll_fn,
                                       .sweep_used = 0,
                                       .sweep_limit = 10,
                                       .sweep_poll_ms = 1000,
                                       .sweep = "sw"};
    sr_limits_init(&l, &c, 0);
    struct sr_limit_hit hit;
    calls = 0;
    assert_int_equal(sr_limits_check(&l, 500, 0, &hit), 0);
    assert_int_equal(calls, 0);
    assert_int_equal(sr_limits_check(&l, 1000, 0, &hit), 1); /* 9 + 1 s at 1/s */
    assert_int_equal(calls, 1);
    assert_string_equal(hit.what, "sweep");
    char buf[160];
    sr_limit_extend(&l, &hit, buf, sizeof(buf));
    assert_string_equal(buf, "raise it with `spotrun sweep set sw --max-cost AMOUNT`");
    /* another node's hit, with this node's own numbers */
    assert_int_equal(sr_limits_hit_of(&l, 1000, 0, "budget", "sweep", &hit), 0);
    assert_int_equal(sr_limits_hit_of(&l, 1000, 0, "budget", "bogus", &hit), -EINVAL);
}

static const char *steered_as; /* what the steering poll answers */
static int steer_fn(void *ctx, const char **cause)
{
    (void)ctx;
    calls++;
    *cause = steered_as;
    return steered_as != NULL;
}

/* The sweep's steering (a trial with no budget): polled on the budget's
 * schedule, never in between; once it says "cancelled" the trial is at a
 * stop with no amounts, and the message says how to run it again. */
static void sweep_steering(void **state)
{
    (void)state;
    struct sr_limits l;
    const struct sr_limits_config c = {
        .steer_poll = steer_fn, .sweep_poll_ms = 1000, .sweep = "sw", .trial = 4};
    sr_limits_init(&l, &c, 0);
    struct sr_limit_hit hit;
    calls = 0;
    steered_as = NULL;
    assert_int_equal(sr_limits_next(&l, 0, 0), 1000); /* polled even without any limit */
    assert_int_equal(sr_limits_check(&l, 1000, 0, &hit), 0);
    assert_int_equal(calls, 1);
    steered_as = "cancelled";
    assert_int_equal(sr_limits_check(&l, 1500, 0, &hit), 0); /* not before the next poll */
    assert_int_equal(calls, 1);
    assert_int_equal(sr_limits_check(&l, 2000, 0, &hit), 1);
    assert_string_equal(hit.cause, "cancelled");
    assert_string_equal(hit.what, "sweep");
    char buf[160];
    sr_limit_extend(&l, &hit, buf, sizeof(buf));
    assert_string_equal(buf, "`spotrun sweep retry sw 4` runs it again");
    json_t *ev = sr_limit_event(&hit);
    assert_string_equal(json_string_value(json_object_get(ev, "cause")), "cancelled");
    assert_null(json_object_get(ev, "used"));
    json_decref(ev);
    /* another node of the group learns the same stop */
    assert_int_equal(sr_limits_hit_of(&l, 2000, 0, "paused", "sweep", &hit), 0);
    assert_string_equal(hit.cause, "paused");
}

static int budget_calls;
static int budget_fn(void *ctx, double *used, double *limit)
{
    (void)ctx;
    budget_calls++;
    *used = 0;
    *limit = 100;
    return 0;
}

/* The steering has its own, shorter, period: a trial with a budget polled
 * every 30 s looks at its steering every 2 s, and the loop wakes for it;
 * once stopped, it looks no more. */
static void steering_on_its_own_period(void **state)
{
    (void)state;
    struct sr_limits l;
    const struct sr_limits_config c = {.sweep_poll = budget_fn,
                                       .sweep_limit = 100,
                                       .sweep_poll_ms = 30000,
                                       .steer_poll = steer_fn,
                                       .steer_poll_ms = 2000,
                                       .sweep = "sw",
                                       .trial = 1};
    sr_limits_init(&l, &c, 0);
    struct sr_limit_hit hit;
    calls = budget_calls = 0;
    steered_as = NULL;
    assert_int_equal(sr_limits_next(&l, 0, 0), 1000);
    assert_int_equal(sr_limits_next(&l, 1500, 0), 2000);
    for (int64_t t = 2000; t < 30000; t += 2000)
        assert_int_equal(sr_limits_check(&l, t, 0, &hit), 0);
    assert_int_equal(calls, 14);
    assert_int_equal(budget_calls, 0);
    steered_as = "paused";
    assert_int_equal(sr_limits_check(&l, 30000, 0, &hit), 1);
    assert_int_equal(calls, 15);
    assert_int_equal(budget_calls, 1);
    assert_string_equal(hit.cause, "paused");
    assert_int_equal(sr_limits_check(&l, 32000, 0, &hit), 1);
    assert_int_equal(calls, 15);
}

static int parse(const char *text, struct sr_prices *p)
{
    return sr_prices_parse("t.prices", text, strlen(text), p);
}

static void price_table(void **state)
{
    (void)state;
    struct sr_prices p;
    assert_int_equal(parse("# c\n\n g5.xlarge 0.45 1.006 # x\np3.2xlarge\t0.95\nn1 0 -\n", &p), 0);
    assert_int_equal((int)p.n, 3);
    const struct sr_price *e = sr_prices_find(&p, "g5.xlarge");
    assert_non_null(e);
    assert_true(e->spot == 0.45 && e->on_demand == 1.006);
    assert_true(sr_prices_find(&p, "p3.2xlarge")->on_demand == 0);
    assert_null(sr_prices_find(&p, "m5.large"));
    assert_null(sr_prices_find(&p, ""));
    sr_prices_free(&p);
    static const char *const bad[] = {
        "a 1 2 3\n", "a\n",        "a x\n",     "a -1\n",      "a 1e3\n",
        "a 1 y\n",   "a 1\na 2\n", "a\x01 1\n", "a 9999999\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse(bad[i], &p), -EINVAL);
        assert_null(p.v);
    }
    assert_int_equal(sr_prices_parse("t.prices", "a 1\0", 4, &p), -EINVAL);
}

static void add(struct sr_history *h, const char *line)
{
    assert_int_equal(sr_hist_add_line(h, line, strlen(line)), 0);
}

/* Each session priced by its instance type, else the fallback; every node. */
static void run_cost(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    char line[300];
    /* session 1: attempt 0, 1 h on g5.xlarge (0.5 in the table) */
    snprintf(line, sizeof(line),
             "{\"event\":\"start\",\"unix_ms\":%lld,\"attempt\":0,\"instance_type\":\"g5.xlarge\"}",
             T0);
    add(&h, line);
    snprintf(line, sizeof(line), "{\"event\":\"exit\",\"unix_ms\":%lld,\"attempt\":0,\"code\":143}",
             T0 + 3600000);
    add(&h, line);
    /* session 2: attempt 1, 2 nodes, 30 min, type unknown: the fallback 2.0 */
    snprintf(line, sizeof(line), "{\"event\":\"start\",\"unix_ms\":%lld,\"attempt\":1,\"nodes\":2}",
             T0 + 7200000);
    add(&h, line);
    snprintf(line, sizeof(line), "{\"event\":\"exit\",\"unix_ms\":%lld,\"attempt\":1,\"code\":0}",
             T0 + 9000000);
    add(&h, line);
    sr_hist_derive(&h);
    struct sr_prices p;
    assert_int_equal(parse("g5.xlarge 0.5\n", &p), 0);
    const double c = sr_prices_run_cost(&h, &p, 2.0);
    assert_true(c > 2.4999 && c < 2.5001);            /* 0.5 + 0.5 h x 2 nodes x 2.0 */
    assert_true(sr_prices_run_cost(&h, NULL, 0) < 0); /* cannot be priced */
    sr_prices_free(&p);
    sr_hist_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(attempt_limit),
        cmocka_unit_test(run_limit_counts_history),
        cmocka_unit_test(budget),
        cmocka_unit_test(sweep_budget),
        cmocka_unit_test(sweep_steering),
        cmocka_unit_test(price_table),
        cmocka_unit_test(steering_on_its_own_period),
        cmocka_unit_test(run_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
