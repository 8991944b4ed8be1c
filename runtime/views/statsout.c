/*
 * statsout.c - the forms of `spotrun stats` (statsout.h).
 *
 * Unknowns are never printed as numbers: a rate without hours, a cost
 * without a price, a utilization without samples print "-" (null in JSON,
 * an empty cell in CSV), and hours that had no price or no GPU count are
 * said in their own columns and notes.
 */
#include "statsout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "summary.h"
#include "svg.h"

/* The causes in the order the columns and documents list them. */
static const enum sr_hist_cause cause_order[] = {
    SR_CAUSE_DONE,       SR_CAUSE_PREEMPTED,  SR_CAUSE_CRASHED, SR_CAUSE_OOM,
    SR_CAUSE_STALLED,    SR_CAUSE_TIME_LIMIT, SR_CAUSE_BUDGET,  SR_CAUSE_VANISHED,
    SR_CAUSE_LEASE_LOST, SR_CAUSE_PRUNED,     SR_CAUSE_NONE,
};
#define N_CAUSES (sizeof(cause_order) / sizeof(cause_order[0]))

/* 6 decimals, trailing zeros cut: "12.5", "0.333333", "3". */
static void num(double v, char *buf, size_t len)
{
    if (isnan(v)) {
        snprintf(buf, len, "-");
        return;
    }
    snprintf(buf, len, "%.6f", v);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *e = buf + strlen(buf) - 1;
        while (e > dot && *e == '0')
            *e-- = '\0';
        if (e == dot)
            *e = '\0';
    }
    if (strcmp(buf, "-0") == 0)
        snprintf(buf, len, "0");
}

static double round6(double v)
{
    return round(v * 1e6) / 1e6;
}

static void fixed(double v, int prec, const char *suffix, char *buf, size_t len)
{
    if (isnan(v))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.*f%s", prec, v, suffix);
}

static void money(double v, int known, char *buf, size_t len)
{
    if (!known || isnan(v))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "$%.2f", v);
}

static void ends_cell(const struct sr_stats_row *r, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_CAUSES && o < len; i++) {
        const uint64_t n = r->ends[cause_order[i]];
        if (n)
            o += (size_t)snprintf(buf + o, len - o, "%s%s %llu", o ? ", " : "",
                                  sr_stats_cause_name(cause_order[i]), (unsigned long long)n);
    }
    if (!o)
        snprintf(buf, len, "-");
}

#define N_COLS 16
static const char *const col_names[N_COLS] = {
    "RUNS",    "ATT",    "INST-H", "GPU-H", "COST",     "ON-DEMAND", "SAVING", "PREEMPT",
    "PER100H", "MTBP-H", "LOST-H", "LOST$", "SIG-STOP", "CKPT",      "GPU",    "ENDS"};

static void cells_of(const struct sr_stats_row *r, char c[N_COLS][160])
{
    snprintf(c[0], 160, "%llu", (unsigned long long)r->runs);
    snprintf(c[1], 160, "%llu", (unsigned long long)r->attempts);
    fixed(r->inst_h, 2, "", c[2], 160);
    fixed(r->gpu_h, 2, r->gpu_unknown_h > 0.005 ? "+?" : "", c[3], 160);
    const int priced = r->inst_h - r->unpriced_h > 1e-9;
    money(r->cost, priced, c[4], 160);
    if (priced && r->unpriced_h > 0.005)
        strcat(c[4], "*");
    money(r->od_cost, r->od_cost > 0, c[5], 160);
    money(sr_stats_saving(r), r->od_cost > 0, c[6], 160);
    snprintf(c[7], 160, "%llu", (unsigned long long)r->preemptions);
    fixed(sr_stats_rate_per_100h(r), 2, "", c[8], 160);
    fixed(sr_stats_mtbp_h(r), 1, "", c[9], 160);
    fixed(r->lost_h, 2, "", c[10], 160);
    money(r->lost_cost, r->lost_h - r->lost_unpriced_h > 1e-9, c[11], 160);
    snprintf(c[12], 160, "%llu", (unsigned long long)r->signal_stops);
    fixed(sr_stats_ckpt_overhead(r) * 100, 1, "%", c[13], 160);
    const double u = sr_stats_gpu_util(r), idle = sr_stats_gpu_idle(r);
    if (isnan(u))
        snprintf(c[14], 160, "-");
    else
        snprintf(c[14], 160, "%.0f%% (idle %.0f%%)", u, idle * 100);
    ends_cell(r, c[15], 160);
}

