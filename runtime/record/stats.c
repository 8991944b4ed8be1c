/*
 * stats.c - the aggregation of `spotrun stats` (stats.h): attempts cut to
 * the window and to periods, summed into groups keyed by --by.
 *
 * Groups are found by a linear search from the last one hit: attempts of
 * one run mostly land in one group, and a fleet has tens of groups, not
 * thousands. Rows are sorted by key at the end.
 */
#include "stats.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DAY_MS INT64_C(86400000)
#define HOUR_MS 3600000.0

static const struct {
    const char *name;
    enum sr_stats_by kind;
} builtin[] = {
    {"instance_type", SR_BY_INSTANCE_TYPE},
    {"zone", SR_BY_ZONE},
    {"cloud", SR_BY_CLOUD},
    {"host", SR_BY_HOST},
    {"day", SR_BY_DAY},
    {"week", SR_BY_WEEK},
    {"month", SR_BY_MONTH},
    {"cause", SR_BY_CAUSE},
};

int sr_stats_parse_by(const char *list, struct sr_stats_query *q, char *err, size_t len)
{
    q->n_by = 0;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        const size_t n = e ? (size_t)(e - p) : strlen(p);
        char name[SR_LABEL_MAX + 2];
        if (n == 0 || n > SR_LABEL_MAX) {
            snprintf(err, len, "bad --by \"%s\": an empty or too long key", list);
            return -EINVAL;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        if (q->n_by == SR_STATS_BY_MAX) {
            snprintf(err, len, "bad --by \"%s\": at most %d keys", list, SR_STATS_BY_MAX);
            return -EINVAL;
        }
        enum sr_stats_by kind = SR_BY_LABEL;
        int found = 0;
        for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
            if (strcmp(builtin[i].name, name) == 0) {
                kind = builtin[i].kind;
                found = 1;
            }
        if (!found && !sr_label_key_ok(name)) {
            snprintf(err, len,
                     "bad --by key \"%s\": not a label key ([a-z0-9_.-], starting with a "
                     "letter or a digit) nor one of instance_type, zone, cloud, host, day, "
                     "week, month, cause",
                     name);
            return -EINVAL;
        }
        for (size_t i = 0; i < q->n_by; i++)
            if (strcmp(q->by[i].name, name) == 0) {
                snprintf(err, len, "bad --by \"%s\": \"%s\" is given twice", list, name);
                return -EINVAL;
            }
        q->by[q->n_by].kind = kind;
        snprintf(q->by[q->n_by].name, sizeof(q->by[q->n_by].name), "%.63s", name);
        q->n_by++;
        p += n;
        if (*p == ',')
            p++;
        if (e && !*p) {
            snprintf(err, len, "bad --by \"%s\": an empty key at the end", list);
            return -EINVAL;
        }
    }
    return 0;
}

/* Days since 1970-01-01 of a civil date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d)
{
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = (unsigned)(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int)((int64_t)yoe + era * 400 + (*m <= 2));
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int sr_stats_parse_time(const char *s, int end, int64_t *ms)
{
    int y, mo, d, h = 0, mi = 0, sec = 0;
    if (strlen(s) < 10 || digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) || s[7] != '-' ||
        digits(s + 8, 2, &d) || mo < 1 || mo > 12 || d < 1 || d > 31)
        return -EINVAL;
    int yy;
    unsigned mm, dd;
    const int64_t days = days_from_civil(y, (unsigned)mo, (unsigned)d);
    civil_from_days(days, &yy, &mm, &dd);
    if (yy != y || (int)mm != mo || (int)dd != d) /* 2026-02-30 */
        return -EINVAL;
    const char *p = s + 10;
    int64_t frac = 0;
    if (!*p) {
        *ms = (days + (end ? 1 : 0)) * DAY_MS;
        return 0;
    }
    if ((*p != 'T' && *p != ' ') || digits(p + 1, 2, &h) || p[3] != ':' || digits(p + 4, 2, &mi))
        return -EINVAL;
    p += 6;
    if (*p == ':') {
        if (digits(p + 1, 2, &sec))
            return -EINVAL;
        p += 3;
        if (*p == '.') {
            int64_t scale = 100;
            p++;
            if (!isdigit((unsigned char)*p))
                return -EINVAL;
            for (; isdigit((unsigned char)*p); p++, scale /= 10)
                frac += (*p - '0') * scale;
        }
    }
    if (h > 23 || mi > 59 || sec > 60)
        return -EINVAL;
    int64_t off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (digits(p + 1, 2, &oh) || p[3] != ':' || digits(p + 4, 2, &om) || oh > 23 || om > 59)
            return -EINVAL;
        off = (*p == '-' ? -1 : 1) * ((int64_t)oh * 3600 + om * 60) * 1000;
        p += 6;
    }
    if (*p)
        return -EINVAL;
    *ms = days * DAY_MS + ((int64_t)h * 3600 + mi * 60 + sec) * 1000 + frac - off;
    return 0;
}

