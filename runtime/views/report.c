/*
 * report.c - the timeline picture of a run (see report.h).
 *
 * One lane per attempt, grouped by session (one wrapper process on one
 * node; lanes of a session share a background band). Time runs left to
 * right over the whole run, from the first event to the last. Everything is
 * plain SVG 1.1 (rect, line, path, text, a pattern), so browsers, rsvg and
 * the README render it alike; each element carries a class naming what it
 * shows (segment, restore, lost, ckpt staged/durable, notice, restart, exit)
 * and a <title> tooltip. Below the lanes, the job's metrics over steps
 * (metricplot.h), when it reported any.
 */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"
#include "manifest.h"
#include "metricplot.h"
#include "summary.h"
#include "svg.h"
#include "units.h"

#define W 1100.0
#define LEFT 200.0
#define RIGHT 70.0
#define TOP 110.0
#define LANE 50.0
#define BAR 16.0

static double lane_y(size_t i)
{
    return TOP + (double)i * LANE + LANE / 2;
}

static void head(FILE *f, const char *run_id, const struct sr_history *h, double height)
{
    sr_svg_begin(f, W, height);
    char title[512], lost[32], wall[32];
    sr_format_duration_ms(h->lost_ms, lost, sizeof(lost));
    sr_format_duration_ms(h->wall_ms, wall, sizeof(wall));
    snprintf(title, sizeof(title), "spotrun run %s: %s", run_id, sr_hist_state_name(h->state));
    sr_svg_text(f, 20, 28, "title",
                "font-size=\"18\" font-weight=\"bold\" fill=\"" SR_SVG_TEXT "\"", title);
    snprintf(title, sizeof(title),
             "%zu attempt(s) on %u node session(s) over %s; %u preemption(s), %u failure(s), "
             "%u restart(s); %u checkpoint(s) durable; lost work %s",
             h->n_att, h->sessions, wall, h->preemptions, h->failures, h->restarts, h->durable,
             lost);
    /* the work a sweep dropped (pruned, cancelled) is no loss: its own figure */
    if (h->pruned_ms || h->cancelled_ms) {
        const size_t n = strlen(title);
        sr_format_duration_ms(h->pruned_ms ? h->pruned_ms : h->cancelled_ms, lost, sizeof(lost));
        snprintf(title + n, sizeof(title) - n, "; %s work %s",
                 h->pruned_ms ? "pruned" : "cancelled", lost);
    }
    sr_svg_text(f, 20, 50, "subtitle", "fill=\"" SR_SVG_DIM "\"", title);
}

/* Each cause's colour (docs/events.md's vocabulary): the mark at the end
 * of an attempt's segment, its label and the legend's second row. */
static const char *cause_color(enum sr_hist_cause c)
{
    static const char *const colors[SR_CAUSE_COUNT] = {
        [SR_CAUSE_NONE] = SR_SVG_DIM,         [SR_CAUSE_DONE] = SR_SVG_CKPT,
        [SR_CAUSE_PREEMPTED] = SR_SVG_NOTICE, [SR_CAUSE_VANISHED] = "#9d755d",
        [SR_CAUSE_CRASHED] = SR_SVG_LOST,     [SR_CAUSE_OOM] = "#b279a2",
        [SR_CAUSE_STALLED] = "#c9a100",       [SR_CAUSE_TIME_LIMIT] = "#2a9d8f",
        [SR_CAUSE_BUDGET] = "#d6608a",        [SR_CAUSE_LEASE_LOST] = "#8c8c8c",
        [SR_CAUSE_PRUNED] = "#6b6ecf",        [SR_CAUSE_CANCELLED] = "#5c5c5c",
        [SR_CAUSE_PAUSED] = "#7aa6c2",        [SR_CAUSE_EXPLOIT] = "#c2a5cf",
        [SR_CAUSE_QUOTA] = "#e07b39",
    };
    return (unsigned)c < SR_CAUSE_COUNT ? colors[c] : SR_SVG_DIM;
}

/* The second legend row: how attempts ended, one swatch per cause the run
 * has, with its count. */
