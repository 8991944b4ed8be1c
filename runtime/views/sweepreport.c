/*
 * sweepreport.c - the picture of a sweep (see sweepreport.h).
 *
 * Lanes are small (LANE px) so that 100 trials make a picture of about
 * 1,600 px that scrolls; the SVG grows downwards with the trials. Each
 * element carries a class naming what it shows (trial, attempt <look>,
 * notice, restart, resume, done-mark, fail-mark, queued, steer-mark
 * steer-<action>, paused-span, exploit) and a <title> tooltip. A PBT
 * exploit is an arrow from the donor's lane to the trial's at the time of
 * the decision, labelled with the parameters the trial goes on with. An attempt still
 * running is drawn up to now. The legend names what this picture draws,
 * and only that: every color on the lanes, every mark. Numbers are printed
 * in 4 significant digits (sr_svg_num); a lane's label keeps its
 * parameters' full values in its tooltip.
 */
#include "sweepreport.h"
#include "sweepcurves.h"
#include "sweepparetosvg.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "summary.h"
#include "svg.h"
#include "units.h"

#define W 1200.0
#define LEFT 280.0
#define RIGHT 40.0
#define LANE 16.0
#define BAR 10.0
#define LABEL_MAX 44     /* characters of a lane's label */
#define LEGEND_Y 76.0    /* the legend's first row (text baseline) */
#define LEGEND_ROW 20.0  /* and each further row */
#define ABOVE_LANES 26.0 /* between the legend and the lanes: the pauses' labels */

#define C_STEER SR_SVG_TEXT /* the operator's marks */

const struct sr_sr_look_info sr_sr_looks[SR_LOOK_COUNT] = {
    [SR_LOOK_DONE] = {"done", SR_SVG_CKPT, "done"},
    [SR_LOOK_RUNNING] = {"running", SR_SVG_TRAIN, "running"},
    [SR_LOOK_PREEMPTED] = {"preempted", "#ffbf79", "preempted"},
    [SR_LOOK_FAILED] = {"failed", SR_SVG_LOST, "failed / crashed"},
    [SR_LOOK_PRUNED] = {"pruned", "#bab0ac", "pruned (early stopping)"},
    [SR_LOOK_CANCELLED] = {"cancelled", "#b279a2", "cancelled"},
    [SR_LOOK_PAUSED] = {"paused", "#72b7b2", "stopped by a pause"},
    [SR_LOOK_STOPPED] = {"stopped", "#9d755d", "stopped at a limit"},
    [SR_LOOK_EXPLOITED] = {"exploited", "#c2a5cf",
                           "exploited (PBT): went on from another's checkpoint"},
};

enum sr_sr_look sr_sweepreport_look(const struct sr_sv_trial *t, const struct sr_hist_attempt *a)
{
    switch (a->end) {
    case SR_END_DONE:
        return SR_LOOK_DONE;
    case SR_END_CRASHED:
    case SR_END_FAILED:
        return SR_LOOK_FAILED;
    case SR_END_STOPPED:
        return a->cause == SR_CAUSE_PRUNED      ? SR_LOOK_PRUNED
               : a->cause == SR_CAUSE_CANCELLED ? SR_LOOK_CANCELLED
               : a->cause == SR_CAUSE_PAUSED    ? SR_LOOK_PAUSED
               : a->cause == SR_CAUSE_EXPLOIT   ? SR_LOOK_EXPLOITED
                                                : SR_LOOK_STOPPED;
    case SR_END_OPEN:
        if (t->state == SR_SV_RUNNING)
            return SR_LOOK_RUNNING;
        break; /* its wrapper is gone: the trial is preempted */
    default:
        break;
    }
    return SR_LOOK_PREEMPTED;
}

enum sr_sr_look sr_sweepreport_trial_look(const struct sr_sv_trial *t)
{
    const struct sr_history *h = t->run ? &t->run->h : NULL;
    if (!h || !h->n_att)
        return SR_LOOK_COUNT;
    return sr_sweepreport_look(t, &h->att[h->n_att - 1]);
}

/* ---- marks ------------------------------------------------------------------- */