static void upper(const char *s, char *buf, size_t len)
{
    size_t i = 0;
    for (; s[i] && i + 1 < len; i++)
        buf[i] = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 32 : s[i]);
    buf[i] = '\0';
}

void sr_stats_print(FILE *f, const struct sr_stats_query *q, const struct sr_stats *s)
{
    const size_t nk = q->n_by, nr = s->n + 2; /* header, rows, total */
    char(*cells)[N_COLS][160] = calloc(nr, sizeof(*cells));
    char(*keys)[SR_STATS_BY_MAX][SR_STATS_KEY_MAX] = calloc(nr, sizeof(*keys));
    if (!cells || !keys) {
        free(cells);
        free(keys);
        return;
    }
    for (size_t c = 0; c < N_COLS; c++)
        snprintf(cells[0][c], 160, "%s", col_names[c]);
    for (size_t k = 0; k < nk; k++)
        upper(q->by[k].name, keys[0][k], SR_STATS_KEY_MAX);
    for (size_t i = 0; nk && i < s->n; i++) { /* without --by: the total only */
        cells_of(&s->rows[i], cells[i + 1]);
        memcpy(keys[i + 1], s->rows[i].key, sizeof(keys[0]));
    }
    cells_of(&s->total, cells[nr - 1]);
    if (nk)
        snprintf(keys[nr - 1][0], SR_STATS_KEY_MAX, "total");
    size_t wk[SR_STATS_BY_MAX] = {0}, wc[N_COLS] = {0};
    for (size_t i = 0; i < nr; i++) {
        for (size_t k = 0; k < nk; k++)
            if (strlen(keys[i][k]) > wk[k])
                wk[k] = strlen(keys[i][k]);
        for (size_t c = 0; c < N_COLS; c++)
            if (strlen(cells[i][c]) > wc[c])
                wc[c] = strlen(cells[i][c]);
    }
    for (size_t i = 0; i < nr; i++) {
        if (!nk && i > 0 && i < nr - 1)
            continue;
        if (i == nr - 1 && nk) { /* a rule above the totals */
            size_t w = 0;
            for (size_t k = 0; k < nk; k++)
                w += wk[k] + 2;
            for (size_t c = 0; c + 1 < N_COLS; c++)
                w += wc[c] + 2;
            for (size_t x = 0; x < w + 4; x++)
                fputc('-', f);
            fputc('\n', f);
        }
        for (size_t k = 0; k < nk; k++)
            fprintf(f, "%-*s  ", (int)wk[k], keys[i][k]);
        for (size_t c = 0; c + 1 < N_COLS; c++)
            fprintf(f, "%*s  ", (int)wc[c], cells[i][c]);
        fprintf(f, "%s\n", cells[i][N_COLS - 1]);
    }
    const struct sr_stats_row *t = &s->total;
    if (t->unpriced_h > 0.005)
        fprintf(f,
                "\nunpriced: %.2f instance-hours had no price (no --prices entry for their "
                "instance type,\n  no --price-per-hour, no price in their start event); COST "
                "leaves them out (marked *).\n",
                t->unpriced_h);
    if (t->signal_stops)
        fprintf(f,
                "SIG-STOP: %llu attempt(s) stopped by a signal from outside or `spotrun notify`, "
                "not by a cloud:\n  not in PREEMPT, PER100H or MTBP-H (ENDS counts them as "
                "preempted).\n",
                (unsigned long long)t->signal_stops);
    if (t->gpu_unknown_h > 0.005)
        fprintf(f, "GPU-H: %.2f instance-hours with an unknown GPU count are not in it (+?).\n",
                t->gpu_unknown_h);
    if (t->inst_h > 0 && t->od_unpriced_h > 0.005 && t->od_cost > 0)
        fprintf(f, "ON-DEMAND, SAVING: over the hours with both prices (%.2f of %.2f).\n",
                t->inst_h - t->od_unpriced_h, t->inst_h);
    if (q->since_ms || q->until_ms)
        fprintf(f, "window: attempts clipped to it; ends counted where they fall in it.\n");
    free(cells);
    free(keys);
}

