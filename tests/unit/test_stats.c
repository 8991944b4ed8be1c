/*
 * test_stats.c - the arithmetic of `spotrun stats` (runtime/record/stats.h)
 * over synthetic run summaries: ISO weeks across year ends, the window's
 * clipping and period cuts, unpriced hours, prices in their order, rates
 * with zero hours, --by and --since/--until parsing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "stats.h"

#define HOUR INT64_C(3600000)
#define DAY (24 * HOUR)

static int64_t at(const char *iso)
{
    int64_t ms = 0;
    assert_int_equal(sr_stats_parse_time(iso, 0, &ms), 0);
    return ms;
}

static void week_of(const char *iso, const char *want)
{
    char buf[32];
    sr_stats_week(at(iso), buf, sizeof(buf));
    assert_string_equal(buf, want);
}

static void test_iso_weeks_across_year_ends(void **state)
{
    (void)state;
    week_of("2026-12-07", "2026-W50");
    week_of("2026-11-30T00:00:00Z", "2026-W49");
    week_of("2026-12-06T23:59:59Z", "2026-W49"); /* Sunday ends the week */
    week_of("2020-12-31", "2020-W53");           /* a 53-week year */
    week_of("2021-01-03", "2020-W53");           /* January days of last year's week */
    week_of("2021-01-04", "2021-W01");
    week_of("2024-12-30", "2025-W01"); /* December days of next year's week 1 */
    week_of("2027-01-01", "2026-W53");
    week_of("1970-01-01", "1970-W01");
    char buf[32];
    sr_stats_month(at("2026-02-28T23:00:00Z"), buf, sizeof(buf));
    assert_string_equal(buf, "2026-02");
    sr_stats_day(at("2028-02-29T12:00:00Z"), buf, sizeof(buf));
    assert_string_equal(buf, "2028-02-29");
    /* boundaries: the next Monday, the next first of a month */
    assert_int_equal(sr_stats_next_boundary(at("2026-12-02T10:00:00Z"), SR_BY_WEEK),
                     at("2026-12-07"));
    assert_int_equal(sr_stats_next_boundary(at("2026-12-31T10:00:00Z"), SR_BY_MONTH),
                     at("2027-01-01"));
    assert_int_equal(sr_stats_next_boundary(at("2026-12-31T10:00:00Z"), SR_BY_DAY),
                     at("2027-01-01"));
}

static void test_times_dates_and_bad_ones(void **state)
{
    (void)state;
    int64_t ms;
    assert_int_equal(sr_stats_parse_time("2026-12-07", 1, &ms), 0);
    assert_int_equal(ms, at("2026-12-08")); /* --until takes the whole day */
    assert_int_equal(at("2026-12-07T08:30:00+02:00"), at("2026-12-07T06:30:00Z"));
    assert_int_equal(at("2026-12-07T08:30:00.250Z") - at("2026-12-07T08:30Z"), 250);
    const char *bad[] = {"2026-02-30",
                         "2026-13-01",
                         "yesterday",
                         "2026-12-7",
                         "2026-12-07T25:00Z",
                         "2026-12-07Tx",
                         "2026-12-07T08:30:00Zjunk",
                         ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sr_stats_parse_time(bad[i], 0, &ms), -EINVAL);
}

static void test_by_keys(void **state)
{
    (void)state;
    struct sr_stats_query q = {0};
    char err[512];
    assert_int_equal(sr_stats_parse_by("team,week,instance_type", &q, err, sizeof(err)), 0);
    assert_int_equal(q.n_by, 3);
    assert_int_equal(q.by[0].kind, SR_BY_LABEL);
    assert_int_equal(q.by[1].kind, SR_BY_WEEK);
    assert_int_equal(q.by[2].kind, SR_BY_INSTANCE_TYPE);
    assert_int_equal(sr_stats_parse_by("Team", &q, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "bad --by key \"Team\""));
    assert_int_equal(sr_stats_parse_by("team,", &q, err, sizeof(err)), -EINVAL);
    assert_int_equal(sr_stats_parse_by("zone,zone", &q, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "twice"));
}

/* One attempt of a run of team t. */
static struct sr_runsum_attempt att(const char *type, int64_t start, int64_t end,
                                    enum sr_hist_cause cause, int64_t lost, double price)
{
    struct sr_runsum_attempt a = {.nodes = 1,
                                  .start_ms = start,
                                  .end_ms = end,
                                  .cause = cause,
                                  .lost_ms = lost,
                                  .price_per_hour = price,
                                  .gpus = 1,
                                  .gpu_samples = 100,
                                  .gpu_util_mean = 50,
                                  .stage_seconds = 36};
    snprintf(a.instance_type, sizeof(a.instance_type), "%s", type);
    snprintf(a.zone, sizeof(a.zone), "z1");
    return a;
}

static void run_of(struct sr_runsum *r, const char *team, struct sr_runsum_attempt *a, size_t n)
{
    memset(r, 0, sizeof(*r));
    char err[128];
    char kv[80];
    snprintf(kv, sizeof(kv), "team=%s", team);
    assert_int_equal(sr_labels_add(&r->labels, kv, err, sizeof(err)), 0);
    r->att = a;
    r->n_att = n;
}

