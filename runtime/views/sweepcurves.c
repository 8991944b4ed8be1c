/*
 * sweepcurves.c - the learning curves of `sweep report` (see sweepcurves.h).
 *
 * A trial's curve is its metric's kept points by step; where a resumed
 * attempt reported a step again, its value stands (the newest attempt's).
 * A metric reported without steps anywhere is drawn against the values'
 * ranks. Each curve is one <path class="curve"> (data-trial, data-look),
 * the best trial's with class "curve best", drawn last.
 */
#include "sweepcurves.h"
#include "sweepreport.h"
#include "sweeptrial.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "asha.h"
#include "svg.h"

#define HEAD 36.0  /* the section's title */
#define TITLE 22.0 /* a chart's title row */
#define LEG 32.0   /* its legend row, the rungs' names under it */
#define PLOT 230.0 /* the plot area's height */
#define BOTTOM 46.0
#define CHART (TITLE + LEG + PLOT + BOTTOM)
#define PL 110.0      /* left of the plot: value ticks and the axis label */
#define PR 120.0      /* right: the best trial's name */
#define DRAWN_MAX 300 /* points of a curve drawn (the plot is ~1,000 px wide) */
#define C_BEST SR_SVG_TEXT
#define C_MARK "#444" /* a pruned curve's end */

struct curve {
    const struct sr_sv_trial *t;
    struct sr_hist_point *p; /* by step, one per step */
    size_t n;
    enum sr_sr_look look;
};

struct chart {
    const char *metric;
    int max;                        /* maximized */
    int steps;                      /* drawn against steps (else the values' ranks) */
    int log;                        /* log-scaled values */
    struct curve *c;                /* the trials that kept a point of it */
    size_t n;                       /* curves */
    const struct sr_sv_trial *best; /* sr_sweepview_best */
    const char *rank;               /* the metric it is best by */
    double x0, x1, y0, y1;          /* the plot area (y0 top) */
    double kmin, kmax;              /* steps */
    double vmin, vmax;              /* values (log10 of them when log) */
};

static const struct sr_hist_metric *metric_of(const struct sr_sv_trial *t, const char *name)
{
    return t->run ? sr_hist_metric_find(&t->run->h, name) : NULL;
}

/* A metric reported with a step by some trial is drawn against steps. */
static int has_steps(const struct sr_sweepview *v, const char *name)
{
    for (size_t k = 0; k < v->n; k++) {
        const struct sr_hist_metric *m = metric_of(&v->t[k], name);
        for (size_t i = 0; m && i < m->n_pts; i++)
            if (m->pts[i].step >= 0)
                return 1;
    }
    return 0;
}

/* Trial t's curve of m: its points by step, the newest attempt's value of
 * a step reported again, at most DRAWN_MAX of them (a 1,000-trial sweep's
 * picture stays a few MB). 0, or -1 (no memory). */
static int curve_of(const struct sr_hist_metric *m, int steps, struct curve *c)
{
    if (sr_sv_curve_points(m, steps, &c->p, &c->n) < 0)
        return -1;
    for (size_t i = 0; !steps && i < c->n; i++)
        c->p[i].step = (int64_t)i; /* no steps anywhere: drawn in the order reported */
    if (c->n > DRAWN_MAX) {        /* evenly, the first and the last kept */
        for (size_t i = 0; i < DRAWN_MAX; i++)
            c->p[i] = c->p[i * (c->n - 1) / (DRAWN_MAX - 1)];
        c->n = DRAWN_MAX;
    }
    return 0;
}

static void chart_free(struct chart *ch)
{
    for (size_t i = 0; i < ch->n; i++)
        free(ch->c[i].p);
    free(ch->c);
    memset(ch, 0, sizeof(*ch));
}

static double val(const struct chart *ch, double v)
{
    return ch->log ? log10(v) : v;
}

static double px(const struct chart *ch, double k)
{
    return ch->x0 + (k - ch->kmin) / (ch->kmax - ch->kmin) * (ch->x1 - ch->x0);
}

static double py(const struct chart *ch, double v)
{
    return ch->y1 - (val(ch, v) - ch->vmin) / (ch->vmax - ch->vmin) * (ch->y1 - ch->y0);
}

