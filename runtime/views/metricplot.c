/*
 * metricplot.c - the metric panel of `spotrun report` (see metricplot.h).
 *
 * Each chart: the metric's values sorted by attempt, then step, one
 * polyline per attempt (after a resume the curve starts again from the
 * checkpoint's step, so the redone span shows as two lines), the best value
 * circled, and a vertical line per interrupted attempt at the highest step
 * it reached (its metrics' and checkpoints' steps): orange for a preemption,
 * dashed red for a crash.
 */
#include "metricplot.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "svg.h"

#define HEAD 56.0   /* the section's title and legend */
#define PANEL 200.0 /* one chart with its title and axes */
#define ML 64.0     /* left of a plot: the value labels */
#define MR 16.0
#define MT 30.0 /* above a plot: its title */
#define MB 38.0 /* below: the step labels */
#define FEW 60  /* points drawn as dots up to this many */

static const char *const colors[] = {"#4c78a8", "#54a24b", "#b279a2",
                                     "#9d755d", "#72b7b2", "#eeca3b"};

static size_t shown(const struct sr_history *h)
{
    return h->n_met < SR_METRICPLOT_MAX ? h->n_met : SR_METRICPLOT_MAX;
}

double sr_metricplot_height(const struct sr_history *h)
{
    if (!h->n_met)
        return 0;
    const size_t rows = (shown(h) + 1) / 2;
    return HEAD + (double)rows * PANEL + (h->n_met > SR_METRICPLOT_MAX ? 20 : 0);
}

/* Where an interrupted attempt was: the highest step it reported or
 * checkpointed, -1 when unknown. */
static int64_t reached_step(const struct sr_history *h, uint32_t attempt)
{
    int64_t s = -1;
    for (size_t i = 0; i < h->n_met; i++)
        for (size_t k = 0; k < h->met[i].n_pts; k++)
            if (h->met[i].pts[k].attempt == attempt && h->met[i].pts[k].step > s)
                s = h->met[i].pts[k].step;
    for (size_t i = 0; i < h->n_ck; i++)
        if (h->ck[i].attempt == attempt && h->ck[i].step > s)
            s = h->ck[i].step;
    return s;
}

static int interrupted(enum sr_hist_end e)
{
    return e == SR_END_PREEMPTED || e == SR_END_CRASHED || e == SR_END_FAILED ||
           e == SR_END_VANISHED;
}

struct plot {
    double x0, x1, y0, y1; /* the plot area (y0 top) */
    double kmin, kmax;     /* steps (or value ranks) */
    double vmin, vmax;
};

static double px(const struct plot *p, double k)
{
    return p->x0 + (k - p->kmin) / (p->kmax - p->kmin) * (p->x1 - p->x0);
}

static double py(const struct plot *p, double v)
{
    return p->y1 - (v - p->vmin) / (p->vmax - p->vmin) * (p->y1 - p->y0);
}

/* A point's x: its step (panel() puts a value's rank there when the
 * metric has no steps). */
static double key_of(const struct sr_hist_point *pt)
{
    return (double)pt->step;
}

static int cmp_point(const void *a, const void *b)
{
    const struct sr_hist_point *x = a, *y = b;
    if (x->attempt != y->attempt)
        return x->attempt < y->attempt ? -1 : 1;
    return (x->step > y->step) - (x->step < y->step);
}

static void axes(FILE *f, const struct plot *p, const char *xlabel)
{
    char lbl[48];
    fprintf(f,
            "<rect class=\"plot\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"none\" stroke=\"#ccc\"/>\n",
            p->x0, p->y0, p->x1 - p->x0, p->y1 - p->y0);
    /* At most 12 ticks each way: with values far larger than their span
     * (1e16 and 1e16 + 2), adding the tick step does not move. */
    const double vs = sr_svg_nice_step(p->vmax - p->vmin, 4), v0 = ceil(p->vmin / vs) * vs;
    for (int i = 0; i < 12; i++) {
        const double v = v0 + i * vs;
        if (!(v <= p->vmax + vs * 1e-9))
            break;
        const double y = py(p, v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
                p->x0, y, p->x1, y);
        snprintf(lbl, sizeof(lbl), "%.4g", fabs(v) < vs * 1e-9 ? 0.0 : v);
        sr_svg_text(f, p->x0 - 6, y + 4, "tick", "text-anchor=\"end\" fill=\"" SR_SVG_DIM "\"",
                    lbl);
    }
    const double ks = fmax(1, sr_svg_nice_step(p->kmax - p->kmin, 6)), k0 = ceil(p->kmin / ks) * ks;
    for (int i = 0; i < 12; i++) {
        const double k = k0 + i * ks;
        if (!(k <= p->kmax + ks * 1e-9))
            break;
        const double x = px(p, k);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n", x,
                p->y1, x, p->y1 + 4);
        snprintf(lbl, sizeof(lbl), "%.6g", k);
        sr_svg_text(f, x, p->y1 + 16, "tick", "text-anchor=\"middle\" fill=\"" SR_SVG_DIM "\"",
                    lbl);
    }
    sr_svg_text(f, p->x1, p->y1 + 31, "axis-label", "text-anchor=\"end\" fill=\"" SR_SVG_DIM "\"",
                xlabel);
}