/* What the legend may show, beside the looks (bits after SR_LOOK_COUNT). */
enum mark {
    M_NOTICE = SR_LOOK_COUNT,
    M_LINK,   /* restart / resume */
    M_PAUSED, /* a span the sweep was paused */
    M_CANCEL, /* steering marks on a trial's lane */
    M_STOP,   /* pause --stop reaching a running trial */
    M_PRIORITY,
    M_RETRY,
    M_EXPLOIT, /* PBT: a trial takes another's checkpoint */
    M_COUNT
};

#define C_EXPLOIT "#7b3294"

/* An arrow from (x, y0) to (x, y1), the head at y1. */
static void draw_exploit(FILE *f, const char *cls, double x, double y0, double y1)
{
    const double dir = y1 > y0 ? 1 : -1;
    fprintf(f,
            "<path class=\"%s\" d=\"M%.1f %.1fL%.1f %.1fm-3.5 %.1fl3.5 %.1fl3.5 %.1f\" "
            "stroke=\"" C_EXPLOIT "\" stroke-width=\"1.5\" fill=\"none\">",
            cls, x, y0, x, y1, -5 * dir, 5 * dir, -5 * dir);
}

static void draw_done_mark(FILE *f, const char *cls, double x, double y)
{
    fprintf(f, "<path class=\"%s\" d=\"M%.1f %.1fl4 -4l4 4l-4 4z\" fill=\"%s\" stroke=\"#fff\">",
            cls, x, y, sr_sr_looks[SR_LOOK_DONE].color);
}

static void draw_fail_mark(FILE *f, const char *cls, double x, double y)
{
    fprintf(f,
            "<path class=\"%s\" d=\"M%.1f %.1fl7 7m0 -7l-7 7\" stroke=\"%s\" "
            "stroke-width=\"2.2\" fill=\"none\">",
            cls, x + 1.5, y - 3.5, sr_sr_looks[SR_LOOK_FAILED].color);
}

static void draw_notice(FILE *f, const char *cls, double x, double y)
{
    fprintf(f, "<path class=\"%s\" d=\"M%.1f %.1fl8 0l-4 6z\" fill=\"" SR_SVG_NOTICE "\">", cls,
            x - 4, y);
}

static void draw_link(FILE *f, const char *cls, double x, double y, double h)
{
    fprintf(f,
            "<path class=\"%s\" d=\"M%.1f %.1fv%.1f\" stroke=\"" SR_SVG_TEXT "\" "
            "stroke-dasharray=\"2 2\">",
            cls, x, y, h);
}

/* The operator's marks, centred on (x, y): cancel a square (stop), pause
 * --stop two bars, priority a triangle up, retry a ring. */
static void draw_steer(FILE *f, enum mark m, const char *cls, double x, double y)
{
    switch (m) {
    case M_CANCEL:
        fprintf(f, "<path class=\"%s\" d=\"M%.1f %.1fh8v8h-8z\"", cls, x - 4, y - 4);
        break;
    case M_STOP:
        fprintf(f, "<path class=\"%s\" d=\"M%.1f %.1fh3v10h-3zM%.1f %.1fh3v10h-3z\"", cls, x - 4,
                y - 5, x + 1, y - 5);
        break;
    case M_PRIORITY:
        fprintf(f, "<path class=\"%s\" d=\"M%.1f %.1fl5 9h-10z\"", cls, x, y - 5);
        break;
    default: /* M_RETRY */
        fprintf(f,
                "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"none\" "
                "stroke=\"" C_STEER "\" stroke-width=\"2\">",
                cls, x, y);
        return;
    }
    fprintf(f, " fill=\"" C_STEER "\" stroke=\"#fff\" stroke-width=\"0.8\">");
}

static void draw_span(FILE *f, const char *cls, double x, double y, double w, double h)
{
    fprintf(f,
            "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"%s\" fill-opacity=\"0.18\" stroke=\"%s\" stroke-opacity=\"0.6\" "
            "pointer-events=\"none\">",
            cls, x, y, w, h, sr_sr_looks[SR_LOOK_PAUSED].color, sr_sr_looks[SR_LOOK_PAUSED].color);
}