/* The chart of metric name: its curves and scales. 0, or -1 (no memory). */
static int chart_build(const struct sr_sweepview *v, const struct sr_sv_opts *o, const char *name,
                       struct chart *ch)
{
    memset(ch, 0, sizeof(*ch));
    ch->metric = name;
    ch->max = sr_sv_maximized(o, name);
    ch->steps = has_steps(v, name);
    ch->c = calloc(v->n ? v->n : 1, sizeof(*ch->c));
    if (!ch->c)
        return -1;
    double lo = 0, hi = 0;
    int any = 0;
    for (size_t k = 0; k < v->n; k++) {
        const struct sr_hist_metric *m = metric_of(&v->t[k], name);
        if (!m || !m->n_pts)
            continue;
        struct curve *c = &ch->c[ch->n];
        if (curve_of(m, ch->steps, c) < 0) {
            chart_free(ch);
            return -1;
        }
        if (!c->n) {
            free(c->p);
            continue;
        }
        c->t = &v->t[k];
        c->look = sr_sweepreport_trial_look(c->t);
        for (size_t i = 0; i < c->n; i++) {
            const double s = (double)c->p[i].step, x = c->p[i].value;
            ch->kmin = any && ch->kmin < s ? ch->kmin : s;
            ch->kmax = any && ch->kmax > s ? ch->kmax : s;
            lo = any && lo < x ? lo : x;
            hi = any && hi > x ? hi : x;
            any = 1;
        }
        ch->n++;
    }
    ch->log = any && lo > 0 && hi / lo >= 10;
    ch->vmin = any ? val(ch, lo) : 0;
    ch->vmax = any ? val(ch, hi) : 1;
    if (ch->vmax <= ch->vmin) {
        const double pad = ch->vmin != 0 ? fabs(ch->vmin) * 0.1 : 1;
        ch->vmin -= pad;
        ch->vmax += pad;
    } else { /* a margin: no curve on the frame */
        const double pad = (ch->vmax - ch->vmin) * 0.04;
        ch->vmin -= pad;
        ch->vmax += pad;
    }
    if (ch->kmax <= ch->kmin)
        ch->kmax = ch->kmin + 1;
    /* the sweep's, in every chart; with several objectives none is the best
     * (the Pareto chart names the front), as in sweep show */
    ch->best = o->n_objectives < 2 ? sr_sweepview_best(v, o, &ch->rank) : NULL;
    return 0;
}

/* The metrics drawn: o->sort's first, then as first seen; *more: those
 * left out past SR_SV_CURVES_MAX. */
static size_t drawn(const struct sr_sweepview *v, const struct sr_sv_opts *o, const char **names,
                    size_t *more)
{
    size_t n = 0;
    *more = 0;
    if (o->sort && sr_sweepview_has_metric(v, o->sort))
        names[n++] = o->sort;
    for (size_t i = 0; i < v->n_metrics; i++) {
        const char *name = v->metrics[i];
        if (o->sort && strcmp(name, o->sort) == 0)
            continue;
        int kept = 0;
        for (size_t k = 0; k < v->n && !kept; k++) {
            const struct sr_hist_metric *m = metric_of(&v->t[k], name);
            kept = m && m->n_pts;
        }
        if (!kept)
            continue;
        if (n < SR_SV_CURVES_MAX)
            names[n++] = name;
        else
            (*more)++;
    }
    return n;
}

/* ---- drawing ----------------------------------------------------------------- */

