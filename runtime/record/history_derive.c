/*
 * history_derive.c - what a history's attempts add up to (history.h): each
 * attempt's end and cause, the run's state, counts of causes and sources,
 * checkpoints lost and kept, the hours on instances; settling a last
 * attempt whose wrapper is gone (its lease takeable).
 */
#include "history.h"
#include "history_int.h"

#include <stdio.h>

#include "lease.h"
#include "log.h"

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
    case SR_CAUSE_QUOTA:
        snprintf(buf, len, "quota %.80s reached: %.15s %.2f of %.2f", a->limit_quota,
                 a->limit_measure, a->limit_used, a->limit_value);
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
    case SR_CAUSE_EXPLOIT:
        snprintf(buf, len,
                 "the sweep's PBT, at its round of step %.0f: it goes on from another "
                 "trial's checkpoint",
                 a->limit_value);
        break;
    case SR_CAUSE_PAUSED:
        snprintf(buf, len, "the sweep was paused with --stop");
        break;
    default:
        break;
    }
}

/* When the state of the newest checkpoint durable by cutoff was taken, or 0. */
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
    if (best->state_ms)
        return best->state_ms;
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
        a->lost_ms = a->dropped_ms = 0;
        a->base_ms = 0;
        if (a->end == SR_END_OPEN || a->end == SR_END_DONE)
            continue;
        if (a->cause == SR_CAUSE_PRUNED || a->cause == SR_CAUSE_CANCELLED) {
            /* the sweep chose to drop this work: not lost */
            a->dropped_ms = a->end_ms > a->start_ms ? a->end_ms - a->start_ms : 0;
            continue;
        }
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
        if (a->cause == SR_CAUSE_PRUNED)
            h->pruned_ms += a->dropped_ms;
        else if (a->cause == SR_CAUSE_CANCELLED)
            h->cancelled_ms += a->dropped_ms;
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
    double *wa = calloc(h->n_ck + 1, sizeof(double));
    if (!st || !pe || !wa) {
        free(st);
        free(pe);
        free(wa);
        return;
    }
    size_t ns = 0, np = 0;
    for (size_t i = 0; i < h->n_ck; i++) {
        const struct sr_hist_ckpt *c = &h->ck[i];
        if (c->staged_ms) {
            wa[ns] = c->wait_seconds;
            st[ns++] = c->stage_seconds;
        }
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
    h->wait_p50 = sr_percentile(wa, ns, 50);
    h->stage_p50 = sr_percentile(st, ns, 50);
    h->stage_max = ns ? st[ns - 1] : 0;
    h->persist_p50 = sr_percentile(pe, np, 50);
    h->persist_max = np ? pe[np - 1] : 0;
    free(st);
    free(pe);
    free(wa);
}

static void derive_times(struct sr_history *h)
{
    h->wall_ms = h->last_ms - h->first_ms;
    /* A hold for a quota (run --wait-quota) came before its attempt's
     * first event: queued time, on the wall clock. */
    for (size_t i = 0; i < h->n_att; i++)
        h->wall_ms += h->att[i].quota_wait_ms;
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
    h->pruned_ms = h->cancelled_ms = 0;
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
