/*
 * planout.c - the forms of `spotrun plan` (planout.h). Unknowns print "-"
 * (null in JSON): a cost without a price, a rate without attempts.
 */
#include "planout.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "summary.h"

static void utc(int64_t ms, char *buf, size_t len)
{
    const time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void money(double v, char *buf, size_t len)
{
    if (isnan(v))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.2f", v);
}

double sr_plan_saving(const struct sr_plan_group *g)
{
    double best = g->cost.spot;
    if (!isnan(g->cost.on_demand) && (isnan(best) || g->cost.on_demand < best))
        best = g->cost.on_demand;
    return best - g->cost.mixed;
}

static void print_fleet(FILE *f, const struct sr_plan *p)
{
    char a[40], b[40];
    utc(p->lo, a, sizeof(a));
    utc(p->hi, b, sizeof(b));
    fprintf(f, "window: %s .. %s (%.1f hours, %.2f weeks)\n", a, b, p->window_h, p->weeks);
    fprintf(f, "runs %llu, attempts %llu, GPU-hours %.1f, peak %u jobs and %u GPUs at once\n",
            (unsigned long long)p->runs, (unsigned long long)p->attempts, p->gpu_h, p->peak_jobs,
            p->peak_gpus);
    fprintf(f, "failures %.1f%% of attempts, retries %.2f per run\n",
            100.0 * sr_plan_failure_rate(p), sr_plan_retry_rate(p));
    if (p->unknown_gpu_attempts)
        fprintf(f, "%llu attempts recorded no GPU count: counted as 1 GPU per node.\n",
                (unsigned long long)p->unknown_gpu_attempts);
    fprintf(f, "\nGPU-HOURS BY WEEK AND TEAM\n%-10s %-20s %10s\n", "WEEK", "TEAM", "GPU-HOURS");
    for (size_t i = 0; i < p->weekly.n; i++) {
        const struct sr_stats_row *r = &p->weekly.rows[i];
        fprintf(f, "%-10s %-20s %10.1f\n", r->key[0], r->key[1][0] ? r->key[1] : "-",
                r->gpu_h + r->gpu_unknown_h);
    }
    const struct sr_stats *tabs[2] = {&p->by_zone, &p->by_type};
    const char *names[2] = {"ZONE", "INSTANCE TYPE"};
    for (int t = 0; t < 2; t++) {
        fprintf(f, "\nPREEMPTIONS BY %s\n%-24s %11s %14s %9s\n", names[t], names[t], "PREEMPTIONS",
                "INSTANCE-H", "PER-100H");
        for (size_t i = 0; i < tabs[t]->n; i++) {
            const struct sr_stats_row *r = &tabs[t]->rows[i];
            char rate[40];
            money(sr_stats_rate_per_100h(r), rate, sizeof(rate));
            fprintf(f, "%-24s %11llu %14.1f %9s\n", r->key[0][0] ? r->key[0] : "-",
                    (unsigned long long)r->preemptions, r->inst_h, rate);
        }
    }
}

/* Per job type: what it used, how busy its GPUs were, how long it waited. */
static void print_jobs(FILE *f, const struct sr_stats *s)
{
    fprintf(f, "\nBY JOB TYPE (label " SR_PLAN_JOB_LABEL ")\n%-20s %6s %10s %9s %9s %9s\n",
            "JOB TYPE", "RUNS", "GPU-HOURS", "GPU-UTIL", "QUEUED-H", "FAILED");
    for (size_t i = 0; i < s->n; i++) {
        const struct sr_stats_row *r = &s->rows[i];
        char util[40];
        const double u = sr_stats_gpu_util(r);
        if (isnan(u))
            snprintf(util, sizeof(util), "-");
        else
            snprintf(util, sizeof(util), "%.0f%%", u);
        fprintf(f, "%-20s %6llu %10.1f %9s %9.1f %9llu\n", r->key[0][0] ? r->key[0] : "-",
                (unsigned long long)r->runs, r->gpu_h + r->gpu_unknown_h, util, r->queued_h,
                (unsigned long long)sr_plan_failed(r));
    }
}

/* The curve's steps: each level where the share changes. */
static void print_curve(FILE *f, const struct sr_plan_group *g)
{
    fprintf(f, "%s: peak %u GPUs, %.1f GPU-hours; L: share", g->name, g->curve.peak_gpus,
            g->curve.gpu_h);
    for (unsigned L = 1, from = 1; L <= g->curve.peak_gpus; L++) {
        if (L < g->curve.peak_gpus && g->curve.share[L + 1] == g->curve.share[L])
            continue;
        if (from == L)
            fprintf(f, "  %u: %.1f%%", L, 100.0 * g->curve.share[L]);
        else
            fprintf(f, "  %u-%u: %.1f%%", from, L, 100.0 * g->curve.share[L]);
        from = L + 1;
    }
    fprintf(f, "\n");
}

static void print_plan(FILE *f, const struct sr_plan_query *q, const struct sr_plan_group *g)
{
    char od[40], wod[40], ws[40], wm[40], sv[40];
    money(g->od > 0 ? g->od : NAN, od, sizeof(od));
    money(g->cost.on_demand, wod, sizeof(wod));
    money(g->cost.spot, ws, sizeof(ws));
    money(g->cost.mixed, wm, sizeof(wm));
    money(sr_plan_saving(g), sv, sizeof(sv));
    fprintf(f, "%s: reserve %u GPUs (break-even utilization %.1f%%)\n", g->name, g->reserve,
            100.0 * g->break_even);
    fprintf(f,
            "  per GPU-hour: spot %.4f + overhead %.1f%% = effective %.4f; on-demand %s; "
            "reserved %.4f\n",
            g->spot, 100.0 * g->overhead, g->eff_spot, od, q->reserved);
    fprintf(f, "  weekly: all on-demand %s, all spot %s, reserved %u + spot burst %s; saving %s\n",
            wod, ws, g->reserve, wm, sv);
}

void sr_plan_print(FILE *f, const struct sr_plan_query *q, const struct sr_plan *p)
{
    print_fleet(f, p);
    print_jobs(f, &p->by_job);
    fprintf(f, "\nCONCURRENCY (share of the window's hours with at least L GPUs busy)\n");
    for (size_t i = 0; i < p->n_groups; i++)
        print_curve(f, &p->groups[i]);
    if (q->reserved <= 0) {
        fprintf(f, "\nno plan: pass --reserved-price X (per GPU-hour of a reserved or owned "
                   "GPU) for the reserved baseline and the weekly costs.\n");
        return;
    }
    fprintf(f, "\nPLAN (reserve the L-th GPU when share(>= L) x effective spot > reserved)\n");
    for (size_t i = 0; i < p->n_groups; i++)
        print_plan(f, q, &p->groups[i]);
}

static json_t *jnum(double v)
{
    return isnan(v) || isinf(v) ? json_null() : json_real(round(v * 1e6) / 1e6);
}

static json_t *fleet_json(const struct sr_plan *p)
{
    json_t *weekly = json_array(), *zone = json_array(), *type = json_array();
    for (size_t i = 0; i < p->weekly.n; i++) {
        const struct sr_stats_row *r = &p->weekly.rows[i];
        json_array_append_new(weekly,
                              json_pack("{s:s, s:s, s:o}", "week", r->key[0], "team", r->key[1],
                                        "gpu_hours", jnum(r->gpu_h + r->gpu_unknown_h)));
    }
    const struct sr_stats *tabs[2] = {&p->by_zone, &p->by_type};
    json_t *arr[2] = {zone, type};
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < tabs[t]->n; i++) {
            const struct sr_stats_row *r = &tabs[t]->rows[i];
            json_array_append_new(
                arr[t], json_pack("{s:s, s:I, s:o, s:o}", "key", r->key[0], "preemptions",
                                  (json_int_t)r->preemptions, "instance_hours", jnum(r->inst_h),
                                  "preemptions_per_100h", jnum(sr_stats_rate_per_100h(r))));
        }
    json_t *jobs = json_array();
    for (size_t i = 0; i < p->by_job.n; i++) {
        const struct sr_stats_row *r = &p->by_job.rows[i];
        json_array_append_new(
            jobs, json_pack("{s:s, s:I, s:o, s:o, s:o, s:I}", "job_type", r->key[0], "runs",
                            (json_int_t)r->runs, "gpu_hours", jnum(r->gpu_h + r->gpu_unknown_h),
                            "gpu_util_mean", jnum(sr_stats_gpu_util(r)), "queued_hours",
                            jnum(r->queued_h), "failed_attempts", (json_int_t)sr_plan_failed(r)));
    }
    return json_pack("{s:o, s:o, s:o, s:o}", "weekly", weekly, "preemptions_by_zone", zone,
                     "preemptions_by_instance_type", type, "by_job_type", jobs);
}

