/*
 * sweepprogress.c - how a sweep's search went: the best value found against
 * the trial-hours paid (sweepview.h, sr_sweepview_progress), in `sweep show`
 * (a "search:" line), its --json ("progress") and `sweep report` (a step
 * chart under the lanes).
 *
 * A trial counts once it has ended (done, failed, cancelled, pruned): its
 * instance hours are paid then, whether or not it reported the metric; a
 * done trial's value (sr_sv_trial_value: its final one, or its best step's
 * with --best best-step) joins the best so far, a pruned, cancelled or
 * failed trial's never does (docs/sweeps.md, "Best"). Trials in the order
 * they ended (their last event; ties by index). Running and queued trials
 * are not on the curve yet.
 *
 * The chart: better is up whatever the direction (a min metric's axis runs
 * downwards in value), the axis says so and carries ticks in 4 significant
 * digits, and each improvement is a dot named by its trial.
 */
#include "sweepview.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "svg.h"
#include "units.h"

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
    *metric = sr_sv_rank_metric(v, o);
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
        double b;
        int64_t step;
        if (sr_sv_trial_value(t, o, *metric, &b, &step)) {
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
                "search:      best %s %.6g (trial %zu, %s) after %.4f of %.4f trial-hours; %zu "
                "of %zu trials ended\n",
                metric, b->best, b->trial, sr_sv_best_rule(o), b->hours, p[n - 1].hours, n, v->n);
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
    json_t *o_ = json_pack(
        "{s:o,s:b,s:s,s:f,s:o,s:o,s:o}", "metric", metric ? json_string(metric) : json_null(),
        "maximize", metric ? sr_sv_maximized(o, metric) : 0, "rule", sr_sv_best_rule(o), "hours",
        p[n - 1].hours, "best_after_hours", b ? json_real(b->hours) : json_null(), "best_trial",
        b ? json_integer((json_int_t)b->trial) : json_null(), "points", pts);
    free(p);
    return o_;
}

/* y of value b in [lo, hi] on a chart from top to top + h: better is up
 * whichever the direction (a minimized metric's smallest value at the top). */
static double chart_y(double b, double lo, double hi, int max, double top, double h)
{
    const double r = hi > lo ? (b - lo) / (hi - lo) : 0.5;
    return top + h * (max ? 1.0 - r : r);
}

#define CHART_H 120.0

/* A round step (1, 2 or 5 times a power of ten) giving about 4 intervals
 * over span (> 0). */
static double tick_step(double span)
{
    const double raw = span / 4, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return mag * (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10);
}

/* The value axis at x0: ticks at round values from lo to hi in at most 4
 * significant digits, and its name above it with the direction: better is
 * up ("loss (min: lower is better) ^"). */
static void value_axis(FILE *f, const char *metric, int max, double lo, double hi, double x0,
                       double x1, double ct)
{
    char line[256];
    fprintf(f, "<path class=\"value-axis\" d=\"M%.1f %.1fV%.1f\" stroke=\"" SR_SVG_DIM "\"/>\n", x0,
            ct, ct + CHART_H);
    const double step = hi > lo ? tick_step(hi - lo) : 1;
    const double first = hi > lo ? ceil(lo / step - 1e-9) : 0;
    for (int i = 0; i < 12; i++) {
        const double val = hi > lo ? (first + i) * step : lo;
        if (hi > lo && val > hi + step * 1e-9)
            break;
        const double y = chart_y(val, lo, hi, max, ct, CHART_H);
        fprintf(f, "<path class=\"tick\" d=\"M%.1f %.1fH%.1f\" stroke=\"#e5e5e5\"/>\n", x0, y, x1);
        snprintf(line, sizeof(line), "%.4g", fabs(val) < step * 1e-9 ? 0.0 : val);
        sr_svg_text(f, x0 - 6, y + 4, "progress-label tick-label",
                    "text-anchor=\"end\" font-size=\"11\"", line);
        if (!(hi > lo))
            break;
    }
    snprintf(line, sizeof(line), "%s (%s: %s is better) \xe2\x86\x91", metric, max ? "max" : "min",
             max ? "higher" : "lower");
    sr_svg_text(f, x0 - 6, ct - 8, "progress-axis-label", "text-anchor=\"end\" font-size=\"11\"",
                line);
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
    const double h = CHART_H, total = p[n - 1].hours > 0 ? p[n - 1].hours : 1;
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
    char line[320];
    snprintf(line, sizeof(line),
             "best %s so far (%s value of done trials; pruned, cancelled and failed ones only "
             "cost) over the trial-hours paid",
             metric, sr_sv_best_rule(o));
    fprintf(f, "<g class=\"progress\" data-metric=\"");
    sr_svg_escape(f, metric);
    fprintf(f, "\" data-direction=\"%s\">\n", max ? "max" : "min");
    sr_svg_text(f, x0, top + 14, "progress-title", "fill=\"" SR_SVG_TEXT "\"", line);
    const double ct = top + 28;
    value_axis(f, metric, max, lo, hi, x0, x1, ct);
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
        const double y = chart_y(p[i].best, lo, hi, max, ct, h);
        fprintf(f,
                "<g class=\"improved\" data-trial=\"%zu\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" "
                "fill=\"" SR_SVG_TEXT "\">",
                p[i].trial, x, y);
        snprintf(line, sizeof(line), "trial %zu: %s %.6g after %.4f trial-hours", p[i].trial,
                 metric, p[i].best, p[i].hours);
        sr_svg_tooltip(f, line);
        fprintf(f, "</circle>");
        /* named in text beside its dot: below it when near the top */
        snprintf(line, sizeof(line), "trial %zu: %.4g", p[i].trial, p[i].best);
        const int right = x > x1 - 90;
        sr_svg_text(f, right ? x - 5 : x + 5, y < ct + 12 ? y + 14 : y - 5, "improved-label",
                    right ? "text-anchor=\"end\" font-size=\"10\"" : "font-size=\"10\"", line);
        fprintf(f, "</g>\n");
    }
    /* what the hours bought: lost work apart from the work the sweep chose
     * to drop (pruned, cancelled), which is not lost (sweepview.c's header) */
    char lost[32], pruned[32], cancelled[32];
    sr_format_duration_ms(v->lost_ms, lost, sizeof(lost));
    sr_format_duration_ms(v->pruned_ms, pruned, sizeof(pruned));
    sr_format_duration_ms(v->cancelled_ms, cancelled, sizeof(cancelled));
    snprintf(line, sizeof(line),
             "%.4g trial-hours paid; lost work %s; pruned work %s, cancelled work %s (not lost)",
             total, lost, pruned, cancelled);
    sr_svg_text(f, x1, ct + h + 16, "progress-label hours", "text-anchor=\"end\"", line);
    sr_svg_text(f, x0, ct + h + 16, "progress-label", "", "0");
    fprintf(f, "</g>\n");
    free(p);
    return 28 + h + 24;
}
