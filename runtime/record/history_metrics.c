/*
 * history_metrics.c - the metrics a job reported, folded into its history
 * (history.h): each name's count, last, min and max, and an even sample of
 * its values for the pictures; which way a metric improves, from its name.
 */
#include "history.h"
#include "history_int.h"

#include <ctype.h>
#include <stdio.h>

/* Drops every other kept value and doubles the stride. */
static void halve(struct sr_hist_metric *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n_pts; i += 2)
        m->pts[n++] = m->pts[i];
    m->n_pts = n;
    m->stride *= 2;
}

/* Keeps every m->stride-th value; at cap (h->points_max), drops every other
 * kept one and doubles the stride (the curve stays even over the run). */
static void keep_point(const struct sr_history *h, struct sr_hist_metric *m, double v, int64_t step,
                       uint32_t a)
{
    const size_t cap = h->points_max && h->points_max < SR_HIST_POINTS_MAX ? (size_t)h->points_max
                                                                           : SR_HIST_POINTS_MAX;
    if (m->count % m->stride)
        return;
    if (m->n_pts >= cap) {
        halve(m);
        if (m->count % m->stride)
            return;
    }
    if (!m->pts && !(m->pts = malloc(cap * sizeof(*m->pts))))
        return;
    m->pts[m->n_pts++] =
        (struct sr_hist_point){.step = step, .value = v, .attempt = a, .index = m->count};
}

/* The metric a "metric" or "metric_summary" event names, made when new;
 * NULL when its name is not one `spotrun metric` takes (a name from a
 * tampered log never reaches a terminal, a CSV or the metrics file with
 * control bytes or quotes) or the run has SR_HIST_METRICS_MAX already. */
static struct sr_hist_metric *metric_of(struct sr_history *h, const json_t *ev)
{
    const char *name = json_string_value(json_object_get(ev, "name"));
    if (!name || !*name || strlen(name) > SR_HIST_METRIC_NAME_MAX)
        return NULL;
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.' && *c != ':' && *c != '-')
            return NULL;
    struct sr_hist_metric *m = (struct sr_hist_metric *)sr_hist_metric_find(h, name);
    if (m || h->n_met == SR_HIST_METRICS_MAX)
        return m;
    m = grow((void **)&h->met, &h->n_met, &h->cap_met, sizeof(*h->met));
    if (!m)
        return NULL;
    snprintf(m->name, sizeof(m->name), "%s", name);
    m->min = INFINITY;
    m->max = -INFINITY;
    m->min_step = m->max_step = -1;
    m->last_ms = -1;
    m->stride = 1;
    return m;
}

/* Folds one value reached at step into the metric's min and max. The
 * best's step: where it was first reached (a tie keeps the lower step, so
 * the order the logs are read in does not matter). */
static void fold_extremes(struct sr_hist_metric *m, double lo, int64_t lo_step, double hi,
                          int64_t hi_step)
{
    if (lo < m->min ||
        (lo == m->min && lo_step >= 0 && (m->min_step < 0 || lo_step < m->min_step))) {
        m->min = lo;
        m->min_step = lo_step;
    }
    if (hi > m->max ||
        (hi == m->max && hi_step >= 0 && (m->max_step < 0 || hi_step < m->max_step))) {
        m->max = hi;
        m->max_step = hi_step;
    }
}

/* Newest by time, then attempt, then step; a tie goes to the later line. */
static void fold_last(struct sr_hist_metric *m, double v, int64_t step, uint32_t a, int64_t t)
{
    const int newer = t != m->last_ms        ? t > m->last_ms
                      : a != m->last_attempt ? a > m->last_attempt
                                             : step >= m->last_step;
    if (newer) {
        m->last = v;
        m->last_ms = t;
        m->last_attempt = a;
        m->last_step = step;
    }
}