void sr_stats_day(int64_t t, char *buf, size_t len)
{
    int y;
    unsigned m, d;
    civil_from_days(floor_div(t, DAY_MS), &y, &m, &d);
    snprintf(buf, len, "%04d-%02u-%02u", y, m, d);
}

void sr_stats_month(int64_t t, char *buf, size_t len)
{
    int y;
    unsigned m, d;
    civil_from_days(floor_div(t, DAY_MS), &y, &m, &d);
    snprintf(buf, len, "%04d-%02u", y, m);
}

/* ISO 8601: weeks start on Monday; week 1 holds the year's first Thursday,
 * so a week belongs to the year of its Thursday. */
void sr_stats_week(int64_t t, char *buf, size_t len)
{
    const int64_t days = floor_div(t, DAY_MS);
    const int64_t wd = ((days + 3) % 7 + 7) % 7; /* 1970-01-01 was a Thursday: 0 = Monday */
    const int64_t thu = days - wd + 3;
    int y;
    unsigned m, d;
    civil_from_days(thu, &y, &m, &d);
    const int64_t week = (thu - days_from_civil(y, 1, 1)) / 7 + 1;
    snprintf(buf, len, "%04d-W%02d", y, (int)week);
}

int64_t sr_stats_next_boundary(int64_t t, enum sr_stats_by period)
{
    const int64_t days = floor_div(t, DAY_MS);
    if (period == SR_BY_WEEK) {
        const int64_t wd = ((days + 3) % 7 + 7) % 7;
        return (days - wd + 7) * DAY_MS;
    }
    if (period == SR_BY_MONTH) {
        int y;
        unsigned m, d;
        civil_from_days(days, &y, &m, &d);
        return days_from_civil(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1) * DAY_MS;
    }
    return (days + 1) * DAY_MS;
}

const char *sr_stats_cause_name(enum sr_hist_cause c)
{
    return c == SR_CAUSE_NONE ? "running" : sr_hist_cause_name(c);
}

static void key_of(const struct sr_stats_query *q, const struct sr_runsum *r,
                   const struct sr_runsum_attempt *a, int64_t t, char key[][SR_STATS_KEY_MAX])
{
    for (size_t i = 0; i < q->n_by; i++) {
        const char *v = NULL;
        switch (q->by[i].kind) {
        case SR_BY_LABEL:
            v = sr_labels_get(&r->labels, q->by[i].name);
            break;
        case SR_BY_INSTANCE_TYPE:
            v = a->instance_type;
            break;
        case SR_BY_ZONE:
            v = a->zone;
            break;
        case SR_BY_CLOUD:
            v = a->cloud;
            break;
        case SR_BY_HOST:
            v = a->host;
            break;
        case SR_BY_DAY:
            sr_stats_day(t, key[i], SR_STATS_KEY_MAX);
            continue;
        case SR_BY_WEEK:
            sr_stats_week(t, key[i], SR_STATS_KEY_MAX);
            continue;
        case SR_BY_MONTH:
            sr_stats_month(t, key[i], SR_STATS_KEY_MAX);
            continue;
        case SR_BY_CAUSE:
            v = sr_stats_cause_name(a->cause);
            break;
        }
        snprintf(key[i], SR_STATS_KEY_MAX, "%.127s", v && *v ? v : "-");
    }
}

static struct sr_stats_row *row_of(struct sr_stats *s, size_t n_by, char key[][SR_STATS_KEY_MAX],
                                   size_t *hint)
{
    for (size_t k = 0; k < s->n; k++) {
        const size_t i = (*hint + k) % s->n;
        size_t j = 0;
        while (j < n_by && strcmp(s->rows[i].key[j], key[j]) == 0)
            j++;
        if (j == n_by) {
            *hint = i;
            return &s->rows[i];
        }
    }
    if (s->n == s->cap) {
        const size_t cap = s->cap ? s->cap * 2 : 16;
        struct sr_stats_row *v = realloc(s->rows, cap * sizeof(*v));
        if (!v)
            return NULL;
        s->rows = v;
        s->cap = cap;
    }
    struct sr_stats_row *r = &s->rows[s->n];
    memset(r, 0, sizeof(*r));
    memcpy(r->key, key, n_by * SR_STATS_KEY_MAX);
    *hint = s->n++;
    return r;
}

