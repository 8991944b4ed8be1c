/*
 * sweeptrial.c - one trial of a sweep: its learning curves and `sweep show
 * NAME TRIAL` (see sweeptrial.h; docs/sweeps.md, "Learning curves").
 */
#include "sweeptrial.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pbt.h"

/* ---- curves ------------------------------------------------------------------ */

/* By step, then attempt, then rank: the newest attempt's value of a step last. */
static int cmp_point(const void *a, const void *b)
{
    const struct sr_hist_point *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (x->attempt != y->attempt)
        return x->attempt < y->attempt ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* By attempt, then rank: the order reported. */
static int cmp_reported(const void *a, const void *b)
{
    const struct sr_hist_point *x = a, *y = b;
    if (x->attempt != y->attempt)
        return x->attempt < y->attempt ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

int sr_sv_curve_points(const struct sr_hist_metric *m, int steps, struct sr_hist_point **out,
                       size_t *n)
{
    struct sr_hist_point *p = calloc(m->n_pts ? m->n_pts : 1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    size_t w = 0;
    for (size_t k = 0; k < m->n_pts; k++)
        if (!steps || m->pts[k].step >= 0) /* with steps, a value without one has no place */
            p[w++] = m->pts[k];
    qsort(p, w, sizeof(*p), steps ? cmp_point : cmp_reported);
    size_t kept = 0;
    for (size_t k = 0; k < w; k++) {
        if (steps && kept && p[kept - 1].step == p[k].step)
            kept--; /* the later one of the same step stands */
        p[kept++] = p[k];
    }
    *out = p;
    *n = kept;
    return 0;
}

json_t *sr_sv_curve_json(const struct sr_hist_metric *m)
{
    int steps = 0;
    for (size_t k = 0; k < m->n_pts; k++)
        steps |= m->pts[k].step >= 0;
    struct sr_hist_point *p = NULL;
    size_t n = 0;
    json_t *out = json_array();
    if (!out || sr_sv_curve_points(m, steps, &p, &n) < 0) {
        json_decref(out);
        return NULL;
    }
    for (size_t k = 0; k < n; k++) {
        json_t *pt = json_pack("[o, f]", steps ? json_integer(p[k].step) : json_null(), p[k].value);
        if (json_array_append_new(out, pt) < 0) {
            json_decref(out);
            out = NULL;
            break;
        }
    }
    free(p);
    return out;
}

json_t *sr_sv_curves_json(const struct sr_sv_trial *t)
{
    json_t *o = json_object();
    const struct sr_history *h = t->run ? &t->run->h : NULL;
    for (size_t i = 0; o && h && i < h->n_met; i++)
        json_object_set_new(o, h->met[i].name, sr_sv_curve_json(&h->met[i]));
    return o;
}

/* ---- why pruned -------------------------------------------------------------- */

int sr_sv_rung_cutoff(const struct sr_asha *rule, const double *values, size_t n, double *cut,
                      size_t *keep)
{
    if (!n || rule->eta < 2)
        return -1;
    double *v = malloc(n * sizeof(*v));
    if (!v)
        return -1;
    for (size_t i = 0; i < n; i++) { /* best first (NaN last); a rung holds few values */
        size_t j = i;
        for (; j > 0 && sr_asha_better(rule, values[i], v[j - 1]); j--)
            v[j] = v[j - 1];
        v[j] = values[i];
    }
    const size_t k = sr_asha_keep(rule, n); /* the rule's own count (asha.h) */
    if (k <= n)
        *cut = v[k - 1];
    free(v);
    if (k > n) /* ,patient with fewer than eta values: every trial goes on */
        return -1;
    *keep = n + 1 < (size_t)rule->eta ? 0 : k; /* 0: only the best so far goes on */
    return 0;
}

static const char *ordinal(size_t k)
{
    return k % 100 >= 11 && k % 100 <= 13 ? "th"
           : k % 10 == 1                  ? "st"
           : k % 10 == 2                  ? "nd"
           : k % 10 == 3                  ? "rd"
                                          : "th";
}

static void print_rung(FILE *f, const struct sr_asha *rule, const struct sr_sv_rung_why *w)
{
    const struct sr_rung_rec *r = &w->rec;
    fprintf(f, "  rung %u: %s %g at step %" PRId64 ", compared with %u other value%s: %s\n",
            r->rung, rule ? rule->metric : "value", r->value, r->step, r->seen,
            r->seen == 1 ? "" : "s", r->go_on ? "went on" : "pruned");
    if (r->go_on)
        return;
    if (!w->has_cut) {
        fprintf(f,
                "    cut-off: unknown (the %u value%s it was compared with are no longer "
                "recorded)\n",
                r->seen, r->seen == 1 ? "" : "s");
        return;
    }
    const size_t total = (size_t)r->seen + 1;
    if (w->keep)
        fprintf(f,
                "    cut-off: %g, the %zu%s best of the other values (the top %zu of %zu go on); "
                "%g is %s\n",
                w->cut, w->keep, ordinal(w->keep), w->keep, total, r->value,
                rule && rule->maximize ? "below it" : "above it");
    else
        fprintf(f,
                "    cut-off: %g, the best so far (fewer than eta=%" PRId64
                " values: only the best goes on); %g is %s\n",
                w->cut, rule ? rule->eta : 0, r->value,
                rule && rule->maximize ? "below it" : "above it");
    if (w->others < r->seen)
        fprintf(f, "    (%zu of the %u values it was compared with are still recorded)\n",
                w->others, r->seen);
}

/* ---- the trial ---------------------------------------------------------------- */

void sr_sv_trial_print(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o,
                       const struct sr_sv_trial *t, const struct sr_asha *rule,
                       const struct sr_sv_rung_why *why, size_t n)
{
    fprintf(f, "trial %zu of sweep %s (run %s): %s\n", t->trial, v->sw->name, t->run_id,
            sr_sv_state_name(t->state));
    fprintf(f, "params:");
    for (size_t i = 0; i < sr_sweep_nparams(v->sw); i++) {
        const char *p = sr_sweep_param(v->sw, i), *val = sr_sweep_value(v->sw, t->trial, p);
        fprintf(f, " %s=%s", p, val ? val : "-");
    }
    fprintf(f, "\n");
    sr_sv_schedule_print(f, v, t);
    const struct sr_history *h = t->run ? &t->run->h : NULL;
    if (h)
        fprintf(f, "attempts: %zu, preemptions %u, instance hours %.4f\n", h->n_att, h->preemptions,
                sr_sv_trial_hours(t));
    for (size_t i = 0; h && i < h->n_met; i++) {
        const struct sr_hist_metric *m = &h->met[i];
        const int max = sr_sv_maximized(o, m->name);
        json_t *c = sr_sv_curve_json(m);
        fprintf(f, "metric %s: last %g", m->name, m->last);
        if (m->last_step >= 0)
            fprintf(f, " at step %" PRId64, m->last_step);
        fprintf(f, ", best %g", sr_hist_metric_best(m, max));
        if (sr_hist_metric_best_step(m, max) >= 0)
            fprintf(f, " at step %" PRId64, sr_hist_metric_best_step(m, max));
        fprintf(f, ", %u value%s, curve of %zu point%s\n", m->count, m->count == 1 ? "" : "s",
                json_array_size(c), json_array_size(c) == 1 ? "" : "s");
        json_decref(c);
    }
    if (!rule)
        return;
    if (!n) {
        fprintf(f, "early stopping: no rung reached\n");
        return;
    }
    fprintf(f, "early stopping (%s):\n", rule->metric);
    for (size_t i = 0; i < n; i++)
        print_rung(f, rule, &why[i]);
    if (t->state == SR_SV_PRUNED && !why[n - 1].rec.go_on) {
        const struct sr_sv_rung_why *w = &why[n - 1];
        fprintf(f, "pruned at rung %u: %s %g", w->rec.rung, rule->metric, w->rec.value);
        if (w->has_cut)
            fprintf(f, " against the cut-off %g", w->cut);
        fprintf(f, "\n");
    }
}

/* ---- PBT: lineage and schedule ----------------------------------------------- */

json_t *sr_sv_lineage_json(const struct sr_sv_trial *t)
{
    json_t *a = json_array();
    size_t i;
    const json_t *d;
    json_array_foreach(t->lineage, i, d)
    {
        json_t *e = json_object();
        static const char *const keys[] = {"round",       "step",      "value",      "donor",
                                           "donor_value", "donor_seq", "donor_step", "from",
                                           "params",      "applied",   "unix_ms"};
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
            const json_t *x = json_object_get(d, keys[k]);
            json_object_set_new(e, keys[k], x ? json_deep_copy(x) : json_null());
        }
        json_array_append_new(a, e);
    }
    return a;
}

json_t *sr_sv_schedule_json(const struct sr_sweepview *v, const struct sr_sv_trial *t)
{
    json_t *a = json_array(), *first = json_object();
    for (size_t i = 0; i < sr_sweep_nparams(v->sw); i++) {
        const char *p = sr_sweep_param(v->sw, i), *val = sr_sweep_value(v->sw, t->trial, p);
        if (val && *val)
            json_object_set_new(first, p, json_string(val));
    }
    json_array_append_new(a, json_pack("{s:i,s:o,s:n}", "from_step", 0, "params", first, "donor"));
    size_t i;
    const json_t *d;
    json_array_foreach(t->lineage, i, d)
    {
        const json_t *ds = json_object_get(d, "donor_step");
        json_array_append_new(a, json_pack("{s:O,s:O,s:O,s:O}", "from_step", ds ? ds : json_null(),
                                           "params", json_object_get(d, "params"), "donor",
                                           json_object_get(d, "donor"), "round",
                                           json_object_get(d, "round")));
    }
    return a;
}

void sr_sv_lineage_print(FILE *f, const struct sr_sweepview *v)
{
    size_t any = 0;
    for (size_t k = 0; k < v->n; k++)
        any += json_array_size(v->t[k].lineage);
    struct sr_pbt rule;
    if (!v->sw->pbt || sr_pbt_from_json(v->sw->pbt, &rule) < 0)
        return;
    fprintf(f, "\nlineage (PBT %s:%s every %" PRId64 " steps, quantile %g): %zu exploit%s\n",
            rule.metric, rule.maximize ? "max" : "min", rule.interval, rule.quantile, any,
            any == 1 ? "" : "s");
    for (size_t k = 0; k < v->n; k++) {
        size_t i;
        const json_t *d;
        json_array_foreach(v->t[k].lineage, i, d)
        {
            char ch[400];
            sr_pbt_changes(json_object_get(d, "from"), json_object_get(d, "params"), ch,
                           sizeof(ch));
            fprintf(f,
                    "  trial %zu: from trial %" JSON_INTEGER_FORMAT " @ step %" JSON_INTEGER_FORMAT
                    " (round %" JSON_INTEGER_FORMAT ", its checkpoint at step %" JSON_INTEGER_FORMAT
                    "%s; %s)\n",
                    k, json_integer_value(json_object_get(d, "donor")),
                    json_integer_value(json_object_get(d, "step")),
                    json_integer_value(json_object_get(d, "round")),
                    json_integer_value(json_object_get(d, "donor_step")),
                    json_object_get(d, "applied") ? "" : ", not carried out yet", ch);
        }
    }
}

void sr_sv_schedule_print(FILE *f, const struct sr_sweepview *v, const struct sr_sv_trial *t)
{
    if (!v->sw->pbt)
        return;
    json_t *s = sr_sv_schedule_json(v, t);
    fprintf(f, "parameter schedule (PBT):\n");
    size_t i;
    const json_t *e;
    json_array_foreach(s, i, e)
    {
        const json_t *donor = json_object_get(e, "donor");
        fprintf(f, "  from step %" JSON_INTEGER_FORMAT ":",
                json_integer_value(json_object_get(e, "from_step")));
        const char *name;
        const json_t *x;
        json_object_foreach(json_object_get(e, "params"), name, x)
            fprintf(f, " %s=%s", name, json_string_value(x) ? json_string_value(x) : "-");
        if (json_is_integer(donor))
            fprintf(
                f, " (taken from trial %" JSON_INTEGER_FORMAT " at round %" JSON_INTEGER_FORMAT ")",
                json_integer_value(donor), json_integer_value(json_object_get(e, "round")));
        else
            fprintf(f, " (its own)");
        fprintf(f, "\n");
    }
    json_decref(s);
}