static void cause_legend(FILE *f, const struct sr_history *h)
{
    double x = 20;
    const double y = 96;
    int any = 0;
    for (int c = SR_CAUSE_DONE; c < SR_CAUSE_COUNT; c++)
        any |= h->ends[c] > 0;
    if (!any)
        return;
    fprintf(f, "<g class=\"legend causes\">\n");
    sr_svg_text(f, x, y, "legend-label", "fill=\"" SR_SVG_DIM "\"", "attempts ended:");
    x += 105;
    for (int c = SR_CAUSE_DONE; c < SR_CAUSE_COUNT; c++) {
        if (!h->ends[c])
            continue;
        char label[48];
        snprintf(label, sizeof(label), "%s %u", sr_hist_cause_name((enum sr_hist_cause)c),
                 h->ends[c]);
        fprintf(f,
                "<rect class=\"legend-cause cause-%s\" x=\"%.1f\" y=\"%.1f\" width=\"10\" "
                "height=\"10\" fill=\"%s\"/>",
                sr_hist_cause_name((enum sr_hist_cause)c), x, y - 9,
                cause_color((enum sr_hist_cause)c));
        sr_svg_text(f, x + 15, y, "legend-label", "", label);
        x += 30 + 7.5 * (double)strlen(label);
    }
    fprintf(f, "</g>\n");
}

static void legend(FILE *f)
{
    double x = 20;
    const double y = 78;
    fprintf(f, "<g class=\"legend\">\n");
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"24\" height=\"10\" fill=\"" SR_SVG_TRAIN "\"/>",
            x, y - 9);
    sr_svg_text(f, x + 30, y, "legend-label", "", "training");
    x += 100;
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"24\" height=\"10\" fill=\"" SR_SVG_RESTORE "\"/>",
            x, y - 9);
    sr_svg_text(f, x + 30, y, "legend-label", "", "restore");
    x += 95;
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"24\" height=\"10\" fill=\"url(#hatch)\" "
            "stroke=\"" SR_SVG_LOST "\"/>",
            x, y - 9);
    sr_svg_text(f, x + 30, y, "legend-label", "", "lost work");
    x += 105;
    fprintf(f, "<path d=\"M%.1f %.1fl5 -5l5 5l-5 5z\" fill=\"#fff\" stroke=\"" SR_SVG_CKPT "\"/>",
            x, y - 4);
    sr_svg_text(f, x + 16, y, "legend-label", "", "checkpoint staged");
    x += 140;
    fprintf(f, "<path d=\"M%.1f %.1fl5 -5l5 5l-5 5z\" fill=\"" SR_SVG_CKPT "\"/>", x, y - 4);
    sr_svg_text(f, x + 16, y, "legend-label", "", "durable");
    x += 85;
    fprintf(f, "<path d=\"M%.1f %.1fl12 0l-6 10z\" fill=\"" SR_SVG_NOTICE "\"/>", x, y - 10);
    sr_svg_text(f, x + 18, y, "legend-label", "", "preemption notice");
    x += 150;
    sr_svg_text(f, x, y + 1, "legend-label", "fill=\"" SR_SVG_LOST "\" font-weight=\"bold\"",
                "\xc3\x97");
    sr_svg_text(f, x + 14, y, "legend-label", "", "crash");
    x += 65;
    fprintf(f, "<path d=\"M%.1f %.1fh20\" stroke=\"" SR_SVG_DIM "\" stroke-dasharray=\"4 3\"/>", x,
            y - 4);
    sr_svg_text(f, x + 26, y, "legend-label", "", "restart / resume");
    fprintf(f, "</g>\n");
}

static void lane_label(FILE *f, const struct sr_hist_attempt *a, double y)
{
    char l1[64], l2[200];
    snprintf(l1, sizeof(l1), "attempt %" PRIu32, a->attempt);
    snprintf(l2, sizeof(l2), "%s%s%s", a->host[0] ? a->host : "?",
             a->instance_type[0] ? " \xc2\xb7 " : "", a->instance_type);
    if (strlen(l2) > 28)
        memcpy(l2 + 25, "...", 4);
    sr_svg_text(f, 20, y - 2, "lane-label", "font-weight=\"bold\" fill=\"" SR_SVG_TEXT "\"", l1);
    sr_svg_text(f, 20, y + 13, "lane-host", "font-size=\"11\" fill=\"" SR_SVG_DIM "\"", l2);
}