/* The vertical lines of the interrupted attempts (steps only). */
static void interruptions(FILE *f, const struct sr_history *h, const struct plot *p)
{
    for (size_t i = 0; i < h->n_att; i++) {
        const struct sr_hist_attempt *a = &h->att[i];
        if (!interrupted(a->end))
            continue;
        const int64_t s = reached_step(h, a->attempt);
        if (s < 0 || (double)s < p->kmin || (double)s > p->kmax)
            continue;
        const int pre = a->end == SR_END_PREEMPTED;
        char tip[200], next[64] = "";
        if (i + 1 < h->n_att && h->att[i + 1].resumed && h->att[i + 1].resumed_step >= 0)
            snprintf(next, sizeof(next), "; attempt %" PRIu32 " resumed from step %" PRId64,
                     h->att[i + 1].attempt, h->att[i + 1].resumed_step);
        snprintf(tip, sizeof(tip), "attempt %" PRIu32 " %s at step %" PRId64 "%s", a->attempt,
                 pre ? "preempted" : "crashed", s, next);
        const double x = px(p, (double)s);
        fprintf(f,
                "<line class=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"%s\" stroke-width=\"1.5\"%s>",
                pre ? "metric-preemption" : "metric-crash", x, p->y0, x, p->y1,
                pre ? SR_SVG_NOTICE : SR_SVG_LOST, pre ? "" : " stroke-dasharray=\"5 3\"");
        sr_svg_tooltip(f, tip);
        fputs("</line>\n", f);
    }
}

