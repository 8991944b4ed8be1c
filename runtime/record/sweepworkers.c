/*
 * sweepworkers.c - a sweep's worker hours, busy and idle (see
 * sweepworkers.h; runtime/views/sweepworkersout.c prints them).
 */
#include "sweepworkers.h"

#include <stdlib.h>
#include <string.h>

#include "sweep.h"
#include "sweeprec.h"

struct span {
    int64_t from, to;
};

static int by_from(const void *a, const void *b)
{
    const int64_t x = ((const struct span *)a)->from, y = ((const struct span *)b)->from;
    return (x > y) - (x < y);
}

/* Adds [f, t] clipped to [from, to] to s (of cap). */
static void put(struct span *s, size_t *n, size_t cap, int64_t f, int64_t t, int64_t from,
                int64_t to)
{
    f = f > from ? f : from;
    t = t < to ? t : to;
    if (t > f && *n < cap)
        s[(*n)++] = (struct span){f, t};
}

/* The length of the union of s[0..n); frees s. */
static int64_t union_ms(struct span *s, size_t n)
{
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

/* How much of [from, to] the attempts of w's trials on its host ran, as
 * the sweep view's histories say. */
static int64_t busy_in_view(const struct sr_sweep_worker *w, const struct sr_sweepview *v,
                            int64_t from, int64_t to)
{
    size_t cap = 0, n = 0;
    for (size_t i = 0; i < w->n_trials; i++)
        if ((size_t)w->trials[i] < v->n && v->t[w->trials[i]].run)
            cap += v->t[w->trials[i]].run->h.n_att;
    struct span *s = malloc((cap ? cap : 1) * sizeof(*s));
    for (size_t i = 0; s && i < w->n_trials; i++) {
        if ((size_t)w->trials[i] >= v->n || !v->t[w->trials[i]].run)
            continue;
        const struct sr_history *h = &v->t[w->trials[i]].run->h;
        for (size_t j = 0; j < h->n_att; j++)
            if (strcmp(h->att[j].host, w->host) == 0) /* else another worker's, elsewhere */
                put(s, &n, cap, h->att[j].first_ms, h->att[j].last_ms, from, to);
    }
    return union_ms(s, n);
}

static int by_run(const void *key, const void *elem)
{
    return strcmp(key, ((const struct sr_runsum *)elem)->run);
}

/* The same from the runs' summaries (runs sorted by id, as
 * sr_runsum_load_all gives them). */
static int64_t busy_in_runs(const struct sr_sweep_worker *w, const char *sweep,
                            const struct sr_runsum *runs, size_t nruns, int64_t from, int64_t to)
{
    size_t cap = 0, n = 0;
    const struct sr_runsum **of = calloc(w->n_trials ? w->n_trials : 1, sizeof(*of));
    for (size_t i = 0; of && i < w->n_trials; i++) {
        char id[SR_RUN_ID_MAX + 1];
        sr_sweep_run_id(sweep, (size_t)w->trials[i], id, sizeof(id));
        of[i] = bsearch(id, runs, nruns, sizeof(*runs), by_run);
        cap += of[i] ? of[i]->n_att : 0;
    }
    struct span *s = of ? malloc((cap ? cap : 1) * sizeof(*s)) : NULL;
    for (size_t i = 0; s && i < w->n_trials; i++)
        for (size_t j = 0; of[i] && j < of[i]->n_att; j++)
            if (strcmp(of[i]->att[j].host, w->host) == 0)
                put(s, &n, cap, of[i]->att[j].start_ms, of[i]->att[j].end_ms, from, to);
    free(of);
    return union_ms(s, n);
}

/* Adds w's lifetime within [from, to] (life ms), busy ms of it. */
static void add(struct sr_sv_workers *out, const struct sr_sweep_worker *w, int64_t life,
                int64_t busy)
{
    const int64_t idle = life > busy ? life - busy : 0;
    out->n++;
    out->open += w->end_ms == 0;
    out->life_ms += life;
    out->busy_ms += busy;
    out->idle_ms += idle;
    if (w->price_per_hour > 0) {
        out->life_cost += (double)life / 3600000.0 * w->price_per_hour;
        out->idle_cost += (double)idle / 3600000.0 * w->price_per_hour;
    } else {
        out->unpriced++;
        out->unpriced_life_ms += life;
        out->unpriced_idle_ms += idle;
    }
}

void sr_sv_workers_fold(const struct sr_sweep_worker *w, size_t n, const struct sr_sweepview *v,
                        struct sr_sv_workers *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        const int64_t from = w[i].start_ms, to = sr_sweep_worker_until(&w[i]);
        const int64_t life = to > from ? to - from : 0;
        add(out, &w[i], life, life ? busy_in_view(&w[i], v, from, to) : 0);
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

int sr_sv_workers_load_cached(struct sr_store *st, const struct sr_sweepview *v,
                              const json_t *cache, json_t **fresh, struct sr_sv_workers *out)
{
    memset(out, 0, sizeof(*out));
    struct sr_sweep_worker *w;
    size_t n;
    const int rc = sr_sweep_workers_read_cached(st, v->sw->name, cache, fresh, &w, &n);
    if (rc < 0)
        return rc;
    sr_sv_workers_fold(w, n, v, out);
    sr_sweep_workers_free(w, n);
    return 0;
}

/* One sweep's workers into out, clipped to [since, until). */
static int of_sweep(struct sr_store *st, const char *sweep, const struct sr_runsum *runs,
                    size_t nruns, int64_t since, int64_t until, struct sr_sv_workers *out)
{
    struct sr_sweep_worker *w;
    size_t n;
    const int rc = sr_sweep_workers_read(st, sweep, &w, &n);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        const int64_t a = w[i].start_ms, b = sr_sweep_worker_until(&w[i]);
        const int64_t from = since && since > a ? since : a, to = until && until < b ? until : b;
        if (to <= from && (since || until))
            continue; /* outside the window */
        const int64_t life = to > from ? to - from : 0;
        add(out, &w[i], life, life ? busy_in_runs(&w[i], sweep, runs, nruns, from, to) : 0);
    }
    sr_sweep_workers_free(w, n);
    return 0;
}

int sr_sv_workers_stats(struct sr_store *st, const char *prefix, const struct sr_runsum *runs,
                        size_t nruns, int64_t since, int64_t until, struct sr_sv_workers *out)
{
    memset(out, 0, sizeof(*out));
    struct sr_strlist names;
    int rc = sr_store_list(st, "sweeps", &names);
    if (rc < 0)
        return rc;
    for (size_t i = 0; rc == 0 && i < names.n; i++)
        if (sr_sweep_name_valid(names.v[i]) &&
            (!prefix || strncmp(names.v[i], prefix, strlen(prefix)) == 0))
            rc = of_sweep(st, names.v[i], runs, nruns, since, until, out);
    sr_strlist_free(&names);
    return rc;
}