static const char *steer_class(enum mark m)
{
    return m == M_CANCEL     ? "steer-mark steer-cancel"
           : m == M_STOP     ? "steer-mark steer-pause"
           : m == M_PRIORITY ? "steer-mark steer-priority"
                             : "steer-mark steer-retry";
}

static enum mark steer_mark(enum sr_steer_action a)
{
    return a == SR_STEER_CANCEL ? M_CANCEL : a == SR_STEER_RETRY ? M_RETRY : M_PRIORITY;
}

/* ---- what is drawn ----------------------------------------------------------- */

struct sweep_draw {
    const struct sr_sweepview *v;
    struct sr_svg_frame fr;
    double lanes_top, lanes_bottom;
    unsigned char used[M_COUNT];
};

static int64_t attempt_end(const struct sweep_draw *d, const struct sr_sv_trial *t,
                           const struct sr_hist_attempt *a)
{
    if (sr_sweepreport_look(t, a) == SR_LOOK_RUNNING && d->v->now_ms > a->end_ms)
        return d->v->now_ms;
    return a->end_ms;
}

/* Whether an attempt of trial t was running at unix ms at (the lanes a
 * pause --stop reached). */
static int running_at(const struct sweep_draw *d, const struct sr_sv_trial *t, int64_t at)
{
    const struct sr_history *h = t->run ? &t->run->h : NULL;
    for (size_t i = 0; h && i < h->n_att; i++)
        if (h->att[i].first_ms <= at && at <= attempt_end(d, t, &h->att[i]))
            return 1;
    return 0;
}

static int steer_on_lanes(enum sr_steer_action a)
{
    return a == SR_STEER_CANCEL || a == SR_STEER_RETRY || a == SR_STEER_PRIORITY;
}

/* What the picture holds: d->used[] (the legend's entries), the frame. */
static void survey(struct sweep_draw *d)
{
    const struct sr_sweepview *v = d->v;
    const struct sr_steer_state *s = &v->steer;
    d->fr = (struct sr_svg_frame){.t0 = v->first_ms, .t1 = v->last_ms, .x0 = LEFT, .x1 = W - RIGHT};
    if (v->counts[SR_SV_RUNNING] && v->now_ms > d->fr.t1)
        d->fr.t1 = v->now_ms;
    for (size_t k = 0; k < v->n; k++) {
        const struct sr_sv_trial *t = &v->t[k];
        const struct sr_history *h = t->run ? &t->run->h : NULL;
        for (size_t i = 0; h && i < h->n_att; i++) {
            d->used[sr_sweepreport_look(t, &h->att[i])] = 1;
            d->used[M_LINK] |= i > 0;
        }
        d->used[M_NOTICE] |= h && h->n_no > 0;
        d->used[M_EXPLOIT] |= json_array_size(t->lineage) > 0;
    }
    /* the steering: its times are in the frame */
    for (size_t i = 0; i < s->n_log; i++) {
        const struct sr_steer_entry *e = &s->log[i];
        if (!d->fr.t0 || e->unix_ms < d->fr.t0)
            d->fr.t0 = e->unix_ms;
        if (e->unix_ms > d->fr.t1)
            d->fr.t1 = e->unix_ms;
        if (steer_on_lanes(e->action))
            d->used[steer_mark(e->action)] |= e->n_trials > 0;
        if (e->action == SR_STEER_PAUSE)
            d->used[M_PAUSED] = 1;
    }
    if (s->paused && v->now_ms > d->fr.t1) /* paused still: up to now */
        d->fr.t1 = v->now_ms;
    if (!d->fr.t0)
        d->fr.t0 = d->fr.t1 = v->now_ms;
    if (d->fr.t1 - d->fr.t0 < 1000)
        d->fr.t1 = d->fr.t0 + 1000;
    for (size_t i = 0; i < s->n_log; i++) /* a pause --stop reaching a running trial */
        for (size_t k = 0; s->log[i].action == SR_STEER_PAUSE && s->log[i].stop && k < v->n; k++)
            d->used[M_STOP] |= running_at(d, &v->t[k], s->log[i].unix_ms);
}

