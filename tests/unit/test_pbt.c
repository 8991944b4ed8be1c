/*
 * test_pbt.c - population-based training's pure part (runtime/sweep/pbt.h):
 * the rule parsed and refused, its JSON; the decision: the bottom
 * ceil(n*q) (at most n/2) of the values at a round take one of the top as
 * many, the same set gives the same decision whatever its order, nobody
 * alone decides, a NaN is the worst; the explore: factors on numeric
 * parameters clamped to their range (an int rounded), a choice resampled,
 * keep kept; the records in a file store: a value and a decision are
 * create-only (a second decision finds the first, which stands), a
 * tampered one is skipped, the lineage is by round with what was applied,
 * one trial's records removed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include <errno.h>
#include <limits.h>

#include "pbt.h"
#include "store.h"
#include "sweep.h"

static void test_parse(void **state)
{
    (void)state;
    struct sr_pbt p;
    char err[200];
    assert_int_equal(sr_pbt_parse("loss:min,interval=4", &p, err, sizeof(err)), 0);
    assert_string_equal(p.metric, "loss");
    assert_int_equal(p.maximize, 0);
    assert_int_equal(p.interval, 4);
    assert_true(p.quantile == 0.25);
    assert_int_equal(sr_pbt_parse("val:acc:max,interval=2,quantile=0.5", &p, err, sizeof(err)), 0);
    assert_string_equal(p.metric, "val:acc");
    assert_int_equal(p.maximize, 1);
    assert_true(p.quantile == 0.5);
    assert_int_equal(sr_pbt_parse("loss:min", &p, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "interval=K"));
    assert_int_equal(sr_pbt_parse("loss:low,interval=1", &p, err, sizeof(err)), -EINVAL);
    assert_int_equal(sr_pbt_parse("loss:min,interval=0", &p, err, sizeof(err)), -EINVAL);
    assert_int_equal(sr_pbt_parse("loss:min,interval=1,quantile=0.6", &p, err, sizeof(err)),
                     -EINVAL);
    assert_int_equal(sr_pbt_parse("loss:min,interval=1,eta=3", &p, err, sizeof(err)), -EINVAL);
    size_t nl = 0;
    assert_int_equal(sr_pbt_perturb_check("lr=0.8,1.2", &nl, err, sizeof(err)), 0);
    assert_int_equal(nl, 2);
    assert_int_equal(sr_pbt_perturb_check("lr=0.5,2,resample=0.25", &nl, err, sizeof(err)), 0);
    assert_int_equal(sr_pbt_perturb_check("opt=resample", &nl, err, sizeof(err)), 0);
    assert_int_equal(sr_pbt_perturb_check("seed=keep", &nl, err, sizeof(err)), 0);
    assert_int_equal(sr_pbt_perturb_check("lr=-1", &nl, err, sizeof(err)), -EINVAL);
    assert_int_equal(sr_pbt_perturb_check("lr=resample=2", &nl, err, sizeof(err)), -EINVAL);
    assert_int_equal(sr_pbt_perturb_check("lr", &nl, err, sizeof(err)), -EINVAL);
    assert_int_equal(sr_pbt_perturb_check("1x=0.5", &nl, err, sizeof(err)), -EINVAL);
    json_t *pt = json_pack("{s:s}", "lr", "0.8,1.2");
    assert_int_equal(sr_pbt_parse("loss:max,interval=3,quantile=0.2", &p, err, sizeof(err)), 0);
    json_t *o = sr_pbt_to_json(&p, pt);
    struct sr_pbt back;
    assert_int_equal(sr_pbt_from_json(o, &back), 0);
    assert_string_equal(back.metric, "loss");
    assert_int_equal(back.maximize, 1);
    assert_int_equal(back.interval, 3);
    assert_true(back.quantile == 0.2);
    json_object_set_new(o, "interval", json_integer(0));
    assert_int_equal(sr_pbt_from_json(o, &back), -EBADMSG);
    json_decref(o);
    json_decref(pt);
}

/* The reference: sorted best first (ties by trial), bottom q trials. */
static long reference(const struct sr_pbt *p, const struct sr_pbt_val *v, size_t n, long trial,
                      size_t *q)
{
    size_t better = 0; /* how many are strictly ahead of trial */
    double mine = NAN;
    for (size_t i = 0; i < n; i++)
        if (v[i].trial == trial)
            mine = v[i].value;
    for (size_t i = 0; i < n; i++) {
        if (v[i].trial == trial)
            continue;
        const int vn = isnan(v[i].value), mn = isnan(mine);
        const int ahead = vn != mn ? mn
                          : vn     ? v[i].trial < trial
                          : v[i].value != mine
                              ? (p->maximize ? v[i].value > mine : v[i].value < mine)
                              : v[i].trial < trial;
        better += (size_t)ahead;
    }
    size_t k = (size_t)ceil((double)n * p->quantile - 1e-9);
    if (k > n / 2)
        k = n / 2;
    *q = k;
    return n >= 2 && better >= n - k ? 1 : -1;
}

