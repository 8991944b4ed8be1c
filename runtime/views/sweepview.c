/*
 * sweepview.c - a sweep's trials, their states and totals, as text and
 * JSON (see sweepview.h; runtime/record/sweepload.c reads them from the
 * store).
 *
 * Threads: none; the caller's.
 */
#include "sweepview.h"
#include "sweeppareto.h"
#include "sweeptrial.h"
#include "sweepsteer.h"
#include "sweepworkersout.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "summary.h"
#include "units.h"

const char *sr_sv_state_name(enum sr_sv_state s)
{
    static const char *const names[] = {"queued", "running", "preempted", "done",
                                        "failed", "stopped", "cancelled", "pruned"};
    return names[s];
}

/* ---- queries ----------------------------------------------------------------- */

void sr_sv_opts_from_sweep(struct sr_sv_opts *o, const struct sr_sweep *sw)
{
    o->best_step = sw->best_step;
    o->n_objectives = 0;
    for (size_t i = 0; i < sr_sweep_nobjectives(sw) && i < SR_SWEEP_OBJECTIVES_MAX; i++) {
        o->objective[i] = sr_sweep_objective(sw, i, &o->objective_max[i]);
        o->n_objectives++;
    }
}

int sr_sv_maximized(const struct sr_sv_opts *o, const char *metric)
{
    for (size_t i = 0; i < o->n_maximize; i++)
        if (strcmp(o->maximize[i], metric) == 0)
            return 1;
    for (size_t i = 0; i < o->n_minimize; i++)
        if (strcmp(o->minimize[i], metric) == 0)
            return 0;
    for (size_t i = 0; i < o->n_objectives; i++)
        if (strcmp(o->objective[i], metric) == 0)
            return o->objective_max[i];
    return sr_hist_metric_maximized(metric);
}

static int explicit_max(const struct sr_sv_opts *o, const char *metric)
{
    for (size_t i = 0; i < o->n_maximize; i++)
        if (strcmp(o->maximize[i], metric) == 0)
            return 1;
    return 0;
}

static const struct sr_hist_metric *metric_of(const struct sr_sv_trial *t, const char *name)
{
    return t->run ? sr_hist_metric_find(&t->run->h, name) : NULL;
}

struct sort_key {
    size_t trial;
    int has;
    double key; /* smaller first */
};

static int cmp_key(const void *a, const void *b)
{
    const struct sort_key *x = a, *y = b;
    if (x->has != y->has)
        return x->has ? -1 : 1;
    if (x->has && x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->trial > y->trial) - (x->trial < y->trial);
}

void sr_sweepview_order(const struct sr_sweepview *v, const struct sr_sv_opts *o, size_t *order)
{
    struct sort_key *keys = o->sort && v->n ? calloc(v->n, sizeof(*keys)) : NULL;
    if (!keys) { /* by index (or no memory to sort: by index too) */
        for (size_t k = 0; k < v->n; k++)
            order[k] = k;
        return;
    }
    const int max = sr_sv_maximized(o, o->sort);
    for (size_t k = 0; k < v->n; k++) {
        const struct sr_hist_metric *m = metric_of(&v->t[k], o->sort);
        keys[k].trial = k;
        keys[k].has = m != NULL;
        keys[k].key = m ? (max ? -m->max : m->min) : 0;
    }
    qsort(keys, v->n, sizeof(*keys), cmp_key);
    for (size_t k = 0; k < v->n; k++)
        order[k] = keys[k].trial;
    free(keys);
}

const char *sr_sv_rank_metric(const struct sr_sweepview *v, const struct sr_sv_opts *o)
{
    if (o->n_objectives) /* the sweep's own: --sort only orders the rows */
        return o->objective[0];
    return o->sort ? o->sort : v->n_metrics ? v->metrics[0] : NULL;
}

const char *sr_sv_best_rule(const struct sr_sv_opts *o)
{
    return o->best_step ? "best-step" : "final";
}

int sr_sv_trial_value(const struct sr_sv_trial *t, const struct sr_sv_opts *o, const char *metric,
                      double *value, int64_t *step)
{
    const struct sr_hist_metric *m = metric && t->state == SR_SV_DONE ? metric_of(t, metric) : NULL;
    if (!m)
        return 0;
    const int max = sr_sv_maximized(o, metric);
    *value = o->best_step ? sr_hist_metric_best(m, max) : m->last;
    *step = o->best_step ? sr_hist_metric_best_step(m, max) : m->last_step;
    return isfinite(*value);
}

