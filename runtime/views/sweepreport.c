/*
 * sweepreport.c - the picture of a sweep (see sweepreport.h).
 *
 * Lanes are small (LANE px) so that 100 trials make a picture of about
 * 1,600 px that scrolls; the SVG grows downwards with the trials. Each
 * element carries a class naming what it shows (trial, attempt <outcome>,
 * notice, restart, resume, done-mark, fail-mark, queued) and a <title>
 * tooltip. An attempt still running is drawn up to now.
 */
#include "sweepreport.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "summary.h"
#include "svg.h"
#include "units.h"

#define W 1200.0
#define LEFT 280.0
#define RIGHT 40.0
#define TOP 96.0
#define LANE 16.0
#define BAR 10.0
#define LABEL_MAX 44 /* characters of a lane's label */

#define C_PREEMPTED "#ffbf79"
#define C_DONE SR_SVG_CKPT
#define C_FAILED SR_SVG_LOST
#define C_RUNNING SR_SVG_TRAIN

/* How an attempt is drawn: its outcome's class and color. */
static const char *outcome(const struct sr_sv_trial *t, const struct sr_hist_attempt *a,
                           const char **color)
{
    switch (a->end) {
    case SR_END_DONE:
        *color = C_DONE;
        return "done";
    case SR_END_CRASHED:
    case SR_END_FAILED:
        *color = C_FAILED;
        return a->end == SR_END_CRASHED ? "crashed" : "failed";
    case SR_END_STOPPED:
        *color = SR_SVG_DIM;
        return "stopped";
    case SR_END_OPEN:
        if (t->state == SR_SV_RUNNING) {
            *color = C_RUNNING;
            return "running";
        }
        break; /* its wrapper is gone: the trial is preempted */
    default:
        break;
    }
    *color = C_PREEMPTED;
    return "preempted";
}

static double lane_y(size_t i)
{
    return TOP + (double)i * LANE + LANE / 2;
}

static void head(FILE *f, const struct sr_sweepview *v, double height)
{
    sr_svg_begin(f, W, height);
    char line[512], when[32];
    snprintf(line, sizeof(line), "spotrun sweep %s: %zu trial%s", v->sw->name, v->n,
             v->n == 1 ? "" : "s");
    sr_svg_text(f, 20, 28, "title",
                "font-size=\"18\" font-weight=\"bold\" fill=\"" SR_SVG_TEXT "\"", line);
    sr_format_iso_ms(v->first_ms, when, sizeof(when));
    snprintf(line, sizeof(line),
             "%u queued, %u running, %u preempted, %u done, %u failed, %u stopped, %u "
             "cancelled, %u pruned%s; %.4f instance-hours; first start %s (times UTC)",
             v->counts[SR_SV_QUEUED], v->counts[SR_SV_RUNNING], v->counts[SR_SV_PREEMPTED],
             v->counts[SR_SV_DONE], v->counts[SR_SV_FAILED], v->counts[SR_SV_STOPPED],
             v->counts[SR_SV_CANCELLED], v->counts[SR_SV_PRUNED], v->steer.paused ? "; paused" : "",
             (double)v->instance_ms / 3600000.0, v->first_ms ? when : "-");
    sr_svg_text(f, 20, 50, "subtitle", "fill=\"" SR_SVG_DIM "\"", line);
}

static void legend(FILE *f)
{
    static const struct {
        const char *color, *name;
    } items[] = {{C_DONE, "done"},
                 {C_PREEMPTED, "preempted"},
                 {C_FAILED, "failed / crashed"},
                 {C_RUNNING, "running"}};
    double x = 20;
    const double y = 76;
    fprintf(f, "<g class=\"legend\">\n");
    for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"24\" height=\"10\" fill=\"%s\"/>", x, y - 9,
                items[i].color);
        sr_svg_text(f, x + 30, y, "legend-label", "", items[i].name);
        x += 50 + 7.0 * (double)strlen(items[i].name);
    }
    fprintf(f, "<path d=\"M%.1f %.1fl10 0l-5 8z\" fill=\"" SR_SVG_NOTICE "\"/>", x, y - 9);
    sr_svg_text(f, x + 16, y, "legend-label", "", "notice");
    x += 75;
    fprintf(f, "<path d=\"M%.1f %.1fv12\" stroke=\"" SR_SVG_DIM "\" stroke-dasharray=\"2 2\"/>", x,
            y - 10);
    sr_svg_text(f, x + 8, y, "legend-label", "", "restart / resume");
    fprintf(f, "</g>\n");
}