static void test_decide(void **state)
{
    (void)state;
    struct sr_pbt p = {.metric = "loss", .interval = 1, .quantile = 0.25};
    struct sr_pbt_val one = {.trial = 3, .value = 1};
    size_t k = 9;
    assert_int_equal(sr_pbt_decide(&p, &one, 1, 3, 1, &k), -1); /* alone: nobody to copy */
    assert_int_equal(k, 0);
    uint64_t s = 12345;
    for (int round = 0; round < 2000; round++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        const size_t n = 1 + (size_t)((s >> 33) % 12);
        p.maximize = (int)((s >> 20) & 1);
        p.quantile = ((s >> 40) & 3) == 0 ? 0.5 : 0.25;
        struct sr_pbt_val v[12], w[12];
        for (size_t i = 0; i < n; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            v[i] =
                (struct sr_pbt_val){.trial = (long)i * 3 + 1,
                                    .value = ((s >> 50) & 15) == 0 ? NAN : (double)((s >> 33) % 7)};
        }
        for (size_t i = 0; i < n; i++) /* the same set, reversed */
            w[i] = v[n - 1 - i];
        for (size_t i = 0; i < n; i++) {
            size_t q = 0, q2 = 0, qr = 0;
            const long d = sr_pbt_decide(&p, v, n, v[i].trial, 99, &q);
            const long d2 = sr_pbt_decide(&p, w, n, v[i].trial, 99, &q2);
            const long ref = reference(&p, v, n, v[i].trial, &qr);
            assert_int_equal(q, qr);
            assert_int_equal(d, d2);
            assert_int_equal(d >= 0, ref == 1);
            if (d >= 0) { /* a donor from the top q */
                struct sr_pbt_val *dv = NULL;
                for (size_t j = 0; j < n; j++)
                    if (v[j].trial == d)
                        dv = &v[j];
                assert_non_null(dv);
                size_t qd = 0;
                size_t better = 0;
                (void)reference(&p, v, n, d, &qd);
                for (size_t j = 0; j < n; j++) {
                    struct sr_pbt_val pair[2] = {v[j], *dv};
                    size_t qq;
                    if (v[j].trial != d &&
                        sr_pbt_decide(&(struct sr_pbt){.maximize = p.maximize, .quantile = 0.5},
                                      pair, 2, d, 1, &qq) >= 0)
                        better++;
                }
                assert_true(better < q);
            }
        }
    }
}

static void test_explore(void **state)
{
    (void)state;
    char out[64];
    const double f[] = {0.8, 1.2};
    for (uint64_t seed = 0; seed < 200; seed++) {
        uint64_t st = seed;
        assert_int_equal(
            sr_sweep_explore("lr=loguniform:0.001,0.1", "0.01", f, 2, 0, &st, out, sizeof(out)), 0);
        const double x = strtod(out, NULL);
        assert_true(fabs(x - 0.008) < 1e-12 || fabs(x - 0.012) < 1e-12);
        st = seed;
        assert_int_equal(sr_sweep_explore("lr=uniform:0,1", "0.95", f, 2, 0, &st, out, sizeof(out)),
                         0);
        assert_true(strcmp(out, "1") == 0 || strtod(out, NULL) == 0.76);
        st = seed;
        assert_int_equal(
            sr_sweep_explore("n=int:1,100,step=3", "50", f, 2, 0, &st, out, sizeof(out)), 0);
        assert_true(strcmp(out, "40") == 0 || strcmp(out, "61") == 0);
        st = seed;
        assert_int_equal(
            sr_sweep_explore("opt=choice:adam,sgd", "adam", f, 2, 0, &st, out, sizeof(out)), 0);
        assert_true(strcmp(out, "adam") == 0 || strcmp(out, "sgd") == 0);
        st = seed;
        assert_int_equal(
            sr_sweep_explore("lr=uniform:0.5,0.7", "0.6", f, 2, 1, &st, out, sizeof(out)), 0);
        assert_true(strtod(out, NULL) >= 0.5 && strtod(out, NULL) <= 0.7);
    }
    /* the rule: keep keeps, the default multiplies */
    json_t *pbt = json_pack("{s:{s:s}}", "perturb", "seed", "keep");
    json_t *spec = json_pack("{s:[s,s]}", "param", "lr=uniform:0.1,1", "seed=0..3");
    json_t *params = json_pack("{s:s,s:s}", "lr", "0.5", "seed", "2");
    uint64_t st = 7;
    json_t *to = sr_pbt_explore(pbt, spec, params, &st);
    assert_string_equal(json_string_value(json_object_get(to, "seed")), "2");
    const double lr = strtod(json_string_value(json_object_get(to, "lr")), NULL);
    assert_true(lr == 0.4 || lr == 0.6);
    json_decref(to);
    json_decref(params);
    json_decref(spec);
    json_decref(pbt);
}