const struct sr_sv_trial *sr_sweepview_best(const struct sr_sweepview *v,
                                            const struct sr_sv_opts *o, const char **metric)
{
    *metric = sr_sv_rank_metric(v, o);
    if (!*metric)
        return NULL;
    const int max = sr_sv_maximized(o, *metric);
    const struct sr_sv_trial *best = NULL;
    double key = 0;
    for (size_t k = 0; k < v->n; k++) { /* ties: the lowest index (as the sort) */
        double val;
        int64_t step;
        if (sr_sv_trial_value(&v->t[k], o, *metric, &val, &step) &&
            (!best || (max ? val > key : val < key))) {
            best = &v->t[k];
            key = val;
        }
    }
    return best;
}

int sr_sweepview_pareto(const struct sr_sweepview *v, const struct sr_sv_opts *o, size_t **out,
                        size_t *n)
{
    const size_t k = o->n_objectives;
    *out = NULL;
    *n = 0;
    double *val = calloc((v->n ? v->n : 1) * (k ? k : 1), sizeof(*val));
    size_t *who = malloc((v->n ? v->n : 1) * sizeof(*who));
    unsigned char *front = malloc(v->n ? v->n : 1);
    int rc = val && who && front ? 0 : -ENOMEM;
    size_t m = 0;
    for (size_t i = 0; rc == 0 && i < v->n; i++) {
        size_t j = 0;
        for (int64_t step; j < k; j++)
            if (!sr_sv_trial_value(&v->t[i], o, o->objective[j], &val[m * k + j], &step))
                break;
        if (j == k && k > 0)
            who[m++] = i;
    }
    int max[SR_SWEEP_OBJECTIVES_MAX] = {0};
    for (size_t j = 0; j < k; j++)
        max[j] = sr_sv_maximized(o, o->objective[j]);
    if (rc == 0)
        rc = sr_pareto_front(val, m, k, max, front);
    for (size_t i = 0; rc == 0 && i < m; i++)
        if (front[i])
            who[(*n)++] = v->t[who[i]].trial;
    free(val);
    free(front);
    if (rc < 0)
        free(who);
    else
        *out = who;
    return rc;
}

double sr_sv_trial_hours(const struct sr_sv_trial *t)
{
    return t->run ? sr_hist_instance_hours(&t->run->h) : 0.0;
}

/* ---- text -------------------------------------------------------------------- */

/* A table of cells, each column as wide as its widest cell. */
#define CELL 64
struct table {
    size_t rows, cols;
    char (*cell)[CELL];
    unsigned char *right; /* per column: numbers are right-aligned */
};

static char *cell(struct table *t, size_t r, size_t c)
{
    return t->cell[r * t->cols + c];
}

/* Copies s into a cell, cut with "..." when too long. */
static void put(struct table *t, size_t r, size_t c, const char *s)
{
    char *d = cell(t, r, c);
    const size_t n = strlen(s);
    if (n < CELL) {
        memcpy(d, s, n + 1);
        return;
    }
    memcpy(d, s, CELL - 4);
    memcpy(d + CELL - 4, "...", 4);
}

static void print_table(FILE *f, struct table *t)
{
    size_t w[256] = {0};
    for (size_t c = 0; c < t->cols && c < 256; c++)
        for (size_t r = 0; r < t->rows; r++) {
            const size_t n = strlen(cell(t, r, c));
            w[c] = n > w[c] ? n : w[c];
        }
    for (size_t r = 0; r < t->rows; r++) {
        for (size_t c = 0; c < t->cols && c < 256; c++) {
            const int last = c + 1 == t->cols;
            if (t->right[c])
                fprintf(f, "%s%*s", c ? "  " : "", (int)w[c], cell(t, r, c));
            else
                fprintf(f, "%s%-*s", c ? "  " : "", last ? 0 : (int)w[c], cell(t, r, c));
        }
        fputc('\n', f);
    }
}

