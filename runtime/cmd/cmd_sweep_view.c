/*
 * cmd_sweep_view.c - `spotrun sweep show` and `spotrun sweep report`
 * (docs/sweep-show.md): read the sweep's definition, load every trial's
 * state and history (runtime/record/sweepload.c), then print the table,
 * the JSON document (runtime/views/sweepview.c), or write the picture.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "prices.h"
#include "sweep.h"
#include "sweep_budget.h"
#include "sweeprec.h"
#include "sweepreport.h"
#include "summary.h"
#include "sweep_rungs.h"
#include "sweeptrial.h"
#include "sweepview.h"
#include "units.h"

/* What both commands take besides their own options. */
struct view_args {
    struct sr_view_opts vo;
    struct sr_optlist maximize, minimize;
    const char *sort;
    uint64_t threads;
    unsigned load;                     /* sr_sweepview_load's flags */
    char names[1024], min_names[1024]; /* --maximize's, --minimize's names, split in place */
};

#define VIEW_ARG_OPTS(a)                                                                           \
    {"maximize",                                                                                   \
     0,                                                                                            \
     "SPOTRUN_MAXIMIZE",                                                                           \
     SR_OPT_MULTI,                                                                                 \
     &(a)->maximize,                                                                               \
     "NAME[,NAME]",                                                                                \
     "metrics whose best is the largest value (default: by name, docs/sweep-show.md); "            \
     "repeatable"},                                                                                \
        {"minimize",                                                                               \
         0,                                                                                        \
         "SPOTRUN_MINIMIZE",                                                                       \
         SR_OPT_MULTI,                                                                             \
         &(a)->minimize,                                                                           \
         "NAME[,NAME]",                                                                            \
         "metrics whose best is the smallest value, whatever their name; repeatable"},             \
    {                                                                                              \
        "threads", 0, "SPOTRUN_THREADS", SR_OPT_UINT, &(a)->threads, "N",                          \
            "trials read at once (default 8)"                                                      \
    }

/* --maximize a,b --maximize c -> out[] (names split in place in buf, of
 * 1024 bytes). SR_EX_USAGE after a message, or -1 to go on. */
static int split_names(const char *cmd, const char *opt, const struct sr_optlist *l, char *buf,
                       const char **out, size_t *n_out)
{
    size_t off = 0;
    for (size_t i = 0; i < l->n; i++) {
        const size_t n = strlen(l->v[i]);
        if (off + n + 1 > 1024)
            break;
        memcpy(buf + off, l->v[i], n + 1);
        for (char *save = NULL, *s = strtok_r(buf + off, ",", &save); s;
             s = strtok_r(NULL, ",", &save)) {
            if (*n_out == SR_SV_MAXIMIZE_MAX) {
                fprintf(stderr, "spotrun %s: at most %d names for --%s\n", cmd, SR_SV_MAXIMIZE_MAX,
                        opt);
                return SR_EX_USAGE;
            }
            out[(*n_out)++] = s;
        }
        off += n + 1;
    }
    return -1;
}

static int split_maximize(const char *cmd, struct view_args *a, struct sr_sv_opts *o)
{
    const int code =
        split_names(cmd, "maximize", &a->maximize, a->names, o->maximize, &o->n_maximize);
    if (code >= 0)
        return code;
    return split_names(cmd, "minimize", &a->minimize, a->min_names, o->minimize, &o->n_minimize);
}

/* Without --price-per-hour: the price the trials recorded (each run's start
 * events: the sweep's or the run's --price-per-hour), when every trial
 * that ran recorded one and all the same; else 0 (no cost shown). */
static double recorded_price(const struct sr_sweepview *v)
{
    const struct sr_hist_prices none = {0};
    double price = 0;
    for (size_t i = 0; i < v->n; i++) {
        const struct sr_sv_run *r = v->t[i].run;
        struct sr_hist_prices p;
        if (!r || !r->h.n_att)
            continue;
        if (!sr_hist_view_prices(&r->h, &none, &p)) {
            if (r->h.instance_ms > 0)
                return 0; /* hours nobody priced: unknown, not cheaper */
            continue;
        }
        if (price > 0 && fabs(p.spot_per_hour - price) > 1e-9 * price)
            return 0; /* trials priced differently: one price would be wrong */
        price = p.spot_per_hour;
    }
    return price;
}