static json_t *jnum(double v)
{
    return isnan(v) ? json_null() : json_real(round6(v));
}

static json_t *row_json(const struct sr_stats_row *r)
{
    json_t *ends = json_object();
    for (size_t i = 0; i < N_CAUSES; i++)
        json_object_set_new(ends, sr_stats_cause_name(cause_order[i]),
                            json_integer((json_int_t)r->ends[cause_order[i]]));
    const int priced = r->inst_h - r->unpriced_h > 1e-9;
    json_t *o = json_object();
    json_object_set_new(o, "runs", json_integer((json_int_t)r->runs));
    json_object_set_new(o, "attempts", json_integer((json_int_t)r->attempts));
    json_object_set_new(o, "instance_hours", jnum(r->inst_h));
    json_object_set_new(o, "gpu_hours", jnum(r->gpu_h));
    json_object_set_new(o, "gpu_unknown_hours", jnum(r->gpu_unknown_h));
    json_object_set_new(o, "cost", priced ? jnum(r->cost) : json_null());
    json_object_set_new(o, "unpriced_hours", jnum(r->unpriced_h));
    json_object_set_new(o, "on_demand_cost", r->od_cost > 0 ? jnum(r->od_cost) : json_null());
    json_object_set_new(o, "saving", jnum(sr_stats_saving(r)));
    json_object_set_new(o, "on_demand_unpriced_hours", jnum(r->od_unpriced_h));
    json_object_set_new(o, "preemptions", json_integer((json_int_t)r->preemptions));
    json_object_set_new(o, "preemptions_per_100h", jnum(sr_stats_rate_per_100h(r)));
    json_object_set_new(o, "mtbp_hours", jnum(sr_stats_mtbp_h(r)));
    json_object_set_new(o, "signal_stops", json_integer((json_int_t)r->signal_stops));
    json_object_set_new(o, "lost_hours", jnum(r->lost_h));
    json_object_set_new(o, "lost_cost",
                        r->lost_h - r->lost_unpriced_h > 1e-9 ? jnum(r->lost_cost) : json_null());
    json_object_set_new(o, "lost_unpriced_hours", jnum(r->lost_unpriced_h));
    json_object_set_new(o, "dropped_hours", jnum(r->dropped_h));
    json_object_set_new(o, "ends", ends);
    json_object_set_new(o, "wall_hours", jnum(r->wall_s / 3600.0));
    json_object_set_new(o, "queued_hours", jnum(r->queued_h));
    json_object_set_new(o, "checkpoint_seconds", jnum(r->stage_s));
    json_object_set_new(o, "checkpoint_overhead", jnum(sr_stats_ckpt_overhead(r)));
    json_object_set_new(o, "gpu_samples", jnum(r->gpu_samples));
    json_object_set_new(o, "gpu_util_mean", jnum(sr_stats_gpu_util(r)));
    json_object_set_new(o, "gpu_idle_share", jnum(sr_stats_gpu_idle(r)));
    return o;
}

json_t *sr_stats_json(const struct sr_stats_query *q, const struct sr_stats *s)
{
    json_t *o = json_object(), *by = json_array(), *groups = json_array();
    char t[40];
    json_object_set_new(o, "schema_version", json_integer(SR_JSON_SCHEMA_VERSION));
    for (size_t k = 0; k < q->n_by; k++)
        json_array_append_new(by, json_string(q->by[k].name));
    json_object_set_new(o, "by", by);
    sr_format_iso_ms(q->since_ms, t, sizeof(t));
    json_object_set_new(o, "since", q->since_ms ? json_string(t) : json_null());
    sr_format_iso_ms(q->until_ms, t, sizeof(t));
    json_object_set_new(o, "until", q->until_ms ? json_string(t) : json_null());
    json_object_set_new(o, "labels", sr_labels_to_json(&q->want));
    for (size_t i = 0; i < s->n; i++) {
        json_t *g = json_object(), *key = json_object();
        for (size_t k = 0; k < q->n_by; k++)
            json_object_set_new(key, q->by[k].name, json_string(s->rows[i].key[k]));
        json_object_set_new(g, "key", key);
        json_object_update_new(g, row_json(&s->rows[i]));
        json_array_append_new(groups, g);
    }
    json_object_set_new(o, "groups", groups);
    json_object_set_new(o, "total", row_json(&s->total));
    return o;
}

