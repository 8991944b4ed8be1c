/*
 * statsprom.c - `spotrun stats --format openmetrics`: the fleet's numbers
 * as gauges in the text exposition format that Prometheus scrapes and
 * node_exporter's textfile collector reads (docs/cost.md, "Metrics for
 * Grafana"). One family per quantity, one sample per --by group, the
 * group's keys as labels; units are base units (seconds, dollars), as
 * `promtool check metrics` asks.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "quota.h"
#include "statsout.h"

/* One family: its name, help, and the number of a row (NAN: no sample). */
struct family {
    const char *name, *help;
    double (*of)(const struct sr_stats_row *r);
};

static double runs(const struct sr_stats_row *r)
{
    return (double)r->runs;
}
static double attempts(const struct sr_stats_row *r)
{
    return (double)r->attempts;
}
static double inst_s(const struct sr_stats_row *r)
{
    return r->inst_h * 3600.0;
}
static double gpu_s(const struct sr_stats_row *r)
{
    return r->gpu_h * 3600.0;
}
static double cost(const struct sr_stats_row *r)
{
    return r->inst_h - r->unpriced_h > 1e-9 ? r->cost : NAN;
}
static double od_cost(const struct sr_stats_row *r)
{
    return r->od_cost > 0 ? r->od_cost : NAN;
}
static double preemptions(const struct sr_stats_row *r)
{
    return (double)r->preemptions;
}
static double signal_stops(const struct sr_stats_row *r)
{
    return (double)r->signal_stops;
}
static double lost_s(const struct sr_stats_row *r)
{
    return r->lost_h * 3600.0;
}
static double lost_cost(const struct sr_stats_row *r)
{
    return r->lost_h - r->lost_unpriced_h > 1e-9 ? r->lost_cost : NAN;
}
static double stage_s(const struct sr_stats_row *r)
{
    return r->stage_s;
}
static double gpu_util(const struct sr_stats_row *r)
{
    return sr_stats_gpu_util(r) / 100.0;
}

static const struct family families[] = {
    {"spotrun_runs", "Runs with an attempt in the window.", runs},
    {"spotrun_attempts", "Attempts in the window.", attempts},
    {"spotrun_instance_seconds", "Instance time (attempt wall time x nodes).", inst_s},
    {"spotrun_gpu_seconds", "GPU time (instance time x GPUs, where the GPU count is known).",
     gpu_s},
    {"spotrun_cost_dollars", "Spot cost of the priced instance time.", cost},
    {"spotrun_on_demand_cost_dollars", "What the same hours would cost on demand.", od_cost},
    {"spotrun_preemptions", "Attempts a cloud's preemption notice stopped.", preemptions},
    {"spotrun_signal_stops", "Attempts stopped by any other notice (a signal, notify, a peer).",
     signal_stops},
    {"spotrun_lost_work_seconds", "Instance time of work lost (since the last checkpoint).",
     lost_s},
    {"spotrun_lost_work_cost_dollars", "Cost of the work lost.", lost_cost},
    {"spotrun_checkpoint_seconds", "Time spent staging checkpoints.", stage_s},
    {"spotrun_gpu_utilization_ratio", "Mean GPU utilization (0-1) over the sampled time.",
     gpu_util},
};

/* A --by key as a label name: [a-zA-Z_][a-zA-Z0-9_]*; "__" is reserved. */
static void label_name(const char *key, char *buf, size_t len)
{
    size_t n = 0;
    for (const char *c = key; *c && n + 1 < len; c++)
        buf[n++] = isalnum((unsigned char)*c) || *c == '_' ? *c : '_';
    buf[n] = '\0';
    if (!n || isdigit((unsigned char)buf[0]) || strncmp(buf, "__", 2) == 0)
        buf[0] = 'k';
}

/* A label value: backslash, double quote and newline escaped. */
static void label_value(FILE *f, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fputc('\\', f);
        if (*v == '\n')
            fputs("\\n", f);
        else
            fputc(*v, f);
    }
}

static void sample(FILE *f, const struct family *m, const struct sr_stats_query *q,
                   const struct sr_stats_row *r)
{
    const double v = m->of(r);
    if (!isfinite(v))
        return;
    fputs(m->name, f);
    for (size_t k = 0; k < q->n_by; k++) {
        char name[SR_LABEL_MAX + 2];
        label_name(q->by[k].name, name, sizeof(name));
        fprintf(f, "%s%s=\"", k ? "," : "{", name);
        label_value(f, r->key[k]);
        fputc('"', f);
    }
    fprintf(f, "%s %.17g\n", q->n_by ? "}" : "", v);
}

/* The quotas' families: a quota's use in its period and its limits (none
 * when 0), labelled by the quota's label and period. */
static const struct {
    const char *name, *help;
} quota_families[] = {
    /* in quota_value's order */
    {"spotrun_quota_gpu_seconds", "GPU time the quota's runs used in its current period."},
    {"spotrun_quota_gpu_limit_seconds", "The quota's GPU time per period."},
    {"spotrun_quota_cost_dollars", "Cost of the quota's runs in its current period."},
    {"spotrun_quota_cost_limit_dollars", "The quota's cost per period."},
    {"spotrun_quota_running_runs", "The quota's runs running now."},
    {"spotrun_quota_concurrent_limit_runs", "The quota's runs at once."},
};

static double quota_value(size_t fam, const struct sr_quota *q, const struct sr_quota_use *u)
{
    switch (fam) {
    case 0:
        return u->gpu_hours * 3600.0;
    case 1:
        return q->gpu_hours > 0 ? q->gpu_hours * 3600.0 : NAN;
    case 2:
        return u->cost;
    case 3:
        return q->max_cost > 0 ? q->max_cost : NAN;
    case 4:
        return (double)u->running;
    default:
        return q->max_concurrent ? (double)q->max_concurrent : NAN;
    }
}

static void quotas_openmetrics(FILE *f, const struct sr_quota *qs, const struct sr_quota_use *us,
                               size_t nq)
{
    for (size_t m = 0; nq && m < sizeof(quota_families) / sizeof(quota_families[0]); m++) {
        const char *name = quota_families[m].name;
        fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, quota_families[m].help, name);
        for (size_t i = 0; i < nq; i++) {
            const double v = quota_value(m, &qs[i], &us[i]);
            if (!isfinite(v))
                continue;
            fprintf(f, "%s{quota_key=\"", name);
            label_value(f, qs[i].label.key);
            fputs("\",quota_value=\"", f);
            label_value(f, qs[i].label.value);
            fprintf(f, "\",per=\"%s\"} %.17g\n", sr_quota_per_name(qs[i].per), v);
        }
    }
}

void sr_stats_openmetrics(FILE *f, const struct sr_stats_query *q, const struct sr_stats *s,
                          const struct sr_quota *qs, const struct sr_quota_use *us, size_t nq)
{
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        const struct family *m = &families[i];
        fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", m->name, m->help, m->name);
        if (!q->n_by)
            sample(f, m, q, &s->total);
        for (size_t g = 0; q->n_by && g < s->n; g++)
            sample(f, m, q, &s->rows[g]);
    }
    quotas_openmetrics(f, qs, us, nq);
    fputs("# EOF\n", f);
}
