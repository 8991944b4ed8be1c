/*
 * summary.c - human and JSON views of a run's history (see summary.h).
 */
#include "summary.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "interval.h"
#include "log.h"
#include "prices.h"
#include "units.h"

void sr_hist_cost(const struct sr_history *h, const struct sr_hist_prices *p, double *spot,
                  double *on_demand)
{
    const double hours = sr_hist_instance_hours(h);
    *spot = p && p->spot_per_hour > 0 ? hours * p->spot_per_hour : 0.0;
    *on_demand = p && p->on_demand_per_hour > 0 ? hours * p->on_demand_per_hour : 0.0;
}

int sr_hist_view_prices(const struct sr_history *h, const struct sr_hist_prices *p,
                        struct sr_hist_prices *out)
{
    *out = *p;
    if (p->spot_per_hour > 0)
        return 0;
    double cost = 0, price = 0;
    int64_t ms = 0;
    for (size_t i = 0; i < h->n_att;) { /* sessions, as derive_times() counts them */
        size_t j = i;
        while (j + 1 < h->n_att && h->att[j + 1].session == h->att[i].session)
            j++;
        const int64_t span = h->att[j].last_ms - h->att[i].first_ms;
        const double per_hour = h->att[i].price_per_hour;
        if (per_hour > 0)
            price = per_hour; /* the newest, for a run with no time yet */
        if (span > 0) {
            if (per_hour <= 0)
                return 0; /* a session nobody priced: unknown, not cheaper */
            cost += (double)span / 3600000.0 * per_hour * (h->att[i].nodes ? h->att[i].nodes : 1);
            ms += span;
        }
        i = j + 1;
    }
    if (ms > 0)
        price = cost / ((double)ms / 3600000.0);
    out->spot_per_hour = price;
    return price > 0;
}

void sr_format_money(double v, char *buf, size_t len)
{
    if (v < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, v < 1.0 ? "$%.4f" : "$%.2f", v);
}

void sr_format_iso_ms(int64_t unix_ms, char *buf, size_t len)
{
    const time_t t = (time_t)(unix_ms / 1000);
    struct tm tm;
    /* Times from the store are bounded (SR_TIME_MAX_MS); anything else
     * prints as unknown, never as an unset struct tm. */
    if (unix_ms < 0 || unix_ms > SR_TIME_MAX_MS || !gmtime_r(&t, &tm) ||
        !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, len, "-");
}