static void segment(FILE *f, const struct sr_svg_frame *fr, const struct sr_hist_attempt *a,
                    double y)
{
    char tip[160], d[32];
    const double xr = sr_svg_x(fr, a->first_ms), xs = sr_svg_x(fr, a->start_ms),
                 xe = sr_svg_x(fr, a->end_ms);
    if (xs - xr >= 0.5) {
        sr_format_duration_ms(a->start_ms - a->first_ms, d, sizeof(d));
        snprintf(tip, sizeof(tip), "restore: %s", d);
        fprintf(f,
                "<rect class=\"restore\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"" SR_SVG_RESTORE "\">",
                xr, y - BAR / 2, xs - xr, BAR);
        sr_svg_tooltip(f, tip);
        fputs("</rect>\n", f);
    }
    sr_format_duration_ms(a->end_ms - a->start_ms, d, sizeof(d));
    snprintf(tip, sizeof(tip), "attempt %" PRIu32 ": trained %s, %s", a->attempt, d,
             sr_hist_end_name(a->end));
    fprintf(f,
            "<rect class=\"segment %s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"" SR_SVG_TRAIN "\">",
            sr_hist_end_name(a->end), xs, y - BAR / 2, xe - xs > 1 ? xe - xs : 1, BAR);
    sr_svg_tooltip(f, tip);
    fputs("</rect>\n", f);
    if (a->cause != SR_CAUSE_NONE) { /* the end, in its cause's colour */
        if (a->cause_detail[0])
            snprintf(tip, sizeof(tip), "ended: %s (%s)", sr_hist_cause_name(a->cause),
                     a->cause_detail);
        else
            snprintf(tip, sizeof(tip), "ended: %s", sr_hist_cause_name(a->cause));
        fprintf(f,
                "<rect class=\"cause cause-%s\" x=\"%.1f\" y=\"%.1f\" width=\"4\" "
                "height=\"%.1f\" fill=\"%s\">",
                sr_hist_cause_name(a->cause), xe - 2, y - BAR / 2 - 3, BAR + 6,
                cause_color(a->cause));
        sr_svg_tooltip(f, tip);
        fputs("</rect>\n", f);
    }
    if (a->lost_ms > 0) {
        const double xb = sr_svg_x(fr, a->base_ms);
        sr_format_duration_ms(a->lost_ms, d, sizeof(d));
        snprintf(tip, sizeof(tip), "lost work: %s since the newest durable checkpoint", d);
        fprintf(f,
                "<rect class=\"lost\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"url(#hatch)\" stroke=\"" SR_SVG_LOST "\">",
                xb, y - BAR / 2 - 2, xe - xb > 1 ? xe - xb : 1, BAR + 4);
        sr_svg_tooltip(f, tip);
        fputs("</rect>\n", f);
    }
}

/* A checkpoint's diamond at (x, y), staged (hollow) or durable (filled),
 * its tooltip inside. */
static void ckpt_mark(FILE *f, const char *kind, const char *paint, double x, double y,
                      const char *tip)
{
    fprintf(f, "<path class=\"ckpt %s\" d=\"M%.1f %.1fl5 -5l5 5l-5 5z\" %s>", kind, x - 5, y,
            paint);
    sr_svg_tooltip(f, tip);
    fputs("</path>\n", f);
}

static void checkpoints(FILE *f, const struct sr_svg_frame *fr, const struct sr_history *h,
                        uint32_t attempt, double y)
{
    for (size_t i = 0; i < h->n_ck; i++) {
        const struct sr_hist_ckpt *c = &h->ck[i];
        if (c->attempt != attempt)
            continue;
        char tip[200], step[24];
        sr_format_step(c->step, step, sizeof(step));
        const double yc = y - BAR / 2 - 8;
        if (c->staged_ms && c->persisted_ms)
            fprintf(f,
                    "<line class=\"ckpt-link\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                    "stroke=\"" SR_SVG_CKPT "\"/>\n",
                    sr_svg_x(fr, c->staged_ms), yc, sr_svg_x(fr, c->persisted_ms), yc);
        if (c->staged_ms) {
            snprintf(tip, sizeof(tip), "checkpoint %" PRIu64 " (step %s) staged in %.2fs", c->seq,
                     step, c->stage_seconds);
            ckpt_mark(f, "staged", "fill=\"#fff\" stroke=\"" SR_SVG_CKPT "\"",
                      sr_svg_x(fr, c->staged_ms), yc, tip);
        }
        if (c->persisted_ms) {
            snprintf(tip, sizeof(tip), "checkpoint %" PRIu64 " (step %s) durable after %.2fs",
                     c->seq, step, c->persist_seconds);
            ckpt_mark(f, "durable", "fill=\"" SR_SVG_CKPT "\"", sr_svg_x(fr, c->persisted_ms), yc,
                      tip);
        }
    }
}

static void notices(FILE *f, const struct sr_svg_frame *fr, const struct sr_history *h,
                    uint32_t attempt, double y)
{
    for (size_t i = 0; i < h->n_no; i++) {
        const struct sr_hist_notice *n = &h->no[i];
        if (n->attempt != attempt)
            continue;
        char tip[200], left[32];
        sr_format_duration_ms(n->left_ms, left, sizeof(left));
        snprintf(tip, sizeof(tip), "preemption notice from %s: %s left", n->source, left);
        const double x = sr_svg_x(fr, n->at_ms);
        fprintf(f, "<g class=\"notice\">");
        sr_svg_tooltip(f, tip);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" SR_SVG_NOTICE
                "\" "
                "stroke-width=\"2\"/>",
                x, y - LANE / 2 + 6, x, y + BAR / 2 + 2);
        fprintf(f, "<path d=\"M%.1f %.1fl12 0l-6 10z\" fill=\"" SR_SVG_NOTICE "\"/>", x - 6,
                y - LANE / 2 + 2);
        snprintf(tip, sizeof(tip), "notice: %s", n->source);
        sr_svg_text(f, x + 8, y + BAR / 2 + 13, "notice-label",
                    "font-size=\"11\" fill=\"" SR_SVG_NOTICE "\"", tip);
        fprintf(f, "</g>\n");
    }
}