/* RFC 4180: a field with a comma, a quote or a line break is quoted, its
 * quotes doubled. A text a spreadsheet would take as a formula (starting
 * with = + - @, a tab or a CR: a host "=cmd|...", a label team=-1-2) is
 * neutralised as OWASP recommends: a ' before it, and quoted. The "-" of an
 * unknown key alone is no formula and stays as it is. */
static void csv_field(FILE *f, const char *s)
{
    const int formula = s[0] && strchr("=+-@\t\r", s[0]) && strcmp(s, "-") != 0;
    if (!formula && !strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    if (formula)
        fputc('\'', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static const char *const csv_cols[] = {"runs",
                                       "attempts",
                                       "instance_hours",
                                       "gpu_hours",
                                       "gpu_unknown_hours",
                                       "cost",
                                       "unpriced_hours",
                                       "on_demand_cost",
                                       "saving",
                                       "on_demand_unpriced_hours",
                                       "preemptions",
                                       "preemptions_per_100h",
                                       "mtbp_hours",
                                       "signal_stops",
                                       "lost_hours",
                                       "lost_cost",
                                       "lost_unpriced_hours",
                                       "checkpoint_overhead",
                                       "gpu_util_mean",
                                       "gpu_idle_share",
                                       "queued_hours"};

static void csv_row(FILE *f, const struct sr_stats_row *r)
{
    const int priced = r->inst_h - r->unpriced_h > 1e-9;
    const double v[] = {(double)r->runs,
                        (double)r->attempts,
                        r->inst_h,
                        r->gpu_h,
                        r->gpu_unknown_h,
                        priced ? r->cost : NAN,
                        r->unpriced_h,
                        r->od_cost > 0 ? r->od_cost : NAN,
                        sr_stats_saving(r),
                        r->od_unpriced_h,
                        (double)r->preemptions,
                        sr_stats_rate_per_100h(r),
                        sr_stats_mtbp_h(r),
                        (double)r->signal_stops,
                        r->lost_h,
                        r->lost_h - r->lost_unpriced_h > 1e-9 ? r->lost_cost : NAN,
                        r->lost_unpriced_h,
                        sr_stats_ckpt_overhead(r),
                        sr_stats_gpu_util(r),
                        sr_stats_gpu_idle(r),
                        r->queued_h};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char b[64];
        num(v[i], b, sizeof(b));
        fprintf(f, "%s%s", i ? "," : "", isnan(v[i]) ? "" : b);
    }
    for (size_t i = 0; i < N_CAUSES; i++)
        fprintf(f, ",%llu", (unsigned long long)r->ends[cause_order[i]]);
    fputs("\r\n", f);
}

void sr_stats_csv(FILE *f, const struct sr_stats_query *q, const struct sr_stats *s)
{
    for (size_t k = 0; k < q->n_by; k++) {
        csv_field(f, q->by[k].name);
        fputc(',', f);
    }
    for (size_t i = 0; i < sizeof(csv_cols) / sizeof(csv_cols[0]); i++)
        fprintf(f, "%s%s", i ? "," : "", csv_cols[i]);
    for (size_t i = 0; i < N_CAUSES; i++)
        fprintf(f, ",ends_%s", sr_stats_cause_name(cause_order[i]));
    fputs("\r\n", f);
    if (!q->n_by) {
        csv_row(f, &s->total);
        return;
    }
    for (size_t i = 0; i < s->n; i++) {
        for (size_t k = 0; k < q->n_by; k++) {
            csv_field(f, s->rows[i].key[k]);
            fputc(',', f);
        }
        csv_row(f, &s->rows[i]);
    }
}

/* ---- charts ---- */

static const char *const palette[] = {"#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2",
                                      "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac"};
#define N_PALETTE (sizeof(palette) / sizeof(palette[0]))
#define MAX_SERIES 8 /* then "other" */
#define MAX_PERIODS 120
#define W 960.0

/* A round step giving about n ticks up to max. */
static double nice_step(double max, int n)
{
    const double raw = max / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static void series_name(const struct sr_stats_query *q, const struct sr_stats_row *r, char *buf,
                        size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t k = 0; k + 1 < q->n_by && o < len; k++) /* the last key is the period */
        o += (size_t)snprintf(buf + o, len - o, "%s%s", k ? " / " : "", r->key[k]);
    if (!o)
        snprintf(buf, len, "all runs");
}

struct series {
    char name[200];
    double sum;
};

static int cmp_series(const void *x, const void *y)
{
    const double a = ((const struct series *)x)->sum, b = ((const struct series *)y)->sum;
    return (a < b) - (a > b);
}

/* Chart 1's data: its periods, its series (biggest first, the rest as
 * "other") and each period's value per series (val[p * (nser + 1) + j]). */
struct cost_data {
    int priced; /* cost, else instance hours */
    char (*per)[SR_STATS_KEY_MAX];
    size_t np;
    struct series *ser;
    size_t nser;
    double *val;
};

static void cost_data_free(struct cost_data *d)
{
    free(d->per);
    free(d->ser);
    free(d->val);
}

/* The periods from lo to hi (empty ones too: a gap is news). */
static void cost_periods(struct cost_data *d, enum sr_stats_by pkind, int64_t lo, int64_t hi)
{
    for (int64_t t = lo; t < hi && d->np < MAX_PERIODS; t = sr_stats_next_boundary(t, pkind)) {
        if (pkind == SR_BY_DAY)
            sr_stats_day(t, d->per[d->np++], SR_STATS_KEY_MAX);
        else if (pkind == SR_BY_WEEK)
            sr_stats_week(t, d->per[d->np++], SR_STATS_KEY_MAX);
        else
            sr_stats_month(t, d->per[d->np++], SR_STATS_KEY_MAX);
    }
}

/* Reads the rows into d; 0, or -1 when out of memory (draw nothing). */
static int cost_read(struct cost_data *d, const struct sr_stats_query *q, const struct sr_stats *s,
                     int64_t lo, int64_t hi)
{
    /* cost only when every hour had a price: else a partly priced bar
     * would look cheap */
    d->priced = s->total.inst_h > 0 && s->total.unpriced_h < 1e-9;
    size_t ns = 0;
    d->per = calloc(MAX_PERIODS, sizeof(*d->per));
    d->ser = calloc(s->n + 1, sizeof(*d->ser));
    if (!d->per || !d->ser)
        return -1;
    const size_t pk = q->n_by - 1;
    cost_periods(d, q->by[pk].kind, lo, hi);
    for (size_t i = 0; i < s->n; i++) {
        char name[200];
        series_name(q, &s->rows[i], name, sizeof(name));
        size_t j = 0;
        while (j < ns && strcmp(d->ser[j].name, name) != 0)
            j++;
        if (j == ns)
            snprintf(d->ser[ns++].name, sizeof(d->ser[0].name), "%s", name);
        d->ser[j].sum += d->priced ? s->rows[i].cost : s->rows[i].inst_h;
    }
    qsort(d->ser, ns, sizeof(*d->ser), cmp_series);
    const size_t shown = ns > MAX_SERIES ? MAX_SERIES : ns; /* the rest: "other" */
    if (ns > MAX_SERIES)
        snprintf(d->ser[MAX_SERIES].name, sizeof(d->ser[0].name), "other (%zu)", ns - MAX_SERIES);
    const size_t nser = d->nser = ns > MAX_SERIES ? MAX_SERIES + 1 : ns;
    d->val = calloc((d->np + 1) * (nser + 1), sizeof(double));
    if (!d->val)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        size_t p = 0, j = 0;
        while (p < d->np && strcmp(d->per[p], s->rows[i].key[pk]) != 0)
            p++;
        if (p == d->np)
            continue;
        char name[200];
        series_name(q, &s->rows[i], name, sizeof(name));
        while (j < shown && strcmp(d->ser[j].name, name) != 0)
            j++;
        d->val[p * (nser + 1) + j] += d->priced ? s->rows[i].cost : s->rows[i].inst_h;
    }
    return 0;
}

/* Chart 1's frame: plot area x0..x1, y0 (top)..y1 (bottom). */
struct cost_frame {
    double x0, x1, y0, y1, top;
};

/* The title and the y axis's grid; sets fr->top, the axis's top value. */
static void cost_axes(FILE *f, const struct cost_data *d, struct cost_frame *fr, double y0,
                      const char *period)
{
    double max = 0;
    for (size_t p = 0; p < d->np; p++) {
        double t = 0;
        for (size_t j = 0; j < d->nser; j++)
            t += d->val[p * (d->nser + 1) + j];
        if (t > max)
            max = t;
    }
    char title[200];
    snprintf(title, sizeof(title), "%s per %s%s", d->priced ? "Spot cost" : "Instance-hours",
             period, d->priced ? "" : " (some hours have no price)");
    sr_svg_text(f, fr->x0, y0 + 24, "title", "font-size=\"16\" font-weight=\"bold\" fill=\"#222\"",
                title);
    if (max <= 0)
        max = 1;
    const double step = nice_step(max, 5), top = ceil(max / step) * step;
    fr->top = top;
    for (double v = 0; v <= top + step / 2; v += step) {
        const double y = fr->y1 - v / top * (fr->y1 - fr->y0);
        char lbl[32];
        if (d->priced)
            snprintf(lbl, sizeof(lbl), step < 1 ? "$%.2f" : "$%.0f", v);
        else
            snprintf(lbl, sizeof(lbl), step < 1 ? "%.1f h" : "%.0f h", v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n",
                fr->x0, y, fr->x1, y);
        sr_svg_text(f, fr->x0 - 6, y + 4, "tick", "text-anchor=\"end\" fill=\"#777\"", lbl);
    }
}

/* Period p's stacked bar at x (width bw); returns its total. */
static double cost_bar(FILE *f, const struct cost_data *d, const struct cost_frame *fr, size_t p,
                       double x, double bw)
{
    const double span = fr->y1 - fr->y0;
    double acc = 0;
    for (size_t j = 0; j < d->nser; j++) {
        const double v = d->val[p * (d->nser + 1) + j];
        if (v <= 0)
            continue;
        const double ya = fr->y1 - (acc + v) / fr->top * span, h = v / fr->top * span;
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
                "stroke=\"#fff\" stroke-width=\"0.5\">",
                x, ya, bw, h, palette[j % N_PALETTE]);
        char tip[300];
        if (d->priced)
            snprintf(tip, sizeof(tip), "%s, %s: $%.2f", d->ser[j].name, d->per[p], v);
        else
            snprintf(tip, sizeof(tip), "%s, %s: %.2f instance-hours", d->ser[j].name, d->per[p], v);
        sr_svg_tooltip(f, tip);
        fputs("</rect>\n", f);
        acc += v;
    }
    return acc;
}

