/*
 * cmd_stats.c - `spotrun stats`: the fleet's runs over a window, grouped
 * (docs/cost.md). Checks the flags, loads every run's summary under
 * --prefix (runsum.h: one listing, summaries read in parallel), aggregates
 * (record/stats.c) and prints one of the forms (views/statsout.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "prices.h"
#include "quota.h"
#include "runsum.h"
#include "stats.h"
#include "statsout.h"
#include "sweepworkers.h"
#include "sweepworkersout.h"
#include "units.h"

struct picture {
    const struct sr_runsum *runs;
    size_t n;
    const struct sr_stats_query *q;
    const struct sr_stats *s;
    int html, rc;
};

static void write_picture(FILE *f, void *ctx)
{
    struct picture *p = ctx;
    p->rc = sr_stats_svg(f, p->runs, p->n, p->q, p->s, p->html);
}

/* Checks the flags into q; 0 or the exit code after a message. */
static int parse_query(const char *by, const char *since, const char *until,
                       const struct sr_optlist *labels, struct sr_stats_query *q)
{
    char err[512];
    if (by && *by && sr_stats_parse_by(by, q, err, sizeof(err)) < 0)
        return sr_usage_error("stats", "%s", err);
    return sr_window_parse("stats", since, until, labels, q);
}

int sr_cmd_stats(const struct sr_cmd *cmd, int argc, char **argv)
{
    struct sr_view_opts vo = {0};
    const char *prefix = NULL, *since = NULL, *until = NULL, *by = NULL, *prices = NULL;
    const char *svg = NULL, *html = NULL, *format = NULL;
    int csv = 0;
    struct sr_optlist labels = {0};
    const struct sr_opt opts[] = {
        SR_WINDOW_OPTS(&prefix, &since, &until, &labels),
        {"by", 0, "SPOTRUN_STATS_BY", SR_OPT_STR, &by, "KEYS",
         "group by a comma list of label keys, instance_type, zone, cloud, host, day, week, "
         "month, cause"},
        {"prices", 0, "SPOTRUN_PRICES", SR_OPT_STR, &prices, "FILE",
         "price table: instance_type spot on_demand per line (docs/runtime.md)"},
        {"csv", 0, NULL, SR_OPT_FLAG, &csv, NULL, "print CSV (RFC 4180), one row per group"},
        {"format", 0, NULL, SR_OPT_STR, &format, "FORMAT",
         "openmetrics: gauges for Prometheus / node_exporter's textfile collector, labelled by "
         "--by (default team,instance_type,zone)"},
        {"svg", 0, NULL, SR_OPT_STR, &svg, "FILE",
         "write charts: cost per group over time, preemption rate per instance type and zone"},
        {"html", 0, NULL, SR_OPT_STR, &html, "FILE", "write the charts and the table as a page"},
        SR_VIEW_OPTS(&vo),
        SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    struct sr_stats_query q = {.spot_per_hour = vo.prices.spot_per_hour,
                               .on_demand_per_hour = vo.prices.on_demand_per_hour};
    struct sr_fleet_input in = {0};
    struct sr_stats s = {0};
    const int metrics = format && *format;
    const int outputs = !!vo.json + !!csv + !!(svg && *svg) + !!(html && *html) + metrics;
    if (outputs > 1) {
        code = sr_usage_error("stats", "give one of --json, --csv, --svg, --html, --format");
        goto out;
    }
    if (metrics && strcmp(format, "openmetrics") != 0) {
        code = sr_usage_error("stats",
                              "unknown --format \"%s\": the one format is openmetrics (--json, "
                              "--csv, --svg and --html are flags of their own)",
                              format);
        goto out;
    }
    if (metrics && !(by && *by))
        by = "team,instance_type,zone";
    if ((code = parse_query(by, since, until, &labels, &q)) != 0)
        goto out;
    if ((code = sr_fleet_load("stats", ctx.st, prefix, prices, &q, &in)) != 0)
        goto out;
    const struct sr_runsum *runs = in.runs;
    const size_t n = in.n;
    int rc;
    if ((rc = sr_stats_compute(runs, n, &q, &s)) < 0) {
        code = sr_fail(rc, "stats");
        goto out;
    }
    code = 0;
    struct sr_sv_workers ws = {0};
    /* Sweep workers' own hours in the window (sweepworkers.h); not with
     * --label: a worker's time is not one run's. */
    if (!q.want.n && (rc = sr_sv_workers_stats(ctx.st, prefix && *prefix ? prefix : NULL, runs, n,
                                               q.since_ms, q.until_ms, &ws)) < 0) {
        code = sr_fail(rc, "cannot read the sweep workers' records");
        goto out;
    }
    if (vo.json) {
        json_t *doc = sr_stats_json(&q, &s);
        if (doc && ws.n) /* sweep workers' own hours (docs/cost.md) */
            json_object_set_new(doc, "workers", sr_sv_workers_json(&ws, q.spot_per_hour));
        code = sr_print_json(doc);
    } else if (csv) {
        sr_stats_csv(stdout, &q, &s);
    } else if (metrics) {
        struct sr_quota *qs = NULL;
        struct sr_quota_use *us = NULL;
        size_t nq = 0;
        if ((rc = sr_quota_uses(ctx.st, runs, n, sr_wall_ms(), &qs, &us, &nq)) < 0)
            code = sr_fail(rc, "cannot read the quotas");
        else
            sr_stats_openmetrics(stdout, &q, &s, qs, us, nq);
        free(qs);
        free(us);
    } else if ((svg && *svg) || (html && *html)) {
        struct picture p = {runs, n, &q, &s, html && *html, 0};
        const char *path = p.html ? html : svg;
        rc = sr_write_atomic(path, write_picture, &p);
        if (rc < 0 || p.rc < 0)
            code = sr_fail(rc < 0 ? rc : p.rc, "stats");
        else
            sr_info("wrote %s (%llu runs)", path, (unsigned long long)s.total.runs);
    } else if (n == 0) {
        printf("no runs in %s%s%s\n", sr_store_url(ctx.st), prefix && *prefix ? " under " : "",
               prefix && *prefix ? prefix : "");
    } else if (s.total.attempts == 0) {
        printf("no runs match (%zu runs in the store; check --label, --since, --until)\n", n);
    } else {
        sr_stats_print(stdout, &q, &s);
        sr_sv_workers_print(stdout, &ws, q.spot_per_hour);
    }
out:
    sr_stats_free(&s);
    sr_fleet_input_free(&in);
    sr_store_close(ctx.st);
    return code;
}