static void state_text(const struct sr_sweepview *v, const struct sr_sv_trial *t, char *buf,
                       size_t len)
{
    const struct sr_sv_run *r = t->run;
    const int cancelling = sr_steer_cancelled(&v->steer, t->trial);
    if (t->state == SR_SV_RUNNING)
        snprintf(buf, len, "running on %s%s", r->lease.host[0] ? r->lease.host : "?",
                 cancelling ? " (cancelling)" : "");
    else if (t->state == SR_SV_FAILED && r && r->has_end && r->end.cause[0])
        snprintf(buf, len, "failed (%s)", r->end.cause);
    else if (t->state == SR_SV_CANCELLED && r && r->has_end && r->end.by[0])
        snprintf(buf, len, "cancelled by %s", r->end.by);
    else if (t->mark == SR_TRIAL_OPEN && cancelling) /* its mark is on its way */
        snprintf(buf, len, "cancelled");
    else if (t->mark == SR_TRIAL_OPEN && sr_steer_priority(&v->steer, t->trial))
        snprintf(buf, len, "%s, priority %ld", sr_sv_state_name(t->state),
                 sr_steer_priority(&v->steer, t->trial));
    else if (t->rung) /* early stopping: the highest rung it reached */
        snprintf(buf, len, "%s (rung %u)", sr_sv_state_name(t->state), t->rung - 1u);
    else
        snprintf(buf, len, "%s", sr_sv_state_name(t->state));
}

/* Under the table: the last lines of each failed trial's stderr (the
 * failure reason, kept in the store by its wrapper). */
static void print_failures(FILE *f, const struct sr_sweepview *v, const size_t *order)
{
    for (size_t r = 0; r < v->n; r++) {
        const struct sr_sv_trial *tr = &v->t[order[r]];
        const struct sr_hist_attempt *ended =
            tr->run && tr->state == SR_SV_FAILED ? sr_hist_last_ended(&tr->run->h) : NULL;
        if (!ended || !ended->tail)
            continue;
        char state[320];
        state_text(v, tr, state, sizeof(state));
        fprintf(f, "\ntrial %zu (%s) %s, attempt %" PRIu32 ":\n", tr->trial, tr->run_id, state,
                ended->attempt);
        sr_summary_print_tail_at(f, "  ", ended->tail, ended->tail_ms, ended->end_ms);
    }
}

static void money_or_dash(double v, int known, char *buf, size_t len)
{
    if (known)
        sr_format_money(v, buf, len);
    else
        snprintf(buf, len, "-");
}

static void print_header(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o)
{
    const size_t np = sr_sweep_nparams(v->sw);
    fprintf(f, "sweep:       %s (%zu trial%s; parameters:", v->sw->name, v->n,
            v->n == 1 ? "" : "s");
    for (size_t i = 0; i < np; i++)
        fprintf(f, " %s", sr_sweep_param(v->sw, i));
    fprintf(f, "%s)\n", np ? "" : " none");
    fprintf(f, "trials:     ");
    /* "stopped" (at a limit) only when a trial is: most sweeps have none. */
    for (int s = 0; s <= SR_SV_FAILED; s++)
        fprintf(f, " %u %s%s", v->counts[s], sr_sv_state_name((enum sr_sv_state)s),
                s < SR_SV_FAILED ? "," : "");
    for (int s = SR_SV_STOPPED; s < SR_SV_NSTATES; s++) /* only when a trial is */
        if (v->counts[s])
            fprintf(f, ", %u %s", v->counts[s], sr_sv_state_name((enum sr_sv_state)s));
    fputc('\n', f);
    sr_sv_paused_print(f, &v->steer);
    char lost[32], plost[32];
    sr_format_duration_ms(v->lost_ms, lost, sizeof(lost));
    sr_format_duration_ms(v->preempted_lost_ms, plost, sizeof(plost));
    const double hours = (double)v->instance_ms / 3600000.0;
    fprintf(f, "instances:   %.4f instance-hours; lost work %s (%s to preemptions)", hours, lost,
            plost);
    sr_summary_print_dropped(f, v->pruned_ms, v->cancelled_ms);
    fputc('\n', f);
    const double spot = o->prices.spot_per_hour, od = o->prices.on_demand_per_hour;
    if (spot <= 0) {
        fprintf(f, "cost:        - (give --price-per-hour)\n");
        return;
    }
    char a[32], b[32], c[32], d[32];
    sr_format_money(hours * spot, a, sizeof(a));
    sr_format_money(spot, b, sizeof(b));
    sr_format_money((double)v->preempted_lost_ms / 3600000.0 * spot, c, sizeof(c));
    fprintf(f, "cost:        %s at %s/h; preempted work %s", a, b, c);
    if (od > 0) {
        sr_format_money(hours * od, c, sizeof(c));
        sr_format_money(hours * (od - spot), d, sizeof(d));
        fprintf(f, "; on demand %s: saved %s (%.0f%%)", c, d, 100.0 * (od - spot) / od);
    }
    fputc('\n', f);
}