static void curves(FILE *f, const struct sr_hist_metric *m, const struct sr_hist_point *pts,
                   size_t n, const struct plot *p, const char *color)
{
    for (size_t s = 0; s < n;) {
        size_t e = s;
        while (e < n && pts[e].attempt == pts[s].attempt)
            e++;
        char tip[160];
        snprintf(tip, sizeof(tip), "%s, attempt %" PRIu32 ": %zu value(s)", m->name, pts[s].attempt,
                 e - s);
        fprintf(f,
                "<polyline class=\"curve\" data-attempt=\"%" PRIu32 "\" fill=\"none\" "
                "stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                pts[s].attempt, color);
        for (size_t k = s; k < e; k++)
            fprintf(f, "%s%.1f,%.1f", k > s ? " " : "", px(p, key_of(&pts[k])),
                    py(p, pts[k].value));
        fputs("\">", f);
        sr_svg_tooltip(f, tip);
        fputs("</polyline>\n", f);
        s = e;
    }
    for (size_t k = 0; n <= FEW && k < n; k++)
        fprintf(f, "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
                px(p, key_of(&pts[k])), py(p, pts[k].value), color);
}

static void panel(FILE *f, const struct sr_history *h, const struct sr_hist_metric *m, double x,
                  double y, double w, const char *color)
{
    struct sr_hist_point *pts = calloc(m->n_pts ? m->n_pts : 1, sizeof(*pts));
    if (!pts)
        return;
    int use_steps = 0;
    for (size_t k = 0; k < m->n_pts; k++)
        use_steps |= m->pts[k].step >= 0;
    size_t n = 0;
    for (size_t k = 0; k < m->n_pts; k++) {
        if (use_steps && m->pts[k].step < 0)
            continue; /* a stepless value among stepped ones: nowhere to draw it */
        pts[n] = m->pts[k];
        if (!use_steps)
            pts[n].step = (int64_t)m->pts[k].index;
        n++;
    }
    qsort(pts, n, sizeof(*pts), cmp_point);
    struct plot p = {.x0 = x + ML, .x1 = x + w - MR, .y0 = y + MT, .y1 = y + PANEL - MB};
    for (size_t k = 0; k < n; k++) {
        const double key = key_of(&pts[k]);
        if (!k || key < p.kmin)
            p.kmin = key;
        if (!k || key > p.kmax)
            p.kmax = key;
        if (!k || pts[k].value < p.vmin)
            p.vmin = pts[k].value;
        if (!k || pts[k].value > p.vmax)
            p.vmax = pts[k].value;
    }
    if (p.kmax <= p.kmin)
        p.kmax = p.kmin + 1;
    if (p.vmax <= p.vmin) {
        const double pad = p.vmin != 0 ? fabs(p.vmin) * 0.1 : 1;
        p.vmin -= pad;
        p.vmax += pad;
    }
    const int max = sr_hist_metric_maximized(m->name);
    const double best = sr_hist_metric_best(m, max);
    const int64_t best_step = sr_hist_metric_best_step(m, max);
    char title[200], b[64] = "";
    if (best_step >= 0)
        snprintf(b, sizeof(b), " at step %" PRId64, best_step);
    snprintf(title, sizeof(title), "%s: last %.6g, best %.6g%s (%s)", m->name, m->last, best, b,
             max ? "max" : "min");
    fprintf(f, "<g class=\"metric-panel\" data-metric=\"");
    sr_svg_escape(f, m->name);
    fprintf(f, "\">\n");
    sr_svg_text(f, x + ML, y + 18, "metric-title", "font-weight=\"bold\" fill=\"" SR_SVG_TEXT "\"",
                title);
    axes(f, &p, use_steps ? "step" : "value # (no steps reported)");
    if (use_steps)
        interruptions(f, h, &p);
    curves(f, m, pts, n, &p, color);
    if (use_steps && best_step >= 0) {
        snprintf(title, sizeof(title), "best %.6g at step %" PRId64, best, best_step);
        fprintf(f,
                "<circle class=\"best\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"none\" "
                "stroke=\"" SR_SVG_TEXT "\">",
                px(&p, (double)best_step), py(&p, best));
        sr_svg_tooltip(f, title);
        fputs("</circle>\n", f);
    }
    if (!n)
        sr_svg_text(f, p.x0 + 10, p.y0 + 20, "empty", "fill=\"" SR_SVG_DIM "\"", "no values kept");
    fprintf(f, "</g>\n");
    free(pts);
}

static void legend(FILE *f, double top)
{
    const double y = top + 44;
    fprintf(f, "<g class=\"metric-legend\">\n");
    fprintf(f, "<path d=\"M20 %.1fh24\" stroke=\"%s\" stroke-width=\"1.5\"/>", y - 4, colors[0]);
    sr_svg_text(f, 50, y, "legend-label", "", "value over steps (one line per attempt)");
    fprintf(f, "<circle cx=\"322\" cy=\"%.1f\" r=\"5\" fill=\"none\" stroke=\"" SR_SVG_TEXT "\"/>",
            y - 4);
    sr_svg_text(f, 334, y, "legend-label", "", "best");
    fprintf(f, "<path d=\"M390 %.1fv12\" stroke=\"" SR_SVG_NOTICE "\" stroke-width=\"1.5\"/>",
            y - 10);
    sr_svg_text(f, 398, y, "legend-label", "", "preempted at this step");
    fprintf(f,
            "<path d=\"M570 %.1fv12\" stroke=\"" SR_SVG_LOST "\" stroke-width=\"1.5\" "
            "stroke-dasharray=\"5 3\"/>",
            y - 10);
    sr_svg_text(f, 578, y, "legend-label", "", "crashed at this step (restarted)");
    fprintf(f, "</g>\n");
}

void sr_metricplot_svg(FILE *f, const struct sr_history *h, double top, double width)
{
    if (!h->n_met)
        return;
    sr_svg_text(f, 20, top + 22, "metrics-title",
                "font-size=\"15\" font-weight=\"bold\" fill=\"" SR_SVG_TEXT "\"",
                "metrics the job reported");
    legend(f, top);
    const size_t n = shown(h);
    const double w = (width - 40) / (n > 1 ? 2 : 1);
    for (size_t i = 0; i < n; i++)
        panel(f, h, &h->met[i], 20 + (double)(i % 2) * w, top + HEAD + (double)(i / 2) * PANEL, w,
              colors[i % (sizeof(colors) / sizeof(colors[0]))]);
    if (h->n_met > n) {
        char more[96];
        snprintf(more, sizeof(more), "%zu more metric(s) not drawn (see spotrun show)",
                 h->n_met - n);
        sr_svg_text(f, 20, top + HEAD + (double)((n + 1) / 2) * PANEL + 12, "more",
                    "fill=\"" SR_SVG_DIM "\"", more);
    }
}