static void lane_label(FILE *f, const struct sr_sweepview *v, const struct sr_sv_trial *t, double y)
{
    char label[512];
    size_t off = (size_t)snprintf(label, sizeof(label), "%zu ", t->trial);
    for (size_t i = 0; i < sr_sweep_nparams(v->sw) && off < sizeof(label); i++) {
        const char *p = sr_sweep_param(v->sw, i), *val = sr_sweep_value(v->sw, t->trial, p);
        const int w = snprintf(label + off, sizeof(label) - off, " %s=%s", p, val ? val : "-");
        if (w < 0)
            break;
        off += (size_t)w;
    }
    if (strlen(label) > LABEL_MAX)
        memcpy(label + LABEL_MAX - 3, "...", 4);
    sr_svg_text(f, 20, y + 4, "lane-label", "font-size=\"11\" fill=\"" SR_SVG_TEXT "\"", label);
}

static void attempt_bar(FILE *f, const struct sr_svg_frame *fr, const struct sr_sweepview *v,
                        const struct sr_sv_trial *t, const struct sr_hist_attempt *a, double y)
{
    const char *color;
    const char *cls = outcome(t, a, &color);
    const int64_t end =
        strcmp(cls, "running") == 0 && v->now_ms > a->end_ms ? v->now_ms : a->end_ms;
    const double x0 = sr_svg_x(fr, a->first_ms), x1 = sr_svg_x(fr, end);
    char tip[512], d[32];
    sr_format_duration_ms(end - a->first_ms, d, sizeof(d));
    /* its cause too (docs/events.md): "crashed, oom (SIGKILL, signal 9)" */
    char why[200] = "";
    if (a->cause != SR_CAUSE_NONE)
        snprintf(why, sizeof(why), ", %s%s%s%s", sr_hist_cause_name(a->cause),
                 a->cause_detail[0] ? " (" : "", a->cause_detail, a->cause_detail[0] ? ")" : "");
    snprintf(tip, sizeof(tip), "trial %zu attempt %" PRIu32 " on %s: %s, %s%s", t->trial,
             a->attempt, a->host[0] ? a->host : "?", d, cls, why);
    fprintf(f,
            "<rect class=\"attempt %s%s%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
            "height=\"%.1f\" fill=\"%s\">",
            cls, a->cause != SR_CAUSE_NONE ? " cause-" : "", sr_hist_cause_name(a->cause), x0,
            y - BAR / 2, x1 - x0 > 1 ? x1 - x0 : 1, BAR, color);
    sr_svg_tooltip(f, tip);
    fputs("</rect>\n", f);
    if (a->end == SR_END_DONE) {
        fprintf(f,
                "<path class=\"done-mark\" d=\"M%.1f %.1fl4 -4l4 4l-4 4z\" fill=\"" C_DONE "\" "
                "stroke=\"#fff\">",
                x1 + 1, y);
        sr_svg_tooltip(f, "done: the job exited 0");
        fputs("</path>\n", f);
    } else if (a->end == SR_END_FAILED) {
        fprintf(f, "<g class=\"fail-mark\">");
        snprintf(tip, sizeof(tip), "failed: %s",
                 t->run->has_end && t->run->end.cause[0] ? t->run->end.cause : "gave up");
        sr_svg_tooltip(f, tip);
        sr_svg_text(f, x1 + 5, y + 4, "exit-mark",
                    "text-anchor=\"middle\" font-size=\"12\" font-weight=\"bold\" "
                    "fill=\"" C_FAILED "\"",
                    "\xc3\x97");
        fputs("</g>\n", f);
    }
}

static void notices(FILE *f, const struct sr_svg_frame *fr, const struct sr_history *h, double y)
{
    for (size_t i = 0; i < h->n_no; i++) {
        char tip[160], left[32];
        sr_format_duration_ms(h->no[i].left_ms, left, sizeof(left));
        snprintf(tip, sizeof(tip), "preemption notice from %s: %s left", h->no[i].source, left);
        fprintf(f, "<path class=\"notice\" d=\"M%.1f %.1fl8 0l-4 6z\" fill=\"" SR_SVG_NOTICE "\">",
                sr_svg_x(fr, h->no[i].at_ms) - 4, y - LANE / 2);
        sr_svg_tooltip(f, tip);
        fputs("</path>\n", f);
    }
}

