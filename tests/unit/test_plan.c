/*
 * test_plan.c - the capacity plan's arithmetic (runtime/record/plan.h)
 * over hand-made intervals: the sweep line's stretches, the concurrency
 * duration curve, the reserved level's rule at its edges, the weekly costs
 * with work that may not be interrupted, and over run summaries: GPUs
 * unknown counted as 1 per node, the effective spot price.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

#define H INT64_C(3600000)

static void near(double got, double want, double eps)
{
    if (fabs(got - want) > eps)
        fail_msg("%.9f, want %.9f", got, want);
}

struct fixture {
    struct sr_plan_seg *s;
    size_t n;
    struct sr_plan_curve c;
};

static void build(const struct sr_plan_iv *iv, size_t n, int64_t lo, int64_t hi, struct fixture *f)
{
    assert_int_equal(sr_plan_sweep(iv, n, lo, hi, &f->s, &f->n), 0);
    assert_int_equal(sr_plan_curve(f->s, f->n, &f->c), 0);
}

static void done(struct fixture *f)
{
    free(f->s);
    sr_plan_curve_free(&f->c);
}

/* 10 hours: 4 GPUs all along, 4 more over [2, 4), 2 more over [3, 5),
 * one clipped at the window's end. */
static void test_curve(void **state)
{
    (void)state;
    const struct sr_plan_iv iv[] = {
        {0, 10 * H, 4, 0}, {2 * H, 4 * H, 4, 0}, {3 * H, 5 * H, 2, 0}, {9 * H, 30 * H, 1, 0}};
    struct fixture f;
    build(iv, 4, 0, 10 * H, &f);
    near(f.c.window_h, 10, 1e-9);
    assert_int_equal(f.c.peak_gpus, 10);
    assert_int_equal(f.c.peak_jobs, 3);
    near(f.c.gpu_h, 40 + 8 + 4 + 1, 1e-9);
    near(f.c.share[0], 1.0, 1e-9);
    near(f.c.share[4], 1.0, 1e-9);
    near(f.c.share[5], 0.4, 1e-9); /* [2,5) and the clipped one's [9,10) */
    near(f.c.share[6], 0.3, 1e-9); /* [2,4) 8 or 10, [4,5) 6 */
    near(f.c.share[7], 0.2, 1e-9); /* [2,4) */
    near(f.c.share[8], 0.2, 1e-9);
    near(f.c.share[9], 0.1, 1e-9); /* [3,4): 10 */
    near(f.c.share[10], 0.1, 1e-9);
    /* stretches in order, the idle hour before the window's end included */
    double sum = 0;
    for (size_t i = 0; i < f.n; i++)
        sum += f.s[i].h;
    near(sum, 10, 1e-9);
    done(&f);
}

/* An idle window, and an empty one. */
static void test_idle(void **state)
{
    (void)state;
    struct fixture f;
    build(NULL, 0, 0, 5 * H, &f);
    assert_int_equal(f.c.peak_gpus, 0);
    near(f.c.share[0], 1.0, 1e-9);
    assert_int_equal(sr_plan_level(&f.c, 2.0, 1.0), 0);
    done(&f);
}

/* The rule: the L-th GPU when share(>= L) x eff > reserved, strictly. */
static void test_level_rule(void **state)
{
    (void)state;
    /* 8 GPUs all along, 8 more a quarter of the time */
    const struct sr_plan_iv iv[] = {{0, 8 * H, 8, 0}, {0, 2 * H, 8, 0}};
    struct fixture f;
    build(iv, 2, 0, 8 * H, &f);
    assert_int_equal(sr_plan_level(&f.c, 2.0, 1.0), 8);   /* 0.25 x 2 < 1 */
    assert_int_equal(sr_plan_level(&f.c, 2.0, 0.49), 16); /* 0.25 x 2 > 0.49 */
    assert_int_equal(sr_plan_level(&f.c, 2.0, 0.5), 8);   /* equal: not worth it */
    assert_int_equal(sr_plan_level(&f.c, 2.0, 2.0), 0);   /* share 1 x 2 = 2: not above */
    assert_int_equal(sr_plan_level(&f.c, 0, 0.1), 0);     /* no spot price */
    done(&f);
}