/* ---- the head and the legend ------------------------------------------------- */

static void head(FILE *f, const struct sr_sweepview *v, double height)
{
    sr_svg_begin(f, W, height);
    char line[512], when[32], hours[32];
    snprintf(line, sizeof(line), "spotrun sweep %s: %zu trial%s", v->sw->name, v->n,
             v->n == 1 ? "" : "s");
    sr_svg_text(f, 20, 28, "title",
                "font-size=\"18\" font-weight=\"bold\" fill=\"" SR_SVG_TEXT "\"", line);
    sr_format_iso_ms(v->first_ms, when, sizeof(when));
    sr_svg_num((double)v->instance_ms / 3600000.0, hours, sizeof(hours));
    snprintf(line, sizeof(line),
             "%u queued, %u running, %u preempted, %u done, %u failed, %u stopped, %u "
             "cancelled, %u pruned%s; %s instance-hours; first start %s (times UTC)",
             v->counts[SR_SV_QUEUED], v->counts[SR_SV_RUNNING], v->counts[SR_SV_PREEMPTED],
             v->counts[SR_SV_DONE], v->counts[SR_SV_FAILED], v->counts[SR_SV_STOPPED],
             v->counts[SR_SV_CANCELLED], v->counts[SR_SV_PRUNED], v->steer.paused ? "; paused" : "",
             hours, v->first_ms ? when : "-");
    sr_svg_text(f, 20, 50, "subtitle", "fill=\"" SR_SVG_DIM "\"", line);
}

static const char *mark_name(enum mark m)
{
    static const char *const names[] = {
        [M_NOTICE] = "preemption notice",
        [M_LINK] = "restart / resume",
        [M_PAUSED] = "sweep paused",
        [M_CANCEL] = "cancel",
        [M_STOP] = "pause --stop",
        [M_PRIORITY] = "priority set",
        [M_RETRY] = "retry",
        [M_EXPLOIT] = "exploit (PBT): takes the checkpoint of the arrow's source",
    };
    return names[m];
}

/* The width of entry k's swatch (swatch() draws it). */
static double swatch_width(int k)
{
    if (k == SR_LOOK_DONE || k == SR_LOOK_FAILED)
        return 34;
    if (k < SR_LOOK_COUNT || k == M_PAUSED)
        return 24;
    return k == M_LINK ? 4 : k == M_RETRY ? 8 : k == M_EXPLOIT ? 8 : 10;
}

/* One entry's swatch at x on the row of baseline y; its width. */
static double swatch(FILE *f, int k, double x, double y)
{
    const double mid = y - 4;
    if (k < SR_LOOK_COUNT) {
        fprintf(f,
                "<rect class=\"legend-swatch look-%s\" x=\"%.1f\" y=\"%.1f\" width=\"24\" "
                "height=\"10\" fill=\"%s\"/>",
                sr_sr_looks[k].cls, x, mid - 5, sr_sr_looks[k].color);
        if (k == SR_LOOK_DONE) { /* and the mark at its end */
            draw_done_mark(f, "legend-swatch", x + 25, mid);
            fputs("</path>", f);
            return 34;
        }
        if (k == SR_LOOK_FAILED) {
            draw_fail_mark(f, "legend-swatch", x + 24, mid);
            fputs("</path>", f);
            return 34;
        }
        return 24;
    }
    switch (k) {
    case M_NOTICE:
        draw_notice(f, "legend-swatch", x + 4, mid - 4);
        fputs("</path>", f);
        return 10;
    case M_LINK:
        draw_link(f, "legend-swatch", x + 2, mid - 6, 12);
        fputs("</path>", f);
        return 4;
    case M_PAUSED:
        draw_span(f, "legend-swatch", x, mid - 6, 24, 12);
        fputs("</rect>", f);
        return 24;
    case M_RETRY:
        draw_steer(f, M_RETRY, "legend-swatch", x + 4, mid);
        fputs("</circle>", f);
        return 8;
    case M_EXPLOIT:
        draw_exploit(f, "legend-swatch", x + 4, mid - 7, mid + 6);
        fputs("</path>", f);
        return 8;
    default:
        draw_steer(f, (enum mark)k, "legend-swatch", x + 5, mid);
        fputs("</path>", f);
        return 10;
    }
}

