/*
 * history.c - a run's history from its event logs (see history.h): each
 * event folded into the attempt it belongs to. The metrics are folded in
 * history_metrics.c, what the attempts add up to is derived in
 * history_derive.c, and the logs are read from the store in
 * history_load.c.
 */
#include "history.h"
#include "history_int.h"
#include "labels.h"
#include "quota.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_kinds.h"
#include "events.h"
#include "log.h"
#include "suspect.h"
#include "termsafe.h"
#include "outtext.h"
#include "units.h"

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
        c->wait_seconds = json_is_number(json_object_get(ev, "snapshot_seconds"))
                              ? num_of(ev, "snapshot_seconds")
                              : c->stage_seconds;
        /* never after its staging (a clock that disagrees, a planted log) */
        c->state_ms = int_in(ev, "state_ms", 1, t, 0);
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

/* A "limit" event (a time limit or a budget stopped the attempt); a cause
 * this reader does not know is no limit. */
/* The exit event's "tail": cleaned again (nothing in the store is trusted). */
static void add_tail(struct sr_hist_attempt *at, const json_t *ev)
{
    at->tail_ms = int_in(ev, "tail_ms", 1, SR_TIME_MAX_MS, 0);
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

/* A quota's label and measure, as spotrun writes them (else left empty). */
static void quota_of(struct sr_hist_attempt *at, const json_t *ev)
{
    char label[136] = "", measure[16] = "";
    str_of(ev, "quota", label, sizeof(label));
    str_of(ev, "measure", measure, sizeof(measure));
    const char *eq = strchr(label, '=');
    char key[SR_LABEL_MAX + 1] = "";
    if (eq && (size_t)(eq - label) <= SR_LABEL_MAX)
        snprintf(key, sizeof(key), "%.*s", (int)(eq - label), label);
    if (eq && sr_label_key_ok(key) && sr_label_value_ok(eq + 1))
        snprintf(at->limit_quota, sizeof(at->limit_quota), "%s", label);
    if (strspn(measure, "abcdefghijklmnopqrstuvwxyz-") == strlen(measure))
        snprintf(at->limit_measure, sizeof(at->limit_measure), "%s", measure);
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
    if (strcmp(at->limit_what, "attempt") != 0 && strcmp(at->limit_what, "sweep") != 0 &&
        strcmp(at->limit_what, "quota") != 0)
        snprintf(at->limit_what, sizeof(at->limit_what), "run");
    if (at->limit == SR_CAUSE_QUOTA)
        quota_of(at, ev);
    const json_t *l = json_object_get(ev, "limit"), *u = json_object_get(ev, "used");
    const double lv = json_is_number(l) ? json_number_value(l) : 0.0;
    const double uv = json_is_number(u) ? json_number_value(u) : 0.0;
    at->limit_value = lv >= 0 && lv <= (double)SR_TIME_MAX_MS ? lv : 0.0;
    at->limit_used = uv >= 0 && uv <= (double)SR_TIME_MAX_MS ? uv : 0.0;
}

static void add_start(struct sr_history *h, struct sr_hist_attempt *at, const json_t *ev,
                      uint32_t a, int64_t t)
{
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
    at->quota_wait_ms = int_in(ev, "quota_wait_ms", 0, SR_TIME_MAX_MS, 0);
    const json_t *ap = json_object_get(ev, "approved");
    const char *by = json_string_value(json_object_get(ap, "by"));
    if (by && sr_quota_by_ok(by)) {
        snprintf(h->approved_by, sizeof(h->approved_by), "%s", by);
        h->approved_ms = int_in(ap, "unix_ms", 0, SR_TIME_MAX_MS, 0);
    }
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
}

static void add_restore(struct sr_hist_attempt *at, const json_t *ev)
{
    at->resumed = 1;
    at->resumed_seq = int_of(ev, "seq", -1);
    at->resumed_step = int_of(ev, "step", -1);
    at->restore_seconds = num_of(ev, "seconds");
}

static void add_notice(struct sr_history *h, struct sr_hist_attempt *at, const json_t *ev,
                       uint32_t a, int64_t t)
{
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
}

static void add_exit(struct sr_history *h, struct sr_hist_attempt *at, const json_t *ev, int64_t t)
{
    h->gpu_live.n = 0;
    at->has_exit = 1;
    at->exit_ms = t;
    at->exit_code = (int)int_in(ev, "code", INT32_MIN, INT32_MAX, 0);
    str_of(ev, "signal", at->exit_signal, sizeof(at->exit_signal));
    at->oom = json_is_true(json_object_get(ev, "oom"));
    add_tail(at, ev);
}

static void add_stalled(struct sr_history *h, struct sr_hist_attempt *at, const json_t *ev)
{
    h->stalls++; /* --stall-timeout counts them over every attempt */
    at->stalled = 1;
    at->stall_since_ms = int_in(ev, "since_ms", 0, SR_TIME_MAX_MS, 0);
    at->stall_timeout_ms = int_in(ev, "timeout_ms", 0, SR_TIME_MAX_MS, 0);
    sr_stall_suspect(ev, at->stall_suspect, sizeof(at->stall_suspect));
}

static void add_heartbeat(struct sr_history *h, const json_t *ev)
{
    const int64_t after = int_in(ev, "after_ms", 0, SR_TIME_MAX_MS, 0);
    h->beats++;
    if (after > h->beat_startup_max_ms)
        h->beat_startup_max_ms = after;
}

/* Only a notice is a preemption: older wrappers wrote "preempted" for a
 * job that exited 75 by itself, with no notice in the attempt; that
 * attempt failed with the job's code. */
static void add_preempted(const struct sr_history *h, struct sr_hist_attempt *at, uint32_t a)
{
    for (size_t i = 0; i < h->n_no && !at->preempted; i++)
        at->preempted = h->no[i].attempt == a;
}

/* The kinds that only mark the attempt or count. */
static void add_mark(struct sr_history *h, struct sr_hist_attempt *at, enum sr_event_kind kind,
                     const json_t *ev)
{
    if (kind == SR_EV_REQUEST)
        h->requests++;
    else if (kind == SR_EV_WITHDRAWN)
        at->notice_ms = 0; /* a cancelled notice; a later one is the cause */
    else if (kind == SR_EV_RESTART)
        at->restarted = 1;
    else if (kind == SR_EV_DONE)
        at->done = 1;
    else if (kind == SR_EV_LEASE_LOST) {
        at->superseded = 1;
        str_of(ev, "reason", at->lease_reason, sizeof(at->lease_reason));
    }
}

/* One event of attempt a at t, by its kind (event_kinds.h); the kinds the
 * views derive nothing from (rebalance, ack, alive, node_done, set, deaf,
 * lost_work, and any this table does not name) are read past. */
static void fold(struct sr_history *h, struct sr_hist_attempt *at, enum sr_event_kind kind,
                 const json_t *ev, uint32_t a, int64_t t)
{
    switch (kind) {
    case SR_EV_START:
        add_start(h, at, ev, a, t);
        break;
    case SR_EV_PLACEMENT:
        add_placement(at, ev);
        break;
    case SR_EV_RESTORE:
        add_restore(at, ev);
        break;
    case SR_EV_INTERVAL:
        add_interval(h, ev, t);
        break;
    case SR_EV_STAGED:
    case SR_EV_PERSISTED:
        add_ckpt(h, ev, a, t, kind == SR_EV_PERSISTED);
        break;
    case SR_EV_COMMIT_FAILED:
        add_commit_failure(h, ev, a, t);
        break;
    case SR_EV_NOTICE:
        add_notice(h, at, ev, a, t);
        break;
    case SR_EV_GPU:
        add_gpu(at, ev);
        break;
    case SR_EV_EXIT:
        add_exit(h, at, ev, t);
        break;
    case SR_EV_STALLED:
        add_stalled(h, at, ev);
        break;
    case SR_EV_HEARTBEAT:
        add_heartbeat(h, ev);
        break;
    case SR_EV_LIMIT:
        add_limit(at, ev);
        break;
    case SR_EV_PREEMPTED:
        add_preempted(h, at, a);
        break;
    case SR_EV_METRIC:
        sr_hist_add_metric(h, ev, a, t);
        break;
    case SR_EV_METRIC_SUMMARY:
        sr_hist_add_metric_summary(h, ev, a, t);
        break;
    default:
        add_mark(h, at, kind, ev);
    }
}

void sr_hist_add(struct sr_history *h, const json_t *ev)
{
    const char *type = json_string_value(json_object_get(ev, "event"));
    const enum sr_event_kind kind = sr_event_kind_of(type);
    const int64_t t = int_in(ev, "unix_ms", 0, SR_TIME_MAX_MS, -1);
    const int64_t a64 = int_in(ev, "attempt", 0, SR_ATTEMPT_MAX, -1);
    if (kind == SR_EV_GPU_LIVE && t >= 0) { /* no attempt: never logged */
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
    fold(h, at, kind, ev, a, t);
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
