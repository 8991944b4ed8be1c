/*
 * test_sweeptrial.c - one trial of a sweep (runtime/views/sweeptrial.h):
 * a learning curve in step order, a step a resumed attempt reported again
 * holding the newest value, values without steps in the order reported;
 * the cut-off of a rung decision (the k-th best of the other values, k =
 * (n + 1) / eta, at least 1) in either direction.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "histutil.h"
#include "sweeptrial.h"

#define T0 1700000000000LL

static char *curve_text(const struct sr_history *h, const char *name)
{
    json_t *c = sr_sv_curve_json(sr_hist_metric_find(h, name));
    assert_non_null(c);
    char *s = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    return s;
}

/* Attempt 0 reports steps 1-3, is preempted, attempt 1 resumes from step 1
 * and reports 2-4 again with other values: the newest of each step stands. */
static void a_curve_is_in_step_order_the_newest_attempt_standing(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    h.keep_points = 1;
    h.points_max = SR_SV_CURVE_POINTS;
    /* the second attempt's log read first: the order read must not matter */
    EV(&h, 5000, 1, "metric", ",\"name\":\"loss\",\"value\":0.4375,\"step\":2");
    EV(&h, 6000, 1, "metric", ",\"name\":\"loss\",\"value\":0.25,\"step\":3");
    EV(&h, 7000, 1, "metric", ",\"name\":\"loss\",\"value\":0.125,\"step\":4");
    EV(&h, 1000, 0, "metric", ",\"name\":\"loss\",\"value\":1,\"step\":1");
    EV(&h, 2000, 0, "metric", ",\"name\":\"loss\",\"value\":0.5,\"step\":2");
    EV(&h, 3000, 0, "metric", ",\"name\":\"loss\",\"value\":0.375,\"step\":3");
    EV(&h, 3500, 0, "metric", ",\"name\":\"acc\",\"value\":0.5");
    EV(&h, 3600, 0, "metric", ",\"name\":\"acc\",\"value\":0.75");
    sr_hist_derive(&h);
    char *s = curve_text(&h, "loss");
    assert_string_equal(s, "[[1,1.0],[2,0.4375],[3,0.25],[4,0.125]]");
    free(s);
    s = curve_text(&h, "acc"); /* no steps: in the order reported */
    assert_string_equal(s, "[[null,0.5],[null,0.75]]");
    free(s);
    sr_hist_free(&h);
}

static void the_cutoff_is_the_kth_best_of_the_others(void **state)
{
    (void)state;
    struct sr_asha min = {.metric = "loss", .grace = 1, .eta = 3};
    const double v[] = {0.5, 0.1, 0.9, NAN, 0.3};
    double cut = 0;
    size_t keep = 9;
    /* 6 values with its own: the top 2 go on; the 2nd best of the others */
    assert_int_equal(sr_sv_rung_cutoff(&min, v, 5, &cut, &keep), 0);
    assert_int_equal(keep, 2);
    assert_true(cut == 0.3);
    struct sr_asha max = min;
    max.maximize = 1;
    assert_int_equal(sr_sv_rung_cutoff(&max, v, 5, &cut, &keep), 0);
    assert_true(cut == 0.5);
    /* fewer than eta: the best so far */
    assert_int_equal(sr_sv_rung_cutoff(&min, v, 1, &cut, &keep), 0);
    assert_int_equal(keep, 0);
    assert_true(cut == 0.5);
    /* nothing to compare with */
    assert_int_equal(sr_sv_rung_cutoff(&min, v, 0, &cut, &keep), -1);
    /* ,patient: with fewer than eta values every trial goes on (no cut-off);
     * with eta or more, the same cut-off as without */
    struct sr_asha patient = min;
    patient.patient = 1;
    assert_int_equal(sr_sv_rung_cutoff(&patient, v, 1, &cut, &keep), -1);
    assert_int_equal(sr_sv_rung_cutoff(&patient, v, 5, &cut, &keep), 0);
    assert_int_equal(keep, 2);
    assert_true(cut == 0.3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_curve_is_in_step_order_the_newest_attempt_standing),
        cmocka_unit_test(the_cutoff_is_the_kth_best_of_the_others),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