static void counts(char *buf, size_t len, const struct sr_hist_count *v, size_t n)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && off < len; i++) {
        const int w = snprintf(buf + off, len - off, "%s%s: %u", i ? ", " : "", v[i].name, v[i].n);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

static void lost_detail(const struct sr_history *h, char *buf, size_t len)
{
    int64_t pre = 0, fail = 0;
    for (size_t i = 0; i < h->n_att; i++) {
        if (h->att[i].end == SR_END_PREEMPTED)
            pre += h->att[i].lost_ms;
        else
            fail += h->att[i].lost_ms;
    }
    char a[32], b[32];
    sr_format_duration_ms(fail, a, sizeof(a));
    sr_format_duration_ms(pre, b, sizeof(b));
    snprintf(buf, len, "%s in %u failure(s), %s in %u preemption(s)", a, h->failures, b,
             h->preemptions);
}

/* "commits:     2 failed; the newest (attempt 0, checkpoint 3, step 7) to
 * stage: REASON; checkpoint 2 (step 5) stood": only when one failed. */
static void print_commit_failures(FILE *f, const struct sr_history *h)
{
    const struct sr_hist_commit_failure *const c = &h->last_failure;
    if (!h->commit_failures)
        return;
    char step[24], stood[96];
    sr_format_step(c->step, step, sizeof(step));
    if (!c->stands_seq)
        snprintf(stood, sizeof(stood), "no checkpoint stood (a start then began from scratch)");
    else if (c->stands_step >= 0)
        snprintf(stood, sizeof(stood), "checkpoint %" PRId64 " (step %" PRId64 ") stood",
                 c->stands_seq, c->stands_step);
    else
        snprintf(stood, sizeof(stood), "checkpoint %" PRId64 " stood", c->stands_seq);
    fprintf(f,
            "commits:     %u failed; the newest (attempt %" PRIu32 ", checkpoint %" PRId64
            ", step %s) to %s: %s; %s\n",
            h->commit_failures, c->attempt, c->seq, step, c->phase, c->reason, stood);
}

static json_t *commit_failure_json(const struct sr_history *h)
{
    const struct sr_hist_commit_failure *const c = &h->last_failure;
    if (!h->commit_failures)
        return json_null();
    return json_pack("{s:i,s:I,s:I,s:s,s:s,s:I,s:I}", "attempt", (int)c->attempt, "seq",
                     (json_int_t)c->seq, "step", (json_int_t)c->step, "phase", c->phase, "reason",
                     c->reason, "stands_seq", (json_int_t)c->stands_seq, "stands_step",
                     (json_int_t)c->stands_step);
}

/* --every auto's newest choice, with what it expects to lose per
 * preemption (docs/interval.md). */
static void print_interval(FILE *f, const struct sr_hist_interval *iv)
{
    if (!iv->interval_ms)
        return;
    char t[32], cost[32], mtbf[32], loss[32];
    sr_format_duration_ms(iv->interval_ms, t, sizeof(t));
    sr_format_duration_ms(iv->cost_ms, cost, sizeof(cost));
    sr_format_duration_ms(iv->mtbf_ms, mtbf, sizeof(mtbf));
    sr_format_duration_ms(sr_interval_loss_ms(iv->interval_ms, iv->cost_ms), loss, sizeof(loss));
    fprintf(f,
            "interval:    %s %s (cost %s %s, MTBF %s %s); expected loss %s per preemption, "
            "overhead %.1f%%\n",
            t, iv->source, cost, iv->cost_from, mtbf, iv->mtbf_from, loss,
            100.0 * sr_interval_overhead(iv->interval_ms, iv->cost_ms));
}

static json_t *interval_json(const struct sr_hist_interval *iv)
{
    if (!iv->interval_ms)
        return json_null();
    return json_pack("{s:s,s:f,s:f,s:s,s:f,s:s,s:f,s:f}", "source", iv->source, "seconds",
                     (double)iv->interval_ms / 1000.0, "cost_seconds", (double)iv->cost_ms / 1000.0,
                     "cost_from", iv->cost_from, "mtbf_seconds", (double)iv->mtbf_ms / 1000.0,
                     "mtbf_from", iv->mtbf_from, "expected_loss_seconds",
                     (double)sr_interval_loss_ms(iv->interval_ms, iv->cost_ms) / 1000.0, "overhead",
                     sr_interval_overhead(iv->interval_ms, iv->cost_ms));
}

/* "causes:      1 done, 1 preempted, 1 crashed": ended attempts by cause,
 * in the vocabulary's order. */
static void print_causes(FILE *f, const struct sr_history *h)
{
    int any = 0;
    for (int c = SR_CAUSE_DONE; c < SR_CAUSE_COUNT; c++) {
        if (!h->ends[c])
            continue;
        fprintf(f, "%s%u %s", any ? ", " : "causes:      ", h->ends[c],
                sr_hist_cause_name((enum sr_hist_cause)c));
        any = 1;
    }
    if (any)
        fputc('\n', f);
}

/* The newest attempt's limit for --json: {"reached", "cause", "what",
 * "limit", "used"} (reached: its "limit" event), {"reached": false,
 * "cause": "budget", "what": "run", "limit", "used"} while it runs under a
 * budget, or null. */
static json_t *limit_json(const struct sr_history *h)
{
    if (!h->n_att)
        return json_null();
    const struct sr_hist_attempt *a = &h->att[h->n_att - 1];
    const int time = a->limit == SR_CAUSE_TIME_LIMIT;
    if (time || a->limit == SR_CAUSE_BUDGET)
        return json_pack("{s:b,s:s,s:s,s:f,s:f}", "reached", 1, "cause",
                         time ? "time-limit" : "budget", "what",
                         strcmp(a->limit_what, "attempt") == 0 ? "attempt"
                         : strcmp(a->limit_what, "sweep") == 0 ? "sweep"
                                                               : "run",
                         "limit", time ? a->limit_value / 1000.0 : a->limit_value, "used",
                         time ? a->limit_used / 1000.0 : a->limit_used);
    if (a->limit == SR_CAUSE_QUOTA)
        return json_pack("{s:b,s:s,s:s,s:s,s:s,s:f,s:f}", "reached", 1, "cause", "quota", "what",
                         "quota", "quota", a->limit_quota, "measure", a->limit_measure, "limit",
                         a->limit_value, "used", a->limit_used);
    if (a->max_cost > 0 && a->price_per_hour > 0) {
        const double cost = sr_prices_run_cost(h, NULL, a->price_per_hour);
        return json_pack("{s:b,s:s,s:s,s:f,s:f}", "reached", 0, "cause", "budget", "what", "run",
                         "limit", a->max_cost, "used", cost > 0 ? cost : 0.0);
    }
    return json_null();
}

/* The time limit or budget that stopped the newest attempt ("budget
 * reached: 41.20 of 40.00"), or the budget it runs under ("budget: 12.30 of
 * 40.00"). Nothing when neither. */
static void print_limit(FILE *f, const struct sr_history *h)
{
    if (!h->n_att)
        return;
    const struct sr_hist_attempt *a = &h->att[h->n_att - 1];
    const int sweep = strcmp(a->limit_what, "sweep") == 0;
    if (a->limit == SR_CAUSE_TIME_LIMIT) {
        char used[32], limit[32];
        sr_format_duration_ms((int64_t)a->limit_used, used, sizeof(used));
        sr_format_duration_ms((int64_t)a->limit_value, limit, sizeof(limit));
        fprintf(f, "limit:       time limit reached: %s of %s (%s)\n", used, limit,
                strcmp(a->limit_what, "attempt") == 0 ? "--attempt-time-limit" : "--time-limit");
    } else if (a->limit == SR_CAUSE_BUDGET) {
        fprintf(f, "limit:       %sbudget reached: %.2f of %.2f\n", sweep ? "sweep " : "",
                a->limit_used, a->limit_value);
    } else if (a->limit == SR_CAUSE_QUOTA) {
        fprintf(f, "limit:       quota %s reached: %s %.2f of %.2f\n", a->limit_quota,
                a->limit_measure, a->limit_used, a->limit_value);
    } else if (a->max_cost > 0 && a->price_per_hour > 0) {
        const double cost = sr_prices_run_cost(h, NULL, a->price_per_hour);
        fprintf(f, "limit:       budget: %.2f of %.2f\n", cost > 0 ? cost : 0.0, a->max_cost);
    }
}

void sr_summary_print(FILE *f, const struct sr_history *h, const struct sr_hist_prices *flag)
{
    struct sr_hist_prices view;
    const int recorded = sr_hist_view_prices(h, flag, &view);
    const struct sr_hist_prices *p = &view;
    char wall[32], inst[32], queued[32], lost[32], detail[160], list[512];
    sr_format_duration_ms(h->wall_ms, wall, sizeof(wall));
    sr_format_duration_ms(h->instance_ms, inst, sizeof(inst));
    sr_format_duration_ms(h->queued_ms, queued, sizeof(queued));
    sr_format_duration_ms(h->lost_ms, lost, sizeof(lost));
    fprintf(f,
            "wall time:   %s; on instances %s (%.4f instance-hours in %u session(s)), "
            "queued %s\n",
            wall, inst, sr_hist_instance_hours(h), h->sessions, queued);
    counts(list, sizeof(list), h->by_source, h->n_sources);
    fprintf(f, "preemptions: %u%s%s%s\n", h->preemptions, h->n_sources ? " (" : "", list,
            h->n_sources ? ")" : "");
    counts(list, sizeof(list), h->by_cause, h->n_causes);
    fprintf(f, "failures:    %u%s%s%s; %u restart(s)\n", h->failures, h->n_causes ? " (" : "", list,
            h->n_causes ? ")" : "", h->restarts);
    print_causes(f, h);
    lost_detail(h, detail, sizeof(detail));
    fprintf(f, "lost work:   %s (%s)", lost, detail);
    sr_summary_print_dropped(f, h->pruned_ms, h->cancelled_ms);
    fputc('\n', f);
    fprintf(f, "stage:       p50 %.2fs, max %.2fs (%u staged)\n", h->stage_p50, h->stage_max,
            h->staged);
    fprintf(f, "persist:     p50 %.2fs, max %.2fs (%u durable), ratio %.2fx\n", h->persist_p50,
            h->persist_max, h->durable,
            h->stored_bytes ? (double)h->raw_bytes / (double)h->stored_bytes : 0.0);
    print_commit_failures(f, h);
    print_interval(f, &h->interval);
    print_limit(f, h);
    sr_summary_print_metrics(f, h);
    if (h->gpu_peak_bytes) {
        char peak[32];
        sr_format_size(h->gpu_peak_bytes, peak, sizeof(peak));
        fprintf(f, "gpu memory:  peak %s\n", peak);
    }
    if (h->gpu_samples) /* rounded as a person reads it; --json has the numbers */
        fprintf(f, "gpu busy:    %.0f %% (idle %.0f %% of the time%s)\n", h->gpu_util_mean,
                100.0 * h->gpu_idle_share,
                h->gpu_idle_share >= SR_HIST_GPU_IDLE_HINT ? ": input-bound?" : "");
    double spot, od;
    sr_hist_cost(h, p, &spot, &od);
    char a[32], b[32], c[32], d[32];
    if (p->spot_per_hour > 0) {
        sr_format_money(spot, a, sizeof(a));
        sr_format_money(p->spot_per_hour, b, sizeof(b));
        fprintf(f, "cost:        %s at %s/h%s", a, b, recorded ? " (recorded by the run)" : "");
        if (p->on_demand_per_hour > 0) {
            sr_format_money(od, c, sizeof(c));
            sr_format_money(od - spot, d, sizeof(d));
            fprintf(f, "; on demand %s: saved %s (%.0f%%)", c, d,
                    od > 0 ? 100.0 * (od - spot) / od : 0.0);
        }
        fputc('\n', f);
    } else {
        fprintf(f, "cost:        - (give --price-per-hour)\n");
    }
}

/* "crashed (exit 3), lost 2.0s; not restarted", "lease-lost: another
 * wrapper took the run over", "running": the cause, its detail and the
 * work lost. */
static void attempt_how(const struct sr_hist_attempt *a, const char *lost, char *how, size_t len)
{
    const char *name = sr_hist_cause_name(a->cause);
    if (a->cause == SR_CAUSE_NONE)
        snprintf(how, len, "running");
    else if (a->cause == SR_CAUSE_DONE)
        snprintf(how, len, "done");
    else if (a->cause == SR_CAUSE_LEASE_LOST)
        snprintf(how, len, "%s: %s", name, a->cause_detail);
    else if (a->cause == SR_CAUSE_PRUNED || a->cause == SR_CAUSE_CANCELLED)
        snprintf(how, len, "%s (%s), its work dropped, not lost", name, a->cause_detail);
    else if (a->cause_detail[0])
        snprintf(how, len, "%s (%s), lost %s%s", name, a->cause_detail, lost,
                 a->end == SR_END_FAILED ? "; not restarted" : "");
    else
        snprintf(how, len, "%s, lost %s", name, lost);
}

void sr_summary_print_attempts(FILE *f, const struct sr_history *h)
{
    for (size_t i = 0; i < h->n_att; i++) {
        const struct sr_hist_attempt *a = &h->att[i];
        char when[32], ran[32], lost[32], how[256] = "", from[80] = "fresh";
        sr_format_iso_ms(a->start_ms, when, sizeof(when));
        sr_format_duration_ms(a->end_ms > a->start_ms ? a->end_ms - a->start_ms : 0, ran,
                              sizeof(ran));
        sr_format_duration_ms(a->lost_ms, lost, sizeof(lost));
        if (a->resumed) {
            char step[24];
            sr_format_step(a->resumed_step, step, sizeof(step));
            snprintf(from, sizeof(from), "from seq %" PRId64 " step %s", a->resumed_seq, step);
        }
        attempt_how(a, lost, how, sizeof(how));
        /* where: "on vm g5.xlarge (aws us-east-1a)" */
        char where[160] = "";
        if (a->cloud[0] || a->zone[0])
            snprintf(where, sizeof(where), " (%s%s%s)", a->cloud,
                     a->cloud[0] && a->zone[0] ? " " : "", a->zone);
        fprintf(f, "attempt %-4" PRIu32 " %-19s %-8s %-26s on %s%s%s%s: %s\n", a->attempt, when,
                ran, from, a->host[0] ? a->host : "?", a->instance_type[0] ? " " : "",
                a->instance_type, where, how);
        if (a->stalled &&
            a->stall_suspect[0]) /* the event has every process: --json, docs/events.md */
            fprintf(f, "             stalled on %s\n", a->stall_suspect);
        /* a failure's reason; a stop spotrun made has its own line above */
        if (a->tail && (a->cause == SR_CAUSE_CRASHED || a->cause == SR_CAUSE_OOM ||
                        a->cause == SR_CAUSE_STALLED))
            sr_summary_print_tail_at(f, "  ", a->tail, a->tail_ms, a->end_ms);
    }
}

void sr_summary_print_dropped(FILE *f, int64_t pruned_ms, int64_t cancelled_ms)
{
    char d[32];
    if (pruned_ms) {
        sr_format_duration_ms(pruned_ms, d, sizeof(d));
        fprintf(f, "; pruned work %s", d);
    }
    if (cancelled_ms) {
        sr_format_duration_ms(cancelled_ms, d, sizeof(d));
        fprintf(f, "; cancelled work %s", d);
    }
}

void sr_summary_print_tail(FILE *f, const char *indent, const char *tail)
{
    sr_summary_print_tail_at(f, indent, tail, 0, 0);
}

void sr_summary_print_tail_at(FILE *f, const char *indent, const char *tail, int64_t tail_ms,
                              int64_t end_ms)
{
    /* A killed job's last lines may be old: say when they were written. */
    char when[40] = "", ago[32];
    if (tail_ms > 0) {
        sr_format_iso_ms(tail_ms, when, sizeof(when));
        if (end_ms >= tail_ms) {
            sr_format_duration_ms(end_ms - tail_ms, ago, sizeof(ago));
            fprintf(f, "%sits stderr ended with (written at %s, %s before it ended):\n", indent,
                    when, ago);
        } else {
            fprintf(f, "%sits stderr ended with (written at %s):\n", indent, when);
        }
    } else {
        fprintf(f, "%sits stderr ended with:\n", indent);
    }
    for (const char *p = tail; *p;) {
        const size_t n = strcspn(p, "\n");
        fprintf(f, "%s  | %.*s\n", indent, (int)n, p);
        p += n + (p[n] == '\n');
    }
}

static json_t *counts_json(const struct sr_hist_count *v, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, v[i].name, json_integer(v[i].n));
    return o;
}

