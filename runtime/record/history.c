/*
 * history.c - a run's history from its event logs (see history.h).
 */
#include "history.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "events.h"
#include "lease.h"
#include "log.h"
#include "suspect.h"
#include "termsafe.h"
#include "outtext.h"
#include "units.h"

#define EVENTS_MAX (64u << 20) /* one attempt's log read whole; far above any real one */
#define EVENTS_PART (8u << 20) /* of a larger log: its first and its last bytes read */

void sr_hist_init(struct sr_history *h)
{
    memset(h, 0, sizeof(*h));
    h->labels_attempt = -1;
}

void sr_hist_free(struct sr_history *h)
{
    for (size_t i = 0; i < h->n_att; i++)
        free(h->att[i].tail);
    free(h->att);
    free(h->ck);
    free(h->no);
    for (size_t i = 0; i < h->n_met; i++)
        free(h->met[i].pts);
    free(h->met);
    sr_hist_init(h);
}

/* Grows *v (of n elements of size sz, capacity *cap) by one zeroed element. */
static void *grow(void **v, size_t *n, size_t *cap, size_t sz)
{
    if (*n == *cap) {
        const size_t c = *cap ? *cap * 2 : 8;
        void *p = realloc(*v, c * sz);
        if (!p)
            return NULL;
        *v = p;
        *cap = c;
    }
    char *e = (char *)*v + (*n)++ * sz;
    memset(e, 0, sz);
    return e;
}

static struct sr_hist_attempt *attempt_of(struct sr_history *h, uint32_t a)
{
    for (size_t i = 0; i < h->n_att; i++)
        if (h->att[i].attempt == a)
            return &h->att[i];
    struct sr_hist_attempt *r = grow((void **)&h->att, &h->n_att, &h->cap_att, sizeof(*h->att));
    if (r) {
        r->attempt = a;
        r->resumed_seq = r->resumed_step = -1;
        r->nodes = 1;
    }
    return r;
}

static struct sr_hist_ckpt *ckpt_of(struct sr_history *h, uint64_t seq, uint32_t attempt)
{
    for (size_t i = 0; i < h->n_ck; i++)
        if (h->ck[i].seq == seq)
            return &h->ck[i];
    struct sr_hist_ckpt *r = grow((void **)&h->ck, &h->n_ck, &h->cap_ck, sizeof(*h->ck));
    if (r) {
        r->seq = seq;
        r->step = -1;
        r->attempt = attempt;
    }
    return r;
}

/* Event logs are store contents: every number is bounded on the way in, so
 * that sums and differences of them stay in range and print sanely. */
#define SECONDS_MAX 1e9 /* 31 years: any stage, upload or restore time */
#define BYTES_MAX (INT64_C(1) << 53)
#define STEP_MAX (INT64_C(1) << 62) /* a real up to it converts exactly */

/* Integer field k in [lo, hi], else dflt (a real is taken when integral
 * enough to be in range: never a float-to-integer overflow). */
static int64_t int_in(const json_t *o, const char *k, int64_t lo, int64_t hi, int64_t dflt)
{
    const json_t *v = json_object_get(o, k);
    if (json_is_integer(v)) {
        const json_int_t x = json_integer_value(v);
        return x >= lo && x <= hi ? (int64_t)x : dflt;
    }
    if (json_is_real(v)) {
        const double x = json_real_value(v);
        return x >= (double)lo && x <= (double)hi ? (int64_t)x : dflt;
    }
    return dflt;
}

static int64_t int_of(const json_t *o, const char *k, int64_t dflt)
{
    return int_in(o, k, -SR_TIME_MAX_MS, SR_TIME_MAX_MS, dflt);
}

/* A duration in seconds: 0 unless in [0, SECONDS_MAX]. */
static double num_of(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    const double x = json_is_number(v) ? json_number_value(v) : 0.0;
    return x >= 0 && x <= SECONDS_MAX ? x : 0.0;
}

/* An amount or a count of ms: 0 unless finite and in [0, 1e15]. */
static double num_in(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    const double x = json_is_number(v) ? json_number_value(v) : 0.0;
    return x >= 0 && x <= 1e15 ? x : 0.0;
}

static uint64_t bytes_of(const json_t *o, const char *k, uint64_t dflt)
{
    return (uint64_t)int_in(o, k, 0, BYTES_MAX, (int64_t)dflt);
}

/* A real in [lo, hi], else nan (so that one bad field rejects its event). */
static double real_in(const json_t *o, const char *k, double lo, double hi)
{
    const json_t *v = json_object_get(o, k);
    const double x = json_is_number(v) ? json_number_value(v) : NAN;
    return x >= lo && x <= hi ? x : NAN;
}

#define GPU_SAMPLES_MAX 4000000000.0 /* a sample a millisecond for 46 days */
#define GPU_DEVICES_MAX 64
#define GPU_POWER_MAX_W 10000.0

/* The "gpu" event: an attempt's utilization so far (the last one wins).
 * Every number must be in range, or the event is ignored as a whole. */
static void add_gpu(struct sr_hist_attempt *at, const json_t *ev)
{
    const double samples = real_in(ev, "samples", 1, GPU_SAMPLES_MAX);
    const double devices = real_in(ev, "devices", 1, GPU_DEVICES_MAX);
    const double mean = real_in(ev, "util_mean", 0, 100);
    const double p50 = real_in(ev, "util_p50", 0, 100);
    const double p95 = real_in(ev, "util_p95", 0, 100);
    const double idle = real_in(ev, "idle_share", 0, 1);
    const double mem = real_in(ev, "mem_used_max", 0, (double)BYTES_MAX);
    const json_t *pw = json_object_get(ev, "power_mean_w");
    const double power =
        json_is_null(pw) || !pw ? 0 : real_in(ev, "power_mean_w", 0, GPU_POWER_MAX_W);
    if (isnan(samples) || isnan(devices) || isnan(mean) || isnan(p50) || isnan(p95) ||
        isnan(idle) || isnan(mem) || isnan(power) || p50 > p95 || samples != floor(samples) ||
        devices != floor(devices))
        return;
    at->gpu_samples = (unsigned)samples;
    at->gpu_devices = (unsigned)devices;
    at->gpu_util_mean = mean;
    at->gpu_util_p50 = p50;
    at->gpu_util_p95 = p95;
    at->gpu_idle_share = idle;
    at->gpu_mem_used_max = (uint64_t)mem;
    at->gpu_power_mean_w = power;
}