/* The entries of d->used[] in rows; the y below its last row. */
static double legend(FILE *f, const struct sweep_draw *d)
{
    double x = 20, y = LEGEND_Y;
    int any = 0;
    if (f)
        fprintf(f, "<g class=\"legend\">\n");
    for (int k = 0; k < M_COUNT; k++) {
        if (!d->used[k])
            continue;
        const char *name = k < SR_LOOK_COUNT ? sr_sr_looks[k].name : mark_name((enum mark)k);
        const double w = swatch_width(k) + 6 + 6.8 * (double)strlen(name) + 16;
        if (any && x + w > W - 20) {
            x = 20;
            y += LEGEND_ROW;
        }
        if (f) {
            fprintf(f, "<g class=\"legend-item\">");
            const double sw = swatch(f, k, x, y);
            sr_svg_text(f, x + sw + 6, y, "legend-label", "fill=\"" SR_SVG_TEXT "\"", name);
            fprintf(f, "</g>\n");
        }
        x += w;
        any = 1;
    }
    if (f)
        fprintf(f, "</g>\n");
    return any ? y + 10 : LEGEND_Y - 10;
}

/* ---- the lanes --------------------------------------------------------------- */

static double lane_y(const struct sweep_draw *d, size_t i)
{
    return d->lanes_top + (double)i * LANE + LANE / 2;
}

/* "3 lr=0.0007363 width=64" (cut at LABEL_MAX), the full values in its tooltip. */
static void lane_label(FILE *f, const struct sr_sweepview *v, const struct sr_sv_trial *t, double y)
{
    char label[512], full[1024];
    size_t off = (size_t)snprintf(label, sizeof(label), "%zu", t->trial);
    size_t foff = (size_t)snprintf(full, sizeof(full), "trial %zu:", t->trial);
    for (size_t i = 0; i < sr_sweep_nparams(v->sw); i++) {
        const char *p = sr_sweep_param(v->sw, i), *val = sr_sweep_value(v->sw, t->trial, p);
        char shown[128];
        sr_svg_value(val ? val : "-", shown, sizeof(shown));
        if (off < sizeof(label)) {
            const int w = snprintf(label + off, sizeof(label) - off, " %s=%s", p, shown);
            off += w > 0 ? (size_t)w : 0;
        }
        if (foff < sizeof(full)) {
            const int w = snprintf(full + foff, sizeof(full) - foff, " %s=%s", p, val ? val : "-");
            foff += w > 0 ? (size_t)w : 0;
        }
    }
    if (strlen(label) > LABEL_MAX)
        memcpy(label + LABEL_MAX - 3, "...", 4);
    fprintf(f, "<g class=\"lane-label\">");
    sr_svg_tooltip(f, full);
    sr_svg_text(f, 20, y + 4, "lane-text", "font-size=\"11\" fill=\"" SR_SVG_TEXT "\"", label);
    fprintf(f, "</g>\n");
}

