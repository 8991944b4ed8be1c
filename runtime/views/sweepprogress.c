/*
 * sweepprogress.c - how a sweep's search went: the best value found against
 * the trial-hours paid (sweepview.h, sr_sweepview_progress), in `sweep show`
 * (a "search:" line), its --json ("progress") and `sweep report` (a step
 * chart under the lanes).
 *
 * A trial counts once it has ended (done, failed, cancelled, pruned): its
 * instance hours are paid then, whether or not it reported the metric, and
 * its best value (if any) joins the best so far. Trials in the order they
 * ended (their last event; ties by index). Running and queued trials are
 * not on the curve yet.
 */
#include "sweepview.h"

#include <errno.h>
#include <stdlib.h>

#include "svg.h"

static int ended(const struct sr_sv_trial *t)
{
    return t->state == SR_SV_DONE || t->state == SR_SV_FAILED || t->state == SR_SV_CANCELLED ||
           t->state == SR_SV_PRUNED;
}

struct ending {
    int64_t at_ms; /* its last event */
    size_t i;      /* its index in the view */
};

static int cmp_end(const void *a, const void *b)
{
    const struct ending *x = a, *y = b;
    if (x->at_ms != y->at_ms)
        return x->at_ms < y->at_ms ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

int sr_sweepview_progress(const struct sr_sweepview *v, const struct sr_sv_opts *o,
                          const char **metric, struct sr_sv_progress **out, size_t *n)
{
    *n = 0;
    *metric = o->sort ? o->sort : v->n_metrics ? v->metrics[0] : NULL;
    *out = NULL;
    struct ending *idx = calloc(v->n ? v->n : 1, sizeof(*idx));
    struct sr_sv_progress *p = calloc(v->n ? v->n : 1, sizeof(*p));
    if (!idx || !p) {
        free(idx);
        free(p);
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < v->n; i++)
        if (ended(&v->t[i]))
            idx[k++] = (struct ending){v->t[i].run ? v->t[i].run->h.last_ms : 0, i};
    qsort(idx, k, sizeof(*idx), cmp_end);
    const int max = *metric ? sr_sv_maximized(o, *metric) : 0;
    double hours = 0, best = 0;
    int have = 0;
    for (size_t i = 0; i < k; i++) {
        const struct sr_sv_trial *t = &v->t[idx[i].i];
        hours += sr_sv_trial_hours(t);
        const struct sr_hist_metric *m =
            *metric && t->run ? sr_hist_metric_find(&t->run->h, *metric) : NULL;
        if (m) {
            const double b = sr_hist_metric_best(m, max);
            if (!have || (max ? b > best : b < best)) {
                best = b;
                p[*n].improved = 1;
            }
            have = 1;
        }
        p[*n].trial = t->trial;
        p[*n].hours = hours;
        p[*n].best = best;
        p[*n].has_best = have;
        (*n)++;
    }
    free(idx);
    *out = p;
    return 0;
}

/* The point where the final best was first reached: the last improvement. */
static const struct sr_sv_progress *last_improved(const struct sr_sv_progress *p, size_t n)
{
    for (size_t i = n; i-- > 0;)
        if (p[i].improved)
            return &p[i];
    return NULL;
}

void sr_sv_progress_print(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o)
{
    const char *metric;
    struct sr_sv_progress *p = NULL;
    size_t n;
    if (sr_sweepview_progress(v, o, &metric, &p, &n) < 0)
        return;
    const struct sr_sv_progress *b = last_improved(p, n);
    if (b)
        fprintf(f,
                "search:      best %s %.6g (trial %zu) after %.4f of %.4f trial-hours; %zu of "
                "%zu trials ended\n",
                metric, b->best, b->trial, b->hours, p[n - 1].hours, n, v->n);
    free(p);
}

json_t *sr_sv_progress_json(const struct sr_sweepview *v, const struct sr_sv_opts *o)
{
    const char *metric;
    struct sr_sv_progress *p = NULL;
    size_t n;
    if (sr_sweepview_progress(v, o, &metric, &p, &n) < 0 || !n) {
        free(p);
        return json_null();
    }
    json_t *pts = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(pts, json_pack("{s:I,s:f,s:o,s:b}", "trial", (json_int_t)p[i].trial,
                                             "hours", p[i].hours, "best",
                                             p[i].has_best ? json_real(p[i].best) : json_null(),
                                             "improved", p[i].improved));
    const struct sr_sv_progress *b = last_improved(p, n);
    json_t *o_ =
        json_pack("{s:o,s:b,s:f,s:o,s:o}", "metric", metric ? json_string(metric) : json_null(),
                  "maximize", metric ? sr_sv_maximized(o, metric) : 0, "hours", p[n - 1].hours,
                  "best_after_hours", b ? json_real(b->hours) : json_null(), "points", pts);
    free(p);
    return o_;
}

/* y of value b in [lo, hi] on a chart from top to top + h (best at the top
 * whichever the direction: smaller is better for a minimized metric). */
static double chart_y(double b, double lo, double hi, int max, double top, double h)
{
    const double r = hi > lo ? (b - lo) / (hi - lo) : 0.5;
    return top + h * (max ? 1.0 - r : r);
}

double sr_sv_progress_svg(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o,
                          double x0, double x1, double top)
{
    const char *metric;
    struct sr_sv_progress *p = NULL;
    size_t n;
    if (sr_sweepview_progress(v, o, &metric, &p, &n) < 0 || !last_improved(p, n)) {
        free(p);
        return 0;
    }
    const double h = 120, total = p[n - 1].hours > 0 ? p[n - 1].hours : 1;
    if (!f) { /* measured only */
        free(p);
        return 28 + h + 24;
    }
    const int max = sr_sv_maximized(o, metric);
    double lo = 0, hi = 0;
    int have = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i].has_best) {
            lo = have && lo < p[i].best ? lo : p[i].best;
            hi = have && hi > p[i].best ? hi : p[i].best;
            have = 1;
        }
    char line[256];
    snprintf(line, sizeof(line), "best %s so far over the trial-hours paid (ended trials)", metric);
    fprintf(f, "<g class=\"progress\">\n");
    sr_svg_text(f, x0, top + 14, "progress-title", "fill=\"" SR_SVG_TEXT "\"", line);
    const double ct = top + 28;
    fprintf(f, "<path d=\"M%.1f %.1fH%.1f\" stroke=\"" SR_SVG_DIM "\"/>\n", x0, ct + h, x1);
    fprintf(f, "<path class=\"best\" fill=\"none\" stroke=\"" SR_SVG_TEXT "\" d=\"");
    int started = 0;
    for (size_t i = 0; i < n; i++) {
        if (!p[i].has_best)
            continue;
        const double x = x0 + (x1 - x0) * p[i].hours / total;
        const double ny = chart_y(p[i].best, lo, hi, max, ct, h);
        if (!started)
            fprintf(f, "M%.1f %.1f", x, ny);
        else
            fprintf(f, "H%.1fV%.1f", x, ny);
        started = 1;
    }
    fprintf(f, "H%.1f\"/>\n", x1);
    for (size_t i = 0; i < n; i++) {
        if (!p[i].improved)
            continue;
        const double x = x0 + (x1 - x0) * p[i].hours / total;
        fprintf(f,
                "<circle class=\"improved\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"" SR_SVG_TEXT
                "\">",
                x, chart_y(p[i].best, lo, hi, max, ct, h));
        snprintf(line, sizeof(line), "trial %zu: %s %.6g after %.4f trial-hours", p[i].trial,
                 metric, p[i].best, p[i].hours);
        sr_svg_tooltip(f, line);
        fprintf(f, "</circle>\n");
    }
    snprintf(line, sizeof(line), "%.6g", max ? hi : lo);
    sr_svg_text(f, x0 - 8, ct + 4, "progress-label", "text-anchor=\"end\"", line);
    snprintf(line, sizeof(line), "%.6g", max ? lo : hi);
    sr_svg_text(f, x0 - 8, ct + h, "progress-label", "text-anchor=\"end\"", line);
    snprintf(line, sizeof(line), "%.4f trial-hours", total);
    sr_svg_text(f, x1, ct + h + 16, "progress-label", "text-anchor=\"end\"", line);
    fprintf(f, "</g>\n");
    free(p);
    return 28 + h + 24;
}
