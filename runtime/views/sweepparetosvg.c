/*
 * sweepparetosvg.c - the Pareto chart of `sweep report` (see
 * sweepparetosvg.h).
 *
 * The points are the done trials that reported every objective (the set
 * sr_sweepview_pareto ranks), so the dark ones are exactly the trials
 * `sweep show` lists on the front. Each axis runs from its better end (at
 * the origin: left, bottom) to its worse one, so a maximized metric's axis
 * is reversed; with two objectives the front is then a staircase going
 * down to the right, and nothing lies below-left of it. Elements: <g
 * class="pareto"> (data-x, data-y: the metrics), <circle class="pareto-point
 * front|dominated"> and <text class="pareto-label"> (data-trial),
 * <path class="pareto-front"> (the staircase), the list of the front
 * beside the plot (<text class="pareto-row">, data-trial).
 */
#include "sweepparetosvg.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "svg.h"

#define HEAD 36.0   /* the section's title */
#define TITLE 22.0  /* the chart's title row */
#define LEG 30.0    /* its legend row */
#define PLOT 300.0  /* the plot area's height */
#define BOTTOM 46.0 /* x ticks and the axis label */
#define PL 110.0    /* left of the plot: value ticks and the axis label */
#define PR 330.0    /* right: the list of the front */
#define ROW 14.0    /* a row of that list */
#define ROW_CHARS 44
#define C_FRONT SR_SVG_TEXT
#define C_DOMINATED SR_SVG_TRAIN

struct point {
    const struct sr_sv_trial *t;
    double v[SR_SWEEP_OBJECTIVES_MAX]; /* the objectives' values */
    double cx, cy;                     /* the first two, turned so that smaller is better */
    int front;
};

/* One axis: an objective drawn from its better end (at p0, pixels) to its
 * worse one (p1). */
struct axis {
    const char *metric;
    int max, log;
    double vmin, vmax; /* values (log10 of them when log) */
    double p0, p1;
};

struct pareto {
    struct point *p;
    size_t n, n_front;
    size_t unranked; /* done trials without every objective */
    size_t k;        /* objectives */
    struct axis ax, ay;
    double x0, x1, y0, y1; /* the plot area (y0 top) */
};

static double val(const struct axis *a, double v)
{
    return a->log ? log10(v) : v;
}

/* The pixel of value v on a: its better end at p0. */
static double pos(const struct axis *a, double v)
{
    double r = (val(a, v) - a->vmin) / (a->vmax - a->vmin);
    if (a->max)
        r = 1 - r;
    return a->p0 + r * (a->p1 - a->p0);
}

static void axis_scale(struct axis *a, const struct pareto *pa, size_t j)
{
    double lo = pa->p[0].v[j], hi = lo;
    for (size_t i = 1; i < pa->n; i++) {
        lo = fmin(lo, pa->p[i].v[j]);
        hi = fmax(hi, pa->p[i].v[j]);
    }
    a->log = lo > 0 && hi / lo >= 10;
    a->vmin = val(a, lo);
    a->vmax = val(a, hi);
    const double pad = a->vmax > a->vmin ? (a->vmax - a->vmin) * 0.06
                       : a->vmin != 0    ? fabs(a->vmin) * 0.1
                                         : 1;
    a->vmin -= pad;
    a->vmax += pad;
}

/* The points, their front, the scales. 0; 1 when there is nothing to
 * draw; -ENOMEM. */