static void attempt_bar(FILE *f, const struct sweep_draw *d, const struct sr_sv_trial *t,
                        const struct sr_hist_attempt *a, double y)
{
    const enum sr_sr_look look = sr_sweepreport_look(t, a);
    const char *cls = a->end == SR_END_CRASHED ? "crashed" : sr_sr_looks[look].cls;
    const int64_t end = attempt_end(d, t, a);
    const double x0 = sr_svg_x(&d->fr, a->first_ms), x1 = sr_svg_x(&d->fr, end);
    char tip[512], dur[32];
    sr_format_duration_ms(end - a->first_ms, dur, sizeof(dur));
    /* its cause too (docs/events.md): "crashed, oom (SIGKILL, signal 9)" */
    char why[200] = "";
    if (a->cause != SR_CAUSE_NONE)
        snprintf(why, sizeof(why), ", %s%s%s%s", sr_hist_cause_name(a->cause),
                 a->cause_detail[0] ? " (" : "", a->cause_detail, a->cause_detail[0] ? ")" : "");
    snprintf(tip, sizeof(tip), "trial %zu attempt %" PRIu32 " on %s: %s, %s%s", t->trial,
             a->attempt, a->host[0] ? a->host : "?", dur, cls, why);
    fprintf(f,
            "<rect class=\"attempt %s%s%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
            "height=\"%.1f\" fill=\"%s\">",
            cls, a->cause != SR_CAUSE_NONE ? " cause-" : "", sr_hist_cause_name(a->cause), x0,
            y - BAR / 2, x1 - x0 > 1 ? x1 - x0 : 1, BAR, sr_sr_looks[look].color);
    sr_svg_tooltip(f, tip);
    fputs("</rect>\n", f);
    if (a->end == SR_END_DONE) {
        draw_done_mark(f, "done-mark", x1 + 1, y);
        sr_svg_tooltip(f, "done: the job exited 0");
        fputs("</path>\n", f);
    } else if (a->end == SR_END_FAILED) {
        draw_fail_mark(f, "fail-mark", x1, y);
        snprintf(tip, sizeof(tip), "failed: %s",
                 t->run->has_end && t->run->end.cause[0] ? t->run->end.cause : "gave up");
        sr_svg_tooltip(f, tip);
        fputs("</path>\n", f);
    }
}

static void notices(FILE *f, const struct sweep_draw *d, const struct sr_history *h, double y)
{
    for (size_t i = 0; i < h->n_no; i++) {
        char tip[160], left[32];
        sr_format_duration_ms(h->no[i].left_ms, left, sizeof(left));
        snprintf(tip, sizeof(tip), "preemption notice from %s: %s left", h->no[i].source, left);
        draw_notice(f, "notice", sr_svg_x(&d->fr, h->no[i].at_ms), y - LANE / 2);
        sr_svg_tooltip(f, tip);
        fputs("</path>\n", f);
    }
}

/* A dashed tick where attempt b starts after a: a restart (crash) or a resume. */
static void link(FILE *f, const struct sweep_draw *d, const struct sr_hist_attempt *a,
                 const struct sr_hist_attempt *b, double y)
{
    char tip[120], dur[32];
    sr_format_duration_ms(b->first_ms - a->end_ms, dur, sizeof(dur));
    snprintf(tip, sizeof(tip), "%s after %s", a->restarted ? "restart" : "resume", dur);
    draw_link(f, a->restarted ? "restart" : "resume", sr_svg_x(&d->fr, b->first_ms),
              y - LANE / 2 + 1, LANE - 2);
    sr_svg_tooltip(f, tip);
    fputs("</path>\n", f);
}

/* "cancel by alice@host at 2026-...Z", "priority 10 by ...", "pause --stop by ...". */
static void steer_tip(const struct sr_steer_entry *e, char *buf, size_t len)
{
    char when[40], what[48];
    sr_format_iso_ms(e->unix_ms, when, sizeof(when));
    if (e->action == SR_STEER_PRIORITY)
        snprintf(what, sizeof(what), "priority %ld", e->priority);
    else
        snprintf(what, sizeof(what), "%s%s", sr_steer_action_name(e->action),
                 e->action == SR_STEER_PAUSE && e->stop ? " --stop" : "");
    snprintf(buf, len, "%s by %s at %s", what, e->by[0] ? e->by : "?", when);
}

/* The operator's marks on trial t's lane, in the order of the history. */
static void steering(FILE *f, const struct sweep_draw *d, const struct sr_sv_trial *t, double y)
{
    const struct sr_steer_state *s = &d->v->steer;
    for (size_t i = 0; i < s->n_log; i++) {
        const struct sr_steer_entry *e = &s->log[i];
        int on = 0;
        if (steer_on_lanes(e->action)) {
            for (size_t k = 0; k < e->n_trials && !on; k++)
                on = e->trials[k] >= 0 && (size_t)e->trials[k] == t->trial;
        } else if (e->action == SR_STEER_PAUSE && e->stop) {
            on = running_at(d, t, e->unix_ms);
        }
        if (!on)
            continue;
        const enum mark m = e->action == SR_STEER_PAUSE ? M_STOP : steer_mark(e->action);
        char tip[256];
        steer_tip(e, tip, sizeof(tip));
        draw_steer(f, m, steer_class(m), sr_svg_x(&d->fr, e->unix_ms), y);
        sr_svg_tooltip(f, tip);
        fputs(m == M_RETRY ? "</circle>\n" : "</path>\n", f);
    }
}