/* "gpu_live": the running wrapper's newest reading of each device. */
static void add_gpu_live(struct sr_history *h, const json_t *ev, int64_t t)
{
    const json_t *arr = json_object_get(ev, "devices");
    struct sr_hist_gpu_live l = {.at_ms = t};
    for (size_t i = 0; i < json_array_size(arr) && l.n < SR_HIST_GPU_LIVE_MAX; i++) {
        const json_t *d = json_array_get(arr, i);
        const double gpu = real_in(d, "gpu", 0, GPU_DEVICES_MAX - 1);
        const double util = real_in(d, "util", 0, 100);
        const double mem = real_in(d, "mem_used", 0, (double)BYTES_MAX);
        const double pw = real_in(d, "power_w", 0, GPU_POWER_MAX_W);
        if (isnan(gpu) || isnan(util) || isnan(mem) || gpu != floor(gpu))
            continue;
        l.dev[l.n].gpu = (unsigned)gpu;
        l.dev[l.n].util = util;
        l.dev[l.n].mem_used = (uint64_t)mem;
        l.dev[l.n].power_w = isnan(pw) ? -1 : pw;
        l.n++;
    }
    h->gpu_live = l;
}

/* A string of an event, made safe for a terminal (termsafe.h): every view
 * prints what the history keeps, and an event log is anyone's to write. */
static void str_of(const json_t *o, const char *k, char *dst, size_t len)
{
    const char *s = json_string_value(json_object_get(o, k));
    if (s)
        sr_term_safe(s, dst, len);
}