static json_t *group_json(const struct sr_plan_query *q, const struct sr_plan_group *g)
{
    json_t *curve = json_array();
    for (unsigned L = 1; L <= g->curve.peak_gpus; L++)
        json_array_append_new(curve, jnum(g->curve.share[L]));
    json_t *o = json_pack(
        "{s:s, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "name", g->name, "gpu_hours",
        jnum(g->curve.gpu_h), "peak_gpus", (json_int_t)g->curve.peak_gpus, "share_at_least", curve,
        "spot_per_gpu_hour", jnum(g->spot > 0 ? g->spot : NAN), "on_demand_per_gpu_hour",
        jnum(g->od > 0 ? g->od : NAN), "lost_gpu_hours", jnum(g->lost_h), "staging_gpu_hours",
        jnum(g->stage_h), "overhead", jnum(g->overhead), "effective_spot_per_gpu_hour",
        jnum(g->spot > 0 ? g->eff_spot : NAN));
    json_t *plan = json_null();
    if (q->reserved > 0)
        plan = json_pack("{s:o, s:I, s:o, s:o, s:o, s:o, s:o}", "reserved_per_gpu_hour",
                         jnum(q->reserved), "reserved_gpus", (json_int_t)g->reserve,
                         "weekly_on_demand", jnum(g->cost.on_demand), "weekly_spot",
                         jnum(g->cost.spot), "weekly_reserved_spot", jnum(g->cost.mixed),
                         "weekly_saving", jnum(sr_plan_saving(g)), "break_even_utilization",
                         jnum(g->break_even));
    if (o)
        json_object_set_new(o, "plan", plan);
    return o;
}