/* The preamble of both: options, the sweep's definition, its trials.
 * -1 to go on (close with view_end), else the exit code. */
struct view {
    struct sr_cmd_ctx ctx;
    struct sr_sweep sw;
    struct sr_sweepview v;
    struct sr_sv_opts o;
};

static int view_begin(const struct sr_cmd *cmd, const struct sr_opt *opts, int argc, char **argv,
                      struct view_args *a, struct view *w)
{
    memset(&w->sw, 0, sizeof(w->sw));
    memset(&w->o, 0, sizeof(w->o));
    int code = sr_cmd_start(cmd, opts, argc, argv, &w->ctx);
    if (code >= 0)
        return code;
    w->o.prices = a->vo.prices;
    w->o.sort = a->sort && *a->sort ? a->sort : NULL;
    code = split_maximize(cmd->name, a, &w->o);
    if (code >= 0) {
        sr_store_close(w->ctx.st);
        return code;
    }
    const char *name = w->ctx.ops[0];
    int rc = sr_sweep_read(w->ctx.st, name, &w->sw);
    if (rc == 0)
        sr_sv_opts_from_sweep(&w->o, &w->sw); /* its --best, --objective */
    if (rc == 0) {
        const int64_t t0 = sr_now_ms();
        rc = sr_sweepview_load(w->ctx.st, &w->sw, (unsigned)a->threads, a->load, &w->v);
        sr_debug("read %zu trials of sweep %s in %.3fs", w->v.n, name,
                 (double)(sr_now_ms() - t0) / 1000.0);
    }
    if (rc < 0) {
        code = sr_fail(rc, rc == -ENOENT ? cmd->name : "cannot read the sweep");
        sr_sweep_free(&w->sw);
        sr_store_close(w->ctx.st);
        return code;
    }
    if (w->o.prices.spot_per_hour <= 0) /* the flag wins */
        w->o.prices.spot_per_hour = recorded_price(&w->v);
    if (w->o.sort && !sr_sweepview_has_metric(&w->v, w->o.sort)) {
        fprintf(stderr,
                "spotrun %s: --sort %s: no trial of sweep %s reported a metric \"%s\" (%s)\n",
                cmd->name, w->o.sort, name, w->o.sort,
                w->v.n_metrics ? "see the columns of `spotrun sweep show`"
                               : "none reported any metric yet");
        sr_sweepview_free(&w->v);
        sr_sweep_free(&w->sw);
        sr_store_close(w->ctx.st);
        return SR_EX_USAGE;
    }
    return -1;
}

static void view_end(struct view *w)
{
    sr_sweepview_free(&w->v);
    sr_sweep_free(&w->sw);
    sr_store_close(w->ctx.st);
}

/* The sweep's budget (sweep_budget.h) and what its trials cost, priced as
 * the trials' wrappers price them without a table: {"max_cost", "spent",
 * "price_per_hour", "reached"}, or NULL when it has none. */
static json_t *budget_json(struct sr_store *st, const char *name)
{
    struct sr_sweep_budget b;
    double spent = 0;
    int rc = sr_sweep_budget_read(st, name, &b);
    if (rc == 0 && b.max_cost > 0)
        rc = sr_prices_sweep_spent(st, name, NULL, NULL, b.price_per_hour, &spent);
    if (rc < 0 && rc != -ENOENT)
        sr_warn("sweep %s: cannot read its budget: %s", name, sr_strerror(rc));
    if (rc < 0 || b.max_cost <= 0)
        return NULL;
    return json_pack("{s:f,s:f,s:f,s:b}", "max_cost", b.max_cost, "spent", round(spent * 100) / 100,
                     "price_per_hour", b.price_per_hour, "reached", spent >= b.max_cost);
}

/* Trial t's record at rung k, and when it was pruned there what it was
 * compared with: the other records at that rung written before it (the
 * first rec.seen of them by time: those its wrapper listed). */
