/*
 * test_sweepworkers.c - a sweep's worker hours (runtime/record/sweepworkers.h,
 * printed by runtime/views/sweepworkersout.h): a worker's lifetime ends at
 * its end or, killed, at its last keep-alive; busy is the union of its
 * trials' attempts on its host, clipped to its lifetime; idle is the rest;
 * each is priced at the worker's recorded price, else at the view's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "histutil.h"
#include "sweepview.h"
#include "sweepworkers.h"
#include "sweepworkersout.h"

#define T0 1700000000000LL
#define S(x) ((int64_t)(x)*1000)

/* Three trials: 0 ran on host a from 10 s to 40 s; 1 on a from 30 s to
 * 60 s, then on b from 70 s to 90 s; 2 on a from 80 s to 95 s. */
static void view(struct sr_sweepview *v, struct sr_sv_run runs[3])
{
    memset(v, 0, sizeof(*v));
    v->n = 3;
    v->t = calloc(3, sizeof(*v->t));
    assert_non_null(v->t);
    for (int k = 0; k < 3; k++) {
        sr_hist_init(&runs[k].h);
        v->t[k].trial = (size_t)k;
        v->t[k].run = &runs[k];
    }
    EV(&runs[0].h, S(10), 0, "start", ",\"host\":\"a\"");
    EV(&runs[0].h, S(40), 0, "exit", ",\"code\":0");
    EV(&runs[1].h, S(30), 0, "start", ",\"host\":\"a\"");
    EV(&runs[1].h, S(60), 0, "alive", "");
    EV(&runs[1].h, S(70), 1, "start", ",\"host\":\"b\"");
    EV(&runs[1].h, S(90), 1, "exit", ",\"code\":0");
    EV(&runs[2].h, S(80), 0, "start", ",\"host\":\"a\"");
    EV(&runs[2].h, S(95), 0, "exit", ",\"code\":0");
    for (int k = 0; k < 3; k++)
        sr_hist_derive(&runs[k].h);
}

static void unview(struct sr_sweepview *v, struct sr_sv_run runs[3])
{
    for (int k = 0; k < 3; k++)
        sr_hist_free(&runs[k].h);
    free(v->t);
}

static char *print(const struct sr_sv_workers *ws, double spot)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    sr_sv_workers_print(f, ws, spot);
    fclose(f);
    return buf;
}

/* Trials side by side in two slots count once; another host's attempt and
 * a trial the worker did not start are not its. */
static void busy_is_the_union_of_its_trials_on_its_host(void **state)
{
    (void)state;
    struct sr_sweepview v;
    struct sr_sv_run runs[3];
    view(&v, runs);
    long trials[] = {0, 1};
    struct sr_sweep_worker w = {.host = "a",
                                .pid = 7,
                                .start_ms = T0,
                                .alive_ms = T0 + S(100),
                                .end_ms = T0 + S(100),
                                .price_per_hour = 3.6,
                                .slots = 2,
                                .trials = trials,
                                .n_trials = 2};
    struct sr_sv_workers ws;
    sr_sv_workers_fold(&w, 1, &v, &ws);
    assert_int_equal(ws.n, 1);
    assert_int_equal(ws.open, 0);
    assert_int_equal(ws.life_ms, S(100));
    assert_int_equal(ws.busy_ms, S(50));
    assert_int_equal(ws.idle_ms, S(50));
    assert_float_equal(ws.life_cost, 0.1, 1e-9);
    assert_float_equal(ws.idle_cost, 0.05, 1e-9);
    char *s = print(&ws, 0);
    assert_string_equal(s, "workers:     1 (0.0278 worker-hours: 0.0139 running trials, 0.0139 "
                           "idle); cost $0.1000, idle $0.0500\n");
    free(s);
    unview(&v, runs);
}

/* A killed worker (no end) ends at its last keep-alive; without a
 * recorded price it is priced at the view's, and without one neither. */
static void a_killed_worker_ends_at_its_last_keepalive(void **state)
{
    (void)state;
    struct sr_sweepview v;
    struct sr_sv_run runs[3];
    view(&v, runs);
    long trials[] = {2};
    struct sr_sweep_worker w = {.host = "a",
                                .pid = 8,
                                .start_ms = T0 + S(75),
                                .alive_ms = T0 + S(90),
                                .slots = 1,
                                .trials = trials,
                                .n_trials = 1};
    struct sr_sv_workers ws;
    sr_sv_workers_fold(&w, 1, &v, &ws);
    assert_int_equal(ws.open, 1);
    assert_int_equal(ws.life_ms, S(15));
    assert_int_equal(ws.busy_ms, S(10)); /* 80 s to its keep-alive at 90 s */
    assert_int_equal(ws.idle_ms, S(5));
    assert_int_equal(ws.unpriced_life_ms, S(15));
    char *s = print(&ws, 0);
    assert_non_null(strstr(s, "; cost - (give --price-per-hour)\n"));
    free(s);
    s = print(&ws, 7200);
    assert_non_null(strstr(s, "; cost $30.00, idle $10.00\n"));
    free(s);
    unview(&v, runs);
}

/* A worker with no price that has just started (no keep-alive yet: no
 * lifetime so far) costs as much as it will once ended: unknown, not
 * $0.0000; a priced one started just now costs $0. */
static void a_just_started_unpriced_worker_has_an_unknown_cost(void **state)
{
    (void)state;
    struct sr_sweepview v;
    struct sr_sv_run runs[3];
    view(&v, runs);
    struct sr_sweep_worker w = {
        .host = "a", .pid = 9, .start_ms = T0 + S(75), .alive_ms = T0 + S(75), .slots = 1};
    struct sr_sv_workers ws;
    sr_sv_workers_fold(&w, 1, &v, &ws);
    assert_int_equal(ws.open, 1);
    assert_int_equal(ws.life_ms, 0);
    char *s = print(&ws, 0);
    assert_non_null(strstr(s, "; cost - (give --price-per-hour)\n"));
    free(s);
    json_t *j = sr_sv_workers_json(&ws, 0);
    assert_true(json_is_null(json_object_get(j, "cost")));
    json_decref(j);
    w.price_per_hour = 3.6;
    sr_sv_workers_fold(&w, 1, &v, &ws);
    s = print(&ws, 0);
    assert_non_null(strstr(s, "; cost $0.0000, idle $0.0000\n"));
    free(s);
    unview(&v, runs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(busy_is_the_union_of_its_trials_on_its_host),
        cmocka_unit_test(a_killed_worker_ends_at_its_last_keepalive),
        cmocka_unit_test(a_just_started_unpriced_worker_has_an_unknown_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