/* A failed commit: counted, and kept when it is the newest. */
static void add_commit_failure(struct sr_history *h, const json_t *ev, uint32_t a, int64_t t)
{
    h->commit_failures++;
    struct sr_hist_commit_failure *const f = &h->last_failure;
    if (h->commit_failures > 1 && t < f->at_ms)
        return;
    memset(f, 0, sizeof(*f));
    f->attempt = a;
    f->at_ms = t;
    f->seq = int_in(ev, "seq", 0, INT64_MAX, 0);
    f->step = int_in(ev, "step", -1, INT64_MAX, -1);
    f->stands_seq = int_in(ev, "stands_seq", 0, INT64_MAX, 0);
    f->stands_step = int_in(ev, "stands_step", -1, INT64_MAX, -1);
    str_of(ev, "phase", f->phase, sizeof(f->phase));
    str_of(ev, "reason", f->reason, sizeof(f->reason));
    for (char *c = f->reason; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    if (strcmp(f->phase, "stage") != 0 && strcmp(f->phase, "persist") != 0)
        snprintf(f->phase, sizeof(f->phase), "?");
}

/* A placement value (cloud, instance type, zone, region) as spotrun writes
 * it: a word of [A-Za-z0-9._/:+-] (what --instance-type takes), at most
 * 63; a tampered one is ignored. */
static void place_of(const json_t *o, const char *k, char *dst, size_t len)
{
    const json_t *v = json_object_get(o, k);
    const char *s = json_string_value(v);
    const size_t n = json_string_length(v);
    if (!s || n == 0 || n > 63 || n >= len || strlen(s) != n)
        return;
    for (const char *c = s; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("._/:+-", *c))
            return;
    memcpy(dst, s, n + 1);
}

/* A "placement" event fills what the start did not say. */
static void add_placement(struct sr_hist_attempt *at, const json_t *ev)
{
    char cloud[32] = "";
    place_of(ev, "cloud", cloud, sizeof(cloud));
    if (strcmp(cloud, "aws") != 0 && strcmp(cloud, "gcp") != 0 && strcmp(cloud, "azure") != 0)
        return;
    if (!at->cloud[0])
        memcpy(at->cloud, cloud, sizeof(cloud));
    if (!at->instance_type[0])
        place_of(ev, "instance_type", at->instance_type, sizeof(at->instance_type));
    if (!at->zone[0])
        place_of(ev, "zone", at->zone, sizeof(at->zone));
    if (!at->region[0])
        place_of(ev, "region", at->region, sizeof(at->region));
}

static void add_ckpt(struct sr_history *h, const json_t *ev, uint32_t a, int64_t t, int persisted)
{
    const int64_t seq = int_of(ev, "seq", -1);
    if (seq < 0)
        return;
    struct sr_hist_ckpt *c = ckpt_of(h, (uint64_t)seq, a);
    if (!c)
        return;
    c->step = int_of(ev, "step", c->step);
    c->raw_bytes = bytes_of(ev, "raw_bytes", c->raw_bytes);
    c->stored_bytes = bytes_of(ev, "stored_bytes", c->stored_bytes);
    if (persisted) {
        c->persisted_ms = t;
        c->persist_seconds = num_of(ev, "seconds");
    } else {
        c->staged_ms = t;
        c->stage_seconds = num_of(ev, "seconds");
        c->attempt = a;
    }
}

/* The newest "interval" event wins (logs of attempts come in any order). */
static void add_interval(struct sr_history *h, const json_t *ev, int64_t t)
{
    struct sr_hist_interval *iv = &h->interval;
    const int64_t ms = int_in(ev, "interval_ms", 1, SR_TIME_MAX_MS, 0);
    if (!ms || (iv->interval_ms && t < iv->at_ms))
        return;
    *iv = (struct sr_hist_interval){.at_ms = t,
                                    .interval_ms = ms,
                                    .cost_ms = int_in(ev, "cost_ms", 0, SR_TIME_MAX_MS, 0),
                                    .mtbf_ms = int_in(ev, "mtbf_ms", 0, SR_TIME_MAX_MS, 0),
                                    .source = "auto"};
    str_of(ev, "source", iv->source, sizeof(iv->source));
    str_of(ev, "cost_from", iv->cost_from, sizeof(iv->cost_from));
    str_of(ev, "mtbf_from", iv->mtbf_from, sizeof(iv->mtbf_from));
}

/* Keeps every m->stride-th value; at SR_HIST_POINTS_MAX, drops every other
 * kept one and doubles the stride (the curve stays even over the run). */
static void keep_point(struct sr_hist_metric *m, double v, int64_t step, uint32_t a)
{
    if (m->count % m->stride)
        return;
    if (m->n_pts == SR_HIST_POINTS_MAX) {
        size_t n = 0;
        for (size_t i = 0; i < m->n_pts; i += 2)
            m->pts[n++] = m->pts[i];
        m->n_pts = n;
        m->stride *= 2;
        if (m->count % m->stride)
            return;
    }
    if (!m->pts && !(m->pts = malloc(SR_HIST_POINTS_MAX * sizeof(*m->pts))))
        return;
    m->pts[m->n_pts++] =
        (struct sr_hist_point){.step = step, .value = v, .attempt = a, .index = m->count};
}

/* The metric a "metric" or "metric_summary" event names, made when new;
 * NULL when its name is not one `spotrun metric` takes (a name from a
 * tampered log never reaches a terminal, a CSV or the metrics file with
 * control bytes or quotes) or the run has SR_HIST_METRICS_MAX already. */
static struct sr_hist_metric *metric_of(struct sr_history *h, const json_t *ev)
{
    const char *name = json_string_value(json_object_get(ev, "name"));
    if (!name || !*name || strlen(name) > SR_HIST_METRIC_NAME_MAX)
        return NULL;
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.' && *c != ':' && *c != '-')
            return NULL;
    struct sr_hist_metric *m = (struct sr_hist_metric *)sr_hist_metric_find(h, name);
    if (m || h->n_met == SR_HIST_METRICS_MAX)
        return m;
    m = grow((void **)&h->met, &h->n_met, &h->cap_met, sizeof(*h->met));
    if (!m)
        return NULL;
    snprintf(m->name, sizeof(m->name), "%s", name);
    m->min = INFINITY;
    m->max = -INFINITY;
    m->min_step = m->max_step = -1;
    m->last_ms = -1;
    m->stride = 1;
    return m;
}

/* Folds one value reached at step into the metric's min and max. The
 * best's step: where it was first reached (a tie keeps the lower step, so
 * the order the logs are read in does not matter). */
static void fold_extremes(struct sr_hist_metric *m, double lo, int64_t lo_step, double hi,
                          int64_t hi_step)
{
    if (lo < m->min ||
        (lo == m->min && lo_step >= 0 && (m->min_step < 0 || lo_step < m->min_step))) {
        m->min = lo;
        m->min_step = lo_step;
    }
    if (hi > m->max ||
        (hi == m->max && hi_step >= 0 && (m->max_step < 0 || hi_step < m->max_step))) {
        m->max = hi;
        m->max_step = hi_step;
    }
}

/* Newest by time, then attempt, then step; a tie goes to the later line. */
static void fold_last(struct sr_hist_metric *m, double v, int64_t step, uint32_t a, int64_t t)
{
    const int newer = t != m->last_ms        ? t > m->last_ms
                      : a != m->last_attempt ? a > m->last_attempt
                                             : step >= m->last_step;
    if (newer) {
        m->last = v;
        m->last_ms = t;
        m->last_attempt = a;
        m->last_step = step;
    }
}

/* A "metric" event: {"name":..,"value":..,"step":N} (step optional). */
static void add_metric(struct sr_history *h, const json_t *ev, uint32_t a, int64_t t)
{
    const json_t *jv = json_object_get(ev, "value");
    if (!json_is_number(jv) || !isfinite(json_number_value(jv)))
        return;
    struct sr_hist_metric *m = metric_of(h, ev);
    if (!m)
        return;
    const double v = json_number_value(jv);
    const int64_t step = int_in(ev, "step", 0, STEP_MAX, -1);
    if (h->keep_points)
        keep_point(m, v, step, a);
    m->count++;
    fold_extremes(m, v, step, v, step);
    fold_last(m, v, step, a, t);
}

/* A "metric_summary" line (docs/events.md, "Metric volume"): the values of
 * one name the writer thinned out of the attempt's log, summed up. Its
 * last, min and max cover the attempt's every value, so folding them again
 * beside the written lines changes nothing; its dropped adds the values
 * that have no line of their own to the count. */
static void add_metric_summary(struct sr_history *h, const json_t *ev, uint32_t a, int64_t t)
{
    const double last = json_number_value(json_object_get(ev, "last"));
    const double lo = json_number_value(json_object_get(ev, "min"));
    const double hi = json_number_value(json_object_get(ev, "max"));
    const int64_t dropped = int_in(ev, "dropped", 0, UINT32_MAX, -1);
    if (!json_is_number(json_object_get(ev, "last")) ||
        !json_is_number(json_object_get(ev, "min")) ||
        !json_is_number(json_object_get(ev, "max")) || dropped < 0 || !isfinite(last) ||
        !isfinite(lo) || !isfinite(hi) || lo > hi || last < lo || last > hi)
        return;
    struct sr_hist_metric *m = metric_of(h, ev);
    if (!m)
        return;
    m->count = (uint64_t)m->count + (uint64_t)dropped > UINT32_MAX ? UINT32_MAX
                                                                   : m->count + (unsigned)dropped;
    fold_extremes(m, lo, int_in(ev, "min_step", 0, STEP_MAX, -1), hi,
                  int_in(ev, "max_step", 0, STEP_MAX, -1));
    fold_last(m, last, int_in(ev, "last_step", 0, STEP_MAX, -1), a, t);
}

const struct sr_hist_metric *sr_hist_metric_find(const struct sr_history *h, const char *name)
{
    for (size_t i = 0; i < h->n_met; i++)
        if (strcmp(h->met[i].name, name) == 0)
            return &h->met[i];
    return NULL;
}

double sr_hist_metric_best(const struct sr_hist_metric *m, int maximize)
{
    return maximize ? m->max : m->min;
}

int64_t sr_hist_metric_best_step(const struct sr_hist_metric *m, int maximize)
{
    return maximize ? m->max_step : m->min_step;
}

static int word_in(const char *w, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(w, *list) == 0)
            return 1;
    return 0;
}

