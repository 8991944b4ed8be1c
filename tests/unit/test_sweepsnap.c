/*
 * test_sweepsnap.c - `sweep show`'s snapshot entries (runtime/record/
 * sweepsnap.h): an ended trial's entry gives back every field the view
 * prints; it is taken only while its summary's ETag and its end mark are
 * the listed ones; an edited entry, another ETag, another mark, a trial
 * not ended or multi-node are not; its learning curves come back, range
 * checked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "histutil.h"
#include "runsum.h"
#include "sweepsnap.h"

#define T0 1700000000000LL

/* A trial that crashed once (exit 3, with a tail), then failed, with two
 * metrics; its end mark says failed. */
static void failed_trial(struct sr_sv_trial *t, struct sr_sv_run *r, unsigned nodes)
{
    memset(t, 0, sizeof(*t));
    memset(r, 0, sizeof(*r));
    sr_hist_init(&r->h);
    struct sr_history *h = &r->h;
    h->keep_points = 1; /* the learning curves, as sweepload.c keeps them */
    h->points_max = SR_SV_CURVE_POINTS;
    char start[96];
    snprintf(start, sizeof(start), ",\"host\":\"a\",\"nodes\":%u,\"price_per_hour\":0.5", nodes);
    tu_hist_add(h, "{\"event\":\"start\",\"unix_ms\":%lld,\"attempt\":0%s}", T0, start);
    EV(h, 1000, 0, "metric", ",\"name\":\"loss\",\"value\":0.5,\"step\":1");
    EV(h, 2000, 0, "metric", ",\"name\":\"loss\",\"value\":0.25,\"step\":2");
    EV(h, 2500, 0, "metric", ",\"name\":\"acc\",\"value\":0.75");
    EV(h, 3000, 0, "exit", ",\"code\":3,\"restarting\":true,\"tail\":\"boom\\n\"");
    tu_hist_add(h, "{\"event\":\"start\",\"unix_ms\":%lld,\"attempt\":1%s}", T0 + 4000, start);
    EV(h, 5000, 1, "metric", ",\"name\":\"loss\",\"value\":0.375,\"step\":3");
    EV(h, 6000, 1, "exit", ",\"code\":3,\"tail\":\"boom again\\n\"");
    sr_hist_derive(h);
    assert_int_equal(h->n_att, 2);
    assert_int_equal(h->n_met, 2);
    assert_non_null(sr_hist_last_ended(h)->tail);
    assert_true(h->lost_ms > 0);
    t->trial = 0;
    t->mark = SR_TRIAL_FAILED;
    t->run = r;
    r->has_end = 1;
    r->end.state = SR_TRIAL_FAILED;
    r->end.exit_code = 3;
    snprintf(r->end.cause, sizeof(r->end.cause), "exit 3");
    snprintf(r->end.host, sizeof(r->end.host), "a");
}

static const char *etags[1] = {"\"abc\""};

static struct sr_sv_snap snap_of(const json_t **entry)
{
    struct sr_sv_snap s = {.usable = 1, .etag = etags, .entry = entry};
    return s;
}

static void same_history(const struct sr_history *a, const struct sr_history *b)
{
    assert_int_equal(a->state, b->state);
    assert_int_equal(a->preemptions, b->preemptions);
    assert_int_equal(a->lost_ms, b->lost_ms);
    assert_int_equal(a->instance_ms, b->instance_ms);
    assert_int_equal(a->first_ms, b->first_ms);
    assert_int_equal(a->last_ms, b->last_ms);
    assert_int_equal(a->n_att, b->n_att);
    for (size_t i = 0; i < a->n_att; i++) {
        const struct sr_hist_attempt *x = &a->att[i], *y = &b->att[i];
        assert_int_equal(x->attempt, y->attempt);
        assert_int_equal(x->end, y->end);
        assert_int_equal(x->cause, y->cause);
        assert_string_equal(x->cause_detail, y->cause_detail);
        assert_string_equal(x->host, y->host);
        assert_int_equal(x->first_ms, y->first_ms);
        assert_int_equal(x->last_ms, y->last_ms);
        assert_int_equal(x->lost_ms, y->lost_ms);
        assert_int_equal(x->session, y->session);
        assert_int_equal(x->nodes, y->nodes);
        assert_true(x->price_per_hour == y->price_per_hour);
    }
    const struct sr_hist_attempt *ea = sr_hist_last_ended(a), *eb = sr_hist_last_ended(b);
    assert_non_null(ea);
    assert_non_null(eb);
    assert_string_equal(ea->tail, eb->tail);
    assert_int_equal(a->n_met, b->n_met);
    for (size_t i = 0; i < a->n_met; i++) {
        const struct sr_hist_metric *x = &a->met[i], *y = &b->met[i];
        assert_string_equal(x->name, y->name);
        assert_true(x->last == y->last && x->min == y->min && x->max == y->max);
        assert_int_equal(x->last_step, y->last_step);
        assert_int_equal(x->min_step, y->min_step);
        assert_int_equal(x->max_step, y->max_step);
        assert_int_equal(x->count, y->count);
        assert_int_equal(x->stride, y->stride);
        assert_int_equal(x->n_pts, y->n_pts);
        for (size_t k = 0; k < x->n_pts; k++) {
            assert_int_equal(x->pts[k].step, y->pts[k].step);
            assert_true(x->pts[k].value == y->pts[k].value);
            assert_int_equal(x->pts[k].attempt, y->pts[k].attempt);
            assert_int_equal(x->pts[k].index, y->pts[k].index);
        }
    }
}