/* The bars, each with its total above it and its period below. */
static void cost_bars(FILE *f, const struct cost_data *d, const struct cost_frame *fr)
{
    const size_t np = d->np;
    const double slot = (fr->x1 - fr->x0) / (double)(np ? np : 1);
    const double bw = slot * 0.7 > 60 ? 60 : slot * 0.7;
    const size_t every = np > 16 ? (np + 15) / 16 : 1;
    for (size_t p = 0; p < np; p++) {
        const double x = fr->x0 + slot * (double)p + (slot - bw) / 2;
        const double acc = cost_bar(f, d, fr, p, x, bw);
        char lbl[48];
        if (d->priced)
            snprintf(lbl, sizeof(lbl), acc < 1000 ? "$%.2f" : "$%.0f", acc);
        else
            snprintf(lbl, sizeof(lbl), "%.0f h", acc);
        if (acc > 0 && slot >= 36)
            sr_svg_text(f, x + bw / 2, fr->y1 - acc / fr->top * (fr->y1 - fr->y0) - 4, "value",
                        "text-anchor=\"middle\" font-size=\"10\" fill=\"#444\"", lbl);
        if (p % every == 0)
            sr_svg_text(f, x + bw / 2, fr->y1 + 16, "tick", "text-anchor=\"middle\" fill=\"#444\"",
                        d->per[p]);
    }
}