int sr_hist_metric_maximized(const char *name)
{
    static const char *const up[] = {
        "accuracy", "acc", "f1",  "auc",  "bleu", "rouge", "reward", "return", "score", "precision",
        "recall",   "iou", "map", "dice", "psnr", "ssim",  "r2",     "top1",   "top5",  NULL};
    static const char *const down[] = {"loss", "error", "err",  "perplexity", "ppl", "nll",
                                       "mse",  "mae",   "rmse", "wer",        "cer", NULL};
    int max = 0;
    char w[SR_HIST_METRIC_NAME_MAX + 1];
    size_t n = 0;
    for (const char *s = name;; s++) {
        if (*s && !strchr("_.:-", *s)) {
            if (n + 1 < sizeof(w))
                w[n++] = (char)tolower((unsigned char)*s);
            continue;
        }
        w[n] = '\0';
        if (n && word_in(w, down))
            return 0;
        if (n && word_in(w, up))
            max = 1;
        n = 0;
        if (!*s)
            break;
    }
    return max;
}

/* A "limit" event (a time limit or a budget stopped the attempt); a cause
 * this reader does not know is no limit. */
/* The exit event's "tail": cleaned again (nothing in the store is trusted). */
static void add_tail(struct sr_hist_attempt *at, const json_t *ev)
{
    const json_t *t = json_object_get(ev, "tail");
    if (!json_is_string(t))
        return;
    const size_t n = json_string_length(t);
    const char *p = json_string_value(t);
    free(at->tail);
    at->tail = n > SR_TAIL_MAX_BYTES
                   ? sr_outtext_tail(p + n - SR_TAIL_MAX_BYTES, SR_TAIL_MAX_BYTES, 1,
                                     SR_TAIL_MAX_LINES, SR_TAIL_MAX_BYTES)
                   : sr_outtext_tail(p, n, 0, SR_TAIL_MAX_LINES, SR_TAIL_MAX_BYTES);
}

static void add_limit(struct sr_hist_attempt *at, const json_t *ev)
{
    const char *cause = json_string_value(json_object_get(ev, "cause"));
    if (!cause || at->limit != SR_CAUSE_NONE) /* a group's nodes: the first */
        return;
    if ((at->limit = sr_limit_cause_of(cause)) == SR_CAUSE_NONE)
        return;
    snprintf(at->limit_what, sizeof(at->limit_what), "run");
    str_of(ev, "what", at->limit_what, sizeof(at->limit_what));
    /* Only the names spotrun writes: a tampered log prints nothing odd. */
    if (strcmp(at->limit_what, "attempt") != 0 && strcmp(at->limit_what, "sweep") != 0)
        snprintf(at->limit_what, sizeof(at->limit_what), "run");
    const json_t *l = json_object_get(ev, "limit"), *u = json_object_get(ev, "used");
    const double lv = json_is_number(l) ? json_number_value(l) : 0.0;
    const double uv = json_is_number(u) ? json_number_value(u) : 0.0;
    at->limit_value = lv >= 0 && lv <= (double)SR_TIME_MAX_MS ? lv : 0.0;
    at->limit_used = uv >= 0 && uv <= (double)SR_TIME_MAX_MS ? uv : 0.0;
}