/* How the attempt ended, in its cause's colour: a cross where the job (or
 * its wrapper) died, a label where it was stopped or finished. */
static void ending(FILE *f, const struct sr_svg_frame *fr, const struct sr_hist_attempt *a,
                   double y)
{
    if (a->cause == SR_CAUSE_NONE)
        return;
    const double x = sr_svg_x(fr, a->end_ms);
    const char *name = sr_hist_cause_name(a->cause);
    char tip[200], attrs[64];
    if (a->cause == SR_CAUSE_VANISHED)
        snprintf(tip, sizeof(tip), "vanished: the wrapper or its node died");
    else if (a->cause_detail[0])
        snprintf(tip, sizeof(tip), "%s: %s", name, a->cause_detail);
    else
        snprintf(tip, sizeof(tip), "%s: the job exited 0", name);
    snprintf(attrs, sizeof(attrs), "font-size=\"11\" fill=\"%s\"", cause_color(a->cause));
    const int cross = a->cause == SR_CAUSE_CRASHED || a->cause == SR_CAUSE_OOM ||
                      a->cause == SR_CAUSE_STALLED || a->cause == SR_CAUSE_VANISHED;
    if (cross) {
        fprintf(f, "<g class=\"exit crash cause-%s\">", name);
        sr_svg_tooltip(f, tip);
        char mark[96];
        snprintf(mark, sizeof(mark),
                 "text-anchor=\"middle\" font-size=\"20\" font-weight=\"bold\" fill=\"%s\"",
                 cause_color(a->cause));
        sr_svg_text(f, x, y + 6, "exit-mark", mark, "\xc3\x97");
        sr_svg_text(f, x + 10, y + BAR / 2 + 13, "exit-label", attrs,
                    a->cause == SR_CAUSE_CRASHED || a->cause == SR_CAUSE_OOM ? tip : name);
    } else {
        fprintf(f, "<g class=\"exit %s cause-%s\">", name, name);
        sr_svg_tooltip(f, tip);
        sr_svg_text(f, x + 6, y + 4, "exit-label", attrs, name);
    }
    fprintf(f, "</g>\n");
}

