/*
 * plan.c - the capacity plan's arithmetic (plan.h): a sweep line over the
 * attempts' intervals, the concurrency duration curve, the reserved level
 * and the three strategies' weekly costs.
 */
#include "plan.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HOUR_MS 3600000.0
#define WEEK_H 168.0

struct edge {
    int64_t t;
    int dg, df, dj; /* GPUs, firm GPUs and jobs starting (+) or ending (-) */
};

static int cmp_edge(const void *x, const void *y)
{
    const struct edge *a = x, *b = y;
    return a->t < b->t ? -1 : a->t > b->t;
}

static int push_seg(struct sr_plan_seg **v, size_t *n, size_t *cap, const struct sr_plan_seg *s)
{
    if (*n && (*v)[*n - 1].gpus == s->gpus && (*v)[*n - 1].firm == s->firm &&
        (*v)[*n - 1].jobs == s->jobs) {
        (*v)[*n - 1].h += s->h;
        return 0;
    }
    if (*n == *cap) {
        const size_t c = *cap ? *cap * 2 : 64;
        struct sr_plan_seg *nv = realloc(*v, c * sizeof(*nv));
        if (!nv)
            return -ENOMEM;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = *s;
    return 0;
}

/* The edges of the intervals clipped to [lo, hi); *m of them. */
static struct edge *edges_of(const struct sr_plan_iv *iv, size_t n, int64_t lo, int64_t hi,
                             size_t *m)
{
    struct edge *e = malloc((2 * n + 1) * sizeof(*e));
    if (!e)
        return NULL;
    *m = 0;
    for (size_t i = 0; i < n; i++) {
        const int64_t t0 = iv[i].t0 > lo ? iv[i].t0 : lo, t1 = iv[i].t1 < hi ? iv[i].t1 : hi;
        if (t1 <= t0)
            continue;
        const int g = (int)iv[i].gpus, f = iv[i].firm ? g : 0;
        e[(*m)++] = (struct edge){t0, g, f, 1};
        e[(*m)++] = (struct edge){t1, -g, -f, -1};
    }
    qsort(e, *m, sizeof(*e), cmp_edge);
    return e;
}

int sr_plan_sweep(const struct sr_plan_iv *iv, size_t n, int64_t lo, int64_t hi,
                  struct sr_plan_seg **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    size_t m = 0, cap = 0;
    struct edge *e = edges_of(iv, n, lo, hi, &m);
    if (!e)
        return -ENOMEM;
    long g = 0, f = 0, j = 0;
    int64_t t = lo;
    int rc = 0;
    for (size_t i = 0; i <= m && rc == 0; i++) {
        const int64_t next = i < m ? e[i].t : hi;
        if (next > t) {
            const struct sr_plan_seg s = {(double)(next - t) / HOUR_MS, (unsigned)g, (unsigned)f,
                                          (unsigned)j};
            rc = push_seg(out, n_out, &cap, &s);
            t = next;
        }
        if (i < m) {
            g += e[i].dg;
            f += e[i].df;
            j += e[i].dj;
        }
    }
    free(e);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n_out = 0;
    }
    return rc;
}

int sr_plan_curve(const struct sr_plan_seg *s, size_t n, struct sr_plan_curve *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        out->window_h += s[i].h;
        out->gpu_h += s[i].h * s[i].gpus;
        out->firm_gpu_h += s[i].h * s[i].firm;
        if (s[i].gpus > out->peak_gpus)
            out->peak_gpus = s[i].gpus;
        if (s[i].jobs > out->peak_jobs)
            out->peak_jobs = s[i].jobs;
    }
    out->share = calloc((size_t)out->peak_gpus + 2, sizeof(double));
    if (!out->share)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) /* hours at exactly k, then summed from the top */
        out->share[s[i].gpus] += s[i].h;
    for (unsigned k = out->peak_gpus; k-- > 0;)
        out->share[k] += out->share[k + 1];
    for (unsigned k = 0; k <= out->peak_gpus; k++)
        out->share[k] = out->window_h > 0 ? out->share[k] / out->window_h : 0;
    return 0;
}

void sr_plan_curve_free(struct sr_plan_curve *c)
{
    free(c->share);
    memset(c, 0, sizeof(*c));
}

unsigned sr_plan_level(const struct sr_plan_curve *c, double eff_spot, double reserved)
{
    unsigned L = 0;
    while (L < c->peak_gpus && c->share[L + 1] * eff_spot > reserved)
        L++;
    return L;
}