static int build(const struct sr_sweepview *v, const struct sr_sv_opts *o, struct pareto *pa)
{
    memset(pa, 0, sizeof(*pa));
    pa->k = o->n_objectives;
    if (pa->k < 2)
        return 1;
    pa->p = calloc(v->n ? v->n : 1, sizeof(*pa->p));
    size_t *front = NULL, nf = 0;
    if (!pa->p || sr_sweepview_pareto(v, o, &front, &nf) < 0) {
        free(pa->p);
        pa->p = NULL;
        return -ENOMEM;
    }
    for (size_t i = 0; i < v->n; i++) {
        struct point *p = &pa->p[pa->n];
        size_t j = 0;
        for (int64_t step; j < pa->k; j++)
            if (!sr_sv_trial_value(&v->t[i], o, o->objective[j], &p->v[j], &step))
                break;
        if (j < pa->k) {
            pa->unranked += v->t[i].state == SR_SV_DONE;
            continue;
        }
        p->t = &v->t[i];
        for (size_t f = 0; f < nf && !p->front; f++)
            p->front = front[f] == p->t->trial;
        pa->n_front += p->front;
        pa->n++;
    }
    free(front);
    if (!pa->n) {
        free(pa->p);
        pa->p = NULL;
        return 1;
    }
    pa->ax = (struct axis){.metric = o->objective[0], .max = sr_sv_maximized(o, o->objective[0])};
    pa->ay = (struct axis){.metric = o->objective[1], .max = sr_sv_maximized(o, o->objective[1])};
    axis_scale(&pa->ax, pa, 0);
    axis_scale(&pa->ay, pa, 1);
    for (size_t i = 0; i < pa->n; i++) {
        pa->p[i].cx = pa->ax.max ? -pa->p[i].v[0] : pa->p[i].v[0];
        pa->p[i].cy = pa->ay.max ? -pa->p[i].v[1] : pa->p[i].v[1];
    }
    return 0;
}

/* ---- drawing ----------------------------------------------------------------- */

/* Round values on a, at most 12, into t[]; how many. */
static size_t ticks(const struct axis *a, double *t)
{
    size_t n = 0;
    if (a->log) {
        static const double mult[] = {1, 2, 5};
        const int d0 = (int)floor(a->vmin), d1 = (int)ceil(a->vmax);
        const size_t nm = d1 - d0 > 3 ? 1 : 3;
        for (int d = d0; d <= d1 && n < 12; d++)
            for (size_t i = 0; i < nm && n < 12; i++) {
                const double x = mult[i] * pow(10, d), l = log10(x);
                if (l >= a->vmin && l <= a->vmax)
                    t[n++] = x;
            }
        return n;
    }
    const double s = sr_svg_nice_step(a->vmax - a->vmin, 5), first = ceil(a->vmin / s) * s;
    for (; n < 12; n++) {
        const double x = first + (double)n * s;
        if (!(x <= a->vmax + s * 1e-9))
            break;
        t[n] = fabs(x) < s * 1e-9 ? 0.0 : x;
    }
    return n;
}

/* "loss (min: lower is better, log scale; better to the left)" */
static void axis_name(const struct axis *a, const char *where, char *buf, size_t len)
{
    snprintf(buf, len, "%s (%s: %s is better%s; better %s)", a->metric, a->max ? "max" : "min",
             a->max ? "higher" : "lower", a->log ? ", log scale" : "", where);
}

static void axes(FILE *f, const struct pareto *pa)
{
    char lbl[48], name[SR_HIST_METRIC_NAME_MAX + 96], attrs[160];
    double t[12];
    fprintf(f,
            "<rect class=\"plot\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"none\" stroke=\"#ccc\"/>\n",
            pa->x0, pa->y0, pa->x1 - pa->x0, pa->y1 - pa->y0);
    size_t n = ticks(&pa->ay, t);
    for (size_t i = 0; i < n; i++) {
        const double y = pos(&pa->ay, t[i]);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
                pa->x0, y, pa->x1, y);
        sr_svg_num(t[i], lbl, sizeof(lbl));
        sr_svg_text(f, pa->x0 - 6, y + 4, "tick", "text-anchor=\"end\" fill=\"" SR_SVG_DIM "\"",
                    lbl);
    }
    n = ticks(&pa->ax, t);
    for (size_t i = 0; i < n; i++) {
        const double x = pos(&pa->ax, t[i]);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n", x,
                pa->y0, x, pa->y1 + 4);
        sr_svg_num(t[i], lbl, sizeof(lbl));
        sr_svg_text(f, x, pa->y1 + 16, "tick", "text-anchor=\"middle\" fill=\"" SR_SVG_DIM "\"",
                    lbl);
    }
    axis_name(&pa->ax, "to the left", name, sizeof(name));
    sr_svg_text(f, (pa->x0 + pa->x1) / 2, pa->y1 + 34, "axis-label x-label",
                "text-anchor=\"middle\" fill=\"" SR_SVG_TEXT "\"", name);
    axis_name(&pa->ay, "downwards", name, sizeof(name));
    const double ym = (pa->y0 + pa->y1) / 2, xl = pa->x0 - 62;
    snprintf(attrs, sizeof(attrs),
             "text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\" fill=\"" SR_SVG_TEXT "\"",
             xl, ym);
    sr_svg_text(f, xl, ym, "axis-label y-label", attrs, name);
}