static int rung_why(struct sr_store *st, const struct sr_sweep *sw, const struct sr_asha *rule,
                    const struct sr_sv_trial *t, unsigned k, struct sr_sv_rung_why *w)
{
    memset(w, 0, sizeof(*w));
    int rc = sr_rung_get(st, sw->name, k, (long)t->trial, &w->rec);
    if (rc < 0 || w->rec.go_on)
        return rc;
    struct sr_rung_rec *recs = NULL;
    size_t n = 0;
    if ((rc = sr_rung_list(st, sw->name, k, &recs, &n)) < 0)
        return rc;
    /* the others written before it, oldest first (insertion sort: a rung
     * holds at most the sweep's trials) */
    double *vals = calloc(n ? n : 1, sizeof(*vals));
    int64_t *when = calloc(n ? n : 1, sizeof(*when));
    size_t m = 0;
    for (size_t i = 0; vals && when && i < n; i++) {
        if (recs[i].trial == (long)t->trial || recs[i].unix_ms > w->rec.unix_ms)
            continue;
        size_t j = m++;
        for (; j > 0 && when[j - 1] > recs[i].unix_ms; j--) {
            when[j] = when[j - 1];
            vals[j] = vals[j - 1];
        }
        when[j] = recs[i].unix_ms;
        vals[j] = recs[i].value;
    }
    if (m > w->rec.seen)
        m = w->rec.seen;
    w->others = m;
    w->has_cut = vals && when && sr_sv_rung_cutoff(rule, vals, m, &w->cut, &w->keep) == 0;
    free(vals);
    free(when);
    free(recs);
    return vals && when ? 0 : -ENOMEM;
}

/* `sweep show NAME TRIAL` (sweeptrial.h): 0, or the exit code. */
static int show_trial(const struct sr_cmd *cmd, struct view *w, const char *op)
{
    int64_t k;
    if (sr_parse_int(op, 0, INT64_MAX, &k) < 0 || (uint64_t)k >= w->v.n) {
        fprintf(stderr, "spotrun %s: \"%s\" is not a trial of sweep %s (0 to %zu)\n", cmd->name, op,
                w->sw.name, w->v.n ? w->v.n - 1 : 0);
        return w->v.n ? SR_EX_USAGE : SR_EX_NOINPUT;
    }
    const struct sr_sv_trial *t = &w->v.t[k];
    struct sr_asha rule;
    const int has_rule = w->sw.early_stop && sr_asha_from_json(w->sw.early_stop, &rule) == 0;
    struct sr_sv_rung_why why[SR_ASHA_RUNGS_MAX];
    size_t n = 0;
    int rc = 0;
    for (unsigned r = 0; has_rule && rc == 0 && r < t->rung && r < SR_ASHA_RUNGS_MAX; r++) {
        rc = rung_why(w->ctx.st, &w->sw, &rule, t, r, &why[n]);
        if (rc == 0)
            n++;
        else if (rc == -ENOENT || rc == -EBADMSG) { /* a rung it skipped, or a record not its own */
            rc = 0;
        }
    }
    if (rc < 0)
        return sr_fail(rc, "cannot read the trial's rungs");
    sr_sv_trial_print(stdout, &w->v, &w->o, t, has_rule ? &rule : NULL, why, n);
    return fflush(stdout) == 0 ? 0 : SR_EX_IOERR;
}