void sr_plan_costs(const struct sr_plan_seg *s, size_t n, const struct sr_plan_curve *c, unsigned L,
                   double od, double eff_spot, double reserved, struct sr_plan_cost *out)
{
    const double weeks = c->window_h / WEEK_H;
    const double firm_price = od > 0 ? od : eff_spot; /* no on-demand price: spot's */
    double burst = reserved * L * c->window_h;
    for (size_t i = 0; i < n; i++) {
        const double above = s[i].gpus > L ? s[i].gpus - L : 0;
        const double firm = s[i].firm > L ? s[i].firm - L : 0; /* reserved serve firm work first */
        burst += s[i].h * ((above - firm) * eff_spot + firm * firm_price);
    }
    const double spot = (c->gpu_h - c->firm_gpu_h) * eff_spot + c->firm_gpu_h * firm_price;
    out->on_demand = weeks > 0 && od > 0 ? c->gpu_h * od / weeks : NAN;
    out->spot = weeks > 0 ? spot / weeks : NAN;
    out->mixed = weeks > 0 ? burst / weeks : NAN;
}

/* ---- over the store's runs ---- */

struct acc {
    char name[64];
    struct sr_plan_iv *iv;
    size_t n, cap;
    double spot_cost, spot_gh, od_cost, od_gh, lost_h, stage_h;
};

struct accs {
    struct acc *v;
    size_t n;
};

static struct acc *acc_of(struct accs *a, const char *name)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i].name, name) == 0)
            return &a->v[i];
    struct acc *v = realloc(a->v, (a->n + 1) * sizeof(*v));
    if (!v)
        return NULL;
    a->v = v;
    struct acc *r = &v[a->n++];
    memset(r, 0, sizeof(*r));
    snprintf(r->name, sizeof(r->name), "%s", name[0] ? name : "unknown");
    return r;
}

static int acc_push(struct acc *a, const struct sr_plan_iv *iv)
{
    if (a->n == a->cap) {
        const size_t c = a->cap ? a->cap * 2 : 64;
        struct sr_plan_iv *v = realloc(a->iv, c * sizeof(*v));
        if (!v)
            return -ENOMEM;
        a->iv = v;
        a->cap = c;
    }
    a->iv[a->n++] = *iv;
    return 0;
}

static void accs_free(struct accs *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i].iv);
    free(a->v);
    memset(a, 0, sizeof(*a));
}

/* The price per instance hour the way stats takes it: the table's, else
 * the flat --price-per-hour, else the attempt's own. */
static void prices_of(const struct sr_stats_query *q, const struct sr_runsum_attempt *a,
                      double *spot, double *od)
{
    const struct sr_price *e = sr_prices_find(q->prices, a->instance_type);
    *spot = e ? e->spot : q->spot_per_hour > 0 ? q->spot_per_hour : a->price_per_hour;
    *od = e && e->on_demand > 0 ? e->on_demand : q->on_demand_per_hour;
}

static int64_t clip_len(int64_t a0, int64_t a1, int64_t lo, int64_t hi)
{
    const int64_t s = a0 > lo ? a0 : lo, e = a1 < hi ? a1 : hi;
    return e > s ? e - s : 0;
}

int sr_plan_is_failure(enum sr_hist_cause c)
{
    return c == SR_CAUSE_CRASHED || c == SR_CAUSE_OOM || c == SR_CAUSE_STALLED ||
           c == SR_CAUSE_VANISHED || c == SR_CAUSE_LEASE_LOST;
}

/* The window: the query's ends, an open one from the matching attempts. */
static void window_of(const struct sr_runsum *runs, size_t n, const struct sr_stats_query *q,
                      int64_t *lo, int64_t *hi)
{
    int64_t mn = INT64_MAX, mx = INT64_MIN;
    const int64_t qlo = q->since_ms > 0 ? q->since_ms : INT64_MIN;
    const int64_t qhi = q->until_ms > 0 ? q->until_ms : INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (!sr_labels_match(&runs[i].labels, &q->want))
            continue;
        for (size_t k = 0; k < runs[i].n_att; k++) {
            const struct sr_runsum_attempt *a = &runs[i].att[k];
            if (a->end_ms <= qlo || a->start_ms >= qhi || a->end_ms <= a->start_ms)
                continue;
            mn = a->start_ms < mn ? a->start_ms : mn;
            mx = a->end_ms > mx ? a->end_ms : mx;
        }
    }
    *lo = q->since_ms > 0 ? q->since_ms : mn;
    *hi = q->until_ms > 0 ? q->until_ms : mx;
    if (mn == INT64_MAX)
        *lo = *hi = 0;
}