/* "trial 3 (lr=0.003141592653 width=128): loss 0.1234, size 40; on the front" */
static void point_tip(const struct sr_sweepview *v, const struct sr_sv_opts *o,
                      const struct pareto *pa, const struct point *p, char *buf, size_t len)
{
    size_t off = (size_t)snprintf(buf, len, "trial %zu (", p->t->trial);
    for (size_t i = 0; i < sr_sweep_nparams(v->sw) && off < len; i++) {
        const char *n = sr_sweep_param(v->sw, i), *x = sr_sweep_value(v->sw, p->t->trial, n);
        const int w = snprintf(buf + off, len - off, "%s%s=%s", i ? " " : "", n, x ? x : "-");
        off += w > 0 ? (size_t)w : 0;
    }
    for (size_t j = 0; j < pa->k && off < len; j++) {
        char num[32];
        sr_svg_num(p->v[j], num, sizeof(num));
        const int w =
            snprintf(buf + off, len - off, "%s%s %s", j ? ", " : "): ", o->objective[j], num);
        off += w > 0 ? (size_t)w : 0;
    }
    if (off < len)
        snprintf(buf + off, len - off, "; %s",
                 p->front ? "on the Pareto front" : "dominated by a trial on the front");
}

static void dot(FILE *f, const char *cls, double x, double y, int front)
{
    if (front)
        fprintf(f,
                "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"" C_FRONT
                "\" stroke=\"#fff\" stroke-width=\"1\"",
                cls, x, y);
    else
        fprintf(f,
                "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"" C_DOMINATED
                "\" fill-opacity=\"0.45\"",
                cls, x, y);
}

/* One trial's point, its tooltip inside: on the front or dominated. */
static void trial_point(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o,
                        const struct pareto *pa, const struct point *p)
{
    char tip[1024];
    point_tip(v, o, pa, p, tip, sizeof(tip));
    fprintf(f, "<g class=\"pareto-trial\" data-trial=\"%zu\">", p->t->trial);
    dot(f, p->front ? "pareto-point front" : "pareto-point dominated", pos(&pa->ax, p->v[0]),
        pos(&pa->ay, p->v[1]), p->front);
    fputs(">", f);
    sr_svg_tooltip(f, tip);
    fputs("</circle></g>\n", f);
}

/* The front's points in the staircase's order: by the x objective, best
 * first, then by the y one. */
static int cmp_along(const void *a, const void *b)
{
    const struct point *p = *(const struct point *const *)a, *q = *(const struct point *const *)b;
    if (p->cx != q->cx)
        return p->cx < q->cx ? -1 : 1;
    if (p->cy != q->cy)
        return p->cy < q->cy ? -1 : 1;
    return (p->t->trial > q->t->trial) - (p->t->trial < q->t->trial);
}

/* With two objectives, the staircase through the front: from the top down
 * to its first point, right and down from each to the next, then right to
 * the edge: the boundary of what the front dominates. */
static void staircase(FILE *f, const struct pareto *pa, struct point **along, size_t n)
{
    fprintf(f,
            "<path class=\"pareto-front\" fill=\"none\" stroke=\"" C_FRONT "\" "
            "stroke-width=\"1.6\" stroke-linejoin=\"round\" d=\"M%.1f %.1f",
            pos(&pa->ax, along[0]->v[0]), pa->y0);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fprintf(f, "H%.1f", pos(&pa->ax, along[i]->v[0]));
        fprintf(f, "V%.1f", pos(&pa->ay, along[i]->v[1]));
    }
    fprintf(f, "H%.1f\">", pa->x1);
    sr_svg_tooltip(f, "the Pareto front: every trial up and to the right of this line is "
                      "dominated by one on it");
    fputs("</path>\n", f);
}

/* A label's box, to keep names apart. */
struct box {
    double x0, y0, x1, y1;
};

