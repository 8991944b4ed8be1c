/*
 * test_quota.c - quotas per team or user (runtime/record/quota.h): the
 * object's parse (a tampered one refused), the newest version picked from
 * a listing, create-only versions that never overwrite one another, the
 * period's start, and the use arithmetic (stats' numbers over the label
 * and the period) with the limit that is over.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quota.h"
#include "runsum.h"
#include "stats.h"
#include "testutil.h"

#define HOUR INT64_C(3600000)

static int64_t at(const char *iso)
{
    int64_t ms = 0;
    assert_int_equal(sr_stats_parse_time(iso, 0, &ms), 0);
    return ms;
}

static struct sr_label vision(void)
{
    struct sr_label l = {"team", "vision"};
    return l;
}

static void test_parse_round_trip_and_tampered_objects(void **state)
{
    (void)state;
    struct sr_quota q = {.label = vision(),
                         .per = SR_PER_DAY,
                         .gpu_hours = 500,
                         .max_cost = 12.5,
                         .max_gpus_per_run = 8,
                         .max_concurrent = 3,
                         .unix_ms = 1000,
                         .version = 7};
    snprintf(q.by, sizeof(q.by), "ana@example.com");
    json_t *o = sr_quota_to_json(&q);
    struct sr_quota back;
    const struct sr_label l = vision();
    assert_int_equal(sr_quota_from_json(o, &l, 7, &back), 0);
    assert_true(back.gpu_hours == 500 && back.max_cost == 12.5);
    assert_int_equal(back.max_gpus_per_run, 8);
    assert_int_equal(back.max_concurrent, 3);
    assert_int_equal(back.per, SR_PER_DAY);
    assert_string_equal(back.by, "ana@example.com");
    /* another version's key, another label's key: refused */
    assert_int_equal(sr_quota_from_json(o, &l, 8, &back), -EBADMSG);
    const struct sr_label nlp = {"team", "nlp"};
    assert_int_equal(sr_quota_from_json(o, &nlp, 7, &back), -EBADMSG);
    /* a negative limit, an unknown period, not a number */
    json_object_set_new(o, "max_cost", json_real(-1));
    assert_int_equal(sr_quota_from_json(o, &l, 7, &back), -EBADMSG);
    json_object_set_new(o, "max_cost", json_real(1));
    json_object_set_new(o, "per", json_string("year"));
    assert_int_equal(sr_quota_from_json(o, &l, 7, &back), -EBADMSG);
    json_object_set_new(o, "per", json_string("week"));
    json_object_set_new(o, "gpu_hours", json_string("500"));
    assert_int_equal(sr_quota_from_json(o, &l, 7, &back), -EBADMSG);
    json_decref(o);
    assert_int_equal(sr_quota_from_json(NULL, &l, 7, &back), -EBADMSG);
}

static void test_the_newest_version_is_picked(void **state)
{
    (void)state;
    struct sr_strlist names = {0};
    const char *v[] = {"000002.json",  "000010.json", "000009.json", "0000011.json",
                       "000012.jsonx", "00001a.json", "x",           "000003.json.tmp"};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        assert_int_equal(sr_strlist_push(&names, v[i]), 0);
    unsigned version = 0;
    assert_int_equal(sr_quota_newest(&names, &version), 0);
    assert_int_equal(version, 10);
    sr_strlist_free(&names);
    struct sr_strlist none = {0};
    assert_int_equal(sr_quota_newest(&none, &version), -ENOENT);
}

static void test_periods_start_at_utc_midnight_monday_and_the_first(void **state)
{
    (void)state;
    const int64_t t = at("2026-12-10T15:30:00Z"); /* a Thursday */
    assert_int_equal(sr_quota_period_start(t, SR_PER_DAY), at("2026-12-10"));
    assert_int_equal(sr_quota_period_start(t, SR_PER_WEEK), at("2026-12-07"));
    assert_int_equal(sr_quota_period_start(t, SR_PER_MONTH), at("2026-12-01"));
    assert_int_equal(sr_quota_period_start(at("2026-12-07"), SR_PER_WEEK), at("2026-12-07"));
    assert_int_equal(sr_quota_period_start(at("2027-01-03T23:00:00Z"), SR_PER_WEEK),
                     at("2026-12-28"));
    enum sr_quota_per p;
    assert_int_equal(sr_quota_per_parse("month", &p), 0);
    assert_int_equal(p, SR_PER_MONTH);
    assert_int_equal(sr_quota_per_parse("Week", &p), -EINVAL);
}