static void cost_legend(FILE *f, const struct cost_data *d, const struct cost_frame *fr)
{
    double ly = fr->y0;
    for (size_t j = 0; j < d->nser; j++, ly += 20) {
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n",
                fr->x1 + 20, ly, palette[j % N_PALETTE]);
        char lbl[260];
        if (d->priced)
            snprintf(lbl, sizeof(lbl), "%.40s  $%.2f", d->ser[j].name, d->ser[j].sum);
        else
            snprintf(lbl, sizeof(lbl), "%.40s  %.1f h", d->ser[j].name, d->ser[j].sum);
        sr_svg_text(f, fr->x1 + 38, ly + 10, "legend", "fill=\"#222\"", lbl);
    }
}

/* Chart 1 at y0: the cost (else instance hours) of each period from lo to
 * hi (empty ones too: a gap is news), stacked by series. Returns its
 * height. */
static double chart_cost(FILE *f, const struct sr_stats_query *q, const struct sr_stats *s,
                         double y0, int64_t lo, int64_t hi, const char *period)
{
    struct cost_data d = {0};
    if (cost_read(&d, q, s, lo, hi) == 0) {
        struct cost_frame fr = {80, W - 230, y0 + 50, y0 + 330, 1};
        cost_axes(f, &d, &fr, y0, period);
        cost_bars(f, &d, &fr);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#777\"/>\n",
                fr.x0, fr.y1, fr.x1, fr.y1);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#777\"/>\n",
                fr.x0, fr.y0, fr.x0, fr.y1);
        sr_svg_text(f, (fr.x0 + fr.x1) / 2, fr.y1 + 36, "axis-label",
                    "text-anchor=\"middle\" fill=\"#444\"", period);
        cost_legend(f, &d, &fr);
    }
    cost_data_free(&d);
    return 380;
}