static void test_clipping_to_the_window_and_cutting_at_days(void **state)
{
    (void)state;
    const int64_t d0 = at("2026-12-31");
    /* 22:00 to 04:00 over a year end, preempted, the last 2 h lost */
    struct sr_runsum_attempt a[] = {
        att("g5", d0 + 22 * HOUR, d0 + DAY + 4 * HOUR, SR_CAUSE_PREEMPTED, 2 * HOUR, 1.0)};
    struct sr_runsum r;
    run_of(&r, "nlp", a, 1);
    struct sr_stats_query q = {0};
    char err[128];
    assert_int_equal(sr_stats_parse_by("day,week", &q, err, sizeof(err)), 0);
    struct sr_stats s;
    assert_int_equal(sr_stats_compute(&r, 1, &q, &s), 0);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.rows[0].key[0], "2026-12-31");
    assert_string_equal(s.rows[0].key[1], "2026-W53");
    assert_string_equal(s.rows[1].key[0], "2027-01-01");
    assert_string_equal(s.rows[1].key[1], "2026-W53");
    assert_true(fabs(s.rows[0].inst_h - 2) < 1e-9);
    assert_true(fabs(s.rows[1].inst_h - 4) < 1e-9);
    assert_int_equal(s.rows[0].preemptions, 0); /* the end is on the 1st */
    assert_int_equal(s.rows[1].preemptions, 1);
    assert_true(fabs(s.rows[1].lost_h - 2) < 1e-9);
    assert_true(fabs(s.rows[0].stage_s - 12) < 1e-9); /* a third of 36 s */
    assert_int_equal(s.total.attempts, 1);
    assert_int_equal(s.total.runs, 1);
    assert_true(fabs(s.total.inst_h - 6) < 1e-9);
    sr_stats_free(&s);

    /* a window that ends before the attempt: its first 3 hours, no end */
    q.n_by = 0;
    q.since_ms = d0;
    q.until_ms = d0 + DAY + HOUR;
    assert_int_equal(sr_stats_compute(&r, 1, &q, &s), 0);
    assert_true(fabs(s.total.inst_h - 3) < 1e-9);
    assert_int_equal(s.total.preemptions, 0);
    assert_int_equal(s.total.ends[SR_CAUSE_PREEMPTED], 0);
    assert_true(fabs(s.total.lost_h - 0) < 1e-9); /* lost from 02:00 on */
    assert_true(fabs(s.total.cost - 3) < 1e-9);
    sr_stats_free(&s);

    /* a window after it: nothing */
    q.since_ms = d0 + 2 * DAY;
    q.until_ms = 0;
    assert_int_equal(sr_stats_compute(&r, 1, &q, &s), 0);
    assert_int_equal(s.n, 0);
    assert_int_equal(s.total.attempts, 0);
    assert_true(isnan(sr_stats_rate_per_100h(&s.total)));
    assert_true(isnan(sr_stats_mtbp_h(&s.total)));
    assert_true(isnan(sr_stats_ckpt_overhead(&s.total)));
    assert_true(isnan(sr_stats_gpu_util(&s.total)));
    assert_true(isnan(sr_stats_saving(&s.total)));
    sr_stats_free(&s);
}

static void test_prices_in_order_and_unpriced_hours(void **state)
{
    (void)state;
    const int64_t t = at("2026-12-01");
    struct sr_runsum_attempt a[] = {
        att("g5", t, t + 2 * HOUR, SR_CAUSE_CRASHED, HOUR, 0.5),      /* table wins */
        att("p3", t + 3 * HOUR, t + 4 * HOUR, SR_CAUSE_DONE, 0, 0.7), /* its own price */
        att("x1", t + 5 * HOUR, t + 9 * HOUR, SR_CAUSE_NONE, 0, 0),   /* none */
    };
    a[0].nodes = 2;
    a[2].gpus = 0;
    struct sr_runsum r;
    run_of(&r, "nlp", a, 3);
    struct sr_prices tab = {0};
    const char *text = "g5 0.25 1.00\n";
    assert_int_equal(sr_prices_parse("t", text, strlen(text), &tab), 0);
    struct sr_stats_query q = {.prices = &tab};
    struct sr_stats s;
    assert_int_equal(sr_stats_compute(&r, 1, &q, &s), 0);
    const struct sr_stats_row *x = &s.total;
    assert_true(fabs(x->inst_h - 9) < 1e-9); /* 2 h x 2 nodes + 1 + 4 */
    assert_true(fabs(x->cost - (4 * 0.25 + 0.7)) < 1e-9);
    assert_true(fabs(x->unpriced_h - 4) < 1e-9);
    assert_true(fabs(x->od_cost - 4.0) < 1e-9);
    assert_true(fabs(sr_stats_saving(x) - 3.0) < 1e-9);
    assert_true(fabs(x->od_unpriced_h - 5) < 1e-9);
    assert_true(fabs(x->lost_h - 2) < 1e-9); /* 1 h x 2 nodes */
    assert_true(fabs(x->lost_cost - 0.5) < 1e-9);
    assert_true(fabs(x->gpu_h - 5) < 1e-9);
    assert_true(fabs(x->gpu_unknown_h - 4) < 1e-9);
    assert_int_equal(x->ends[SR_CAUSE_NONE], 1);
    assert_int_equal(x->preemptions, 0);
    assert_true(fabs(sr_stats_rate_per_100h(x)) < 1e-9); /* hours, no preemption: 0 */
    assert_true(isnan(sr_stats_mtbp_h(x)));
    sr_stats_free(&s);

    /* --price-per-hour comes before the start event's price */
    q.spot_per_hour = 0.1;
    assert_int_equal(sr_stats_compute(&r, 1, &q, &s), 0);
    assert_true(fabs(s.total.cost - (4 * 0.25 + 0.1 + 0.4)) < 1e-9);
    assert_true(fabs(s.total.unpriced_h) < 1e-9);
    sr_stats_free(&s);
    sr_prices_free(&tab);
}