static struct sr_runsum_attempt att(int64_t start, int64_t end, unsigned gpus, double price,
                                    enum sr_hist_cause cause)
{
    return (struct sr_runsum_attempt){.nodes = 1,
                                      .start_ms = start,
                                      .end_ms = end,
                                      .cause = cause,
                                      .price_per_hour = price,
                                      .gpus = gpus};
}

static void run_of(struct sr_runsum *r, const char *id, const char *label,
                   struct sr_runsum_attempt *a, size_t n)
{
    memset(r, 0, sizeof(*r));
    char err[128];
    snprintf(r->run, sizeof(r->run), "%s", id);
    assert_int_equal(sr_labels_add(&r->labels, label, err, sizeof(err)), 0);
    r->att = a;
    r->n_att = n;
}

/* The use is stats' total over the label since the period's start: an
 * attempt that began before the period counts its hours inside it. */
static void test_use_is_stats_over_the_label_and_the_period(void **state)
{
    (void)state;
    const int64_t mon = at("2026-12-07"), now = at("2026-12-09T12:00:00Z");
    struct sr_runsum_attempt a1[] = {att(mon - 2 * HOUR, mon + 4 * HOUR, 2, 1.5, SR_CAUSE_DONE)};
    struct sr_runsum_attempt a2[] = {att(mon + 5 * HOUR, mon + 6 * HOUR, 4, 2.0, SR_CAUSE_DONE),
                                     att(mon + 7 * HOUR, mon + 10 * HOUR, 4, 2.0, SR_CAUSE_NONE)};
    struct sr_runsum_attempt a3[] = {att(mon, mon + 100 * HOUR, 8, 9.0, SR_CAUSE_NONE)};
    struct sr_runsum runs[3];
    run_of(&runs[0], "a", "team=vision", a1, 1);
    run_of(&runs[1], "b", "team=vision", a2, 2);
    run_of(&runs[2], "c", "team=nlp", a3, 1); /* another team's */
    struct sr_quota q = {.label = vision(), .per = SR_PER_WEEK};
    struct sr_quota_use u;
    assert_int_equal(sr_quota_use_in(runs, 3, &q, now, &u), 0);
    /* a: 4 h x 2 GPUs, $6; b: (1 + 3) h x 4 GPUs, $8 */
    assert_true(fabs(u.gpu_hours - 24) < 1e-9);
    assert_true(fabs(u.cost - 14) < 1e-9);
    assert_int_equal(u.running, 1);
    /* the same numbers as stats --label team=vision --since <Monday> */
    struct sr_stats_query sq = {.since_ms = mon};
    sq.want.v[0] = vision();
    sq.want.n = 1;
    struct sr_stats s = {0};
    assert_int_equal(sr_stats_compute(runs, 3, &sq, &s), 0);
    assert_true(s.total.gpu_h == u.gpu_hours && s.total.cost == u.cost);
    sr_stats_free(&s);
    /* per day: only today's (nothing ran on Wednesday) */
    q.per = SR_PER_DAY;
    assert_int_equal(sr_quota_use_in(runs, 3, &q, now, &u), 0);
    assert_true(u.gpu_hours == 0 && u.cost == 0);
}

static void test_the_limit_over_is_named(void **state)
{
    (void)state;
    struct sr_quota q = {.label = vision(), .gpu_hours = 24, .max_cost = 20};
    struct sr_quota_use u = {.gpu_hours = 23.9, .cost = 19, .running = 2};
    double limit, used;
    assert_null(sr_quota_over(&q, &u, 4, 1, &limit, &used));
    u.gpu_hours = 24; /* at the limit is over: the next hour would pass it */
    assert_string_equal(sr_quota_over(&q, &u, 4, 0, &limit, &used), "gpu-hours");
    assert_true(limit == 24 && used == 24);
    u.gpu_hours = 1;
    u.cost = 20.5;
    assert_string_equal(sr_quota_over(&q, &u, 0, 0, &limit, &used), "cost");
    u.cost = 0;
    q.max_concurrent = 2; /* 2 running: a third may not start; those running go on */
    assert_string_equal(sr_quota_over(&q, &u, 0, 1, &limit, &used), "concurrent");
    assert_true(limit == 2 && used == 3);
    assert_null(sr_quota_over(&q, &u, 0, 0, &limit, &used));
    q.max_gpus_per_run = 2;
    assert_string_equal(sr_quota_over(&q, &u, 3, 1, &limit, &used), "gpus-per-run");
    q.max_concurrent = 0;
    assert_null(sr_quota_over(&q, &u, 0, 1, &limit, &used)); /* GPUs unknown: not judged */
}