/* The arrow from the end of one attempt to the start of the next. */
static void link_attempts(FILE *f, const struct sr_svg_frame *fr, const struct sr_hist_attempt *a,
                          const struct sr_hist_attempt *b, size_t i)
{
    const double x1 = sr_svg_x(fr, a->end_ms), y1 = lane_y(i) + BAR / 2;
    const double x2 = sr_svg_x(fr, b->first_ms), y2 = lane_y(i + 1) - BAR / 2;
    char tip[120], d[32];
    sr_format_duration_ms(b->first_ms - a->end_ms, d, sizeof(d));
    snprintf(tip, sizeof(tip), "%s after %s", a->restarted ? "restart" : "resume", d);
    fprintf(f,
            "<path class=\"%s\" d=\"M%.1f %.1fC%.1f %.1f %.1f %.1f %.1f %.1f\" fill=\"none\" "
            "stroke=\"" SR_SVG_DIM "\" stroke-dasharray=\"4 3\">",
            a->restarted ? "restart" : "resume", x1, y1, x1, y2, x2, y1, x2, y2);
    sr_svg_tooltip(f, tip);
    fputs("</path>\n", f);
}

void sr_report_svg(FILE *f, const char *run_id, const struct sr_history *h)
{
    struct sr_svg_frame fr = {.t0 = h->first_ms, .t1 = h->last_ms, .x0 = LEFT, .x1 = W - RIGHT};
    if (fr.t1 - fr.t0 < 1000)
        fr.t1 = fr.t0 + 1000;
    const size_t lanes = h->n_att ? h->n_att : 1;
    const double timeline = TOP + (double)lanes * LANE + 50;
    const double height = timeline + sr_metricplot_height(h);
    head(f, run_id, h, height);
    legend(f);
    cause_legend(f, h);
    for (size_t i = 0; i < h->n_att; i++)
        if (h->att[i].session % 2)
            fprintf(f,
                    "<rect class=\"session\" x=\"10\" y=\"%.1f\" width=\"%.0f\" "
                    "height=\"%.0f\" fill=\"#f3f3f3\"/>\n",
                    lane_y(i) - LANE / 2, W - 20, LANE);
    sr_svg_axis(f, &fr, TOP, TOP + (double)lanes * LANE + 6, 0, "time since start");
    if (!h->n_att)
        sr_svg_text(f, LEFT, lane_y(0), "empty", "fill=\"" SR_SVG_DIM "\"", "no attempts recorded");
    for (size_t i = 0; i < h->n_att; i++) {
        const struct sr_hist_attempt *a = &h->att[i];
        const double y = lane_y(i);
        fprintf(f,
                "<g class=\"attempt\" data-attempt=\"%" PRIu32 "\" data-session=\"%" PRIu32 "\">\n",
                a->attempt, a->session);
        lane_label(f, a, y);
        segment(f, &fr, a, y);
        checkpoints(f, &fr, h, a->attempt, y);
        notices(f, &fr, h, a->attempt, y);
        ending(f, &fr, a, y);
        if (i + 1 < h->n_att)
            link_attempts(f, &fr, a, &h->att[i + 1], i);
        fprintf(f, "</g>\n");
    }
    sr_metricplot_svg(f, h, timeline, W);
    fprintf(f, "</svg>\n");
}

struct run_text {
    const struct sr_history *h;
    const struct sr_hist_prices *p;
};

static void print_run(FILE *m, const void *ctx)
{
    const struct run_text *r = ctx;
    sr_summary_print(m, r->h, r->p);
    sr_summary_print_attempts(m, r->h);
}

void sr_report_html(FILE *f, const char *run_id, const struct sr_history *h,
                    const struct sr_hist_prices *p)
{
    const struct run_text r = {.h = h, .p = p};
    sr_svg_html_begin(f, run_id, "report", "run");
    sr_report_svg(f, run_id, h);
    sr_svg_html_end(f, print_run, &r);
}