static json_t *str_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

/* An attempt's GPU utilization (its last "gpu" event), null when none. */
static json_t *attempt_gpu_json(const struct sr_hist_attempt *a)
{
    if (!a->gpu_samples)
        return json_null();
    return json_pack("{s:i,s:i,s:f,s:f,s:f,s:f,s:I,s:o}", "samples", (int)a->gpu_samples, "devices",
                     (int)a->gpu_devices, "util_mean", a->gpu_util_mean, "util_p50",
                     a->gpu_util_p50, "util_p95", a->gpu_util_p95, "idle_share", a->gpu_idle_share,
                     "mem_used_max", (json_int_t)a->gpu_mem_used_max, "power_mean_w",
                     a->gpu_power_mean_w > 0 ? json_real(a->gpu_power_mean_w) : json_null());
}

json_t *sr_summary_attempts_json(const struct sr_history *h)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < h->n_att; i++) {
        const struct sr_hist_attempt *a = &h->att[i];
        char start[32], end[32];
        sr_format_iso_ms(a->start_ms, start, sizeof(start));
        sr_format_iso_ms(a->end_ms, end, sizeof(end));
        json_t *o = json_object();
        json_object_set_new(o, "attempt", json_integer(a->attempt));
        json_object_set_new(o, "session", json_integer(a->session));
        json_object_set_new(o, "host", str_or_null(a->host));
        json_object_set_new(o, "cloud", str_or_null(a->cloud));
        json_object_set_new(o, "instance_type", str_or_null(a->instance_type));
        json_object_set_new(o, "zone", str_or_null(a->zone));
        json_object_set_new(o, "region", str_or_null(a->region));
        json_object_set_new(o, "start", json_string(start));
        json_object_set_new(o, "end", json_string(end));
        json_object_set_new(o, "seconds", json_real((double)(a->end_ms - a->start_ms) / 1000.0));
        json_object_set_new(o, "resumed_seq",
                            a->resumed && a->resumed_seq >= 0 ? json_integer(a->resumed_seq)
                                                              : json_null());
        json_object_set_new(o, "resumed_step",
                            a->resumed && a->resumed_step >= 0 ? json_integer(a->resumed_step)
                                                               : json_null());
        json_object_set_new(o, "outcome", json_string(sr_hist_end_name(a->end)));
        json_object_set_new(o, "cause", str_or_null(sr_hist_cause_name(a->cause)));
        json_object_set_new(o, "cause_detail", str_or_null(a->cause_detail));
        json_object_set_new(o, "exit_code", a->has_exit ? json_integer(a->exit_code) : json_null());
        json_object_set_new(o, "signal", str_or_null(a->exit_signal));
        json_object_set_new(o, "tail", a->tail ? json_string(a->tail) : json_null());
        char at[40];
        sr_format_iso_ms(a->tail_ms, at, sizeof(at));
        json_object_set_new(o, "tail_at", a->tail && a->tail_ms ? json_string(at) : json_null());
        json_object_set_new(o, "notice_source", str_or_null(a->notice_source));
        json_object_set_new(o, "lost_work_seconds", json_real((double)a->lost_ms / 1000.0));
        json_object_set_new(o, "dropped_work_seconds", json_real((double)a->dropped_ms / 1000.0));
        json_object_set_new(o, "gpu_peak_bytes",
                            a->gpu_peak_bytes ? json_integer((json_int_t)a->gpu_peak_bytes)
                                              : json_null());
        json_object_set_new(o, "gpu_utilization", attempt_gpu_json(a));
        json_array_append_new(arr, o);
    }
    return arr;
}