void sr_hist_add(struct sr_history *h, const json_t *ev)
{
    const char *type = json_string_value(json_object_get(ev, "event"));
    const int64_t t = int_in(ev, "unix_ms", 0, SR_TIME_MAX_MS, -1);
    const int64_t a64 = int_in(ev, "attempt", 0, SR_ATTEMPT_MAX, -1);
    if (type && t >= 0 && strcmp(type, "gpu_live") == 0) { /* no attempt: never logged */
        add_gpu_live(h, ev, t);
        return;
    }
    if (!type || t < 0 || a64 < 0)
        return;
    const uint32_t a = (uint32_t)a64;
    struct sr_hist_attempt *at = attempt_of(h, a);
    if (!at)
        return;
    if (!at->first_ms || t < at->first_ms)
        at->first_ms = t;
    if (t > at->last_ms)
        at->last_ms = t;
    /* GPU memory as the shim reports it, on whichever event carries it. */
    const uint64_t peak = bytes_of(ev, "gpu_peak_bytes", 0);
    if (peak > at->gpu_peak_bytes)
        at->gpu_peak_bytes = peak;
    if (json_object_get(ev, "gpu_bytes"))
        at->gpu_bytes = bytes_of(ev, "gpu_bytes", 0);

    if (strcmp(type, "start") == 0) {
        h->gpu_live.n = 0;
        at->start_ms = t;
        str_of(ev, "host", at->host, sizeof(at->host));
        const json_t *wd = json_object_get(ev, "work_dir");
        str_of(wd, "path", at->work_dir, sizeof(at->work_dir));
        at->work_kept = json_is_true(json_object_get(wd, "kept"));
        place_of(ev, "cloud", at->cloud, sizeof(at->cloud));
        place_of(ev, "instance_type", at->instance_type, sizeof(at->instance_type));
        place_of(ev, "zone", at->zone, sizeof(at->zone));
        at->nodes = (uint32_t)int_in(ev, "nodes", 1, 4096, 1);
        at->max_cost = num_in(ev, "max_cost");
        at->price_per_hour = num_in(ev, "price_per_hour");
        const json_t *lab = json_object_get(ev, "labels");
        if (json_is_object(lab) && (int64_t)a >= h->labels_attempt) {
            sr_labels_from_json(&h->labels, lab);
            h->labels_attempt = a;
        }
        if (json_is_true(json_object_get(ev, "resumed"))) {
            at->resumed = 1;
            at->resumed_seq = int_of(ev, "seq", at->resumed_seq);
            at->resumed_step = int_of(ev, "step", at->resumed_step);
        }
    } else if (strcmp(type, "placement") == 0) {
        add_placement(at, ev);
    } else if (strcmp(type, "restore") == 0) {
        at->resumed = 1;
        at->resumed_seq = int_of(ev, "seq", -1);
        at->resumed_step = int_of(ev, "step", -1);
        at->restore_seconds = num_of(ev, "seconds");
    } else if (strcmp(type, "request") == 0) {
        h->requests++;
    } else if (strcmp(type, "interval") == 0) {
        add_interval(h, ev, t);
    } else if (strcmp(type, "staged") == 0) {
        add_ckpt(h, ev, a, t, 0);
    } else if (strcmp(type, "persisted") == 0) {
        add_ckpt(h, ev, a, t, 1);
    } else if (strcmp(type, "commit_failed") == 0) {
        add_commit_failure(h, ev, a, t);
    } else if (strcmp(type, "notice") == 0) {
        struct sr_hist_notice *n = grow((void **)&h->no, &h->n_no, &h->cap_no, sizeof(*h->no));
        if (n) {
            n->attempt = a;
            n->at_ms = t;
            n->left_ms = int_of(ev, "ms_left", 0);
            snprintf(n->source, sizeof(n->source), "unknown");
            str_of(ev, "source", n->source, sizeof(n->source));
        }
        if (!at->notice_ms && n) {
            at->notice_ms = t;
            at->notice_left_ms = n->left_ms;
            snprintf(at->notice_source, sizeof(at->notice_source), "%s", n->source);
        }
    } else if (strcmp(type, "gpu") == 0) {
        add_gpu(at, ev);
    } else if (strcmp(type, "exit") == 0) {
        h->gpu_live.n = 0;
        at->has_exit = 1;
        at->exit_ms = t;
        at->exit_code = (int)int_in(ev, "code", INT32_MIN, INT32_MAX, 0);
        str_of(ev, "signal", at->exit_signal, sizeof(at->exit_signal));
        at->oom = json_is_true(json_object_get(ev, "oom"));
        add_tail(at, ev);
    } else if (strcmp(type, "stalled") == 0) {
        h->stalls++; /* --stall-timeout counts them over every attempt */
        at->stalled = 1;
        at->stall_since_ms = int_in(ev, "since_ms", 0, SR_TIME_MAX_MS, 0);
        at->stall_timeout_ms = int_in(ev, "timeout_ms", 0, SR_TIME_MAX_MS, 0);
        sr_stall_suspect(ev, at->stall_suspect, sizeof(at->stall_suspect));
    } else if (strcmp(type, "heartbeat") == 0) {
        const int64_t after = int_in(ev, "after_ms", 0, SR_TIME_MAX_MS, 0);
        h->beats++;
        if (after > h->beat_startup_max_ms)
            h->beat_startup_max_ms = after;
    } else if (strcmp(type, "limit") == 0) {
        add_limit(at, ev);
    } else if (strcmp(type, "withdrawn") == 0) {
        at->notice_ms = 0; /* a cancelled notice; a later one is the cause */
    } else if (strcmp(type, "restart") == 0) {
        at->restarted = 1;
    } else if (strcmp(type, "preempted") == 0) {
        /* Only a notice is a preemption: older wrappers wrote
         * "preempted" for a job that exited 75 by itself, with no notice in
         * the attempt; that attempt failed with the job's code. */
        for (size_t i = 0; i < h->n_no && !at->preempted; i++)
            at->preempted = h->no[i].attempt == a;
    } else if (strcmp(type, "lease_lost") == 0) {
        at->superseded = 1;
        str_of(ev, "reason", at->lease_reason, sizeof(at->lease_reason));
    } else if (strcmp(type, "done") == 0) {
        at->done = 1;
    } else if (strcmp(type, "metric") == 0) {
        add_metric(h, ev, a, t);
    } else if (strcmp(type, "metric_summary") == 0) {
        add_metric_summary(h, ev, a, t);
    }
}

int sr_hist_add_line(struct sr_history *h, const char *line, size_t len)
{
    json_error_t err;
    json_t *o = json_loadb(line, len, 0, &err);
    if (!json_is_object(o)) {
        json_decref(o);
        return -EBADMSG;
    }
    sr_hist_add(h, o);
    json_decref(o);
    return 0;
}

static int cmp_att(const void *a, const void *b)
{
    const uint32_t x = ((const struct sr_hist_attempt *)a)->attempt;
    const uint32_t y = ((const struct sr_hist_attempt *)b)->attempt;
    return (x > y) - (x < y);
}

static int cmp_ck(const void *a, const void *b)
{
    const uint64_t x = ((const struct sr_hist_ckpt *)a)->seq;
    const uint64_t y = ((const struct sr_hist_ckpt *)b)->seq;
    return (x > y) - (x < y);
}

static void count(struct sr_hist_count *v, size_t *n, size_t max, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(v[i].name, name) == 0) {
            v[i].n++;
            return;
        }
    if (*n == max) /* a long tail of odd names folds into the last one */
        name = "other";
    if (*n == max) {
        v[max - 1].n++;
        snprintf(v[max - 1].name, sizeof(v[max - 1].name), "%s", name);
        return;
    }
    snprintf(v[*n].name, sizeof(v[*n].name), "%s", name);
    v[(*n)++].n = 1;
}

