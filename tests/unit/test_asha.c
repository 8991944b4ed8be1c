/*
 * test_asha.c - a sweep's early stopping (runtime/sweep/asha.h,
 * sweep_rungs.h): on synthetic learning curves arriving asynchronously,
 * every decision the module takes equals the algorithm's definition
 * computed here independently (the values recorded at the rung before the
 * arrival and its own, sorted: go on iff the value is at least as good as
 * the max(1, floor(n/eta))-th best, or, with patient, fewer than eta are
 * recorded); the rungs of a rule; specs
 * parsed and refused; the rule's JSON; the rung records in a file store
 * (create-only, listed, levels, tampered records skipped, one trial's removed);
 * the rule in the definition (same, different, tampered) and the pruned
 * end mark.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asha.h"
#include "fsutil.h"
#include "log.h"
#include "sweep.h"
#include "sweep_rungs.h"

/* ---- the reference: the definition, written out -------------------------- */

static int asc(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The decision for `value` arriving at a rung that holds prior[0..n) (the
 * values recorded before it, in arrival order): of the n + 1 values, the
 * top floor((n + 1) / eta) go on (the smallest with min, the largest with
 * max), ties at the boundary go on; with fewer than eta values only the
 * best so far (the top 1 of them, ties included: Optuna's
 * SuccessiveHalvingPruner), or everyone when patient. No NaN here (the
 * curves are finite). */
static int reference(int maximize, int patient, int64_t eta, double value, const double *prior,
                     size_t n)
{
    const size_t total = n + 1;
    size_t keep = total / (size_t)eta;
    if (total < (size_t)eta && patient)
        return 1;
    if (keep == 0)
        keep = 1;
    double *all = malloc(total * sizeof(double));
    for (size_t i = 0; i < n; i++)
        all[i] = maximize ? -prior[i] : prior[i];
    all[n] = maximize ? -value : value;
    qsort(all, total, sizeof(double), asc);
    const double bar = all[keep - 1], own = maximize ? -value : value;
    free(all);
    return own <= bar;
}

/* ---- synthetic learning curves ------------------------------------------- */

static uint64_t rng = 88172645463325252ull;
static double uniform(void) /* xorshift64: the test's own generator */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

#define TRIALS 81
struct curve {
    double floor_, scale, speed, start; /* loss(step) = floor + scale / sqrt(step) */
    int alive;
};

static double loss(const struct curve *c, int64_t step)
{
    /* coarse values so that ties happen */
    return round((c->floor_ + c->scale / sqrt((double)step)) * 20) / 20;
}

struct arrival {
    double at;
    size_t trial, rung;
};

static int by_time(const void *a, const void *b)
{
    const struct arrival *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->trial < y->trial ? -1 : x->trial > y->trial;
}

/* One sweep of TRIALS curves under rule a: each trial reaches rung k at
 * start + speed * r_k; the arrivals are taken in time order, each judged
 * by the module against the rung's recorded values and checked against
 * the reference. Returns how many trials were pruned; counts[] gets the
 * values recorded per rung. */
static size_t simulate(const struct sr_asha *a, struct curve *cv, size_t *counts)
{
    int64_t r[SR_ASHA_RUNGS_MAX];
    const size_t nr = sr_asha_rungs(a, r, SR_ASHA_RUNGS_MAX);
    struct arrival *ev = calloc(TRIALS * nr, sizeof(*ev));
    size_t n_ev = 0;
    for (size_t t = 0; t < TRIALS; t++)
        for (size_t k = 0; k < nr; k++)
            ev[n_ev++] = (struct arrival){cv[t].start + cv[t].speed * (double)r[k], t, k};
    qsort(ev, n_ev, sizeof(*ev), by_time);
    double *rec[SR_ASHA_RUNGS_MAX];
    for (size_t k = 0; k < nr; k++) {
        rec[k] = calloc(TRIALS, sizeof(double));
        counts[k] = 0;
    }
    size_t pruned = 0;
    for (size_t i = 0; i < n_ev; i++) {
        struct curve *c = &cv[ev[i].trial];
        const size_t k = ev[i].rung;
        if (!c->alive)
            continue; /* pruned at an earlier rung: it never gets here */
        const double v = loss(c, r[k]);
        const int got = !sr_asha_judges(a, r[k]) || sr_asha_promote(a, v, rec[k], counts[k]);
        /* the last rung, at max itself, only records: the trial is complete */
        const int want =
            r[k] == a->max || reference(a->maximize, a->patient, a->eta, v, rec[k], counts[k]);
        if (got != want)
            fail_msg("trial %zu at rung %zu (value %g, %zu recorded): module %d, definition %d",
                     ev[i].trial, k, v, counts[k], got, want);
        rec[k][counts[k]++] = v;
        if (!got) {
            c->alive = 0;
            pruned++;
        }
    }
    for (size_t k = 0; k < nr; k++)
        free(rec[k]);
    free(ev);
    return pruned;
}

static void make_curves(struct curve *cv, int maximize)
{
    for (size_t t = 0; t < TRIALS; t++) {
        cv[t] = (struct curve){.floor_ = uniform(),
                               .scale = 0.2 + uniform(),
                               .speed = 0.5 + uniform(),
                               .start = uniform() * 40,
                               .alive = 1};
        if (maximize) /* an accuracy: larger is better */
            cv[t].scale = -cv[t].scale;
    }
}

static void test_decisions_match_the_definition(void **state)
{
    (void)state;
    const int64_t etas[] = {2, 3, 4};
    size_t total_pruned = 0;
    for (int seed = 0; seed < 40; seed++)
        for (size_t e = 0; e < 3; e++)
            for (int maximize = 0; maximize <= 1; maximize++) {
                struct sr_asha a = {.grace = 1 + seed % 3,
                                    .eta = etas[e],
                                    .max = 243,
                                    .maximize = maximize,
                                    .patient = seed % 2};
                snprintf(a.metric, sizeof(a.metric), "%s", maximize ? "acc" : "loss");
                struct curve cv[TRIALS];
                make_curves(cv, maximize);
                size_t counts[SR_ASHA_RUNGS_MAX];
                const size_t pruned = simulate(&a, cv, counts);
                total_pruned += pruned;
                /* successive halving: each rung holds fewer values */
                assert_int_equal(counts[0], TRIALS);
                assert_true(counts[1] < counts[0]);
                assert_true(pruned > 0);
            }
    assert_true(total_pruned > 40 * 3 * 2);
}

/* The rule's promises, on hand-made arrivals. */
static void test_decisions_by_hand(void **state)
{
    (void)state;
    struct sr_asha a = {.metric = "loss", .grace = 1, .eta = 3};
    const double none[1] = {0};
    /* fewer than eta values: only the best so far goes on (Optuna's rule):
     * the first value always, a later one when no value recorded there is
     * better (a tie goes on), measured against every value recorded, not
     * only the ones still running */
    assert_true(sr_asha_promote(&a, 100, none, 0));
    assert_false(sr_asha_promote(&a, 100, (double[]){1}, 1));
    assert_true(sr_asha_promote(&a, 1, (double[]){1}, 1));
    assert_true(sr_asha_promote(&a, 0.5, (double[]){1}, 1));
    assert_int_equal(sr_asha_keep(&a, 0), 1);
    assert_int_equal(sr_asha_keep(&a, 1), 1);
    assert_int_equal(sr_asha_keep(&a, 5), 2);
    /* patient: fewer than eta values, everyone goes on, however bad */
    a.patient = 1;
    assert_true(sr_asha_promote(&a, 100, none, 0));
    assert_true(sr_asha_promote(&a, 100, (double[]){1}, 1));
    assert_int_equal(sr_asha_keep(&a, 1), 2);
    assert_int_equal(sr_asha_keep(&a, 5), 2); /* from eta values on, the same rule */
    assert_false(sr_asha_promote(&a, 3, (double[]){1, 2}, 2));
    a.patient = 0;
    /* the third value: only the best of three goes on */
    assert_false(sr_asha_promote(&a, 3, (double[]){1, 2}, 2));
    assert_true(sr_asha_promote(&a, 0.5, (double[]){1, 2}, 2));
    /* ties go on */
    assert_true(sr_asha_promote(&a, 1, (double[]){1, 1}, 2));
    assert_true(sr_asha_promote(&a, 1, (double[]){1, 2, 3, 4, 1}, 5)); /* top 2 of 6 */
    assert_false(sr_asha_promote(&a, 2, (double[]){1, 2, 3, 4, 1}, 5));
    /* max: the largest are the top */
    a.maximize = 1;
    assert_true(sr_asha_promote(&a, 3, (double[]){1, 2}, 2));
    assert_false(sr_asha_promote(&a, 1, (double[]){3, 2}, 2));
    assert_false(sr_asha_promote(&a, 1, (double[]){3}, 1)); /* the best so far, by its mode */
    assert_true(sr_asha_promote(&a, 3, (double[]){3}, 1));
    /* a value that is not a number is the worst */
    a.maximize = 0;
    assert_false(sr_asha_promote(&a, NAN, (double[]){5, 6}, 2));
    assert_true(sr_asha_promote(&a, 5, (double[]){NAN, NAN}, 2));
    assert_false(sr_asha_promote(&a, NAN, (double[]){5}, 1));
    assert_true(sr_asha_promote(&a, 5, (double[]){NAN}, 1));
    assert_true(sr_asha_promote(&a, NAN, none, 0)); /* nothing recorded is better */
}

static void test_rungs(void **state)
{
    (void)state;
    int64_t r[SR_ASHA_RUNGS_MAX];
    struct sr_asha a = {.metric = "loss", .grace = 1, .eta = 3, .max = 9};
    assert_int_equal(sr_asha_rungs(&a, r, SR_ASHA_RUNGS_MAX), 3);
    assert_int_equal(r[0], 1);
    assert_int_equal(r[1], 3);
    assert_int_equal(r[2], 9);
    a = (struct sr_asha){.metric = "loss", .grace = 10, .eta = 2, .max = 100};
    assert_int_equal(sr_asha_rungs(&a, r, SR_ASHA_RUNGS_MAX), 4); /* 10 20 40 80 */
    assert_int_equal(r[3], 80);
    assert_int_equal(sr_asha_rung_of(&a, 40), 2);
    assert_int_equal(sr_asha_rung_of(&a, 41), -1);
    /* every rung judges but one at max itself */
    assert_true(sr_asha_judges(&a, 80));
    a.max = 80;
    assert_false(sr_asha_judges(&a, 80));
    assert_true(sr_asha_judges(&a, 40));
    /* no max: up to the largest step, never overflowing */
    a = (struct sr_asha){.metric = "loss", .grace = 1, .eta = 2};
    const size_t n = sr_asha_rungs(&a, r, SR_ASHA_RUNGS_MAX);
    assert_true(n > 40 && n <= SR_ASHA_RUNGS_MAX);
    for (size_t k = 1; k < n; k++)
        assert_true(r[k] == 2 * r[k - 1] && r[k] <= SR_ASHA_STEP_MAX);
}

static void test_parse(void **state)
{
    (void)state;
    struct sr_asha a;
    char err[200];
    assert_int_equal(sr_asha_parse("loss:min", &a, err, sizeof(err)), 0);
    assert_string_equal(a.metric, "loss");
    assert_false(a.maximize);
    assert_int_equal(a.grace, 1);
    assert_int_equal(a.eta, 3);
    assert_int_equal(a.max, 0);
    assert_int_equal(sr_asha_parse("val:acc:max,grace=2,eta=4,max=128", &a, err, sizeof(err)), 0);
    assert_string_equal(a.metric, "val:acc"); /* a metric may hold ':' */
    assert_true(a.maximize);
    assert_int_equal(a.grace, 2);
    assert_int_equal(a.eta, 4);
    assert_int_equal(a.max, 128);
    assert_false(a.patient);
    char spec[200];
    sr_asha_format(&a, spec, sizeof(spec));
    assert_string_equal(spec, "val:acc:max,grace=2,eta=4,max=128");
    json_t *o = sr_asha_to_json(&a);
    struct sr_asha b;
    assert_int_equal(sr_asha_from_json(o, &b), 0);
    assert_memory_equal(&a, &b, sizeof(a));
    assert_null(json_object_get(o, "patient")); /* absent: a rule made before it reads the same */
    json_decref(o);
    /* patient: today's first trials, kept in the definition as "patient": true */
    assert_int_equal(sr_asha_parse("loss:min,eta=2,patient,max=8", &a, err, sizeof(err)), 0);
    assert_true(a.patient);
    assert_int_equal(a.eta, 2);
    assert_int_equal(a.max, 8);
    sr_asha_format(&a, spec, sizeof(spec));
    assert_string_equal(spec, "loss:min,grace=1,eta=2,max=8,patient");
    o = sr_asha_to_json(&a);
    assert_true(json_is_true(json_object_get(o, "patient")));
    assert_int_equal(sr_asha_from_json(o, &b), 0);
    assert_memory_equal(&a, &b, sizeof(a));
    json_decref(o);
    o = json_loads("{\"metric\":\"loss\",\"mode\":\"min\",\"grace\":1,\"eta\":3,"
                   "\"patient\":false}",
                   0, NULL);
    assert_int_equal(sr_asha_from_json(o, &b), 0);
    assert_false(b.patient);
    json_decref(o);
    const char *bad[][2] = {
        {"loss", "METRIC:min"},
        {"loss:low", "min or max"},
        {":min", "metric name"},
        {"lo ss:min", "metric name"},
        {"loss:min,eta=1", "eta=\"1\""},
        {"loss:min,grace=0", "grace=\"0\""},
        {"loss:min,grace=x", "grace"},
        {"loss:min,rate=2", "\"rate\" is not an option"},
        {"loss:min,grace=10,max=5", "max=5 is below grace=10"},
        {"loss:min,", "is not an option"},
        {"loss:min,patient=1", "\"patient\" is not an option"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(sr_asha_parse(bad[i][0], &a, err, sizeof(err)), -EINVAL);
        if (!strstr(err, bad[i][1]))
            fail_msg("%s: \"%s\" does not say %s", bad[i][0], err, bad[i][1]);
    }
    /* a stored rule that breaks the rules is not a rule */
    const char *hostile[] = {"{\"metric\":\"loss\",\"mode\":\"min\",\"grace\":1,\"eta\":1}",
                             "{\"metric\":\"loss\",\"mode\":\"up\",\"grace\":1,\"eta\":3}",
                             "{\"metric\":\"a b\",\"mode\":\"min\",\"grace\":1,\"eta\":3}",
                             "{\"metric\":\"loss\",\"mode\":\"min\",\"grace\":5,\"eta\":3,"
                             "\"max\":2}",
                             "{\"metric\":\"loss\",\"mode\":\"min\",\"grace\":1,\"eta\":3,"
                             "\"patient\":1}",
                             "[]"};
    for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
        json_t *h = json_loads(hostile[i], 0, NULL);
        assert_int_equal(sr_asha_from_json(h, &b), -EBADMSG);
        json_decref(h);
    }
}

/* ---- the store side ------------------------------------------------------- */

static void test_rung_records(void **state)
{
    (void)state;
    struct tu_store fs;
    tu_store_open(&fs, "asha");
    struct sr_store *st = fs.st;
    struct sr_rung_rec r = {.trial = 4, .rung = 0, .step = 2, .value = 0.5, .go_on = 1};
    assert_int_equal(sr_rung_put(st, "sw", &r), 0);
    /* create-only: a second record of (rung, trial) changes nothing */
    struct sr_rung_rec again = r;
    again.value = 9;
    again.go_on = 0;
    assert_int_equal(sr_rung_put(st, "sw", &again), -EEXIST);
    struct sr_rung_rec got;
    assert_int_equal(sr_rung_get(st, "sw", 0, 4, &got), 0);
    assert_true(got.value == 0.5 && got.go_on && got.step == 2);
    assert_int_equal(sr_rung_get(st, "sw", 1, 4, &got), -ENOENT);
    sr_err_clear();
    r = (struct sr_rung_rec){.trial = 10, .rung = 0, .step = 1, .value = NAN, .go_on = 0};
    assert_int_equal(sr_rung_put(st, "sw", &r), 0);
    r = (struct sr_rung_rec){.trial = 4, .rung = 1, .step = 3, .value = 0.25, .go_on = 1};
    assert_int_equal(sr_rung_put(st, "sw", &r), 0);
    /* a tampered record (another trial's content) and a stray name are skipped */
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/sweeps/sw/rungs/0/7.json", fs.root);
    const char *other = "{\"trial\":4,\"rung\":0,\"step\":1,\"value\":0,\"go_on\":true}";
    assert_int_equal(sr_write_file_atomic(path, other, strlen(other)), 0);
    snprintf(path, sizeof(path), "%s/sweeps/sw/rungs/0/x.json", fs.root);
    assert_int_equal(sr_write_file_atomic(path, "{}", 2), 0);
    struct sr_rung_rec *recs;
    size_t n;
    assert_int_equal(sr_rung_list(st, "sw", 0, &recs, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(recs[0].trial, 10); /* sorted by name: "10.json" < "4.json" */
    assert_true(isnan(recs[0].value));
    assert_int_equal(recs[1].trial, 4);
    free(recs);
    unsigned char level[12];
    assert_int_equal(sr_rung_levels(st, "sw", 12, level), 0);
    assert_int_equal(level[4], 2);
    assert_int_equal(level[10], 1);
    assert_int_equal(level[7], 1); /* its name is at rung 0: listed, never believed */
    assert_int_equal(level[0], 0);
    /* run --fresh of trial 4: its records go, the others' stay */
    assert_int_equal(sr_rung_remove_trial(st, "sw", 4), 0);
    assert_int_equal(sr_rung_get(st, "sw", 0, 4, &got), -ENOENT);
    sr_err_clear();
    assert_int_equal(sr_rung_levels(st, "sw", 12, level), 0);
    assert_int_equal(level[4], 0);
    assert_int_equal(level[10], 1);
    assert_int_equal(sr_rung_remove_trial(st, "sw", 5), 0); /* none: nothing to do */
    assert_int_equal(sr_rung_remove_all(st, "sw"), 0);
    assert_int_equal(sr_rung_levels(st, "sw", 12, level), 0);
    assert_int_equal(level[4], 0);
    tu_store_close(&fs);
}

/* The rule in definition part 0: read back, the same rule is the same
 * sweep, another (or none) a different one, a tampered one unreadable;
 * and the pruned end mark among the others. */
static void test_rule_in_the_definition(void **state)
{
    (void)state;
    struct tu_store fs;
    tu_store_open(&fs, "asha-def");
    struct sr_store *st = fs.st;
    const char *specs[] = {"n=0..3"};
    struct sr_asha rule = {.metric = "loss", .grace = 2, .eta = 3, .max = 18};
    struct sr_sweep def = {0}, got;
    snprintf(def.name, sizeof(def.name), "es");
    assert_int_equal(sr_sweep_generate(specs, 1, 0, 0, &def), 0);
    def.early_stop = sr_asha_to_json(&rule);
    assert_int_equal(sr_sweep_create(st, &def), 0);
    assert_int_equal(sr_sweep_read(st, "es", &got), 0);
    struct sr_asha back;
    assert_int_equal(sr_asha_from_json(got.early_stop, &back), 0);
    assert_memory_equal(&back, &rule, sizeof(rule));
    sr_sweep_free(&got);
    assert_int_equal(sr_sweep_create(st, &def), 1); /* the same: unchanged */
    json_decref(def.early_stop);
    rule.eta = 2;
    def.early_stop = sr_asha_to_json(&rule);
    assert_int_equal(sr_sweep_create(st, &def), -EEXIST);
    assert_non_null(strstr(sr_strerror(-EEXIST), "early-stopping rule"));
    json_decref(def.early_stop);
    def.early_stop = NULL;
    assert_int_equal(sr_sweep_create(st, &def), -EEXIST);
    sr_err_clear();
    /* a rule that breaks the rules makes the sweep unreadable */
    const char *bad = "{\"format\":1,\"sweep\":\"bad\",\"part\":0,\"params\":[\"n\"],"
                      "\"command\":[],\"trials\":[{\"n\":\"0\"}],\"early_stop\":{\"metric\":"
                      "\"loss\",\"mode\":\"min\",\"grace\":1,\"eta\":0}}";
    assert_int_equal(
        sr_store_put_if(st, "sweeps/bad/def/000000.json", bad, strlen(bad), NULL, NULL), 0);
    assert_int_equal(sr_sweep_read(st, "bad", &got), -EBADMSG);
    assert_non_null(strstr(sr_strerror(-EBADMSG), "early_stop"));
    sr_err_clear();
    /* end/K.pruned: its own state in the listing, read back, cleared */
    struct sr_trial_end_info pruned = {.state = SR_TRIAL_PRUNED, .exit_code = 124}, end;
    snprintf(pruned.cause, sizeof(pruned.cause), "pruned");
    assert_int_equal(sr_sweep_mark_end(st, "es", 2, &pruned), 0);
    unsigned char ends[4];
    assert_int_equal(sr_sweep_list_ends(st, "es", 4, ends), 0);
    assert_int_equal(ends[2], SR_TRIAL_PRUNED);
    assert_int_equal(ends[1], SR_TRIAL_OPEN);
    assert_int_equal(sr_sweep_read_end(st, "es", 2, &end), 0);
    assert_int_equal(end.state, SR_TRIAL_PRUNED);
    assert_int_equal(end.exit_code, 124);
    assert_string_equal(end.cause, "pruned");
    assert_int_equal(sr_sweep_clear_end(st, "es", 2), 0);
    assert_int_equal(sr_sweep_read_end(st, "es", 2, &end), -ENOENT);
    sr_err_clear();
    sr_sweep_free(&def);
    tu_store_close(&fs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decisions_match_the_definition),
        cmocka_unit_test(test_decisions_by_hand),
        cmocka_unit_test(test_rungs),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_rung_records),
        cmocka_unit_test(test_rule_in_the_definition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