static void axes(FILE *f, const struct chart *ch)
{
    char lbl[48];
    fprintf(f,
            "<rect class=\"plot\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"none\" stroke=\"#ccc\"/>\n",
            ch->x0, ch->y0, ch->x1 - ch->x0, ch->y1 - ch->y0);
    /* values: round ones (1, 2, 5 x 10^k on a log scale; whole decades
     * only past 3 of them), at most 12 */
    int ticks = 0;
    if (ch->log) {
        const int d0 = (int)floor(ch->vmin), d1 = (int)ceil(ch->vmax);
        static const double mult[] = {1, 2, 5};
        const size_t nm = d1 - d0 > 3 ? 1 : 3;
        for (int d = d0; d <= d1 && ticks < 12; d++)
            for (size_t i = 0; i < nm && ticks < 12; i++) {
                const double t = mult[i] * pow(10, d), l = log10(t);
                if (l < ch->vmin || l > ch->vmax)
                    continue;
                const double y = py(ch, t);
                fprintf(f,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
                        ch->x0, y, ch->x1, y);
                sr_svg_num(t, lbl, sizeof(lbl));
                sr_svg_text(f, ch->x0 - 6, y + 4, "tick",
                            "text-anchor=\"end\" fill=\"" SR_SVG_DIM "\"", lbl);
                ticks++;
            }
    } else {
        const double vs = sr_svg_nice_step(ch->vmax - ch->vmin, 5);
        const double v0 = ceil(ch->vmin / vs) * vs;
        for (int i = 0; i < 12; i++) {
            const double t = v0 + i * vs;
            if (!(t <= ch->vmax + vs * 1e-9))
                break;
            const double y = py(ch, t);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
                    ch->x0, y, ch->x1, y);
            sr_svg_num(fabs(t) < vs * 1e-9 ? 0.0 : t, lbl, sizeof(lbl));
            sr_svg_text(f, ch->x0 - 6, y + 4, "tick", "text-anchor=\"end\" fill=\"" SR_SVG_DIM "\"",
                        lbl);
        }
    }
    const double ks = fmax(1, sr_svg_nice_step(ch->kmax - ch->kmin, 8));
    const double k0 = ceil(ch->kmin / ks) * ks;
    for (int i = 0; i < 12; i++) {
        const double k = k0 + i * ks;
        if (!(k <= ch->kmax + ks * 1e-9))
            break;
        const double x = px(ch, k);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n", x,
                ch->y1, x, ch->y1 + 4);
        sr_svg_num(k, lbl, sizeof(lbl));
        sr_svg_text(f, x, ch->y1 + 16, "tick", "text-anchor=\"middle\" fill=\"" SR_SVG_DIM "\"",
                    lbl);
    }
    sr_svg_text(f, (ch->x0 + ch->x1) / 2, ch->y1 + 34, "axis-label x-label",
                "text-anchor=\"middle\" fill=\"" SR_SVG_TEXT "\"",
                ch->steps ? "step" : "value # (no steps reported)");
    /* the value axis: the metric, which way is better, the scale */
    char name[160];
    snprintf(name, sizeof(name), "%s (%s: %s is better%s)", ch->metric, ch->max ? "max" : "min",
             ch->max ? "higher" : "lower", ch->log ? ", log scale" : "");
    const double ym = (ch->y0 + ch->y1) / 2, xl = ch->x0 - 62;
    char attrs[160];
    snprintf(attrs, sizeof(attrs),
             "text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\" fill=\"" SR_SVG_TEXT "\"",
             xl, ym);
    sr_svg_text(f, xl, ym, "axis-label y-label", attrs, name);
}

/* "trial 3 (lr=0.003141592653 width=128): pruned, loss 5.53 at step 2" */
static void curve_tip(const struct sr_sweepview *v, const struct chart *ch, const struct curve *c,
                      const char *what, char *buf, size_t len)
{
    size_t off = (size_t)snprintf(buf, len, "trial %zu (", c->t->trial);
    for (size_t i = 0; i < sr_sweep_nparams(v->sw) && off < len; i++) {
        const char *p = sr_sweep_param(v->sw, i), *val_ = sr_sweep_value(v->sw, c->t->trial, p);
        const int w = snprintf(buf + off, len - off, "%s%s=%s", i ? " " : "", p, val_ ? val_ : "-");
        off += w > 0 ? (size_t)w : 0;
    }
    const struct sr_hist_point *last = &c->p[c->n - 1];
    char value[32];
    sr_svg_num(last->value, value, sizeof(value));
    if (off < len)
        snprintf(buf + off, len - off, "): %s, %s %s at %s %" PRId64, what, ch->metric, value,
                 ch->steps ? "step" : "value #", last->step);
}

static void path_of(FILE *f, const struct chart *ch, const struct curve *c)
{
    for (size_t i = 0; i < c->n; i++)
        fprintf(f, "%s%.1f %.1f", i ? "L" : "M", px(ch, (double)c->p[i].step),
                py(ch, c->p[i].value));
    if (c->n == 1) /* one point: a dot (round caps) */
        fputs("h0.01", f);
}