static void lane(FILE *f, const struct sweep_draw *d, const struct sr_sv_trial *t, size_t i)
{
    const double y = lane_y(d, i);
    fprintf(f, "<g class=\"trial\" data-trial=\"%zu\" data-state=\"%s\">\n", t->trial,
            sr_sv_state_name(t->state));
    if (i % 2 == 0)
        fprintf(f,
                "<rect class=\"band\" x=\"10\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" "
                "fill=\"#f5f5f5\"/>\n",
                y - LANE / 2, W - 20, LANE);
    lane_label(f, d->v, t, y);
    const struct sr_history *h = t->run ? &t->run->h : NULL;
    if (!h || h->n_att == 0)
        sr_svg_text(f, W - RIGHT, y + 4, "queued", /* where it stands now */
                    "text-anchor=\"end\" font-size=\"11\" fill=\"" SR_SVG_DIM "\"",
                    sr_sv_state_name(t->state));
    for (size_t a = 0; h && a < h->n_att; a++) {
        attempt_bar(f, d, t, &h->att[a], y);
        if (a > 0)
            link(f, d, &h->att[a - 1], &h->att[a], y);
    }
    if (h)
        notices(f, d, h, y);
    steering(f, d, t, y);
    fprintf(f, "</g>\n");
}

/* PBT: each exploit an arrow from the donor's lane to the trial's at the
 * time of its decision, labelled with the trial's new parameters. */
static void exploits(FILE *f, const struct sweep_draw *d, const size_t *order)
{
    const struct sr_sweepview *v = d->v;
    size_t *row = calloc(v->n ? v->n : 1, sizeof(*row)); /* trial -> lane */
    if (!row)
        return;
    for (size_t i = 0; i < v->n; i++)
        row[order[i]] = i;
    fprintf(f, "<g class=\"exploits\">\n");
    for (size_t k = 0; k < v->n; k++) {
        size_t i;
        const json_t *e;
        json_array_foreach(v->t[k].lineage, i, e)
        {
            const json_int_t donor = json_integer_value(json_object_get(e, "donor"));
            if (donor < 0 || (size_t)donor >= v->n)
                continue;
            const double x = sr_svg_x(&d->fr, json_integer_value(json_object_get(e, "unix_ms")));
            const double y0 = lane_y(d, row[donor]), y1 = lane_y(d, row[k]);
            char params[200] = "", tip[400];
            size_t n = 0;
            const char *name;
            const json_t *val;
            json_object_foreach(json_object_get(e, "params"), name, val)
            {
                const char *s = json_string_value(val);
                char num[32];
                double x2;
                if (s && sr_parse_real(s, &x2) == 0) { /* 4 significant digits */
                    sr_svg_num(x2, num, sizeof(num));
                    s = num;
                }
                if (n < sizeof(params))
                    n += (size_t)snprintf(params + n, sizeof(params) - n, "%s%s=%s", n ? " " : "",
                                          name, s ? s : "-");
            }
            snprintf(tip, sizeof(tip),
                     "trial %zu takes trial %" JSON_INTEGER_FORMAT
                     "'s checkpoint at step %" JSON_INTEGER_FORMAT " (round %" JSON_INTEGER_FORMAT
                     ", at its step %" JSON_INTEGER_FORMAT "): %s",
                     k, donor, json_integer_value(json_object_get(e, "donor_step")),
                     json_integer_value(json_object_get(e, "round")),
                     json_integer_value(json_object_get(e, "step")), params);
            fprintf(f,
                    "<g class=\"exploit\" data-trial=\"%zu\" data-donor=\"%" JSON_INTEGER_FORMAT
                    "\">",
                    k, donor);
            draw_exploit(f, "exploit-arrow", x, y0, y1 + (y1 > y0 ? -BAR / 2 : BAR / 2));
            sr_svg_tooltip(f, tip);
            fputs("</path>", f);
            sr_svg_text(f, x + 3, y1 + (y1 > y0 ? 11 : -5), "exploit-label",
                        "font-size=\"9\" fill=\"" C_EXPLOIT "\"", params);
            fprintf(f, "</g>\n");
        }
    }
    fprintf(f, "</g>\n");
    free(row);
}