struct price {
    double spot, od; /* per hour, 0 = unknown */
};

static struct price price_of(const struct sr_stats_query *q, const struct sr_runsum_attempt *a)
{
    struct price p = {0};
    const struct sr_price *e = sr_prices_find(q->prices, a->instance_type);
    if (e) {
        p.spot = e->spot;
        p.od = e->on_demand;
    } else if (q->spot_per_hour > 0) {
        p.spot = q->spot_per_hour;
    } else {
        p.spot = a->price_per_hour;
    }
    if (p.od <= 0)
        p.od = q->on_demand_per_hour;
    return p;
}

/* A piece [t0, t1) of attempt a (ends: it holds the attempt's end). */
struct piece {
    int64_t t0, t1;
    double frac; /* of the attempt's wall time */
    int ends;
    double queued_h; /* the run's wait before the attempt (its first piece only) */
};

static void add_piece(struct sr_stats_row *r, size_t run, size_t att,
                      const struct sr_runsum_attempt *a, const struct piece *pc,
                      const struct price *p, double lost_h)
{
    if (r->last_run != run + 1) {
        r->last_run = run + 1;
        r->runs++;
    }
    if (r->last_att != att + 1) {
        r->last_att = att + 1;
        r->attempts++;
    }
    const double wall_h = (double)(pc->t1 - pc->t0) / HOUR_MS;
    const double nodes = a->nodes ? a->nodes : 1;
    const double ih = wall_h * nodes;
    r->inst_h += ih;
    if (a->gpus)
        r->gpu_h += ih * a->gpus;
    else
        r->gpu_unknown_h += ih;
    if (p->spot > 0) {
        r->cost += ih * p->spot;
        r->lost_cost += lost_h * p->spot;
    } else {
        r->unpriced_h += ih;
        r->lost_unpriced_h += lost_h;
    }
    if (p->spot > 0 && p->od > 0) {
        r->od_cost += ih * p->od;
        r->od_spot_cost += ih * p->spot;
    } else {
        r->od_unpriced_h += ih;
    }
    r->lost_h += lost_h;
    if (a->cause == SR_CAUSE_PRUNED || a->cause == SR_CAUSE_CANCELLED)
        r->dropped_h += ih;
    if (pc->ends) {
        r->ends[a->cause < SR_CAUSE_COUNT ? a->cause : SR_CAUSE_NONE]++;
        if (a->cause == SR_CAUSE_PREEMPTED && sr_stats_cloud_notice(a->notice_source))
            r->preemptions++;
        else if (a->cause == SR_CAUSE_PREEMPTED)
            r->signal_stops++;
    }
    r->wall_s += wall_h * 3600.0;
    r->queued_h += pc->queued_h;
    r->stage_s += a->stage_seconds * pc->frac;
    if (a->gpu_samples) {
        const double n = (double)a->gpu_samples * pc->frac;
        r->gpu_samples += n;
        r->gpu_util_sum += a->gpu_util_mean * n;
        r->gpu_idle_sum += a->gpu_idle_share * n;
    }
}

static int64_t overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
    const int64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? hi - lo : 0;
}

/* Keys past --by's are "" in every row (row_of zeroes them): comparing all
 * of them orders by --by's. */
static int cmp_rows(const void *x, const void *y)
{
    const struct sr_stats_row *a = x, *b = y;
    for (int i = 0; i < SR_STATS_BY_MAX; i++) {
        const int c = strcmp(a->key[i], b->key[i]);
        if (c)
            return c;
    }
    return 0;
}