static void test_groups_runs_rates_and_labels(void **state)
{
    (void)state;
    const int64_t t = at("2026-12-01");
    struct sr_runsum_attempt a1[] = {
        att("g5", t, t + 50 * HOUR, SR_CAUSE_PREEMPTED, 0, 1),
        att("g5", t + 50 * HOUR, t + 100 * HOUR, SR_CAUSE_PREEMPTED, 0, 1)};
    struct sr_runsum_attempt a2[] = {att("p3", t, t + 100 * HOUR, SR_CAUSE_DONE, 0, 1)};
    a2[0].gpu_samples = 300;
    a2[0].gpu_util_mean = 10;
    struct sr_runsum r[2];
    run_of(&r[0], "nlp", a1, 2);
    run_of(&r[1], "cv", a2, 1);
    struct sr_stats_query q = {0};
    char err[128];
    assert_int_equal(sr_stats_parse_by("instance_type", &q, err, sizeof(err)), 0);
    struct sr_stats s;
    assert_int_equal(sr_stats_compute(r, 2, &q, &s), 0);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.rows[0].key[0], "g5");
    assert_int_equal(s.rows[0].runs, 1);
    assert_int_equal(s.rows[0].attempts, 2);
    assert_true(fabs(sr_stats_rate_per_100h(&s.rows[0]) - 2) < 1e-9);
    assert_true(fabs(sr_stats_mtbp_h(&s.rows[0]) - 50) < 1e-9);
    assert_true(fabs(sr_stats_rate_per_100h(&s.rows[1])) < 1e-9);
    /* utilization weighted by samples: (50 x 200 + 10 x 300) / 500 */
    assert_true(fabs(sr_stats_gpu_util(&s.total) - 26) < 1e-9);
    /* checkpoint overhead: 3 x 36 s over 200 h */
    assert_true(fabs(sr_stats_ckpt_overhead(&s.total) - 108.0 / (200 * 3600.0)) < 1e-12);
    sr_stats_free(&s);
    /* --label team=cv: the second run only; a key the runs lack is "-" */
    char e2[128];
    assert_int_equal(sr_labels_add(&q.want, "team=cv", e2, sizeof(e2)), 0);
    assert_int_equal(sr_stats_parse_by("user", &q, err, sizeof(err)), 0);
    assert_int_equal(sr_stats_compute(r, 2, &q, &s), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.rows[0].key[0], "-");
    assert_int_equal(s.total.runs, 1);
    sr_stats_free(&s);
}

/* Which notices are the cloud's (a preemption) and which a signal stop. */
static void test_cloud_notices_and_signal_stops(void **state)
{
    (void)state;
    assert_true(sr_stats_cloud_notice("aws"));
    assert_true(sr_stats_cloud_notice("gcp"));
    assert_true(sr_stats_cloud_notice("azure"));
    assert_true(sr_stats_cloud_notice("peer:2:aws"));
    assert_true(sr_stats_cloud_notice("")); /* a summary from before sources were kept */
    assert_false(sr_stats_cloud_notice("signal:SIGTERM"));
    assert_false(sr_stats_cloud_notice("signal:SIGINT"));
    assert_false(sr_stats_cloud_notice("manual"));
    assert_false(sr_stats_cloud_notice("peer:1:stalled"));
    assert_false(sr_stats_cloud_notice("peer:1:signal:SIGTERM"));
    assert_false(sr_stats_cloud_notice("peer"));
    assert_false(sr_stats_cloud_notice("awsx"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iso_weeks_across_year_ends),
        cmocka_unit_test(test_times_dates_and_bad_ones),
        cmocka_unit_test(test_by_keys),
        cmocka_unit_test(test_clipping_to_the_window_and_cutting_at_days),
        cmocka_unit_test(test_prices_in_order_and_unpriced_hours),
        cmocka_unit_test(test_groups_runs_rates_and_labels),
        cmocka_unit_test(test_cloud_notices_and_signal_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