static void print_params(FILE *f, const struct sr_sweepview *v, size_t trial, const char *first)
{
    for (size_t i = 0; i < sr_sweep_nparams(v->sw); i++) {
        const char *p = sr_sweep_param(v->sw, i), *val = sr_sweep_value(v->sw, trial, p);
        fprintf(f, "%s%s=%s", i ? " " : first, p, val ? val : "-");
    }
}

/* "best:        trial 3 (loss 0.21 at step 900, min, final; lr=0.2 seed=1)":
 * the best done trial (docs/sweeps.md, "Best"). */
static void print_best(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o)
{
    const char *name;
    const struct sr_sv_trial *t = sr_sweepview_best(v, o, &name);
    if (!t)
        return;
    double val;
    int64_t step;
    sr_sv_trial_value(t, o, name, &val, &step);
    fprintf(f, "best:        trial %zu (%s %.6g", t->trial, name, val);
    if (step >= 0)
        fprintf(f, " at step %" PRId64, step);
    fprintf(f, ", %s, %s", sr_sv_maximized(o, name) ? "max" : "min", sr_sv_best_rule(o));
    print_params(f, v, t->trial, "; ");
    fprintf(f, ")\n");
}

/* With 2+ objectives, instead of one best trial:
 *   pareto:      2 trials on the front (loss min, acc max; final values of done trials)
 *                trial 2: loss 0.3 acc 0.9 (lr=0.2 seed=0)                              */
#define PARETO_LINES 20
static void print_pareto(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o)
{
    size_t *front = NULL, n = 0;
    if (sr_sweepview_pareto(v, o, &front, &n) < 0)
        return;
    fprintf(f, "pareto:      %zu trial%s on the front (", n, n == 1 ? "" : "s");
    for (size_t j = 0; j < o->n_objectives; j++)
        fprintf(f, "%s%s %s", j ? ", " : "", o->objective[j],
                sr_sv_maximized(o, o->objective[j]) ? "max" : "min");
    fprintf(f, "; %s values of done trials)\n", o->best_step ? "best-step" : "final");
    for (size_t i = 0; i < n && i < PARETO_LINES; i++) {
        const struct sr_sv_trial *t = &v->t[front[i]];
        fprintf(f, "             trial %zu:", t->trial);
        for (size_t j = 0; j < o->n_objectives; j++) {
            double val = 0;
            int64_t step;
            sr_sv_trial_value(t, o, o->objective[j], &val, &step);
            fprintf(f, " %s %.6g", o->objective[j], val);
        }
        print_params(f, v, t->trial, " (");
        fprintf(f, "%s\n", sr_sweep_nparams(v->sw) ? ")" : "");
    }
    if (n > PARETO_LINES)
        fprintf(f, "             ... %zu more (sweep show --json: \"pareto\")\n", n - PARETO_LINES);
    free(front);
}