/* Chart 2 at y0: preemptions per 100 instance-hours of each instance type
 * and zone. Returns its height. */
static double chart_rate(FILE *f, const struct sr_stats *s, double y0)
{
    const double lx = 250, bx0 = 260, bx1 = W - 260, rowh = 26;
    sr_svg_text(f, 80, y0 + 24, "title", "font-size=\"16\" font-weight=\"bold\" fill=\"#222\"",
                "Preemptions per 100 instance-hours, by instance type and zone");
    double max = 0;
    for (size_t i = 0; i < s->n; i++) {
        const double r = sr_stats_rate_per_100h(&s->rows[i]);
        if (!isnan(r) && r > max)
            max = r;
    }
    if (max <= 0)
        max = 1;
    const double step = nice_step(max, 5), top = ceil(max / step) * step;
    const double gy0 = y0 + 44, gy1 = gy0 + rowh * (double)(s->n ? s->n : 1);
    for (double v = 0; v <= top + step / 2; v += step) {
        const double x = bx0 + v / top * (bx1 - bx0);
        char lbl[32];
        snprintf(lbl, sizeof(lbl), step < 1 ? "%.1f" : "%.0f", v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n",
                x, gy0, x, gy1);
        sr_svg_text(f, x, gy1 + 16, "tick", "text-anchor=\"middle\" fill=\"#777\"", lbl);
    }
    sr_svg_text(f, (bx0 + bx1) / 2, gy1 + 34, "axis-label", "text-anchor=\"middle\" fill=\"#444\"",
                "preemptions per 100 instance-hours (longer is worse)");
    for (size_t i = 0; i < s->n; i++) {
        const struct sr_stats_row *r = &s->rows[i];
        const double y = gy0 + rowh * (double)i, rate = sr_stats_rate_per_100h(r);
        char lbl[300], val[400];
        snprintf(lbl, sizeof(lbl), "%s / %s", r->key[0], r->key[1]);
        sr_svg_text(f, lx, y + 17, "label", "text-anchor=\"end\" fill=\"#222\"", lbl);
        const double w = isnan(rate) ? 0 : rate / top * (bx1 - bx0);
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">", bx0,
                y + 4, w, rowh - 8, SR_SVG_NOTICE);
        snprintf(val, sizeof(val), "%s: %llu preemption(s) in %.1f instance-hours", lbl,
                 (unsigned long long)r->preemptions, r->inst_h);
        sr_svg_tooltip(f, val);
        fputs("</rect>\n", f);
        if (isnan(rate))
            snprintf(val, sizeof(val), "no hours");
        else if (r->preemptions)
            snprintf(val, sizeof(val), "%.2f  (%llu in %.1f h, one per %.1f h)", rate,
                     (unsigned long long)r->preemptions, r->inst_h, sr_stats_mtbp_h(r));
        else
            snprintf(val, sizeof(val), "0  (none in %.1f h)", r->inst_h);
        sr_svg_text(f, bx0 + w + 6, y + 17, "value", "fill=\"#444\"", val);
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#777\"/>\n", bx0,
            gy0, bx0, gy1);
    return gy1 - y0 + 50;
}