static void pruned_mark(FILE *f, const char *cls, size_t trial, double x, double y)
{
    fprintf(f, "<path class=\"%s\"", cls);
    if (trial != (size_t)-1)
        fprintf(f, " data-trial=\"%zu\"", trial);
    fprintf(f,
            " d=\"M%.1f %.1fl8 8m0 -8l-8 8\" stroke=\"" C_MARK
            "\" stroke-width=\"2\" fill=\"none\">",
            x - 4, y - 4);
}

static void cancel_mark(FILE *f, const char *cls, size_t trial, double x, double y)
{
    fprintf(f, "<path class=\"%s\"", cls);
    if (trial != (size_t)-1)
        fprintf(f, " data-trial=\"%zu\"", trial);
    fprintf(f,
            " d=\"M%.1f %.1fh8v8h-8z\" fill=\"" SR_SVG_TEXT "\" stroke=\"#fff\" "
            "stroke-width=\"0.8\">",
            x - 4, y - 4);
}

static void draw_curve(FILE *f, const struct sr_sweepview *v, const struct chart *ch,
                       const struct curve *c, int best)
{
    const char *cls = sr_sr_looks[c->look < SR_LOOK_COUNT ? c->look : SR_LOOK_RUNNING].cls;
    char tip[512], what[64];
    snprintf(what, sizeof(what), "%s%s", cls, best ? ", the best trial" : "");
    curve_tip(v, ch, c, what, tip, sizeof(tip));
    fprintf(
        f,
        "<path class=\"curve%s\" data-trial=\"%zu\" data-look=\"%s\" fill=\"none\" "
        "stroke=\"%s\" stroke-width=\"%s\" stroke-linecap=\"round\" stroke-linejoin=\"round\"%s "
        "d=\"",
        best ? " best" : "", c->t->trial, cls,
        best ? C_BEST : sr_sr_looks[c->look < SR_LOOK_COUNT ? c->look : SR_LOOK_RUNNING].color,
        best ? "2.6" : "1.6", best ? "" : " stroke-opacity=\"0.85\"");
    path_of(f, ch, c);
    fputs("\">", f);
    sr_svg_tooltip(f, tip);
    fputs("</path>\n", f);
}

/* Where curve c ends: the mark of the rung that pruned it, of the cancel
 * (over every curve). */
static void draw_end(FILE *f, const struct chart *ch, const struct curve *c)
{
    char tip[256];
    const struct sr_hist_point *last = &c->p[c->n - 1];
    const double x = px(ch, (double)last->step), y = py(ch, last->value);
    char value[32];
    sr_svg_num(last->value, value, sizeof(value));
    if (c->t->state == SR_SV_PRUNED) {
        char rung[32] = "its rung";
        if (c->t->rung)
            snprintf(rung, sizeof(rung), "rung %u", c->t->rung - 1u);
        snprintf(tip, sizeof(tip), "trial %zu pruned at %s; its last %s %s at %s %" PRId64,
                 c->t->trial, rung, ch->metric, value, ch->steps ? "step" : "value #", last->step);
        pruned_mark(f, "pruned-mark", c->t->trial, x, y);
        sr_svg_tooltip(f, tip);
        fputs("</path>\n", f);
    } else if (c->t->state == SR_SV_CANCELLED) {
        snprintf(tip, sizeof(tip), "trial %zu cancelled; its last %s %s at %s %" PRId64,
                 c->t->trial, ch->metric, value, ch->steps ? "step" : "value #", last->step);
        cancel_mark(f, "cancel-mark", c->t->trial, x, y);
        sr_svg_tooltip(f, tip);
        fputs("</path>\n", f);
    }
}

/* The names at the curves' ends: the best trial's first, then each curve
 * that did not stop early (pruned, cancelled) where its name has room. */
