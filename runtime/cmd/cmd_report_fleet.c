/*
 * cmd_report_fleet.c - `spotrun report --fleet -o DIR`: the fleet's page
 * (views/fleetpage.c, docs/cost.md "Fleet page"). Reads what `stats` and
 * `plan` read (runsum.h: one listing, the runs' summaries in parallel),
 * plus one listing of sweeps/ and each sweep as `sweep show` reads it;
 * writes DIR/index.html atomically (DIR is made when missing; nothing
 * else in it is touched).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "fleetpage.h"
#include "log.h"
#include "sweepview.h"
#include "units.h"

/* One sweep's line: its trials by state and its best. */
static int load_sweep(struct sr_store *st, const char *name, struct sr_fleet_sweep *out)
{
    struct sr_sweep sw = {0};
    struct sr_sweepview v = {0};
    struct sr_sv_opts o = {0};
    int rc = sr_sweep_read(st, name, &sw);
    if (rc == 0) {
        sr_sv_opts_from_sweep(&o, &sw);
        rc = sr_sweepview_load(st, &sw, 0, SR_SV_LOAD_SNAPSHOT, &v);
    }
    if (rc == 0) {
        const size_t len = strnlen(name, SR_SWEEP_NAME_MAX); /* valid: no longer */
        memcpy(out->name, name, len);
        out->name[len] = '\0';
        out->trials = v.n;
        memcpy(out->counts, v.counts, sizeof(out->counts));
        const char *metric = NULL;
        const struct sr_sv_trial *best = sr_sweepview_best(&v, &o, &metric);
        int64_t step;
        if (best && metric && sr_sv_trial_value(best, &o, metric, &out->best, &step)) {
            out->has_best = 1;
            out->best_trial = best->trial;
            snprintf(out->metric, sizeof(out->metric), "%s", metric);
        }
        sr_sweepview_free(&v);
    }
    sr_sweep_free(&sw);
    return rc;
}

/* Every sweep of the store (sweeps/): *out malloc'd. 0 or -errno. */
static int load_sweeps(struct sr_store *st, struct sr_fleet_sweep **out, size_t *n)
{
    struct sr_strlist names = {0};
    *out = NULL;
    *n = 0;
    int rc = sr_store_list(st, SR_KEY_SWEEPS, &names);
    if (rc == 0 && names.n && !(*out = calloc(names.n, sizeof(**out))))
        rc = -ENOMEM;
    for (size_t i = 0; rc == 0 && i < names.n; i++) {
        char name[SR_SWEEP_NAME_MAX + 2];
        snprintf(name, sizeof(name), "%s", names.v[i]);
        name[strcspn(name, "/")] = '\0';
        if (!sr_sweep_name_valid(name))
            continue;
        const int r = load_sweep(st, name, &(*out)[*n]);
        if (r == 0)
            (*n)++;
        else if (r != -ENOENT)
            sr_warn("sweep %s: cannot read it (%s); left off the page", name, sr_strerror(r));
    }
    sr_strlist_free(&names);
    return rc;
}

struct page {
    const struct sr_fleet *fl;
    int rc;
};

static void write_page(FILE *f, void *ctx)
{
    struct page *p = ctx;
    p->rc = sr_fleet_html(f, p->fl);
}

/* Loads, computes and writes DIR/index.html; 0 or -errno with a message. */
static int fleet_page(struct sr_store *st, const char *prefix, const struct sr_plan_query *q,
                      const char *dir, struct sr_runsum *runs, size_t n)
{
    struct sr_fleet fl = {.runs = runs, .n = n, .q = q, .store_url = sr_store_url(st)};
    struct sr_fleet_sweep *sweeps = NULL;
    int rc = load_sweeps(st, &sweeps, &fl.n_sweeps);
    if (rc < 0)
        rc = sr_errf(rc, "cannot list the sweeps");
    fl.sweeps = sweeps;
    struct sr_quota *qs = NULL;
    struct sr_quota_use *us = NULL;
    if (rc == 0) /* quota use on the page: as `quota show` */
        rc = sr_quota_uses(st, runs, n, sr_wall_ms(), &qs, &us, &fl.n_quotas);
    fl.quotas = qs;
    fl.quota_use = us;
    if (rc == 0 && (rc = sr_fleet_compute(&fl)) < 0)
        rc = sr_errf(rc, "fleet page: out of memory");
    if (rc == 0 && mkdir(dir, 0777) < 0 && errno != EEXIST)
        rc = sr_errf(-errno, "cannot make %s: %s", dir, strerror(errno));
    char path[4096];
    if (rc == 0 && sr_pathf(path, sizeof(path), "%s/index.html", dir) < 0)
        rc = -ENAMETOOLONG;
    struct page page = {&fl, 0};
    if (rc == 0 && (rc = sr_write_atomic(path, write_page, &page)) == 0 && page.rc < 0)
        rc = sr_errf(-ENOMEM, "fleet page: out of memory");
    if (rc == 0)
        sr_info("wrote %s (%llu runs, %zu sweeps%s%s)", path,
                (unsigned long long)fl.team.total.runs, fl.n_sweeps, prefix ? ", under " : "",
                prefix ? prefix : "");
    free(qs);
    free(us);
    sr_fleet_free(&fl);
    free(sweeps);
    return rc;
}

int sr_report_fleet(struct sr_store *st, const struct sr_report_window *w, const char *dir)
{
    struct sr_plan_query q = {.sq = {.spot_per_hour = w->prices.spot_per_hour,
                                     .on_demand_per_hour = w->prices.on_demand_per_hour},
                              .reserved = w->reserved};
    struct sr_fleet_input in = {0};
    const char *prefix = w->prefix && *w->prefix ? w->prefix : NULL;
    int code = sr_window_parse("report", w->since, w->until, &w->labels, &q.sq);
    if (code == 0)
        code = sr_fleet_load("report", st, prefix, w->price_table, &q.sq, &in);
    if (code == 0) {
        const int rc = fleet_page(st, prefix, &q, dir, in.runs, in.n);
        if (rc < 0)
            code = sr_fail(rc, "report --fleet");
    }
    sr_fleet_input_free(&in);
    return code;
}
