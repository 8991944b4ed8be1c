/*
 * sweepworkers.c - a sweep's worker hours, busy and idle (see
 * sweepworkers.h).
 */
#include "sweepworkers.h"

#include <stdlib.h>
#include <string.h>

#include "summary.h"
#include "sweepview.h"

struct span {
    int64_t from, to;
};

static int by_from(const void *a, const void *b)
{
    const int64_t x = ((const struct span *)a)->from, y = ((const struct span *)b)->from;
    return (x > y) - (x < y);
}

/* The spans of the attempts of w's trials on its host, clipped to
 * [from, to]; *n of them (the array is the caller's). */
static struct span *spans_of(const struct sr_sweep_worker *w, const struct sr_sweepview *v,
                             int64_t from, int64_t to, size_t *n)
{
    size_t cap = 0;
    *n = 0;
    for (size_t i = 0; i < w->n_trials; i++)
        if ((size_t)w->trials[i] < v->n && v->t[w->trials[i]].run)
            cap += v->t[w->trials[i]].run->h.n_att;
    struct span *s = malloc((cap ? cap : 1) * sizeof(*s));
    if (!s)
        return NULL;
    for (size_t i = 0; i < w->n_trials; i++) {
        if ((size_t)w->trials[i] >= v->n || !v->t[w->trials[i]].run)
            continue;
        const struct sr_history *h = &v->t[w->trials[i]].run->h;
        for (size_t j = 0; j < h->n_att && *n < cap; j++) {
            const struct sr_hist_attempt *a = &h->att[j];
            if (strcmp(a->host, w->host) != 0)
                continue; /* run by another worker, elsewhere */
            const int64_t f = a->first_ms > from ? a->first_ms : from;
            const int64_t t = a->last_ms < to ? a->last_ms : to;
            if (t > f)
                s[(*n)++] = (struct span){f, t};
        }
    }
    return s;
}

/* How much of [from, to] the worker's trials ran: their spans' union. */
static int64_t busy_ms(const struct sr_sweep_worker *w, const struct sr_sweepview *v, int64_t from,
                       int64_t to)
{
    size_t n;
    struct span *s = spans_of(w, v, from, to, &n);
    if (!s)
        return 0;
    qsort(s, n, sizeof(*s), by_from);
    int64_t busy = 0, end = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        const int64_t f = s[i].from > end ? s[i].from : end;
        if (s[i].to > f)
            busy += s[i].to - f;
        if (s[i].to > end)
            end = s[i].to;
    }
    free(s);
    return busy;
}

void sr_sv_workers_fold(const struct sr_sweep_worker *w, size_t n, const struct sr_sweepview *v,
                        struct sr_sv_workers *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        const int64_t from = w[i].start_ms, to = sr_sweep_worker_until(&w[i]);
        const int64_t life = to > from ? to - from : 0;
        const int64_t busy = life ? busy_ms(&w[i], v, from, to) : 0;
        const int64_t idle = life > busy ? life - busy : 0;
        out->n++;
        out->open += w[i].end_ms == 0;
        out->life_ms += life;
        out->busy_ms += busy;
        out->idle_ms += idle;
        if (w[i].price_per_hour > 0) {
            out->life_cost += (double)life / 3600000.0 * w[i].price_per_hour;
            out->idle_cost += (double)idle / 3600000.0 * w[i].price_per_hour;
        } else {
            out->unpriced_life_ms += life;
            out->unpriced_idle_ms += idle;
        }
    }
}

int sr_sv_workers_load(struct sr_store *st, const struct sr_sweepview *v, struct sr_sv_workers *out)
{
    memset(out, 0, sizeof(*out));
    struct sr_sweep_worker *w;
    size_t n;
    const int rc = sr_sweep_workers_read(st, v->sw->name, &w, &n);
    if (rc < 0)
        return rc;
    sr_sv_workers_fold(w, n, v, out);
    sr_sweep_workers_free(w, n);
    return 0;
}

/* Cost of the workers: recorded prices, the rest at spot; -1 unknown. */
static void costs(const struct sr_sv_workers *ws, const struct sr_sv_opts *o, double *life,
                  double *idle)
{
    const double spot = o->prices.spot_per_hour;
    if (ws->unpriced_life_ms && spot <= 0) {
        *life = *idle = -1;
        return;
    }
    *life = ws->life_cost + (double)ws->unpriced_life_ms / 3600000.0 * spot;
    *idle = ws->idle_cost + (double)ws->unpriced_idle_ms / 3600000.0 * spot;
}

void sr_sv_workers_print(FILE *f, const struct sr_sv_workers *ws, const struct sr_sv_opts *o)
{
    if (!ws->n)
        return;
    fprintf(f, "workers:     %zu (%.4f worker-hours: %.4f running trials, %.4f idle)", ws->n,
            (double)ws->life_ms / 3600000.0, (double)ws->busy_ms / 3600000.0,
            (double)ws->idle_ms / 3600000.0);
    double life, idle;
    costs(ws, o, &life, &idle);
    if (life < 0) {
        fprintf(f, "; cost - (give --price-per-hour)\n");
        return;
    }
    char a[32], b[32];
    sr_format_money(life, a, sizeof(a));
    sr_format_money(idle, b, sizeof(b));
    fprintf(f, "; cost %s, idle %s\n", a, b);
}

json_t *sr_sv_workers_json(const struct sr_sv_workers *ws, const struct sr_sv_opts *o)
{
    double life, idle;
    costs(ws, o, &life, &idle);
    return json_pack("{s:I,s:I,s:f,s:f,s:f,s:o,s:o}", "count", (json_int_t)ws->n, "open",
                     (json_int_t)ws->open, "hours", (double)ws->life_ms / 3600000.0, "busy_hours",
                     (double)ws->busy_ms / 3600000.0, "idle_hours", (double)ws->idle_ms / 3600000.0,
                     "cost", life < 0 ? json_null() : json_real(life), "idle_cost",
                     idle < 0 ? json_null() : json_real(idle));
}