#define LABELS_MAX 64
static void end_labels(FILE *f, const struct chart *ch, const struct curve *best)
{
    double at[LABELS_MAX][2];
    size_t n = 0;
    for (size_t pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < ch->n && n < LABELS_MAX; i++) {
            const struct curve *c = &ch->c[i];
            if ((c == best) != (pass == 0) || c->t->state == SR_SV_PRUNED ||
                (c->t->state == SR_SV_CANCELLED && c != best))
                continue;
            const struct sr_hist_point *last = &c->p[c->n - 1];
            const double x = px(ch, (double)last->step) + 8, y = py(ch, last->value) + 4;
            int room = 1;
            for (size_t k = 0; k < n && room; k++)
                room = fabs(at[k][0] - x) > 60 || fabs(at[k][1] - y) >= 11;
            if (!room)
                continue;
            at[n][0] = x;
            at[n++][1] = y;
            char name[48];
            snprintf(name, sizeof(name), "trial %zu%s", c->t->trial, c == best ? " (best)" : "");
            if (c == best)
                sr_svg_text(f, x, y, "best-label", "font-weight=\"bold\" fill=\"" C_BEST "\"",
                            name);
            else
                sr_svg_text(f, x, y, "curve-label", "font-size=\"10\" fill=\"" SR_SVG_DIM "\"",
                            name);
        }
}

/* One entry of a chart's legend at *x: a line of color (NULL: none), a
 * mark after it (0 none, 1 pruned, 2 cancelled), its name. */
static void legend_item(FILE *f, double *x, double y, const char *color, double width, int mark,
                        const char *name, const char *attrs)
{
    double w = 0;
    fprintf(f, "<g class=\"legend-item\">");
    if (color) {
        fprintf(f,
                "<path class=\"legend-swatch\" d=\"M%.1f %.1fh22\" stroke=\"%s\" "
                "stroke-width=\"%.1f\"/>",
                *x, y - 4, color, width);
        w = 26;
    }
    if (mark == 1)
        pruned_mark(f, "legend-swatch", (size_t)-1, *x + w + 4, y - 4);
    else if (mark == 2)
        cancel_mark(f, "legend-swatch", (size_t)-1, *x + w + 4, y - 4);
    if (mark) {
        fputs("</path>", f);
        w += 10;
    }
    sr_svg_text(f, *x + w + 6, y, "legend-label", attrs, name);
    fprintf(f, "</g>\n");
    *x += w + 6 + 6.8 * (double)strlen(name) + 16;
}

/* The chart's legend row at baseline y: the looks of its curves (a pruned
 * trial's with the mark its curve ends in, a cancelled one's too), the
 * best trial. */
static void chart_legend(FILE *f, const struct chart *ch, double y)
{
    unsigned char used[SR_LOOK_COUNT] = {0};
    int pruned = 0, cancelled = 0;
    for (size_t i = 0; i < ch->n; i++) {
        if (ch->c[i].t == ch->best)
            continue;
        used[ch->c[i].look < SR_LOOK_COUNT ? ch->c[i].look : SR_LOOK_RUNNING] = 1;
        pruned |= ch->c[i].t->state == SR_SV_PRUNED;
        cancelled |= ch->c[i].t->state == SR_SV_CANCELLED;
    }
    const char *plain = "fill=\"" SR_SVG_TEXT "\"";
    double x = ch->x0;
    fprintf(f, "<g class=\"curves-legend\">\n");
    for (int k = 0; k < SR_LOOK_COUNT; k++) {
        if (!used[k])
            continue;
        const int mark = k == SR_LOOK_PRUNED && pruned         ? 1
                         : k == SR_LOOK_CANCELLED && cancelled ? 2
                                                               : 0;
        const char *name = mark == 1   ? "pruned at its rung"
                           : mark == 2 ? "cancelled where it stopped"
                                       : sr_sr_looks[k].name;
        legend_item(f, &x, y, sr_sr_looks[k].color, 2, mark, name, plain);
    }
    if (pruned && !used[SR_LOOK_PRUNED])
        legend_item(f, &x, y, NULL, 0, 1, "pruned at its rung", plain);
    if (cancelled && !used[SR_LOOK_CANCELLED])
        legend_item(f, &x, y, NULL, 0, 2, "cancelled", plain);
    if (ch->best) {
        char name[SR_HIST_METRIC_NAME_MAX + 48];
        if (ch->rank && strcmp(ch->rank, ch->metric) != 0)
            snprintf(name, sizeof(name), "best: trial %zu (by %s)", ch->best->trial, ch->rank);
        else
            snprintf(name, sizeof(name), "best: trial %zu", ch->best->trial);
        legend_item(f, &x, y, C_BEST, 2.6, 0, name, "font-weight=\"bold\" fill=\"" C_BEST "\"");
    }
    fprintf(f, "</g>\n");
}

/* The early-stopping rule's rungs (its steps in the chart): a dashed line
 * each, named at the top. */
