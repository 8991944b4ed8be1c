/*
 * fleetpage.h - `spotrun report --fleet -o DIR`: the fleet on one static
 * page, DIR/index.html (docs/cost.md, "Fleet page"): the totals, cost and
 * GPU-hours by team and by week, preemption rate by zone and by instance
 * type, the sweeps, the runs (a table sorted by a click on a column's
 * header and filtered by label, by a small inline script), and the
 * capacity plan's and stats' charts, inline SVG (plansvg.c, statsout.c).
 * No server, no network, no external script: the page opens from disk or
 * from a static bucket, and its Content-Security-Policy lets it fetch
 * nothing.
 *
 * Output only: the numbers come from stats.c and plan.c over the runs'
 * summaries the caller loaded (the ones `stats` reads), the sweeps'
 * from sweeprec.h. Every string from the store goes through
 * sr_svg_escape(). The figures `stats --json` prints are in data-
 * attributes (data-gpu-hours, data-cost, data-runs, data-preemptions:
 * of #totals and of each row of #teams), as --json rounds them; each
 * quota's use and limits (`quota show --json`'s) in data- attributes of
 * its row of #quotas.
 */
#ifndef SPOTRUN_FLEETPAGE_H
#define SPOTRUN_FLEETPAGE_H

#include <stdio.h>

#include "plan.h"
#include "quota.h"
#include "runsum.h"
#include "stats.h"
#include "sweeprec.h"

/* A sweep as the page lists it: its trials by state and its best. */
struct sr_fleet_sweep {
    char name[SR_SWEEP_NAME_MAX + 1];
    size_t trials;
    unsigned counts[SR_SV_NSTATES];
    int has_best;
    char metric[SR_HIST_METRIC_NAME_MAX + 1];
    double best;
    size_t best_trial;
};

#define SR_FLEET_RUNS_MAX 5000 /* rows of the runs' table: the newest runs */

struct sr_fleet {
    /* given */
    const struct sr_runsum *runs;
    size_t n;
    const struct sr_plan_query *q; /* window, --label, prices; the plan's reserved price */
    const struct sr_fleet_sweep *sweeps;
    size_t n_sweeps;
    const char *store_url;
    const struct sr_quota *quotas; /* in force, with their use now */
    const struct sr_quota_use *quota_use;
    size_t n_quotas;
    /* sr_fleet_compute's */
    struct sr_stats team, team_week, zone, type;
    struct sr_plan plan;
};

/* Groups the runs (by team, team and week, zone, instance type) and
 * computes the plan. 0 or -ENOMEM; free with sr_fleet_free either way. */
int sr_fleet_compute(struct sr_fleet *fl);
void sr_fleet_free(struct sr_fleet *fl);
/* DIR/index.html's contents. 0, or -1 on a write error. */
int sr_fleet_html(FILE *f, const struct sr_fleet *fl);

#endif