static enum sr_hist_end end_of(const struct sr_hist_attempt *a, int last, int gone)
{
    if (a->done)
        return SR_END_DONE;
    if (a->preempted)
        return SR_END_PREEMPTED;
    if (a->superseded)
        return SR_END_SUPERSEDED;
    if (a->restarted)
        return SR_END_CRASHED;
    if (a->limit != SR_CAUSE_NONE && (a->has_exit || !last || gone))
        return SR_END_STOPPED;
    if (a->has_exit && (a->exit_code != 0 || a->stalled)) /* a stall is never a finish */
        return SR_END_FAILED;
    if (a->has_exit) /* a node's job finished; the run waits for the others (node_done) */
        return SR_END_DONE;
    return last && !gone ? SR_END_OPEN : SR_END_VANISHED;
}

/* The vocabulary's rule (outcome.h, docs/events.md): the stop its log
 * recorded (lease_lost, stalled, limit, notice), else how the job ended
 * (oom, done, exit); else vanished or still running. */
static enum sr_hist_cause cause_of(const struct sr_hist_attempt *a)
{
    if (a->end == SR_END_OPEN)
        return SR_CAUSE_NONE;
    const enum sr_stop stop = a->superseded                ? SR_STOP_LEASE
                              : a->stalled                 ? SR_STOP_STALL
                              : a->limit != SR_CAUSE_NONE  ? SR_STOP_LIMIT
                              : a->end == SR_END_PREEMPTED ? SR_STOP_NOTICE
                                                           : SR_STOP_NONE;
    const int code = a->end == SR_END_DONE ? 0 : a->has_exit ? a->exit_code : 1;
    return sr_end_cause(stop, a->limit, a->end != SR_END_VANISHED, code, a->has_exit && a->oom);
}

/* How the job ended: "exit 3", or "SIGKILL, signal 9". */
static void exit_detail(const struct sr_hist_attempt *a, char *buf, size_t len)
{
    if (a->exit_signal[0] && a->exit_code > 128)
        snprintf(buf, len, "SIG%s, signal %d", a->exit_signal, a->exit_code - 128);
    else if (a->exit_signal[0])
        snprintf(buf, len, "SIG%s", a->exit_signal);
    else
        snprintf(buf, len, "exit %d", a->exit_code);
}

static void cause_detail(const struct sr_hist_attempt *a, char *buf, size_t len)
{
    char x[32], y[32];
    buf[0] = '\0';
    switch (a->cause) {
    case SR_CAUSE_PREEMPTED:
        snprintf(buf, len, "%s", a->notice_ms ? a->notice_source : "unknown");
        break;
    case SR_CAUSE_CRASHED:
    case SR_CAUSE_OOM:
        exit_detail(a, buf, len);
        break;
    case SR_CAUSE_STALLED:
        sr_format_duration_ms(a->stall_since_ms, x, sizeof(x));
        sr_format_duration_ms(a->stall_timeout_ms, y, sizeof(y));
        snprintf(buf, len, "no progress for %s, stall timeout %s", x, y);
        break;
    case SR_CAUSE_TIME_LIMIT:
        sr_format_duration_ms((int64_t)a->limit_value, x, sizeof(x));
        sr_format_duration_ms((int64_t)a->limit_used, y, sizeof(y));
        snprintf(buf, len, "%s time limit %s reached, used %s", a->limit_what, x, y);
        break;
    case SR_CAUSE_BUDGET:
        snprintf(buf, len, "%s budget $%.2f reached, used $%.2f", a->limit_what, a->limit_value,
                 a->limit_used);
        break;
    case SR_CAUSE_LEASE_LOST:
        snprintf(buf, len, "another wrapper took the run over");
        break;
    case SR_CAUSE_PRUNED:
        snprintf(buf, len, "the sweep's early stopping, at its rung of step %.0f", a->limit_value);
        break;
    case SR_CAUSE_CANCELLED:
        snprintf(buf, len, "the sweep's operator cancelled the trial");
        break;
    case SR_CAUSE_PAUSED:
        snprintf(buf, len, "the sweep was paused with --stop");
        break;
    default:
        break;
    }
}

/* The staged time of the newest checkpoint durable by cutoff, or 0. */
static int64_t durable_base(const struct sr_history *h, int64_t cutoff)
{
    const struct sr_hist_ckpt *best = NULL;
    for (size_t i = 0; i < h->n_ck; i++) {
        const struct sr_hist_ckpt *c = &h->ck[i];
        if (c->persisted_ms && c->persisted_ms <= cutoff && (!best || c->seq > best->seq))
            best = c;
    }
    if (!best)
        return 0;
    return best->staged_ms ? best->staged_ms : best->persisted_ms;
}

static void derive_attempts(struct sr_history *h)
{
    uint32_t session = 0;
    for (size_t i = 0; i < h->n_att; i++) {
        struct sr_hist_attempt *a = &h->att[i];
        const int last = i + 1 == h->n_att;
        if (!a->start_ms)
            a->start_ms = a->first_ms;
        if (i > 0 && !h->att[i - 1].restarted)
            session++;
        a->session = session;
        a->end = end_of(a, last, h->last_gone);
        a->cause = cause_of(a);
        cause_detail(a, a->cause_detail, sizeof(a->cause_detail));
        a->end_ms = a->has_exit ? a->exit_ms : a->last_ms;
        a->lost_ms = 0;
        a->base_ms = 0;
        if (a->end == SR_END_OPEN || a->end == SR_END_DONE)
            continue;
        const int64_t cutoff = last ? INT64_MAX : h->att[i + 1].first_ms;
        int64_t base = durable_base(h, cutoff);
        if (base < a->start_ms)
            base = a->start_ms;
        a->base_ms = base;
        a->lost_ms = a->end_ms > base ? a->end_ms - base : 0;
    }
    h->sessions = h->n_att ? session + 1 : 0;
}