int sr_stats_compute(const struct sr_runsum *runs, size_t n, const struct sr_stats_query *q,
                     struct sr_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->runs_in = n;
    const int64_t lo = q->since_ms > 0 ? q->since_ms : INT64_MIN;
    const int64_t hi = q->until_ms > 0 ? q->until_ms : INT64_MAX;
    enum sr_stats_by period = SR_BY_LABEL; /* none */
    for (size_t i = 0; i < q->n_by; i++) {
        const enum sr_stats_by k = q->by[i].kind;
        if (k == SR_BY_DAY || (k == SR_BY_WEEK && period != SR_BY_DAY) ||
            (k == SR_BY_MONTH && period == SR_BY_LABEL))
            period = k;
    }
    if (period == SR_BY_WEEK) /* with week and month: cut at both */
        for (size_t i = 0; i < q->n_by; i++)
            if (q->by[i].kind == SR_BY_MONTH)
                period = SR_BY_DAY;
    size_t hint = 0, att_id = 0;
    char key[SR_STATS_BY_MAX][SR_STATS_KEY_MAX];
    for (size_t ri = 0; ri < n; ri++) {
        const struct sr_runsum *r = &runs[ri];
        if (!sr_labels_match(&r->labels, &q->want))
            continue;
        int64_t ran_to = INT64_MAX; /* the latest end of the run's earlier attempts */
        for (size_t ai = 0; ai < r->n_att; ai++, att_id++) {
            const struct sr_runsum_attempt *a = &r->att[ai];
            const int64_t s = a->start_ms, e = a->end_ms > a->start_ms ? a->end_ms : a->start_ms;
            const int64_t waited = ran_to < s ? overlap(ran_to, s, lo, hi) : 0;
            if (ran_to == INT64_MAX || e > ran_to)
                ran_to = e;
            if (s >= hi || e < lo || (e == lo && e > s))
                continue; /* outside the window */
            const int64_t c0 = s > lo ? s : lo, c1 = e < hi ? e : hi;
            const int64_t lost0 = e - (a->lost_ms > 0 ? a->lost_ms : 0);
            const double nodes = a->nodes ? a->nodes : 1;
            const struct price p = price_of(q, a);
            for (int64_t t0 = c0;;) {
                int64_t t1 = c1;
                if (period != SR_BY_LABEL) {
                    const int64_t b = sr_stats_next_boundary(t0, period);
                    if (b < t1)
                        t1 = b;
                }
                struct piece pc = {.t0 = t0,
                                   .t1 = t1,
                                   .frac = e > s ? (double)(t1 - t0) / (double)(e - s) : 1.0,
                                   .ends = t1 == e && e < hi,
                                   .queued_h = t0 == c0 ? (double)waited / HOUR_MS : 0};
                const double lost_h = (double)overlap(lost0, e, t0, t1) / HOUR_MS * nodes;
                key_of(q, r, a, t0, key);
                struct sr_stats_row *row = row_of(out, q->n_by, key, &hint);
                if (!row) {
                    sr_stats_free(out);
                    return -ENOMEM;
                }
                add_piece(row, ri, att_id, a, &pc, &p, lost_h);
                add_piece(&out->total, ri, att_id, a, &pc, &p, lost_h);
                if (t1 >= c1)
                    break;
                t0 = t1;
            }
        }
    }
    if (out->n > 1)
        qsort(out->rows, out->n, sizeof(*out->rows), cmp_rows);
    return 0;
}

void sr_stats_free(struct sr_stats *s)
{
    free(s->rows);
    memset(s, 0, sizeof(*s));
}

int sr_stats_cloud_notice(const char *source)
{
    if (!source[0])
        return 1;
    if (strncmp(source, "peer:", 5) == 0) { /* "peer:R:SOURCE": node R's own notice */
        const char *colon = strchr(source + 5, ':');
        if (!colon)
            return 0;
        source = colon + 1;
    }
    return strcmp(source, "aws") == 0 || strcmp(source, "gcp") == 0 || strcmp(source, "azure") == 0;
}

double sr_stats_rate_per_100h(const struct sr_stats_row *r)
{
    return r->inst_h > 0 ? (double)r->preemptions * 100.0 / r->inst_h : NAN;
}

double sr_stats_mtbp_h(const struct sr_stats_row *r)
{
    return r->preemptions ? r->inst_h / (double)r->preemptions : NAN;
}

double sr_stats_ckpt_overhead(const struct sr_stats_row *r)
{
    return r->wall_s > 0 ? r->stage_s / r->wall_s : NAN;
}

double sr_stats_gpu_util(const struct sr_stats_row *r)
{
    return r->gpu_samples > 0 ? r->gpu_util_sum / r->gpu_samples : NAN;
}

double sr_stats_gpu_idle(const struct sr_stats_row *r)
{
    return r->gpu_samples > 0 ? r->gpu_idle_sum / r->gpu_samples : NAN;
}

double sr_stats_saving(const struct sr_stats_row *r)
{
    return r->od_cost > 0 ? r->od_cost - r->od_spot_cost : NAN;
}