static int overlaps(const struct box *a, const struct box *b)
{
    return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

/* "trial N" beside each front point: below-left first (nothing lies there
 * with two objectives), else another side where it overlaps no name drawn
 * yet and stays in the plot; every one is drawn. */
static void names(FILE *f, const struct pareto *pa, struct point **along, size_t n)
{
    struct box *done = calloc(n ? n : 1, sizeof(*done));
    static const double side[][2] = {{-1, 1}, {1, -1}, {1, 1}, {-1, -1}};
    for (size_t i = 0; i < n; i++) {
        char name[32], attrs[96];
        snprintf(name, sizeof(name), "trial %zu", along[i]->t->trial);
        const double w = 6.2 * (double)strlen(name), x = pos(&pa->ax, along[i]->v[0]),
                     y = pos(&pa->ay, along[i]->v[1]);
        struct box b = {0};
        size_t s = 0;
        for (; s < sizeof(side) / sizeof(side[0]); s++) {
            const double bx = side[s][0] < 0 ? x - 7 - w : x + 7;
            const double by = side[s][1] > 0 ? y + 3 : y - 15;
            b = (struct box){bx, by, bx + w, by + 12};
            int free_ = b.x0 >= pa->x0 && b.x1 <= pa->x1 && b.y0 >= pa->y0 && b.y1 <= pa->y1;
            for (size_t k = 0; done && k < i && free_; k++)
                free_ = !overlaps(&b, &done[k]);
            if (free_)
                break;
        }
        if (s == sizeof(side) / sizeof(side[0])) { /* no free side: below-left anyway */
            s = 0;
            b = (struct box){x - 7 - w, y + 3, x - 7, y + 15};
        }
        if (done)
            done[i] = b;
        snprintf(attrs, sizeof(attrs),
                 "data-trial=\"%zu\" font-size=\"11\" font-weight=\"bold\" fill=\"" C_FRONT "\"",
                 along[i]->t->trial);
        sr_svg_text(f, b.x0, b.y1 - 2, "pareto-label", attrs, name);
    }
    free(done);
}

/* Beside the plot, the front in the staircase's order, each trial with its
 * objectives' values; as many rows as fit, the rest counted. */
static void listing(FILE *f, const struct sr_sv_opts *o, const struct pareto *pa,
                    struct point **along, size_t n)
{
    const double x = pa->x1 + 24;
    const size_t rows = (size_t)((PLOT - ROW) / ROW) - 1;
    sr_svg_text(f, x, pa->y0 + 10, "pareto-head", "font-weight=\"bold\" fill=\"" C_FRONT "\"",
                "on the front:");
    for (size_t i = 0; i < n && i < rows; i++) {
        char line[256], attrs[64];
        size_t off = (size_t)snprintf(line, sizeof(line), "trial %zu:", along[i]->t->trial);
        for (size_t j = 0; j < pa->k && off < sizeof(line); j++) {
            char num[32];
            sr_svg_num(along[i]->v[j], num, sizeof(num));
            const int w = snprintf(line + off, sizeof(line) - off, "%s %s %s", j ? "," : "",
                                   o->objective[j], num);
            off += w > 0 ? (size_t)w : 0;
        }
        if (strlen(line) > ROW_CHARS)
            memcpy(line + ROW_CHARS - 3, "...", 4);
        snprintf(attrs, sizeof(attrs), "data-trial=\"%zu\" font-size=\"11\" fill=\"" C_FRONT "\"",
                 along[i]->t->trial);
        sr_svg_text(f, x, pa->y0 + 10 + (double)(i + 1) * ROW, "pareto-row", attrs, line);
    }
    if (n > rows) {
        char line[96];
        snprintf(line, sizeof(line), "... %zu more (sweep show --json: \"pareto\")", n - rows);
        sr_svg_text(f, x, pa->y0 + 10 + (double)(rows + 1) * ROW, "pareto-more",
                    "font-size=\"11\" fill=\"" SR_SVG_DIM "\"", line);
    }
}

static void legend(FILE *f, const struct pareto *pa, double y)
{
    char name[160];
    double x = pa->x0;
    fprintf(f, "<g class=\"pareto-legend\">\n<g class=\"legend-item\">");
    if (pa->k == 2)
        fprintf(f,
                "<path class=\"legend-swatch\" d=\"M%.1f %.1fh10v8h12\" fill=\"none\" "
                "stroke=\"" C_FRONT "\" stroke-width=\"1.6\"/>",
                x, y - 8);
    dot(f, "legend-swatch", x + 10, y - 4, 1);
    fputs("/>", f);
    snprintf(name, sizeof(name), "on the Pareto front (%zu)%s", pa->n_front,
             pa->k == 2 ? ", joined by the staircase of what it dominates" : "");
    sr_svg_text(f, x + 28, y, "legend-label", "fill=\"" SR_SVG_TEXT "\"", name);
    fprintf(f, "</g>\n");
    x += 28 + 6.8 * (double)strlen(name) + 20;
    fprintf(f, "<g class=\"legend-item\">");
    dot(f, "legend-swatch", x + 6, y - 4, 0);
    fputs("/>", f);
    snprintf(name, sizeof(name), "dominated (%zu)", pa->n - pa->n_front);
    sr_svg_text(f, x + 16, y, "legend-label", "fill=\"" SR_SVG_TEXT "\"", name);
    fprintf(f, "</g>\n</g>\n");
}

double sr_sv_pareto_svg(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o,
                        double top, double width)
{
    struct pareto pa;
    if (build(v, o, &pa) != 0)
        return 0;
    const double height = HEAD + TITLE + LEG + PLOT + BOTTOM;
    struct point **along = f ? calloc(pa.n_front ? pa.n_front : 1, sizeof(*along)) : NULL;
    if (!f || !along) {
        free(pa.p);
        return f ? 0 : height;
    }
    pa.x0 = PL;
    pa.x1 = width - PR;
    pa.y0 = top + HEAD + TITLE + LEG;
    pa.y1 = pa.y0 + PLOT;
    pa.ax.p0 = pa.x0;
    pa.ax.p1 = pa.x1;
    pa.ay.p0 = pa.y1;
    pa.ay.p1 = pa.y0;

    fprintf(f, "<g class=\"pareto\" data-x=\"");
    sr_svg_escape(f, pa.ax.metric);
    fprintf(f, "\" data-y=\"");
    sr_svg_escape(f, pa.ay.metric);
    fprintf(f, "\">\n");
    char line[SR_SWEEP_OBJECTIVES_MAX * (SR_HIST_METRIC_NAME_MAX + 8) + 256];
    size_t off = (size_t)snprintf(line, sizeof(line), "Pareto front: ");
    for (size_t j = 0; j < pa.k && off < sizeof(line); j++) {
        const int w =
            snprintf(line + off, sizeof(line) - off, "%s%s (%s)",
                     !j              ? ""
                     : j + 1 == pa.k ? " and "
                                     : ", ",
                     o->objective[j], sr_sv_maximized(o, o->objective[j]) ? "max" : "min");
        off += w > 0 ? (size_t)w : 0;
    }
    sr_svg_text(f, 20, top + 22, "pareto-title",
                "font-size=\"15\" font-weight=\"bold\" fill=\"" SR_SVG_TEXT "\"", line);
    snprintf(line, sizeof(line),
             "%s values of %zu done trial%s, %zu on the front; better is towards the lower left%s",
             sr_sv_best_rule(o), pa.n, pa.n == 1 ? "" : "s", pa.n_front,
             pa.k > 2 ? "; the front is by every objective, drawn by the first two" : "");
    if (pa.unranked) {
        char more[96];
        snprintf(more, sizeof(more), "; %zu done trial%s without every objective not drawn",
                 pa.unranked, pa.unranked == 1 ? "" : "s");
        snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s", more);
    }
    sr_svg_text(f, PL, top + HEAD + 14, "pareto-subtitle", "fill=\"" SR_SVG_DIM "\"", line);
    legend(f, &pa, top + HEAD + TITLE + 14);
    axes(f, &pa);

    size_t m = 0;
    for (size_t i = 0; i < pa.n; i++) { /* the dominated under the front */
        if (pa.p[i].front)
            along[m++] = &pa.p[i];
        else
            trial_point(f, v, o, &pa, &pa.p[i]);
    }
    qsort(along, m, sizeof(*along), cmp_along);
    if (pa.k == 2 && m)
        staircase(f, &pa, along, m);
    for (size_t i = 0; i < m; i++)
        trial_point(f, v, o, &pa, along[i]);
    names(f, &pa, along, m);
    listing(f, o, &pa, along, m);
    fprintf(f, "</g>\n");
    free(along);
    free(pa.p);
    return height;
}