static json_t *step_or_null(int64_t step)
{
    return step >= 0 ? json_integer(step) : json_null();
}

json_t *sr_summary_metric_json(const struct sr_hist_metric *m, int best, int maximize)
{
    json_t *o = json_pack("{s:f}", "last", m->last);
    if (best)
        json_object_set_new(o, "best", json_real(sr_hist_metric_best(m, maximize)));
    else {
        json_object_set_new(o, "min", json_real(m->min));
        json_object_set_new(o, "max", json_real(m->max));
    }
    json_object_set_new(o, "count", json_integer(m->count));
    json_object_set_new(o, "last_step", step_or_null(m->last_step));
    if (!best) {
        json_object_set_new(o, "min_step", step_or_null(m->min_step));
        json_object_set_new(o, "max_step", step_or_null(m->max_step));
        json_object_set_new(o, "best", json_real(sr_hist_metric_best(m, maximize)));
    }
    json_object_set_new(o, "best_step", step_or_null(sr_hist_metric_best_step(m, maximize)));
    json_object_set_new(o, "maximize", json_boolean(maximize));
    return o;
}

static void value_at(char *buf, size_t len, double v, int64_t step)
{
    if (step >= 0)
        snprintf(buf, len, "%.6g at step %" PRId64, v, step);
    else
        snprintf(buf, len, "%.6g", v);
}