static void rungs(FILE *f, const struct sr_sweepview *v, const struct chart *ch)
{
    struct sr_asha rule;
    int64_t step[SR_ASHA_RUNGS_MAX];
    if (!ch->steps || !v->sw->early_stop || sr_asha_from_json(v->sw->early_stop, &rule) < 0)
        return;
    const size_t n = sr_asha_rungs(&rule, step, SR_ASHA_RUNGS_MAX);
    for (size_t k = 0; k < n; k++) {
        if ((double)step[k] < ch->kmin || (double)step[k] > ch->kmax)
            continue;
        const double x = px(ch, (double)step[k]);
        char name[32], tip[SR_ASHA_METRIC_MAX + 96];
        snprintf(name, sizeof(name), "rung %zu", k);
        snprintf(tip, sizeof(tip), "early stopping's rung %zu: step %" PRId64 " (%s)", k, step[k],
                 rule.metric);
        fprintf(f,
                "<g class=\"rung-line\"><path d=\"M%.1f %.1fV%.1f\" stroke=\"#bbb\" "
                "stroke-dasharray=\"3 3\"/>",
                x, ch->y0, ch->y1);
        sr_svg_tooltip(f, tip);
        sr_svg_text(f, x, ch->y0 - 4, "rung-label",
                    "text-anchor=\"middle\" font-size=\"10\" fill=\"" SR_SVG_DIM "\"", name);
        fprintf(f, "</g>\n");
    }
}

static void chart_draw(FILE *f, const struct sr_sweepview *v, struct chart *ch, double top,
                       double width)
{
    ch->x0 = PL;
    ch->x1 = width - PR;
    ch->y0 = top + TITLE + LEG;
    ch->y1 = ch->y0 + PLOT;
    fprintf(f, "<g class=\"curves\" data-metric=\"");
    sr_svg_escape(f, ch->metric);
    fprintf(f, "\">\n");
    char title[200];
    snprintf(title, sizeof(title), "%s of every trial over %s (%zu trial%s)", ch->metric,
             ch->steps ? "steps" : "its values", ch->n, ch->n == 1 ? "" : "s");
    sr_svg_text(f, PL, top + 16, "curves-title", "font-weight=\"bold\" fill=\"" SR_SVG_TEXT "\"",
                title);
    chart_legend(f, ch, top + TITLE + 12);
    axes(f, ch);
    rungs(f, v, ch);
    const struct curve *best = NULL;
    for (int pass = 0; pass < 2; pass++) /* the pruned under the others */
        for (size_t i = 0; i < ch->n; i++) {
            const struct curve *c = &ch->c[i];
            if (c->t == ch->best) {
                best = c;
                continue;
            }
            if ((c->t->state == SR_SV_PRUNED) == (pass == 0))
                draw_curve(f, v, ch, c, 0);
        }
    if (best)
        draw_curve(f, v, ch, best, 1);
    for (size_t i = 0; i < ch->n; i++)
        draw_end(f, ch, &ch->c[i]);
    end_labels(f, ch, best);
    fprintf(f, "</g>\n");
}

double sr_sv_curves_svg(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o,
                        double top, double width)
{
    const char *names[SR_SV_CURVES_MAX];
    size_t more;
    const size_t n = drawn(v, o, names, &more);
    if (!n)
        return 0;
    const double height = HEAD + (double)n * CHART + (more ? 20 : 0);
    if (!f)
        return height;
    sr_svg_text(f, 20, top + 22, "curves-head",
                "font-size=\"15\" font-weight=\"bold\" fill=\"" SR_SVG_TEXT "\"",
                "learning curves: each trial's metrics over its steps");
    for (size_t i = 0; i < n; i++) {
        struct chart ch;
        if (chart_build(v, o, names[i], &ch) < 0)
            break;
        chart_draw(f, v, &ch, top + HEAD + (double)i * CHART, width);
        chart_free(&ch);
    }
    if (more) {
        char line[96];
        snprintf(line, sizeof(line), "%zu more metric%s not drawn (see spotrun sweep show --json)",
                 more, more == 1 ? "" : "s");
        sr_svg_text(f, 20, top + HEAD + (double)n * CHART + 12, "more", "fill=\"" SR_SVG_DIM "\"",
                    line);
    }
    return height;
}