void sr_sweepview_print(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o)
{
    print_header(f, v, o);
    sr_sv_workers_print(f, &v->workers, o->prices.spot_per_hour);
    if (o->n_objectives > 1)
        print_pareto(f, v, o);
    else
        print_best(f, v, o);
    sr_sv_progress_print(f, v, o);
    const size_t np = sr_sweep_nparams(v->sw), nm = v->n_metrics;
    struct table t = {.rows = v->n + 1, .cols = 1 + np + 7 + nm};
    t.cell = calloc(t.rows * t.cols, sizeof(*t.cell));
    t.right = calloc(t.cols, 1);
    size_t *order = calloc(v->n ? v->n : 1, sizeof(*order));
    if (!t.cell || !t.right || !order || t.cols > 256) {
        fprintf(f, "(cannot lay out the table)\n");
        goto out;
    }
    static const char *const fixed[] = {"STATE", "CAUSE", "ATT", "PRE", "LOST", "INST-H", "COST"};
    size_t c = 0;
    put(&t, 0, c++, "TRIAL");
    for (size_t i = 0; i < np; i++)
        put(&t, 0, c++, sr_sweep_param(v->sw, i));
    for (size_t i = 0; i < 7; i++) {
        t.right[c] = i > 1;
        put(&t, 0, c++, fixed[i]);
    }
    for (size_t i = 0; i < nm; i++) {
        char h[CELL + 16];
        snprintf(h, sizeof(h), "%s last/%s", v->metrics[i],
                 sr_sv_maximized(o, v->metrics[i]) ? "max" : "min");
        put(&t, 0, c++, h);
    }
    t.right[0] = 1;
    sr_sweepview_order(v, o, order);
    for (size_t r = 1; r <= v->n; r++) {
        const struct sr_sv_trial *tr = &v->t[order[r - 1]];
        const struct sr_history *h = tr->run ? &tr->run->h : NULL;
        char buf[320];
        c = 0;
        snprintf(buf, sizeof(buf), "%zu", tr->trial);
        put(&t, r, c++, buf);
        for (size_t i = 0; i < np; i++) {
            const char *val = sr_sweep_value(v->sw, tr->trial, sr_sweep_param(v->sw, i));
            put(&t, r, c++, val ? val : "-");
        }
        state_text(v, tr, buf, sizeof(buf));
        put(&t, r, c++, buf);
        /* why its newest ended attempt ended (docs/events.md) */
        const struct sr_hist_attempt *ended = h ? sr_hist_last_ended(h) : NULL;
        put(&t, r, c++, ended ? sr_hist_cause_name(ended->cause) : "-");
        snprintf(buf, sizeof(buf), "%zu", h ? h->n_att : 0);
        put(&t, r, c++, buf);
        snprintf(buf, sizeof(buf), "%u", h ? h->preemptions : 0);
        put(&t, r, c++, buf);
        sr_format_duration_ms(h ? h->lost_ms : 0, buf, sizeof(buf));
        put(&t, r, c++, buf);
        snprintf(buf, sizeof(buf), "%.4f", sr_sv_trial_hours(tr));
        put(&t, r, c++, buf);
        money_or_dash(sr_sv_trial_hours(tr) * o->prices.spot_per_hour, o->prices.spot_per_hour > 0,
                      buf, sizeof(buf));
        put(&t, r, c++, buf);
        for (size_t i = 0; i < nm; i++) {
            const struct sr_hist_metric *m = metric_of(tr, v->metrics[i]);
            if (m)
                snprintf(buf, sizeof(buf), "%.4g/%.4g", m->last,
                         sr_hist_metric_best(m, sr_sv_maximized(o, m->name)));
            else
                snprintf(buf, sizeof(buf), "-");
            put(&t, r, c++, buf);
        }
    }
    fputc('\n', f);
    print_table(f, &t);
    print_failures(f, v, order);
    sr_sv_lineage_print(f, v); /* sweeptrial.h */
    sr_sv_steer_print(f, &v->steer);
out:
    free(order);
    free(t.right);
    free(t.cell);
}

/* ---- JSON -------------------------------------------------------------------- */

static json_t *price_or_null(double hours, double price)
{
    return price > 0 ? json_real(hours * price) : json_null();
}

