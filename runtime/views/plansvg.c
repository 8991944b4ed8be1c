/*
 * plansvg.c - `spotrun plan --svg FILE` (planout.h): GPU-hours per ISO
 * week stacked by team, and per group the concurrency duration curve (GPUs
 * busy against the share of the window's hours) with the reserved line.
 * Every string from the store goes through sr_svg_escape().
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planout.h"
#include "svg.h"

static const char *const palette[] = {"#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2",
                                      "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac"};
#define N_PALETTE (sizeof(palette) / sizeof(palette[0]))

#define W 760.0
#define BARS_H 300.0
#define CURVE_H 300.0
#define LEFT 70.0
#define PLOT_W 520.0

/* The index of s among the first n distinct strings of v (added when new). */
static size_t index_of(const char **v, size_t *n, const char *s)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(v[i], s) == 0)
            return i;
    v[*n] = s;
    return (*n)++;
}

static void y_axis(FILE *f, double top, double bottom, double max, const char *label)
{
    const double step = sr_svg_nice_step(max, 6);
    char buf[64];
    for (double v = 0; v <= max + 1e-9; v += step) {
        const double y = bottom - (bottom - top) * v / max;
        sr_svg_num(v, buf, sizeof(buf));
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                LEFT, y, LEFT + PLOT_W, y);
        sr_svg_text(f, LEFT - 6, y + 4, "", "text-anchor=\"end\"", buf);
    }
    fprintf(f,
            "<text x=\"14\" y=\"%.1f\" transform=\"rotate(-90 14 %.1f)\" "
            "text-anchor=\"middle\">",
            (top + bottom) / 2, (top + bottom) / 2);
    sr_svg_escape(f, label);
    fprintf(f, "</text>\n");
}

/* GPU-hours per week, a bar per week, stacked by team, a legend. */
static void weekly_bars(FILE *f, const struct sr_plan *p, double top)
{
    const size_t n = p->weekly.n;
    const char **weeks = calloc(n + 1, sizeof(*weeks)), **teams = calloc(n + 1, sizeof(*teams));
    double *sum = calloc(n + 1, sizeof(*sum));
    size_t nw = 0, nt = 0;
    double max = 0;
    for (size_t i = 0; weeks && teams && sum && i < n; i++) {
        const struct sr_stats_row *r = &p->weekly.rows[i];
        const size_t w = index_of(weeks, &nw, r->key[0]);
        index_of(teams, &nt, r->key[1]);
        sum[w] += r->gpu_h + r->gpu_unknown_h;
        max = sum[w] > max ? sum[w] : max;
    }
    sr_svg_text(f, LEFT, top + 16, "", "font-weight=\"bold\"", "GPU-hours per week, by team");
    const double y0 = top + 30, y1 = top + BARS_H - 30, slot = nw ? PLOT_W / (double)nw : 1;
    y_axis(f, y0, y1, max > 0 ? max : 1, "GPU-hours");
    memset(sum, 0, (n + 1) * sizeof(*sum));
    for (size_t i = 0; weeks && teams && sum && i < n; i++) {
        const struct sr_stats_row *r = &p->weekly.rows[i];
        const size_t w = index_of(weeks, &nw, r->key[0]), t = index_of(teams, &nt, r->key[1]);
        const double v = r->gpu_h + r->gpu_unknown_h, h = (y1 - y0) * v / (max > 0 ? max : 1);
        const double y = y1 - (y1 - y0) * sum[w] / (max > 0 ? max : 1) - h;
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">",
                LEFT + slot * (double)w + slot * 0.15, y, slot * 0.7, h, palette[t % N_PALETTE]);
        char tip[640];
        snprintf(tip, sizeof(tip), "%s %s: %.1f GPU-hours", r->key[0], r->key[1], v);
        sr_svg_tooltip(f, tip);
        fprintf(f, "</rect>\n");
        sum[w] += v;
    }
    for (size_t w = 0; w < nw; w++)
        sr_svg_text(f, LEFT + slot * ((double)w + 0.5), y1 + 16, "", "text-anchor=\"middle\"",
                    weeks[w]);
    for (size_t t = 0; t < nt; t++) {
        const double ly = y0 + 18 * (double)t;
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n",
                LEFT + PLOT_W + 20, ly - 10, palette[t % N_PALETTE]);
        sr_svg_text(f, LEFT + PLOT_W + 38, ly, "", "", teams[t]);
    }
    free(weeks);
    free(teams);
    free(sum);
}

/* GPUs busy (y) against the share of the window's hours (x), a step
 * curve filled under, and the reserved level as a dashed line. */
static void duration_curve(FILE *f, const struct sr_plan_query *q, const struct sr_plan_group *g,
                           double top)
{
    const struct sr_plan_curve *c = &g->curve;
    const double max = c->peak_gpus ? c->peak_gpus : 1, y0 = top + 30, y1 = top + CURVE_H - 40;
    char title[200], buf[64];
    snprintf(title, sizeof(title), "%s: GPUs busy at least this share of the hours", g->name);
    sr_svg_text(f, LEFT, top + 16, "", "font-weight=\"bold\"", title);
    y_axis(f, y0, y1, max, "GPUs busy");
    for (int pct = 0; pct <= 100; pct += 20) {
        snprintf(buf, sizeof(buf), "%d%%", pct);
        sr_svg_text(f, LEFT + PLOT_W * pct / 100.0, y1 + 16, "", "text-anchor=\"middle\"", buf);
    }
#define PX(s) (LEFT + PLOT_W * (s))
#define PY(l) (y1 - (y1 - y0) * (double)(l) / max)
    fprintf(f, "<path fill=\"" SR_SVG_RESTORE "\" stroke=\"" SR_SVG_TRAIN "\" d=\"M%.1f %.1f",
            PX(0.0), PY(0));
    for (unsigned L = c->peak_gpus; L >= 1; L--) {
        const double from = L < c->peak_gpus ? c->share[L + 1] : 0;
        fprintf(f, " L%.1f %.1f L%.1f %.1f", PX(from), PY(L), PX(c->share[L]), PY(L));
    }
    fprintf(f, " L%.1f %.1f Z\"/>\n", PX(c->peak_gpus ? c->share[1] : 0.0), PY(0));
    if (q->reserved > 0) {
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" SR_SVG_LOST
                "\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>\n",
                PX(0.0), PY(g->reserve), PX(1.0), PY(g->reserve));
        snprintf(buf, sizeof(buf), "reserved: %u GPUs", g->reserve);
        sr_svg_text(f, PX(1.0) + 8, PY(g->reserve) + 4, "", "", buf);
    }
#undef PX
#undef PY
    sr_svg_text(f, LEFT + PLOT_W / 2, y1 + 30, "", "text-anchor=\"middle\"",
                "share of the window's hours");
}

int sr_plan_svg(FILE *f, const struct sr_plan_query *q, const struct sr_plan *p)
{
    const double h = BARS_H + CURVE_H * (double)p->n_groups;
    sr_svg_begin(f, W, h);
    weekly_bars(f, p, 0);
    for (size_t i = 0; i < p->n_groups; i++)
        duration_curve(f, q, &p->groups[i], BARS_H + CURVE_H * (double)i);
    fprintf(f, "</svg>\n");
    return ferror(f) ? -1 : 0;
}