static void derive_counts(struct sr_history *h)
{
    for (size_t i = 0; i < h->n_att; i++) {
        const struct sr_hist_attempt *a = &h->att[i];
        char cause[64];
        h->lost_ms += a->lost_ms;
        h->restarts += a->restarted ? 1 : 0;
        h->ends[a->cause]++;
        switch (a->end) {
        case SR_END_PREEMPTED:
            h->preemptions++;
            count(h->by_source, &h->n_sources, 16, a->notice_ms ? a->notice_source : "unknown");
            break;
        case SR_END_CRASHED:
        case SR_END_FAILED:
        case SR_END_VANISHED:
            h->failures++;
            if (a->end == SR_END_VANISHED)
                snprintf(cause, sizeof(cause), "vanished");
            else if (a->exit_signal[0])
                snprintf(cause, sizeof(cause), "SIG%s", a->exit_signal);
            else
                snprintf(cause, sizeof(cause), "exit %d", a->exit_code);
            count(h->by_cause, &h->n_causes, 16, cause);
            break;
        default:
            break;
        }
        if (a->gpu_peak_bytes > h->gpu_peak_bytes)
            h->gpu_peak_bytes = a->gpu_peak_bytes;
        if (a->gpu_bytes)
            h->gpu_bytes = a->gpu_bytes;
        if (a->gpu_samples) {
            const double n = (double)a->gpu_samples, before = (double)h->gpu_samples;
            h->gpu_util_mean = (h->gpu_util_mean * before + a->gpu_util_mean * n) / (before + n);
            h->gpu_idle_share = (h->gpu_idle_share * before + a->gpu_idle_share * n) / (before + n);
            h->gpu_samples += a->gpu_samples;
        }
        if (!h->first_ms || (a->first_ms && a->first_ms < h->first_ms))
            h->first_ms = a->first_ms;
        if (a->last_ms > h->last_ms)
            h->last_ms = a->last_ms;
    }
}

static void derive_ckpts(struct sr_history *h)
{
    double *st = calloc(h->n_ck + 1, sizeof(double));
    double *pe = calloc(h->n_ck + 1, sizeof(double));
    if (!st || !pe) {
        free(st);
        free(pe);
        return;
    }
    size_t ns = 0, np = 0;
    for (size_t i = 0; i < h->n_ck; i++) {
        const struct sr_hist_ckpt *c = &h->ck[i];
        if (c->staged_ms)
            st[ns++] = c->stage_seconds;
        if (c->persisted_ms) {
            pe[np++] = c->persist_seconds;
            h->raw_bytes += c->raw_bytes;
            h->stored_bytes += c->stored_bytes;
            if (c->persisted_ms > h->last_durable_ms)
                h->last_durable_ms = c->persisted_ms;
        }
    }
    h->staged = (unsigned)ns;
    h->durable = (unsigned)np;
    h->stage_p50 = sr_percentile(st, ns, 50);
    h->stage_max = ns ? st[ns - 1] : 0;
    h->persist_p50 = sr_percentile(pe, np, 50);
    h->persist_max = np ? pe[np - 1] : 0;
    free(st);
    free(pe);
}

static void derive_times(struct sr_history *h)
{
    h->wall_ms = h->last_ms - h->first_ms;
    /* A session (one wrapper process) is on an instance from its first
     * event to its last; between sessions the run waited in a queue. */
    for (size_t i = 0; i < h->n_att;) {
        size_t j = i;
        while (j + 1 < h->n_att && h->att[j + 1].session == h->att[i].session)
            j++;
        if (h->att[j].last_ms > h->att[i].first_ms) /* times of a planted log may disagree */
            h->instance_ms += h->att[j].last_ms - h->att[i].first_ms;
        i = j + 1;
    }
    h->queued_ms = h->wall_ms > h->instance_ms ? h->wall_ms - h->instance_ms : 0;
}

void sr_hist_derive(struct sr_history *h)
{
    if (h->n_att) /* qsort's base must not be NULL, even for 0 elements */
        qsort(h->att, h->n_att, sizeof(*h->att), cmp_att);
    if (h->n_ck)
        qsort(h->ck, h->n_ck, sizeof(*h->ck), cmp_ck);
    h->preemptions = h->failures = h->restarts = 0;
    h->n_sources = h->n_causes = 0;
    memset(h->ends, 0, sizeof(h->ends));
    h->lost_ms = h->first_ms = h->last_ms = h->wall_ms = h->instance_ms = h->queued_ms = 0;
    h->raw_bytes = h->stored_bytes = 0;
    h->last_durable_ms = 0;
    h->gpu_peak_bytes = h->gpu_bytes = 0;
    h->gpu_samples = 0;
    h->gpu_util_mean = h->gpu_idle_share = 0;
    derive_attempts(h);
    derive_counts(h);
    derive_ckpts(h);
    derive_times(h);
    int done = h->done_marker;
    for (size_t i = 0; i < h->n_att; i++)
        done |= h->att[i].done;
    if (done)
        h->state = SR_STATE_DONE;
    else if (h->n_att == 0)
        h->state = SR_STATE_NEW;
    else if (h->att[h->n_att - 1].end == SR_END_PREEMPTED)
        h->state = SR_STATE_PREEMPTED;
    else if (h->att[h->n_att - 1].end == SR_END_FAILED)
        h->state = SR_STATE_FAILED;
    else if (h->att[h->n_att - 1].end == SR_END_STOPPED)
        h->state = SR_STATE_STOPPED;
    else if (h->att[h->n_att - 1].end == SR_END_VANISHED)
        h->state = SR_STATE_VANISHED;
    else
        h->state = SR_STATE_RUNNING;
    sr_hist_count_checkpoints(h, h->n_ck);
}