void sr_summary_print_metrics(FILE *f, const struct sr_history *h)
{
    int w = 0;
    for (size_t i = 0; i < h->n_met; i++)
        if ((int)strlen(h->met[i].name) > w)
            w = (int)strlen(h->met[i].name);
    for (size_t i = 0; i < h->n_met; i++) {
        const struct sr_hist_metric *m = &h->met[i];
        const int max = sr_hist_metric_maximized(m->name);
        char last[64], best[64];
        value_at(last, sizeof(last), m->last, m->last_step);
        value_at(best, sizeof(best), sr_hist_metric_best(m, max), sr_hist_metric_best_step(m, max));
        fprintf(f, "%-13s%-*s  last %s, best %s (%s; %u value%s)\n", i ? "" : "metrics:", w,
                m->name, last, best, max ? "max" : "min", m->count, m->count == 1 ? "" : "s");
    }
}

void sr_summary_metrics_cell(const struct sr_history *h, const char *const *names, size_t n,
                             char *buf, size_t len)
{
    size_t off = 0;
    const size_t shown = n ? n : (h->n_met < 2 ? h->n_met : 2);
    snprintf(buf, len, "-");
    for (size_t i = 0; i < shown && off < len; i++) {
        const struct sr_hist_metric *m = n ? sr_hist_metric_find(h, names[i]) : &h->met[i];
        int wr;
        if (m)
            wr = snprintf(buf + off, len - off, "%s%s=%.4g", i ? " " : "", m->name, m->last);
        else
            wr = snprintf(buf + off, len - off, "%s%s=-", i ? " " : "", names[i]);
        if (wr < 0)
            break;
        off += (size_t)wr;
    }
}