/* One attempt into its group and the totals. */
static int add_attempt(struct sr_plan *p, struct acc *g, const struct sr_plan_query *q,
                       const struct sr_runsum_attempt *a, int firm)
{
    const int64_t ms = clip_len(a->start_ms, a->end_ms, p->lo, p->hi);
    if (ms <= 0)
        return 0;
    const unsigned nodes = a->nodes ? a->nodes : 1, gpn = a->gpus ? a->gpus : 1;
    const double ih = (double)ms / HOUR_MS * nodes, gh = ih * gpn;
    double spot, od;
    prices_of(&q->sq, a, &spot, &od);
    if (spot > 0) {
        g->spot_cost += ih * spot;
        g->spot_gh += gh;
    }
    if (od > 0) {
        g->od_cost += ih * od;
        g->od_gh += gh;
    }
    const int64_t lost = a->lost_ms > 0 ? a->lost_ms : 0;
    g->lost_h +=
        (double)clip_len(a->end_ms - lost, a->end_ms, p->lo, p->hi) / HOUR_MS * nodes * gpn;
    g->stage_h +=
        a->stage_seconds / 3600.0 * ((double)ms / (double)(a->end_ms - a->start_ms)) * nodes * gpn;
    p->attempts++;
    p->unknown_gpu_attempts += !a->gpus;
    p->failures += sr_plan_is_failure(a->cause) && a->end_ms <= p->hi;
    const struct sr_plan_iv iv = {a->start_ms, a->end_ms, nodes * gpn, firm};
    return acc_push(g, &iv);
}

static int collect(const struct sr_runsum *runs, size_t n, const struct sr_plan_query *q,
                   struct sr_plan *p, struct accs *groups)
{
    for (size_t i = 0; i < n; i++) {
        const struct sr_runsum *r = &runs[i];
        if (!sr_labels_match(&r->labels, &q->sq.want))
            continue;
        const char *in = sr_labels_get(&r->labels, "interruptible");
        const int firm = in && strcmp(in, "false") == 0;
        const uint64_t before = p->attempts;
        for (size_t k = 0; k < r->n_att; k++) {
            struct acc *g = acc_of(groups, q->by_team ? "all" : r->att[k].instance_type);
            if (!g || add_attempt(p, g, q, &r->att[k], firm) < 0)
                return -ENOMEM;
        }
        p->runs += p->attempts > before;
    }
    return 0;
}

static int finish_group(const struct sr_plan *p, const struct acc *a, double reserved,
                        struct sr_plan_group *g)
{
    memset(g, 0, sizeof(*g));
    snprintf(g->name, sizeof(g->name), "%s", a->name);
    struct sr_plan_seg *s = NULL;
    size_t ns = 0;
    int rc = sr_plan_sweep(a->iv, a->n, p->lo, p->hi, &s, &ns);
    if (rc == 0)
        rc = sr_plan_curve(s, ns, &g->curve);
    if (rc < 0) {
        free(s);
        return rc;
    }
    g->spot = a->spot_gh > 0 ? a->spot_cost / a->spot_gh : 0;
    g->od = a->od_gh > 0 ? a->od_cost / a->od_gh : 0;
    g->lost_h = a->lost_h;
    g->stage_h = a->stage_h;
    const double useful = g->curve.gpu_h - a->lost_h - a->stage_h;
    g->overhead = useful > 0 ? (a->lost_h + a->stage_h) / useful : 0;
    g->eff_spot = g->spot * (1 + g->overhead);
    if (reserved > 0) {
        g->reserve = sr_plan_level(&g->curve, g->eff_spot, reserved);
        sr_plan_costs(s, ns, &g->curve, g->reserve, g->od, g->eff_spot, reserved, &g->cost);
        g->break_even = g->eff_spot > 0 ? reserved / g->eff_spot : NAN;
    }
    free(s);
    return 0;
}