static json_t *trial_json(const struct sr_sweepview *v, const struct sr_sv_trial *t,
                          const struct sr_sv_opts *o)
{
    const struct sr_history *h = t->run ? &t->run->h : NULL;
    json_t *params = json_object();
    for (size_t i = 0; i < sr_sweep_nparams(v->sw); i++) {
        const char *p = sr_sweep_param(v->sw, i), *val = sr_sweep_value(v->sw, t->trial, p);
        json_object_set_new(params, p, val ? json_string(val) : json_null());
    }
    json_t *end = json_null();
    if (t->state == SR_SV_DONE)
        end = json_pack("{s:n,s:i}", "cause", "exit_code", 0);
    else if (t->state == SR_SV_FAILED && t->run && t->run->has_end)
        end =
            json_pack("{s:s,s:i}", "cause", t->run->end.cause, "exit_code", t->run->end.exit_code);
    else if (t->state == SR_SV_FAILED)
        end = json_pack("{s:n,s:n}", "cause", "exit_code");
    else if ((t->state == SR_SV_CANCELLED || t->state == SR_SV_PRUNED) && t->run && t->run->has_end)
        end = json_pack("{s:s,s:i,s:s?}", "cause", sr_sv_state_name(t->state), "exit_code",
                        t->run->end.exit_code, "by", t->run->end.by[0] ? t->run->end.by : NULL);
    else if (t->state == SR_SV_CANCELLED || t->state == SR_SV_PRUNED)
        end = json_pack("{s:s,s:n}", "cause", sr_sv_state_name(t->state), "exit_code");
    json_t *met = json_object();
    for (size_t i = 0; h && i < h->n_met; i++)
        json_object_set_new(
            met, h->met[i].name,
            sr_summary_metric_json(&h->met[i], 1, sr_sv_maximized(o, h->met[i].name)));
    const double hours = sr_sv_trial_hours(t);
    json_t *j = json_object();
    json_object_set_new(j, "trial", json_integer((json_int_t)t->trial));
    json_object_set_new(j, "run_id", json_string(t->run_id));
    json_object_set_new(j, "params", params);
    json_object_set_new(j, "state", json_string(sr_sv_state_name(t->state)));
    json_object_set_new(j, "host",
                        t->state == SR_SV_RUNNING && t->run->lease.host[0]
                            ? json_string(t->run->lease.host)
                            : json_null());
    json_object_set_new(j, "attempts", json_integer(h ? (json_int_t)h->n_att : 0));
    json_object_set_new(j, "preemptions", json_integer(h ? h->preemptions : 0));
    json_object_set_new(j, "lost_work_seconds", json_real(h ? (double)h->lost_ms / 1000.0 : 0.0));
    json_object_set_new(j, "pruned_work_seconds",
                        json_real(h ? (double)h->pruned_ms / 1000.0 : 0.0));
    json_object_set_new(j, "cancelled_work_seconds",
                        json_real(h ? (double)h->cancelled_ms / 1000.0 : 0.0));
    json_object_set_new(j, "instance_hours", json_real(hours));
    json_object_set_new(j, "cost", price_or_null(hours, o->prices.spot_per_hour));
    json_object_set_new(j, "end", end);
    const struct sr_hist_attempt *ended = h ? sr_hist_last_ended(h) : NULL;
    json_object_set_new(j, "cause",
                        ended ? json_string(sr_hist_cause_name(ended->cause)) : json_null());
    json_object_set_new(j, "cause_detail",
                        ended && ended->cause_detail[0] ? json_string(ended->cause_detail)
                                                        : json_null());
    json_object_set_new(j, "tail",
                        t->state == SR_SV_FAILED && ended && ended->tail ? json_string(ended->tail)
                                                                         : json_null());
    json_object_set_new(j, "metrics", met);
    json_object_set_new(j, "curves", sr_sv_curves_json(t)); /* sweeptrial.h */
    json_object_set_new(j, "rung", t->rung ? json_integer(t->rung - 1) : json_null());
    if (v->sw->pbt) { /* PBT: its decisions and the parameters it ran with, by step */
        json_object_set_new(j, "lineage", sr_sv_lineage_json(t));
        json_object_set_new(j, "schedule", sr_sv_schedule_json(v, t));
    }
    json_object_set_new(j, "priority", json_integer(sr_steer_priority(&v->steer, t->trial)));
    json_object_set_new(
        j, "cancelled",
        json_boolean(t->state == SR_SV_CANCELLED || sr_steer_cancelled(&v->steer, t->trial)));
    return j;
}