/* Weekly costs: 168 hours, 8 GPUs all along and 8 more half the time. */
static void test_costs(void **state)
{
    (void)state;
    const struct sr_plan_iv iv[] = {{0, 168 * H, 8, 0}, {0, 84 * H, 8, 0}};
    struct fixture f;
    build(iv, 2, 0, 168 * H, &f);
    struct sr_plan_cost c;
    sr_plan_costs(f.s, f.n, &f.c, 8, 4.0, 1.5, 1.0, &c);
    near(c.on_demand, (1344 + 672) * 4.0, 1e-6);
    near(c.spot, (1344 + 672) * 1.5, 1e-6);
    near(c.mixed, 1344 * 1.0 + 672 * 1.5, 1e-6);
    sr_plan_costs(f.s, f.n, &f.c, 0, 0, 1.5, 1.0, &c);
    assert_true(isnan(c.on_demand)); /* no on-demand price */
    near(c.mixed, c.spot, 1e-9);
    done(&f);
}

/* Work that may not be interrupted: served by the reserved GPUs first,
 * on-demand above them, on-demand in the all-spot strategy. */
static void test_firm_work(void **state)
{
    (void)state;
    /* 336 hours: 4 interruptible GPUs all along, 6 firm ones half of it */
    const struct sr_plan_iv iv[] = {{0, 336 * H, 4, 0}, {0, 168 * H, 6, 1}};
    struct fixture f;
    build(iv, 2, 0, 336 * H, &f);
    near(f.c.firm_gpu_h, 1008, 1e-9);
    struct sr_plan_cost c;
    sr_plan_costs(f.s, f.n, &f.c, 4, 4.0, 1.5, 1.0, &c);
    /* per week: reserved 4 x 168; first week 2 firm above 4 on-demand, 4 spot */
    near(c.mixed, (4 * 336 * 1.0 + 168 * (2 * 4.0 + 4 * 1.5)) / 2, 1e-6);
    near(c.spot, (1344 * 1.5 + 1008 * 4.0) / 2, 1e-6);
    done(&f);
}

static void attempt(struct sr_runsum_attempt *a, int64_t t0, int64_t t1, unsigned nodes,
                    unsigned gpus, int64_t lost_ms, double stage_s)
{
    memset(a, 0, sizeof(*a));
    a->start_ms = t0;
    a->end_ms = t1;
    a->nodes = nodes;
    a->gpus = gpus;
    a->lost_ms = lost_ms;
    a->stage_seconds = stage_s;
    a->cause = lost_ms ? SR_CAUSE_PREEMPTED : SR_CAUSE_DONE;
    snprintf(a->instance_type, sizeof(a->instance_type), "g5.xlarge");
    a->price_per_hour = 2.0; /* the start event's, per instance hour */
}

/* Over summaries: an unknown GPU count is one GPU per node; the effective
 * price adds lost work and staging over useful hours. */
static void test_over_runs(void **state)
{
    (void)state;
    struct sr_runsum_attempt att[2];
    attempt(&att[0], 0, 10 * H, 2, 0, 2 * H, 3600); /* 2 GPUs, 4 lost GPU-h, 2 staging */
    attempt(&att[1], 10 * H, 20 * H, 1, 2, 0, 0);   /* 2 GPUs */
    struct sr_runsum run = {.att = att, .n_att = 2};
    snprintf(run.run, sizeof(run.run), "r1");
    struct sr_plan_query q = {.reserved = 1.0};
    struct sr_plan p;
    assert_int_equal(sr_plan_compute(&run, 1, &q, &p), 0);
    assert_int_equal(p.unknown_gpu_attempts, 1);
    assert_int_equal(p.runs, 1);
    assert_int_equal(p.attempts, 2);
    assert_int_equal(p.n_groups, 1);
    const struct sr_plan_group *g = &p.groups[0];
    assert_int_equal(g->curve.peak_gpus, 2);
    near(g->curve.gpu_h, 40, 1e-9);
    /* (20 + 10) instance-h x 2.0 over 40 GPU-h: 1.5 per GPU-hour */
    near(g->spot, 1.5, 1e-9);
    near(g->overhead, (4.0 + 2.0) / (40 - 6), 1e-9);
    assert_int_equal(g->reserve, 2); /* busy all the window: 1 x 1.76 > 1 */
    near(g->break_even, 1.0 / g->eff_spot, 1e-9);
    sr_plan_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_curve),      cmocka_unit_test(test_idle),
        cmocka_unit_test(test_level_rule), cmocka_unit_test(test_costs),
        cmocka_unit_test(test_firm_work),  cmocka_unit_test(test_over_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