/* A dashed tick where attempt b starts after a: a restart (crash) or a resume. */
static void link(FILE *f, const struct sr_svg_frame *fr, const struct sr_hist_attempt *a,
                 const struct sr_hist_attempt *b, double y)
{
    char tip[120], d[32];
    sr_format_duration_ms(b->first_ms - a->end_ms, d, sizeof(d));
    snprintf(tip, sizeof(tip), "%s after %s", a->restarted ? "restart" : "resume", d);
    fprintf(f,
            "<path class=\"%s\" d=\"M%.1f %.1fv%.1f\" stroke=\"" SR_SVG_TEXT "\" "
            "stroke-dasharray=\"2 2\">",
            a->restarted ? "restart" : "resume", sr_svg_x(fr, b->first_ms), y - LANE / 2 + 1,
            LANE - 2);
    sr_svg_tooltip(f, tip);
    fputs("</path>\n", f);
}

static void lane(FILE *f, const struct sr_svg_frame *fr, const struct sr_sweepview *v,
                 const struct sr_sv_trial *t, size_t i)
{
    const double y = lane_y(i);
    fprintf(f, "<g class=\"trial\" data-trial=\"%zu\" data-state=\"%s\">\n", t->trial,
            sr_sv_state_name(t->state));
    if (i % 2 == 0)
        fprintf(f,
                "<rect class=\"band\" x=\"10\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" "
                "fill=\"#f5f5f5\"/>\n",
                y - LANE / 2, W - 20, LANE);
    lane_label(f, v, t, y);
    const struct sr_history *h = t->run ? &t->run->h : NULL;
    if (!h || h->n_att == 0)
        sr_svg_text(f, LEFT, y + 4, "queued", "font-size=\"11\" fill=\"" SR_SVG_DIM "\"",
                    sr_sv_state_name(t->state));
    for (size_t a = 0; h && a < h->n_att; a++) {
        attempt_bar(f, fr, v, t, &h->att[a], y);
        if (a > 0)
            link(f, fr, &h->att[a - 1], &h->att[a], y);
    }
    if (h)
        notices(f, fr, h, y);
    fprintf(f, "</g>\n");
}

void sr_sweepreport_svg(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o)
{
    struct sr_svg_frame fr = {.t0 = v->first_ms, .t1 = v->last_ms, .x0 = LEFT, .x1 = W - RIGHT};
    if (v->counts[SR_SV_RUNNING] && v->now_ms > fr.t1)
        fr.t1 = v->now_ms;
    if (!fr.t0)
        fr.t0 = fr.t1 = v->now_ms;
    if (fr.t1 - fr.t0 < 1000)
        fr.t1 = fr.t0 + 1000;
    const size_t lanes = v->n ? v->n : 1;
    const double chart = sr_sv_progress_svg(NULL, v, o, LEFT, W - RIGHT, 0); /* its height */
    const double height = TOP + (double)lanes * LANE + 40 + chart;
    head(f, v, height);
    legend(f);
    sr_svg_axis(f, &fr, TOP, TOP + (double)lanes * LANE + 4, 1, "UTC");
    size_t *order = calloc(lanes, sizeof(*order));
    if (order) {
        sr_sweepview_order(v, o, order);
        for (size_t i = 0; i < v->n; i++)
            lane(f, &fr, v, &v->t[order[i]], i);
    }
    free(order);
    if (chart)
        sr_sv_progress_svg(f, v, o, LEFT, W - RIGHT, TOP + (double)lanes * LANE + 40);
    fprintf(f, "</svg>\n");
}

struct sweep_text {
    const struct sr_sweepview *v;
    const struct sr_sv_opts *o;
};

static void print_sweep(FILE *m, const void *ctx)
{
    const struct sweep_text *t = ctx;
    sr_sweepview_print(m, t->v, t->o);
}

void sr_sweepreport_html(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o)
{
    const struct sweep_text t = {.v = v, .o = o};
    sr_svg_html_begin(f, v->sw->name, "sweep report", "sweep");
    sr_sweepreport_svg(f, v, o);
    sr_svg_html_end(f, print_sweep, &t);
}