json_t *sr_summary_json(const struct sr_history *h, const struct sr_hist_prices *flag)
{
    struct sr_hist_prices view;
    const int recorded = sr_hist_view_prices(h, flag, &view);
    const struct sr_hist_prices *p = &view;
    double spot, od;
    sr_hist_cost(h, p, &spot, &od);
    json_t *cost = json_null();
    if (p->spot_per_hour > 0) {
        cost = json_pack("{s:f,s:f,s:s}", "price_per_hour", p->spot_per_hour, "total", spot,
                         "price_from", recorded ? "recorded" : "flag");
        if (p->on_demand_per_hour > 0) {
            json_object_set_new(cost, "on_demand_price_per_hour", json_real(p->on_demand_per_hour));
            json_object_set_new(cost, "on_demand_total", json_real(od));
            json_object_set_new(cost, "saving", json_real(od - spot));
        }
    }
    json_t *o = json_object();
    json_object_set_new(o, "state", json_string(sr_hist_state_name(h->state)));
    json_object_set_new(o, "labels", sr_labels_to_json(&h->labels)); /* {} without */
    json_object_set_new(o, "approved",
                        h->approved_by[0] ? json_pack("{s:s,s:I}", "by", h->approved_by, "unix_ms",
                                                      (json_int_t)h->approved_ms)
                                          : json_null());
    json_object_set_new(o, "attempts", json_integer((json_int_t)h->n_att));
    json_object_set_new(o, "sessions", json_integer(h->sessions));
    json_object_set_new(o, "preemptions",
                        json_pack("{s:i,s:o}", "total", (int)h->preemptions, "by_source",
                                  counts_json(h->by_source, h->n_sources)));
    json_object_set_new(o, "failures",
                        json_pack("{s:i,s:o}", "total", (int)h->failures, "by_cause",
                                  counts_json(h->by_cause, h->n_causes)));
    json_object_set_new(o, "restarts", json_integer(h->restarts));
    json_t *ends = json_object();
    for (int c = SR_CAUSE_DONE; c < SR_CAUSE_COUNT; c++)
        json_object_set_new(ends, sr_hist_cause_name((enum sr_hist_cause)c),
                            json_integer(h->ends[c]));
    json_object_set_new(o, "causes", ends);
    const struct sr_hist_attempt *le = sr_hist_last_ended(h);
    json_object_set_new(o, "last_cause",
                        le ? json_string(sr_hist_cause_name(le->cause)) : json_null());
    json_object_set_new(o, "last_cause_detail", le ? str_or_null(le->cause_detail) : json_null());
    json_object_set_new(o, "lost_work_seconds", json_real((double)h->lost_ms / 1000.0));
    json_object_set_new(o, "pruned_work_seconds", json_real((double)h->pruned_ms / 1000.0));
    json_object_set_new(o, "cancelled_work_seconds", json_real((double)h->cancelled_ms / 1000.0));
    json_object_set_new(
        o, "checkpoint_stats",
        json_pack("{s:i,s:i,s:{s:f,s:f},s:{s:f,s:f},s:I,s:I,s:o}", "staged", (int)h->staged,
                  "durable", (int)h->durable, "stage_seconds", "p50", h->stage_p50, "max",
                  h->stage_max, "persist_seconds", "p50", h->persist_p50, "max", h->persist_max,
                  "raw_bytes", (json_int_t)h->raw_bytes, "stored_bytes",
                  (json_int_t)h->stored_bytes, "ratio",
                  h->stored_bytes ? json_real((double)h->raw_bytes / (double)h->stored_bytes)
                                  : json_null()));
    json_object_set_new(o, "commit_failures", json_integer(h->commit_failures));
    json_object_set_new(o, "last_commit_failure", commit_failure_json(h));
    json_object_set_new(o, "gpu_peak_bytes",
                        h->gpu_peak_bytes ? json_integer((json_int_t)h->gpu_peak_bytes)
                                          : json_null());
    json_object_set_new(
        o, "gpu_utilization",
        h->gpu_samples ? json_pack("{s:I,s:f,s:f,s:b}", "samples", (json_int_t)h->gpu_samples,
                                   "util_mean", h->gpu_util_mean, "idle_share", h->gpu_idle_share,
                                   "input_bound", h->gpu_idle_share >= SR_HIST_GPU_IDLE_HINT)
                       : json_null());
    json_object_set_new(o, "checkpoint_interval", interval_json(&h->interval));
    char first[32], last[32];
    sr_format_iso_ms(h->first_ms, first, sizeof(first));
    sr_format_iso_ms(h->last_ms, last, sizeof(last));
    json_object_set_new(o, "first_event", h->n_att ? json_string(first) : json_null());
    json_object_set_new(o, "last_event", h->n_att ? json_string(last) : json_null());
    json_object_set_new(o, "wall_seconds", json_real((double)h->wall_ms / 1000.0));
    json_object_set_new(o, "instance_seconds", json_real((double)h->instance_ms / 1000.0));
    json_object_set_new(o, "instance_hours", json_real(sr_hist_instance_hours(h)));
    json_object_set_new(o, "queued_seconds", json_real((double)h->queued_ms / 1000.0));
    json_object_set_new(o, "cost", cost);
    json_object_set_new(o, "limit", limit_json(h));
    json_t *met = json_object();
    for (size_t i = 0; i < h->n_met; i++)
        json_object_set_new(
            met, h->met[i].name,
            sr_summary_metric_json(&h->met[i], 0, sr_hist_metric_maximized(h->met[i].name)));
    json_object_set_new(o, "metrics", met);
    return o;
}