static void free_run(struct sr_sv_run *r)
{
    if (r)
        sr_hist_free(&r->h);
    free(r);
}

static void an_entry_gives_back_what_the_view_prints(void **state)
{
    (void)state;
    struct sr_sv_trial t;
    struct sr_sv_run r;
    failed_trial(&t, &r, 1);
    const json_t *entry[1] = {NULL};
    struct sr_sv_snap s = snap_of(entry);
    json_t *e = sr_sv_snap_entry(&s, &t);
    assert_non_null(e);
    entry[0] = e;
    struct sr_sv_run *got = NULL;
    assert_int_equal(sr_sv_snap_take(&s, 0, SR_TRIAL_FAILED, &got), 1);
    assert_non_null(got);
    same_history(&r.h, &got->h);
    assert_true(got->has_end);
    assert_int_equal(got->end.exit_code, 3);
    assert_string_equal(got->end.cause, "exit 3");
    free_run(got);
    json_decref(e);
    sr_hist_free(&r.h);
}

static void an_entry_stands_only_for_its_etag_and_mark(void **state)
{
    (void)state;
    struct sr_sv_trial t;
    struct sr_sv_run r;
    failed_trial(&t, &r, 1);
    const json_t *entry[1] = {NULL};
    struct sr_sv_snap s = snap_of(entry);
    json_t *e = sr_sv_snap_entry(&s, &t);
    entry[0] = e;
    struct sr_sv_run *got = NULL;
    /* the summary was rewritten since: another ETag */
    const char *other[1] = {"\"def\""};
    s.etag = other;
    assert_int_equal(sr_sv_snap_take(&s, 0, SR_TRIAL_FAILED, &got), 0);
    /* the summary was deleted */
    const char *none[1] = {NULL};
    s.etag = none;
    assert_int_equal(sr_sv_snap_take(&s, 0, SR_TRIAL_FAILED, &got), 0);
    s.etag = etags;
    /* retried and cancelled since: another mark; not ended at all */
    assert_int_equal(sr_sv_snap_take(&s, 0, SR_TRIAL_CANCELLED, &got), 0);
    assert_int_equal(sr_sv_snap_take(&s, 0, SR_TRIAL_OPEN, &got), 0);
    assert_null(got);
    json_decref(e);
    sr_hist_free(&r.h);
}

static void an_edited_entry_is_not_taken(void **state)
{
    (void)state;
    struct sr_sv_trial t;
    struct sr_sv_run r;
    failed_trial(&t, &r, 1);
    const json_t *entry[1] = {NULL};
    struct sr_sv_snap s = snap_of(entry);
    json_t *e = sr_sv_snap_entry(&s, &t);
    entry[0] = e;
    json_t *met0 = json_array_get(json_object_get(json_object_get(e, "h"), "met"), 0);
    json_object_set_new(met0, "last", json_real(123.0));
    struct sr_sv_run *got = NULL;
    assert_int_equal(sr_sv_snap_take(&s, 0, SR_TRIAL_FAILED, &got), 0);
    assert_null(got);
    json_decref(e);
    /* out of range, digest and all: a negative lost work */
    e = sr_sv_snap_entry(&s, &t);
    json_t *h = json_object_get(e, "h");
    json_object_set_new(h, "lost", json_integer(-5));
    char d[17];
    assert_int_equal(sr_runsum_digest(e, d), 0);
    json_object_set_new(e, "digest", json_string(d));
    entry[0] = e;
    assert_int_equal(sr_sv_snap_take(&s, 0, SR_TRIAL_FAILED, &got), 0);
    /* a control character in a tail, digest and all */
    json_object_set_new(h, "lost", json_integer(0));
    json_t *att1 = json_array_get(json_object_get(h, "att"), 1);
    json_object_set_new(att1, "tail", json_string("\x1b[2Jboom"));
    assert_int_equal(sr_runsum_digest(e, d), 0);
    json_object_set_new(e, "digest", json_string(d));
    assert_int_equal(sr_sv_snap_take(&s, 0, SR_TRIAL_FAILED, &got), 0);
    assert_null(got);
    json_decref(e);
    sr_hist_free(&r.h);
}