void sr_hist_last_is_gone(struct sr_history *h)
{
    h->last_gone = 1;
    sr_hist_derive(h);
}

void sr_hist_settle_last(struct sr_store *st, const char *run_id, struct sr_history *h)
{
    if (!h->n_att || h->att[h->n_att - 1].end != SR_END_OPEN)
        return;
    struct sr_lease_info in;
    if (sr_lease_read_rank(st, run_id, -1, &in) < 0) {
        sr_err_clear();
        return;
    }
    if (sr_lease_takeable(&in, sr_wall_ms() / 1000))
        sr_hist_last_is_gone(h);
}

void sr_hist_count_checkpoints(struct sr_history *h, size_t n)
{
    if (h->state == SR_STATE_NEW && n > 0)
        h->state = SR_STATE_CHECKPOINTED;
}

static void add_lines(struct sr_history *h, const char *buf, size_t len)
{
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n > 0)
            sr_hist_add_line(h, p, n); /* a torn last line is skipped */
        p += n + 1;
    }
}

/* A log past EVENTS_MAX (written by an older wrapper that did not thin
 * metric values, or planted): its first and last EVENTS_PART bytes, whole
 * lines only, hold the attempt's start, its end, its cause and its last
 * metric summaries; what lies between (metric values mostly) is left out,
 * with a warning. Two ranged reads: memory stays bounded. */
static int add_head_tail(struct sr_history *h, struct sr_store *st, const char *key)
{
    uint64_t size = 0;
    int rc = sr_store_size(st, key, &size);
    if (rc < 0)
        return rc;
    if (size <= 2 * (uint64_t)EVENTS_PART)
        return -EFBIG; /* replaced meanwhile by something odd: say so */
    const struct sr_range plan[2] = {{0, EVENTS_PART}, {size - EVENTS_PART, EVENTS_PART}};
    struct sr_source src;
    rc = sr_store_source_ranged(st, key, plan, 2, &src);
    if (rc < 0)
        return rc;
    char *buf = malloc(EVENTS_PART);
    if (!buf)
        rc = -ENOMEM;
    for (int i = 0; rc == 0 && i < 2; i++) {
        rc = src.read_at(src.ctx, buf, EVENTS_PART, plan[i].off);
        if (rc < 0)
            break;
        const char *p = buf, *end = buf + EVENTS_PART;
        if (i == 0) { /* the head, up to its last whole line */
            while (end > p && end[-1] != '\n')
                end--;
        } else { /* the tail, from its first whole line */
            const char *nl = memchr(p, '\n', EVENTS_PART);
            p = nl ? nl + 1 : end;
        }
        add_lines(h, p, (size_t)(end - p));
    }
    free(buf);
    sr_store_source_close(st, &src);
    if (rc == 0)
        sr_warn("the event log %s is %.0f MiB: read its first and last %u MiB only (the values "
                "between, metrics mostly, are left out)",
                key, (double)size / (1 << 20), EVENTS_PART >> 20);
    return rc;
}

int sr_hist_load_logs(struct sr_store *st, const char *run_id, const struct sr_strlist *names,
                      int done, struct sr_history *h)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < names->n; i++) {
        if (sr_events_attempt_of(names->v[i]) == UINT32_MAX)
            continue; /* not a log spotrun writes (sr_events_next_attempt warns) */
        char key[512];
        snprintf(key, sizeof(key), "%s/events/%s", run_id, names->v[i]);
        char *buf = NULL;
        size_t len = 0;
        int g = sr_store_get(st, key, EVENTS_MAX, &buf, &len);
        if (g == -EFBIG) {
            sr_err_clear();
            g = add_head_tail(h, st, key);
            len = 0;
        }
        if (g == -ENOENT)
            continue;                     /* deleted meanwhile (--fresh) */
        if (g == -EBADMSG || g == -EFBIG) /* not a regular file, or absurdly large */
            sr_warn("ignoring the event log %s: %s", key, sr_strerror(g));
        else if (g < 0)
            rc = g;
        else
            add_lines(h, buf, len);
        free(buf);
    }
    if (rc < 0)
        return rc;
    h->done_marker = done;
    sr_hist_derive(h);
    return 0;
}

int sr_hist_load(struct sr_store *st, const char *run_id, struct sr_history *h)
{
    char prefix[256];
    snprintf(prefix, sizeof(prefix), "%s/events", run_id);
    struct sr_strlist names = {0};
    int rc = sr_store_list(st, prefix, &names);
    const int done = rc == 0 ? sr_ckpt_is_done(st, run_id) : 0;
    if (rc == 0 && done < 0)
        rc = done;
    if (rc == 0)
        rc = sr_hist_load_logs(st, run_id, &names, done, h);
    sr_strlist_free(&names);
    return rc;
}

const char *sr_hist_state_name(enum sr_hist_state s)
{
    static const char *const names[] = {"new",  "checkpointed", "running", "preempted",
                                        "done", "failed",       "stopped", "vanished"};
    return names[s];
}

const char *sr_hist_end_name(enum sr_hist_end e)
{
    static const char *const names[] = {"running", "done",     "preempted",  "crashed",
                                        "failed",  "vanished", "superseded", "stopped"};
    return names[e];
}

const struct sr_hist_attempt *sr_hist_last_ended(const struct sr_history *h)
{
    for (size_t i = h->n_att; i-- > 0;)
        if (h->att[i].cause != SR_CAUSE_NONE)
            return &h->att[i];
    return NULL;
}

unsigned sr_hist_stalls(const struct sr_history *h)
{
    return h->stalls;
}

int sr_hist_heartbeated(const struct sr_history *h, int64_t *longest_startup_ms)
{
    *longest_startup_ms = h->beat_startup_max_ms;
    return h->beats > 0 || h->stalls > 0;
}

double sr_hist_instance_hours(const struct sr_history *h)
{
    return (double)h->instance_ms / 3600000.0;
}