/* A "metric" event: {"name":..,"value":..,"step":N} (step optional). */
void sr_hist_add_metric(struct sr_history *h, const json_t *ev, uint32_t a, int64_t t)
{
    const json_t *jv = json_object_get(ev, "value");
    if (!json_is_number(jv) || !isfinite(json_number_value(jv)))
        return;
    struct sr_hist_metric *m = metric_of(h, ev);
    if (!m)
        return;
    const double v = json_number_value(jv);
    const int64_t step = int_in(ev, "step", 0, STEP_MAX, -1);
    if (h->keep_points)
        keep_point(h, m, v, step, a);
    m->count++;
    fold_extremes(m, v, step, v, step);
    fold_last(m, v, step, a, t);
}

/* A "metric_summary" line (docs/events.md, "Metric volume"): the values of
 * one name the writer thinned out of the attempt's log, summed up. Its
 * last, min and max cover the attempt's every value, so folding them again
 * beside the written lines changes nothing; its dropped adds the values
 * that have no line of their own to the count. */
void sr_hist_add_metric_summary(struct sr_history *h, const json_t *ev, uint32_t a, int64_t t)
{
    const double last = json_number_value(json_object_get(ev, "last"));
    const double lo = json_number_value(json_object_get(ev, "min"));
    const double hi = json_number_value(json_object_get(ev, "max"));
    const int64_t dropped = int_in(ev, "dropped", 0, UINT32_MAX, -1);
    if (!json_is_number(json_object_get(ev, "last")) ||
        !json_is_number(json_object_get(ev, "min")) ||
        !json_is_number(json_object_get(ev, "max")) || dropped < 0 || !isfinite(last) ||
        !isfinite(lo) || !isfinite(hi) || lo > hi || last < lo || last > hi)
        return;
    struct sr_hist_metric *m = metric_of(h, ev);
    if (!m)
        return;
    m->count = (uint64_t)m->count + (uint64_t)dropped > UINT32_MAX ? UINT32_MAX
                                                                   : m->count + (unsigned)dropped;
    fold_extremes(m, lo, int_in(ev, "min_step", 0, STEP_MAX, -1), hi,
                  int_in(ev, "max_step", 0, STEP_MAX, -1));
    fold_last(m, last, int_in(ev, "last_step", 0, STEP_MAX, -1), a, t);
}

void sr_hist_thin_points(struct sr_history *h, size_t total)
{
    for (;;) {
        size_t sum = 0;
        struct sr_hist_metric *most = NULL;
        for (size_t i = 0; i < h->n_met; i++) {
            sum += h->met[i].n_pts;
            if (!most || h->met[i].n_pts > most->n_pts)
                most = &h->met[i];
        }
        if (sum <= total || !most || most->n_pts < 2)
            return;
        halve(most);
    }
}

const struct sr_hist_metric *sr_hist_metric_find(const struct sr_history *h, const char *name)
{
    for (size_t i = 0; i < h->n_met; i++)
        if (strcmp(h->met[i].name, name) == 0)
            return &h->met[i];
    return NULL;
}

double sr_hist_metric_best(const struct sr_hist_metric *m, int maximize)
{
    return maximize ? m->max : m->min;
}

int64_t sr_hist_metric_best_step(const struct sr_hist_metric *m, int maximize)
{
    return maximize ? m->max_step : m->min_step;
}

static int word_in(const char *w, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(w, *list) == 0)
            return 1;
    return 0;
}

int sr_hist_metric_maximized(const char *name)
{
    static const char *const up[] = {
        "accuracy", "acc", "f1",  "auc",  "bleu", "rouge", "reward", "return", "score", "precision",
        "recall",   "iou", "map", "dice", "psnr", "ssim",  "r2",     "top1",   "top5",  NULL};
    static const char *const down[] = {"loss", "error", "err",  "perplexity", "ppl", "nll",
                                       "mse",  "mae",   "rmse", "wer",        "cer", NULL};
    int max = 0;
    char w[SR_HIST_METRIC_NAME_MAX + 1];
    size_t n = 0;
    for (const char *s = name;; s++) {
        if (*s && !strchr("_.:-", *s)) {
            if (n + 1 < sizeof(w))
                w[n++] = (char)tolower((unsigned char)*s);
            continue;
        }
        w[n] = '\0';
        if (n && word_in(w, down))
            return 0;
        if (n && word_in(w, up))
            max = 1;
        n = 0;
        if (!*s)
            break;
    }
    return max;
}