json_t *sr_plan_json(const struct sr_plan_query *q, const struct sr_plan *p)
{
    json_t *groups = json_array();
    for (size_t i = 0; i < p->n_groups; i++)
        json_array_append_new(groups, group_json(q, &p->groups[i]));
    char since[40], until[40];
    sr_format_iso_ms(p->lo, since, sizeof(since));
    sr_format_iso_ms(p->hi, until, sizeof(until));
    json_t *o = json_pack(
        "{s:i, s:s, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:o, s:I, s:I, s:o, s:o}",
        "schema_version", SR_JSON_SCHEMA_VERSION, "by", q->by_team ? "team" : "instance_type",
        "since", p->hi > p->lo ? json_string(since) : json_null(), "until",
        p->hi > p->lo ? json_string(until) : json_null(), "labels", sr_labels_to_json(&q->sq.want),
        "window_hours", jnum(p->window_h), "weeks", jnum(p->weeks), "runs", (json_int_t)p->runs,
        "attempts", (json_int_t)p->attempts, "unknown_gpu_attempts",
        (json_int_t)p->unknown_gpu_attempts, "gpu_hours", jnum(p->gpu_h), "peak_jobs",
        (json_int_t)p->peak_jobs, "peak_gpus", (json_int_t)p->peak_gpus, "failure_rate",
        jnum(sr_plan_failure_rate(p)), "retry_rate", jnum(sr_plan_retry_rate(p)));
    if (o) {
        json_object_update_new(o, fleet_json(p));
        json_object_set_new(o, "groups", groups);
    } else {
        json_decref(groups);
    }
    return o;
}