static void test_records(void **state)
{
    (void)state;
    struct tu_store fs;
    tu_store_open(&fs, "pbt");
    struct sr_store *st = fs.st;
    assert_int_equal(sr_pbt_put_value(st, "sw", 2, 1, 4, 0.5), 0);
    assert_int_equal(sr_pbt_put_value(st, "sw", 2, 1, 5, 9.0), -EEXIST); /* the first stands */
    assert_int_equal(sr_pbt_put_value(st, "sw", 0, 1, 4, 0.25), 0);
    tu_write_text(fs.root, "sweeps/sw/pbt/rounds/1/3.json", "{\"trial\": 4, \"value\": 1}");
    struct sr_pbt_val *v = NULL;
    size_t n = 0;
    assert_int_equal(sr_pbt_list_values(st, "sw", 1, &v, &n), 0);
    assert_int_equal(n, 2); /* the record that is not its key's: skipped */
    assert_true(v[0].trial == 0 && v[0].value == 0.25 && v[1].trial == 2 && v[1].value == 0.5);
    free(v);
    json_t *d1 = json_pack("{s:i,s:i,s:i,s:i,s:i,s:{s:s}}", "trial", 2, "round", 1, "donor", 0,
                           "donor_seq", 7, "donor_step", 4, "params", "lr", "0.4");
    json_t *d2 = json_pack("{s:i,s:i,s:i,s:i,s:i,s:{s:s}}", "trial", 2, "round", 1, "donor", 5,
                           "donor_seq", 9, "donor_step", 6, "params", "lr", "0.9");
    json_t *existing = NULL;
    assert_int_equal(sr_pbt_put_decision(st, "sw", d1, &existing), 0);
    assert_null(existing);
    /* a second decision at the same round (an earlier attempt made one): the first */
    assert_int_equal(sr_pbt_put_decision(st, "sw", d2, &existing), -EEXIST);
    assert_non_null(existing);
    assert_int_equal(json_integer_value(json_object_get(existing, "donor")), 0);
    json_decref(existing);
    json_t *d3 = json_pack("{s:i,s:i,s:i,s:i,s:i,s:{s:s}}", "trial", 2, "round", 3, "donor", 0,
                           "donor_seq", 12, "donor_step", 12, "params", "lr", "0.3");
    assert_int_equal(sr_pbt_put_decision(st, "sw", d3, NULL), 0);
    assert_int_equal(sr_pbt_mark_applied(st, "sw", 2, 1, 11), 0);
    assert_int_equal(sr_pbt_mark_applied(st, "sw", 2, 1, 99), 0); /* again: the first stands */
    json_t *l = NULL;
    assert_int_equal(sr_pbt_lineage(st, "sw", 2, &l), 0);
    assert_int_equal(json_array_size(l), 2);
    const json_t *a = json_array_get(l, 0), *b = json_array_get(l, 1);
    assert_int_equal(json_integer_value(json_object_get(a, "round")), 1);
    assert_int_equal(json_integer_value(json_object_get(a, "applied")), 11);
    assert_int_equal(json_integer_value(json_object_get(b, "round")), 3);
    assert_null(json_object_get(b, "applied")); /* not carried out yet */
    json_decref(l);
    assert_int_equal(sr_pbt_lineage(st, "sw", 0, &l), 0); /* none: empty */
    assert_int_equal(json_array_size(l), 0);
    json_decref(l);
    assert_int_equal(sr_pbt_remove_trial(st, "sw", 2), 0);
    assert_int_equal(sr_pbt_lineage(st, "sw", 2, &l), 0);
    assert_int_equal(json_array_size(l), 0);
    json_decref(l);
    assert_int_equal(sr_pbt_list_values(st, "sw", 1, &v, &n), 0);
    assert_int_equal(n, 1); /* trial 0's stays */
    free(v);
    json_decref(d1);
    json_decref(d2);
    json_decref(d3);
    tu_store_close(&fs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_explore),
        cmocka_unit_test(test_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