struct html_ctx {
    const struct sr_stats_query *q;
    const struct sr_stats *s;
};

static void print_table(FILE *m, const void *ctx)
{
    const struct html_ctx *c = ctx;
    sr_stats_print(m, c->q, c->s);
}

int sr_stats_svg(FILE *f, const struct sr_runsum *runs, size_t n, const struct sr_stats_query *q,
                 const struct sr_stats *s, int html)
{
    /* Chart 1's groups: --by's keys other than periods, then the period:
     * days for a window up to 45 days, else weeks. */
    struct sr_stats_query q1 = *q, q2 = *q;
    q1.n_by = 0;
    for (size_t k = 0; k < q->n_by && q1.n_by + 1 < SR_STATS_BY_MAX; k++)
        if (q->by[k].kind != SR_BY_DAY && q->by[k].kind != SR_BY_WEEK &&
            q->by[k].kind != SR_BY_MONTH)
            q1.by[q1.n_by++] = q->by[k];
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < n; i++)
        for (size_t a = 0; a < runs[i].n_att; a++) {
            lo = runs[i].att[a].start_ms < lo ? runs[i].att[a].start_ms : lo;
            hi = runs[i].att[a].end_ms > hi ? runs[i].att[a].end_ms : hi;
        }
    if (q->since_ms && q->since_ms > lo)
        lo = q->since_ms;
    if (q->until_ms && q->until_ms < hi)
        hi = q->until_ms;
    if (lo > hi) /* no attempt: an empty chart of today */
        lo = hi = 0;
    const int64_t span = hi - lo, day = 86400000;
    const enum sr_stats_by pk = span <= 45 * day        ? SR_BY_DAY
                                : span <= 2 * 366 * day ? SR_BY_WEEK
                                                        : SR_BY_MONTH;
    q1.by[q1.n_by].kind = pk;
    snprintf(q1.by[q1.n_by].name, sizeof(q1.by[0].name), "%s",
             pk == SR_BY_DAY    ? "day"
             : pk == SR_BY_WEEK ? "week"
                                : "month");
    q1.n_by++;
    q2.n_by = 2;
    q2.by[0].kind = SR_BY_INSTANCE_TYPE;
    snprintf(q2.by[0].name, sizeof(q2.by[0].name), "instance_type");
    q2.by[1].kind = SR_BY_ZONE;
    snprintf(q2.by[1].name, sizeof(q2.by[1].name), "zone");
    struct sr_stats s1, s2;
    if (sr_stats_compute(runs, n, &q1, &s1) < 0)
        return -ENOMEM;
    if (sr_stats_compute(runs, n, &q2, &s2) < 0) {
        sr_stats_free(&s1);
        return -ENOMEM;
    }
    const double h = 380 + 44 + 26 * (double)(s2.n ? s2.n : 1) + 50 + 40;
    if (html)
        sr_svg_html_begin(f, "fleet", "stats", "stats");
    sr_svg_begin(f, W, h);
    /* the periods from the one holding lo to the one holding hi */
    int64_t first = lo - lo % day;
    if (pk == SR_BY_WEEK)
        first = sr_stats_next_boundary(lo, SR_BY_WEEK) - 7 * day;
    double y = chart_cost(f, &q1, &s1, 0, first, hi + (hi == lo),
                          pk == SR_BY_DAY    ? "day (UTC)"
                          : pk == SR_BY_WEEK ? "ISO week"
                                             : "month (UTC)");
    chart_rate(f, &s2, y);
    char foot[200];
    snprintf(foot, sizeof(foot), "%llu runs, %llu attempts, %.1f instance-hours",
             (unsigned long long)s->total.runs, (unsigned long long)s->total.attempts,
             s->total.inst_h);
    sr_svg_text(f, W - 10, h - 10, "foot", "text-anchor=\"end\" font-size=\"10\" fill=\"#777\"",
                foot);
    fputs("</svg>\n", f);
    if (html) {
        const struct html_ctx c = {q, s};
        sr_svg_html_end(f, print_table, &c);
    }
    sr_stats_free(&s1);
    sr_stats_free(&s2);
    return 0;
}