/* One span the sweep was paused, from pause p to resume r (NULL: still
 * paused, up to now), over every lane, labelled above them. */
static void pause_span(FILE *f, const struct sweep_draw *d, const struct sr_steer_entry *p,
                       const struct sr_steer_entry *r)
{
    const double x0 = sr_svg_x(&d->fr, p->unix_ms);
    const double x1 = sr_svg_x(&d->fr, r ? r->unix_ms : d->v->now_ms);
    char a[256], b[256] = "still paused", tip[sizeof(a) + sizeof(b) + 32];
    steer_tip(p, a, sizeof(a));
    if (r)
        steer_tip(r, b, sizeof(b));
    snprintf(tip, sizeof(tip), "sweep paused: %s; %s", a, b);
    draw_span(f, "paused-span", x0, d->lanes_top, x1 - x0 > 2 ? x1 - x0 : 2,
              d->lanes_bottom - d->lanes_top);
    fputs("</rect>\n", f);
    fprintf(f, "<g class=\"paused-label\">");
    sr_svg_tooltip(f, tip);
    sr_svg_text(f, x0, d->lanes_top - 6, "steer-label", "font-size=\"11\" fill=\"" SR_SVG_TEXT "\"",
                p->stop ? "paused (--stop)" : "paused");
    fprintf(f, "</g>\n");
}

/* The spans the sweep was paused: from the pause that paused it to the
 * resume that let it go on. */
static void pauses(FILE *f, const struct sweep_draw *d)
{
    const struct sr_steer_state *s = &d->v->steer;
    const struct sr_steer_entry *open = NULL;
    fprintf(f, "<g class=\"steering\">\n");
    for (size_t i = 0; i < s->n_log; i++) {
        const struct sr_steer_entry *e = &s->log[i];
        if (e->action == SR_STEER_PAUSE && !open)
            open = e;
        else if (e->action == SR_STEER_RESUME && open) {
            pause_span(f, d, open, e);
            open = NULL;
        }
    }
    if (open)
        pause_span(f, d, open, NULL);
    fprintf(f, "</g>\n");
}

void sr_sweepreport_svg(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o)
{
    struct sweep_draw d = {.v = v};
    survey(&d);
    d.lanes_top = legend(NULL, &d) + ABOVE_LANES;
    const size_t lanes = v->n ? v->n : 1;
    d.lanes_bottom = d.lanes_top + (double)lanes * LANE;
    const double below = d.lanes_bottom + 40;
    const double chart = sr_sv_progress_svg(NULL, v, o, LEFT, W - RIGHT, 0); /* its height */
    const double pareto = sr_sv_pareto_svg(NULL, v, o, 0, W);                /* 2+ objectives */
    const double curves = sr_sv_curves_svg(NULL, v, o, 0, W);
    head(f, v, below + chart + pareto + curves);
    legend(f, &d);
    sr_svg_axis(f, &d.fr, d.lanes_top, d.lanes_bottom + 4, 1, "UTC");
    size_t *order = calloc(lanes, sizeof(*order));
    if (order) {
        sr_sweepview_order(v, o, order);
        for (size_t i = 0; i < v->n; i++)
            lane(f, &d, &v->t[order[i]], i);
        if (d.used[M_EXPLOIT])
            exploits(f, &d, order);
    }
    free(order);
    pauses(f, &d);
    if (chart)
        sr_sv_progress_svg(f, v, o, LEFT, W - RIGHT, below);
    if (pareto)
        sr_sv_pareto_svg(f, v, o, below + chart, W);
    if (curves)
        sr_sv_curves_svg(f, v, o, below + chart + pareto, W);
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