/* Seals e again after an edit (as a forger with the digest's code would). */
static void reseal(json_t *e)
{
    char d[17];
    json_object_del(e, "digest");
    assert_int_equal(sr_runsum_digest(e, d), 0);
    json_object_set_new(e, "digest", json_string(d));
}

/* The learning curve comes back point for point (failed_trial's loss: 3
 * points over two attempts); a point out of range, digest and all, makes
 * the whole entry unusable (the trial is read from its logs). */
static void a_curve_comes_back_and_is_range_checked(void **state)
{
    (void)state;
    struct sr_sv_trial t;
    struct sr_sv_run r;
    failed_trial(&t, &r, 1);
    assert_int_equal(sr_hist_metric_find(&r.h, "loss")->n_pts, 3);
    const json_t *entry[1] = {NULL};
    struct sr_sv_snap s = snap_of(entry);
    json_t *e = sr_sv_snap_entry(&s, &t);
    assert_non_null(e);
    entry[0] = e;
    struct sr_sv_run *got = NULL;
    assert_int_equal(sr_sv_snap_take(&s, 0, SR_TRIAL_FAILED, &got), 1);
    same_history(&r.h, &got->h);
    free_run(got);
    json_t *loss = json_array_get(json_object_get(json_object_get(e, "h"), "met"), 0);
    json_t *pts = json_object_get(loss, "pts");
    json_t *p0 = json_array_get(pts, 0);
    const struct {
        size_t at;
        json_t *v;
    } bad[] = {
        {0, json_integer(-2)},      /* a step below -1 */
        {1, json_string("0.5")},    /* a value that is not a number */
        {2, json_integer(-1)},      /* an attempt below 0 */
        {3, json_integer(3)},       /* a rank past the count */
        {3, json_integer(1 << 30)}, /* likewise */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *was = json_deep_copy(json_array_get(p0, bad[i].at));
        json_array_set_new(p0, bad[i].at, bad[i].v);
        reseal(e);
        assert_int_equal(sr_sv_snap_take(&s, 0, SR_TRIAL_FAILED, &got), 0);
        assert_null(got);
        json_array_set_new(p0, bad[i].at, was);
    }
    reseal(e);
    assert_int_equal(sr_sv_snap_take(&s, 0, SR_TRIAL_FAILED, &got), 1);
    free_run(got);
    /* more points than a trial may keep */
    for (unsigned i = 0; i <= SR_SV_CURVE_POINTS; i++)
        json_array_append_new(pts, json_deep_copy(p0));
    reseal(e);
    assert_int_equal(sr_sv_snap_take(&s, 0, SR_TRIAL_FAILED, &got), 0);
    assert_null(got);
    /* an entry without a curve (a version 2 snapshot's) */
    json_object_del(loss, "pts");
    reseal(e);
    assert_int_equal(sr_sv_snap_take(&s, 0, SR_TRIAL_FAILED, &got), 0);
    json_decref(e);
    sr_hist_free(&r.h);
}

static void trials_not_kept(void **state)
{
    (void)state;
    struct sr_sv_trial t;
    struct sr_sv_run r;
    const json_t *entry[1] = {NULL};
    struct sr_sv_snap s = snap_of(entry);
    failed_trial(&t, &r, 2); /* multi-node: its summaries/ marker never changes */
    assert_null(sr_sv_snap_entry(&s, &t));
    sr_hist_free(&r.h);
    failed_trial(&t, &r, 1);
    t.mark = SR_TRIAL_OPEN; /* not ended: its state changes */
    assert_null(sr_sv_snap_entry(&s, &t));
    t.mark = SR_TRIAL_FAILED;
    const char *none[1] = {NULL};
    s.etag = none; /* no summary listed: a store written before summaries/ */
    assert_null(sr_sv_snap_entry(&s, &t));
    sr_hist_free(&r.h);
    /* a trial of which the store holds nothing: kept while no summary appears */
    t.run = NULL;
    t.mark = SR_TRIAL_CANCELLED;
    json_t *e = sr_sv_snap_entry(&s, &t);
    assert_non_null(e);
    entry[0] = e;
    struct sr_sv_run *got = (struct sr_sv_run *)1;
    assert_int_equal(sr_sv_snap_take(&s, 0, SR_TRIAL_CANCELLED, &got), 1);
    assert_null(got);
    s.etag = etags; /* a summary appeared since */
    assert_int_equal(sr_sv_snap_take(&s, 0, SR_TRIAL_CANCELLED, &got), 0);
    json_decref(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_entry_gives_back_what_the_view_prints),
        cmocka_unit_test(an_entry_stands_only_for_its_etag_and_mark),
        cmocka_unit_test(an_edited_entry_is_not_taken),
        cmocka_unit_test(trials_not_kept),
        cmocka_unit_test(a_curve_comes_back_and_is_range_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