json_t *sr_sweepview_json(const struct sr_sweepview *v, const struct sr_sv_opts *o,
                          const char *store_url)
{
    size_t *order = calloc(v->n ? v->n : 1, sizeof(*order));
    if (!order)
        return NULL;
    sr_sweepview_order(v, o, order);
    json_t *params = json_array();
    for (size_t i = 0; i < sr_sweep_nparams(v->sw); i++)
        json_array_append_new(params, json_string(sr_sweep_param(v->sw, i)));
    json_t *counts = json_object();
    for (int s = 0; s < SR_SV_NSTATES; s++)
        json_object_set_new(counts, sr_sv_state_name((enum sr_sv_state)s),
                            json_integer(v->counts[s]));
    const double hours = (double)v->instance_ms / 3600000.0;
    const double spot = o->prices.spot_per_hour, od = o->prices.on_demand_per_hour;
    json_t *totals = json_object();
    json_object_set_new(totals, "instance_hours", json_real(hours));
    json_object_set_new(totals, "lost_work_seconds", json_real((double)v->lost_ms / 1000.0));
    json_object_set_new(totals, "preempted_lost_work_seconds",
                        json_real((double)v->preempted_lost_ms / 1000.0));
    json_object_set_new(totals, "pruned_work_seconds", json_real((double)v->pruned_ms / 1000.0));
    json_object_set_new(totals, "cancelled_work_seconds",
                        json_real((double)v->cancelled_ms / 1000.0));
    json_object_set_new(totals, "cost", price_or_null(hours, spot));
    json_object_set_new(totals, "preempted_cost",
                        price_or_null((double)v->preempted_lost_ms / 3600000.0, spot));
    json_object_set_new(totals, "on_demand_cost", price_or_null(hours, od));
    json_object_set_new(totals, "saving",
                        spot > 0 && od > 0 ? json_real(hours * (od - spot)) : json_null());
    /* Every metric whose best is its largest: --maximize's and those the
     * name convention maximizes (docs/sweep-show.md). */
    json_t *maximize = json_array();
    for (size_t i = 0; i < o->n_maximize; i++)
        json_array_append_new(maximize, json_string(o->maximize[i]));
    for (size_t i = 0; i < v->n_metrics; i++)
        if (sr_sv_maximized(o, v->metrics[i]) && !explicit_max(o, v->metrics[i]))
            json_array_append_new(maximize, json_string(v->metrics[i]));
    const char *bname;
    const struct sr_sv_trial *bt = sr_sweepview_best(v, o, &bname);
    json_t *best = json_null();
    if (bt && o->n_objectives < 2) { /* several: the front, no one best */
        double val;
        int64_t step;
        sr_sv_trial_value(bt, o, bname, &val, &step);
        best = json_pack("{s:I,s:s,s:f,s:o,s:b,s:s}", "trial", (json_int_t)bt->trial, "metric",
                         bname, "value", val, "step", step >= 0 ? json_integer(step) : json_null(),
                         "maximize", sr_sv_maximized(o, bname), "rule", sr_sv_best_rule(o));
    }
    json_t *objectives = json_array();
    for (size_t j = 0; j < o->n_objectives; j++)
        json_array_append_new(objectives,
                              json_pack("{s:s,s:s}", "metric", o->objective[j], "direction",
                                        o->objective_max[j] ? "max" : "min"));
    json_t *pareto = json_null();
    size_t *front = NULL, nfront = 0;
    if (o->n_objectives > 1 && sr_sweepview_pareto(v, o, &front, &nfront) == 0) {
        pareto = json_array();
        for (size_t i = 0; i < nfront; i++)
            json_array_append_new(pareto, json_integer((json_int_t)front[i]));
        free(front);
    }
    json_t *trials = json_array();
    for (size_t i = 0; i < v->n; i++)
        json_array_append_new(trials, trial_json(v, &v->t[order[i]], o));
    free(order);
    json_t *doc = json_object();
    json_object_set_new(doc, "schema_version", json_integer(SR_JSON_SCHEMA_VERSION));
    json_object_set_new(doc, "sweep", json_string(v->sw->name));
    json_object_set_new(doc, "store", json_string(store_url));
    json_object_set_new(doc, "params", params);
    /* how part 0 was made: a driver rebuilds its search space from it */
    json_object_set(doc, "spec", v->sw->spec ? v->sw->spec : json_null());
    json_object_set_new(doc, "maximize", maximize);
    json_object_set_new(doc, "sort", o->sort ? json_string(o->sort) : json_null());
    json_object_set_new(doc, "best_rule", json_string(sr_sv_best_rule(o)));
    json_object_set_new(doc, "objectives", objectives);
    json_object_set_new(doc, "best", best);
    json_object_set_new(doc, "pareto", pareto);
    json_object_set_new(doc, "progress", sr_sv_progress_json(v, o));
    json_object_set_new(doc, "counts", counts);
    json_object_set_new(doc, "totals", totals);
    if (v->workers.n)
        json_object_set_new(doc, "workers",
                            sr_sv_workers_json(&v->workers, o->prices.spot_per_hour));
    json_object_set_new(doc, "labels",
                        v->sw->labels ? json_deep_copy(v->sw->labels) : json_object());
    json_object_set_new(doc, "paused", sr_sv_paused_json(&v->steer));
    json_object_set_new(doc, "steer", sr_sv_steer_json(&v->steer));
    json_object_set_new(doc, "trials", trials);
    return doc;
}
