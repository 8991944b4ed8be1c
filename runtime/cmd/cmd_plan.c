/*
 * cmd_plan.c - `spotrun plan`: a capacity plan from the record (docs/cost.md,
 * "Capacity plan: reserved baseline vs spot burst"). Checks the flags,
 * loads every run's summary the way stats does (runsum.h: one listing,
 * summaries read in parallel), computes (record/plan.c) and prints
 * (views/planout.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "plan.h"
#include "planout.h"
#include "prices.h"
#include "runsum.h"

/* Checks the flags into q; 0 or the exit code after a message. */
static int parse_query(const char *by, const char *since, const char *until,
                       const struct sr_optlist *labels, struct sr_plan_query *q)
{
    if (by && *by && strcmp(by, "team") == 0)
        q->by_team = 1;
    else if (by && *by && strcmp(by, "instance_type") != 0)
        return sr_usage_error("plan",
                              "bad --by \"%s\": give instance_type (a plan per instance type, the "
                              "default) or team (one plan over all of them)",
                              by);
    return sr_window_parse("plan", since, until, labels, &q->sq);
}

struct picture {
    const struct sr_plan_query *q;
    const struct sr_plan *p;
    int rc;
};

static void write_picture(FILE *f, void *ctx)
{
    struct picture *pic = ctx;
    pic->rc = sr_plan_svg(f, pic->q, pic->p);
}

static int print_plan(struct sr_store *st, const char *prefix, size_t n,
                      const struct sr_plan_query *q, const struct sr_plan *p, int json,
                      const char *svg)
{
    if (json)
        return sr_print_json(sr_plan_json(q, p));
    if (svg) {
        struct picture pic = {q, p, 0};
        const int rc = sr_write_atomic(svg, write_picture, &pic);
        if (rc < 0 || pic.rc < 0)
            return sr_fail(rc < 0 ? rc : -EIO, "plan --svg");
        sr_info("wrote %s (%llu runs)", svg, (unsigned long long)p->runs);
        return 0;
    }
    if (n == 0)
        printf("no runs in %s%s%s\n", sr_store_url(st), prefix ? " under " : "",
               prefix ? prefix : "");
    else if (p->attempts == 0)
        printf("no runs match (%zu runs in the store; check --label, --since, --until)\n", n);
    else
        sr_plan_print(stdout, q, p);
    return 0;
}

int sr_cmd_plan(const struct sr_cmd *cmd, int argc, char **argv)
{
    struct sr_view_opts vo = {0};
    const char *prefix = NULL, *since = NULL, *until = NULL, *by = NULL, *prices = NULL;
    const char *svg = NULL;
    double reserved = 0;
    struct sr_optlist labels = {0};
    const struct sr_opt opts[] = {
        SR_WINDOW_OPTS(&prefix, &since, &until, &labels),
        {"by", 0, "SPOTRUN_PLAN_BY", SR_OPT_STR, &by, "KEY",
         "instance_type (a plan per instance type, the default) or team (one over all)"},
        {"prices", 0, "SPOTRUN_PRICES", SR_OPT_STR, &prices, "FILE",
         "price table: instance_type spot on_demand per line (docs/runtime.md)"},
        {"reserved-price", 0, "SPOTRUN_RESERVED_PRICE", SR_OPT_PRICE, &reserved, "PRICE",
         "a reserved (or owned) GPU's price per GPU-hour: the plan (else the curves only)"},
        {"svg", 0, NULL, SR_OPT_STR, &svg, "FILE",
         "write charts: GPU-hours per week by team, the duration curves with the reserved line"},
        SR_VIEW_OPTS(&vo),
        SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    struct sr_plan_query q = {.sq = {.spot_per_hour = vo.prices.spot_per_hour,
                                     .on_demand_per_hour = vo.prices.on_demand_per_hour},
                              .reserved = reserved};
    struct sr_fleet_input in = {0};
    struct sr_plan p = {0};
    prefix = prefix && *prefix ? prefix : NULL;
    svg = svg && *svg ? svg : NULL;
    if (svg && vo.json) {
        code = sr_usage_error("plan", "give one of --json, --svg");
        goto out;
    }
    if ((code = parse_query(by, since, until, &labels, &q)) != 0)
        goto out;
    if ((code = sr_fleet_load("plan", ctx.st, prefix, prices, &q.sq, &in)) != 0)
        goto out;
    const int rc = sr_plan_compute(in.runs, in.n, &q, &p);
    if (rc < 0) {
        code = sr_fail(rc, "plan");
        goto out;
    }
    code = print_plan(ctx.st, prefix, in.n, &q, &p, vo.json, svg);
out:
    sr_plan_free(&p);
    sr_fleet_input_free(&in);
    sr_store_close(ctx.st);
    return code;
}