/* Peak jobs and GPUs over every group at once. */
static int peaks(struct sr_plan *p, const struct accs *groups)
{
    size_t total = 0, k = 0;
    for (size_t i = 0; i < groups->n; i++)
        total += groups->v[i].n;
    struct sr_plan_iv *iv = malloc((total + 1) * sizeof(*iv));
    if (!iv)
        return -ENOMEM;
    for (size_t i = 0; i < groups->n; i++) {
        if (groups->v[i].n) /* an empty group has no array (memcpy's NULL is UB) */
            memcpy(iv + k, groups->v[i].iv, groups->v[i].n * sizeof(*iv));
        k += groups->v[i].n;
    }
    struct sr_plan_seg *s = NULL;
    size_t ns = 0;
    struct sr_plan_curve c;
    int rc = sr_plan_sweep(iv, total, p->lo, p->hi, &s, &ns);
    if (rc == 0 && (rc = sr_plan_curve(s, ns, &c)) == 0) {
        p->peak_gpus = c.peak_gpus;
        p->peak_jobs = c.peak_jobs;
        p->gpu_h = c.gpu_h;
        sr_plan_curve_free(&c);
    }
    free(s);
    free(iv);
    return rc;
}

/* The stats tables plan prints beside its own: by week and team, by zone
 * and by instance type (stats.c). */
static int stats_by(const struct sr_runsum *runs, size_t n, const struct sr_plan_query *q,
                    const char *by, struct sr_stats *out)
{
    struct sr_stats_query sq = q->sq;
    char err[256];
    sq.n_by = 0;
    sq.since_ms = q->sq.since_ms;
    sq.until_ms = q->sq.until_ms;
    if (sr_stats_parse_by(by, &sq, err, sizeof(err)) < 0)
        return -EINVAL;
    return sr_stats_compute(runs, n, &sq, out);
}

static int cmp_group(const void *x, const void *y)
{
    return strcmp(((const struct sr_plan_group *)x)->name, ((const struct sr_plan_group *)y)->name);
}

int sr_plan_compute(const struct sr_runsum *runs, size_t n, const struct sr_plan_query *q,
                    struct sr_plan *out)
{
    memset(out, 0, sizeof(*out));
    window_of(runs, n, &q->sq, &out->lo, &out->hi);
    out->window_h = (double)(out->hi - out->lo) / HOUR_MS;
    out->weeks = out->window_h / WEEK_H;
    struct accs groups = {0};
    int rc = out->hi > out->lo ? collect(runs, n, q, out, &groups) : 0;
    if (rc == 0 && groups.n)
        rc = peaks(out, &groups);
    if (rc == 0 && groups.n && !(out->groups = calloc(groups.n, sizeof(*out->groups))))
        rc = -ENOMEM;
    for (size_t i = 0; rc == 0 && i < groups.n; i++) {
        rc = finish_group(out, &groups.v[i], q->reserved, &out->groups[i]);
        out->n_groups += rc == 0;
    }
    accs_free(&groups);
    if (rc == 0 && out->n_groups > 1)
        qsort(out->groups, out->n_groups, sizeof(*out->groups), cmp_group);
    if (rc == 0)
        rc = stats_by(runs, n, q, "week,team", &out->weekly);
    if (rc == 0)
        rc = stats_by(runs, n, q, "zone", &out->by_zone);
    if (rc == 0)
        rc = stats_by(runs, n, q, "instance_type", &out->by_type);
    if (rc == 0)
        rc = stats_by(runs, n, q, SR_PLAN_JOB_LABEL, &out->by_job);
    if (rc < 0)
        sr_plan_free(out);
    return rc;
}

void sr_plan_free(struct sr_plan *p)
{
    for (size_t i = 0; i < p->n_groups; i++)
        sr_plan_curve_free(&p->groups[i].curve);
    free(p->groups);
    sr_stats_free(&p->weekly);
    sr_stats_free(&p->by_zone);
    sr_stats_free(&p->by_type);
    sr_stats_free(&p->by_job);
    memset(p, 0, sizeof(*p));
}

double sr_plan_failure_rate(const struct sr_plan *p)
{
    return p->attempts ? (double)p->failures / (double)p->attempts : NAN;
}

double sr_plan_retry_rate(const struct sr_plan *p)
{
    return p->runs ? (double)(p->attempts - p->runs) / (double)p->runs : NAN;
}

uint64_t sr_plan_failed(const struct sr_stats_row *r)
{
    uint64_t n = 0;
    for (int c = 0; c < SR_CAUSE_COUNT; c++)
        n += sr_plan_is_failure((enum sr_hist_cause)c) ? r->ends[c] : 0;
    return n;
}