/* Versions are created, never replaced: one written by another setter in
 * between makes the next set take the number after it; each set keeps the
 * newest version's limits it does not give. */
static void test_set_writes_create_only_versions(void **state)
{
    (void)state;
    char *root = tu_scratch("quota");
    struct sr_store *st;
    assert_int_equal(sr_store_open(root, &st), 0);
    const struct sr_label l = vision();
    struct sr_quota got;
    assert_int_equal(sr_quota_read(st, &l, &got), -ENOENT);
    struct sr_quota set = {.label = l, .gpu_hours = 500, .per = SR_PER_WEEK, .unix_ms = 1};
    snprintf(set.by, sizeof(set.by), "ana");
    const int gpu_only[SR_QUOTA_FIELDS] = {1, 0, 0, 0, 1};
    assert_int_equal(sr_quota_set(st, &set, gpu_only, &got), 0);
    assert_int_equal(got.version, 1);
    /* another setter's version 2, written in between */
    const char *other = "{\"format\":1,\"label\":\"team=vision\",\"version\":2,\"per\":\"day\","
                        "\"gpu_hours\":100,\"max_cost\":0,\"max_gpus_per_run\":0,"
                        "\"max_concurrent\":0,\"by\":\"bo\",\"unix_ms\":2}";
    assert_int_equal(
        sr_store_put_if(st, "quotas/team/vision/000002.json", other, strlen(other), NULL, NULL), 0);
    assert_int_equal(
        sr_store_put_if(st, "quotas/team/vision/000002.json", other, strlen(other), NULL, NULL),
        -EEXIST);
    set.max_cost = 40;
    snprintf(set.by, sizeof(set.by), "cy");
    const int cost_only[SR_QUOTA_FIELDS] = {0, 1, 0, 0, 0};
    assert_int_equal(sr_quota_set(st, &set, cost_only, &got), 0);
    assert_int_equal(got.version, 3);
    assert_int_equal(sr_quota_read(st, &l, &got), 0);
    assert_int_equal(got.version, 3);
    assert_true(got.gpu_hours == 100 && got.max_cost == 40); /* version 2's hours kept */
    assert_int_equal(got.per, SR_PER_DAY);
    assert_string_equal(got.by, "cy");
    struct sr_quota *all;
    size_t n;
    assert_int_equal(sr_quota_read_all(st, &all, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(all[0].version, 3);
    free(all);
    sr_store_close(st);
    free(root);
}

/* --approve-above: GPU-hours or a cost, nothing else; an approval is
 * create-only: a second one leaves the first, and says whose it is. */
static void test_approve_sizes_and_approvals(void **state)
{
    (void)state;
    double h, c;
    assert_int_equal(sr_quota_parse_approve("100gpu-hours", &h, &c), 0);
    assert_true(h == 100 && c == 0);
    assert_int_equal(sr_quota_parse_approve("250.5", &h, &c), 0);
    assert_true(h == 0 && c == 250.5);
    const char *bad[] = {"", "gpu-hours", "-1gpu-hours", "100gpus", "1e400", "nan", "+3"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sr_quota_parse_approve(bad[i], &h, &c), -EINVAL);
    char *root = tu_scratch("approve");
    struct sr_store *st;
    assert_int_equal(sr_store_open(root, &st), 0);
    struct sr_approval a = {.unix_ms = 5}, got;
    assert_int_equal(sr_approval_read(st, "big", &got), -ENOENT);
    snprintf(a.by, sizeof(a.by), "lead");
    assert_int_equal(sr_approval_write(st, "big", &a), 0);
    struct sr_approval b = {.unix_ms = 9};
    snprintf(b.by, sizeof(b.by), "mallory");
    assert_int_equal(sr_approval_write(st, "big", &b), -EEXIST);
    assert_string_equal(b.by, "lead"); /* the one that stands */
    assert_int_equal(b.unix_ms, 5);
    assert_int_equal(sr_approval_read(st, "big", &got), 0);
    assert_string_equal(got.by, "lead");
    sr_store_close(st);
    free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_round_trip_and_tampered_objects),
        cmocka_unit_test(test_the_newest_version_is_picked),
        cmocka_unit_test(test_periods_start_at_utc_midnight_monday_and_the_first),
        cmocka_unit_test(test_use_is_stats_over_the_label_and_the_period),
        cmocka_unit_test(test_the_limit_over_is_named),
        cmocka_unit_test(test_set_writes_create_only_versions),
        cmocka_unit_test(test_approve_sizes_and_approvals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