int sr_cmd_sweep_show(const struct sr_cmd *cmd, int argc, char **argv)
{
    struct view_args a = {.load = SR_SV_LOAD_SNAPSHOT};
    const struct sr_opt opts[] = {
        {"sort", 0, "SPOTRUN_SORT", SR_OPT_STR, &a.sort, "METRIC",
         "order by this metric's best value (default: trial index); also the "
         "best trial's metric when the sweep has no --objective"},
        VIEW_ARG_OPTS(&a),
        SR_VIEW_OPTS(&a.vo),
        SR_OPTS_COMMON};
    struct view w;
    int code = view_begin(cmd, opts, argc, argv, &a, &w);
    if (code >= 0)
        return code;
    if (w.ctx.ops[1] && !a.vo.json) {
        code = show_trial(cmd, &w, w.ctx.ops[1]);
        view_end(&w);
        return code;
    }
    int64_t only = -1; /* --json with TRIAL: that trial's object */
    if (w.ctx.ops[1] &&
        (sr_parse_int(w.ctx.ops[1], 0, INT64_MAX, &only) < 0 || (uint64_t)only >= w.v.n)) {
        fprintf(stderr, "spotrun %s: \"%s\" is not a trial of sweep %s\n", cmd->name, w.ctx.ops[1],
                w.sw.name);
        view_end(&w);
        return SR_EX_USAGE;
    }
    json_t *budget = only < 0 ? budget_json(w.ctx.st, w.sw.name) : NULL;
    if (a.vo.json && only >= 0) {
        json_t *o = sr_sweepview_json(&w.v, &w.o, sr_store_url(w.ctx.st));
        const json_t *trials = json_object_get(o, "trials");
        for (size_t i = 0; i < json_array_size(trials); i++) {
            json_t *e = json_array_get(trials, i);
            if (json_integer_value(json_object_get(e, "trial")) == only)
                code = sr_print_json(json_incref(e));
        }
        json_decref(o);
    } else if (a.vo.json) {
        json_t *o = sr_sweepview_json(&w.v, &w.o, sr_store_url(w.ctx.st));
        json_object_set(o, "budget", budget ? budget : json_null());
        code = sr_print_json(o);
    } else {
        sr_sweepview_print(stdout, &w.v, &w.o);
        if (budget) /* "budget reached: 41.20 of 40.00" */
            printf("%s: %.2f of %.2f\n",
                   json_is_true(json_object_get(budget, "reached")) ? "budget reached" : "budget",
                   json_real_value(json_object_get(budget, "spent")),
                   json_real_value(json_object_get(budget, "max_cost")));
        code = fflush(stdout) == 0 ? 0 : SR_EX_IOERR;
    }
    json_decref(budget);
    view_end(&w);
    return code;
}

struct sweep_picture {
    int html;
    const struct view *w;
};

static void write_sweep(FILE *f, void *ctx)
{
    const struct sweep_picture *p = ctx;
    if (p->html)
        sr_sweepreport_html(f, &p->w->v, &p->w->o);
    else
        sr_sweepreport_svg(f, &p->w->v, &p->w->o);
}

int sr_cmd_sweep_report(const struct sr_cmd *cmd, int argc, char **argv)
{
    struct view_args a = {0}; /* the picture wants every event: no snapshot */
    const char *out = NULL, *format = NULL;
    const struct sr_opt opts[] = {
        {"output", 'o', "SPOTRUN_REPORT_OUTPUT", SR_OPT_STR, &out, "FILE",
         "where to write (default NAME.svg); .html gives a page with the table"},
        {"format", 0, "SPOTRUN_REPORT_FORMAT", SR_OPT_STR, &format, "FORMAT",
         "svg or html (default: from the file name)"},
        {"sort", 0, "SPOTRUN_SORT", SR_OPT_STR, &a.sort, "METRIC",
         "lanes in the order of this metric's best value (default: trial index)"},
        VIEW_ARG_OPTS(&a),
        SR_PRICE_OPTS(&a.vo),
        SR_OPTS_COMMON};
    struct view w;
    int code = view_begin(cmd, opts, argc, argv, &a, &w);
    if (code >= 0)
        return code;
    char def[SR_SWEEP_NAME_MAX + 8];
    snprintf(def, sizeof(def), "%s.svg", w.sw.name);
    if (!out || !*out)
        out = def;
    const int html = sr_report_format(cmd->name, out, format);
    if (html == SR_EX_USAGE) {
        view_end(&w);
        return SR_EX_USAGE;
    }
    struct sweep_picture pic = {.html = html, .w = &w};
    const int rc = sr_write_atomic(out, write_sweep, &pic);
    if (rc < 0)
        code = sr_fail(rc, cmd->name);
    else {
        code = 0;
        sr_info("wrote %s (%zu trial%s)", out, w.v.n, w.v.n == 1 ? "" : "s");
    }
    view_end(&w);
    return code;
}
