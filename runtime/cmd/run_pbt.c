/*
 * run_pbt.c - a sweep trial's population-based training, the wrapper's
 * side (see run_pbt.h).
 */
#include "run_pbt.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "checkpointer.h"
#include "cli.h"
#include "exits.h"
#include "fsutil.h"
#include "log.h"
#include "units.h"

#define GO_ON (-1)

/* The current parameters of trial (an object, new): its newest decision's,
 * else its sweep values. */
static json_t *current_params(struct sr_store *st, const struct sr_sweep *sw, long trial,
                              json_t **lineage_out)
{
    json_t *lineage = NULL;
    if (sr_pbt_lineage(st, sw->name, trial, &lineage) < 0) {
        lineage = json_array();
    }
    const size_t n = json_array_size(lineage);
    json_t *p = n ? json_deep_copy(json_object_get(json_array_get(lineage, n - 1), "params"))
                  : json_deep_copy(json_array_get(sw->trials, (size_t)trial));
    if (lineage_out)
        *lineage_out = lineage;
    else
        json_decref(lineage);
    return p;
}

int sr_run_pbt_params(struct sr_store *st, struct sr_sweep *sw, long trial)
{
    if (!sw->pbt || trial < 0)
        return 0;
    json_t *lineage = NULL;
    json_t *p = current_params(st, sw, trial, &lineage);
    json_t *t = json_array_get(sw->trials, (size_t)trial);
    const size_t n = json_array_size(lineage);
    if (p && t && n) {
        const char *name;
        json_t *v;
        json_object_foreach(p, name, v)
        {
            if (json_is_string(v) && json_object_get(t, name))
                json_object_set(t, name, v);
        }
        const json_t *d = json_array_get(lineage, n - 1);
        sr_info(
            "pbt: trial %ld runs with the parameters of its decision at round %" JSON_INTEGER_FORMAT
            " (from trial %" JSON_INTEGER_FORMAT "'s checkpoint; %zu exploit%s so far)",
            trial, json_integer_value(json_object_get(d, "round")),
            json_integer_value(json_object_get(d, "donor")), n, n == 1 ? "" : "s");
    }
    json_decref(p);
    json_decref(lineage);
    return 0;
}

/* Carries out decision d (restore the donor's checkpoint, push it as the
 * trial's newest, mark it applied). */
static int apply(const struct sr_sweep *sw, long trial, const json_t *d,
                 const struct sr_commits_config *cfg, const char *scratch)
{
    const long donor = (long)json_integer_value(json_object_get(d, "donor")),
               round = (long)json_integer_value(json_object_get(d, "round"));
    const uint64_t seq = (uint64_t)json_integer_value(json_object_get(d, "donor_seq"));
    char donor_run[SR_RUN_ID_MAX + 1];
    sr_sweep_run_id(sw->name, (size_t)donor, donor_run, sizeof(donor_run));
    struct stat sb;
    int rc = 0;
    if (lstat(scratch, &sb) == 0)
        rc = sr_rmtree(scratch);
    if (rc == 0)
        rc = sr_mkdirs(scratch, 0700);
    struct sr_manifest m = {0};
    if (rc == 0) {
        rc = sr_ckpt_restore(cfg->st, donor_run, seq, scratch, cfg->threads, &m);
        if (rc < 0 && seq) {
            sr_info("pbt: trial %ld's checkpoint %" PRIu64 " was deleted since the decision "
                    "(--keep); taking its newest",
                    donor, seq);
            (void)sr_rmtree(scratch);
            rc = sr_mkdirs(scratch, 0700);
            if (rc == 0)
                rc = sr_ckpt_restore(cfg->st, donor_run, 0, scratch, cfg->threads, &m);
        }
    }
    if (rc == -ENOENT) { /* the donor has no checkpoint left (deleted): its parameters only */
        sr_warn("pbt: trial %ld has no checkpoint left; trial %ld goes on from its own with the "
                "decision's parameters",
                donor, trial);
        (void)sr_rmtree(scratch);
        return sr_pbt_mark_applied(cfg->st, sw->name, trial, round, 0);
    }
    struct sr_manifest mine = {0};
    if (rc == 0)
        rc = sr_push_dir(cfg, scratch, m.step, &mine);
    if (rc == 0)
        rc = sr_pbt_mark_applied(cfg->st, sw->name, trial, round, mine.seq);
    (void)sr_rmtree(scratch);
    if (rc < 0)
        return rc;
    sr_info("pbt: trial %ld took trial %ld's checkpoint %" PRIu64 " (step %" PRId64
            ") as its checkpoint %" PRIu64 " (round %ld)",
            trial, donor, m.seq, m.step, mine.seq, round);
    return 0;
}

/* ---- the hook ---- */

/* Round r reached with value at step: 1 = stop for an exploit, 0 = go on,
 * -errno (tried again at the next report). */
/* Every other trial's newest value: at the highest round it recorded
 * among the rounds r - SR_PBT_LOOKBACK .. r and those above r that hold
 * values (a trial ahead). Asynchronous trials drift apart: a trial that
 * only met the values at its own round would, when it arrives first,
 * never be compared with anyone (as Ray Tune's PBT, each trial's last
 * score counts). *own: the trial's own record at round r exists. */
#define SR_PBT_LOOKBACK 3
#define SR_PBT_AHEAD 64
static int gather(struct sr_run_pbt *rp, long r, struct sr_pbt_val **out, size_t *n, int *own)
{
    *out = NULL;
    *n = 0;
    *own = 0;
    long *at = NULL; /* the round of each value in *out */
    int rc = 0;
    for (long q = r > SR_PBT_LOOKBACK ? r - SR_PBT_LOOKBACK : 1; rc == 0 && q <= r + SR_PBT_AHEAD;
         q++) {
        struct sr_pbt_val *v = NULL;
        size_t m = 0;
        if ((rc = sr_pbt_list_values(rp->st, rp->sw->name, q, &v, &m)) < 0)
            break;
        if (q > r && m == 0) { /* nobody that far yet */
            free(v);
            break;
        }
        for (size_t i = 0; i < m; i++) {
            if (v[i].trial == rp->trial) {
                *own |= q == r;
                continue;
            }
            size_t j = 0;
            while (j < *n && (*out)[j].trial != v[i].trial)
                j++;
            if (j == *n) {
                struct sr_pbt_val *o2 = realloc(*out, (*n + 1) * sizeof(**out));
                long *a2 = realloc(at, (*n + 1) * sizeof(*at));
                if (o2)
                    *out = o2;
                if (a2)
                    at = a2;
                if (!o2 || !a2) {
                    rc = -ENOMEM;
                    break;
                }
                (*n)++;
            }
            (*out)[j] = v[i]; /* ascending q: the newest round wins */
            at[j] = q;
        }
        free(v);
    }
    free(at);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

/* Trial rp->trial, in the bottom k of n at round r, takes donor's newest
 * checkpoint: the decision record (*d; NULL while the donor has none). */
static int decision(struct sr_run_pbt *rp, long r, double value, int64_t step, long donor,
                    double donor_value, size_t k, size_t n, json_t **d)
{
    char donor_run[SR_RUN_ID_MAX + 1];
    sr_sweep_run_id(rp->sw->name, (size_t)donor, donor_run, sizeof(donor_run));
    struct sr_ckpt_list l = {0};
    const int rc = sr_ckpt_list(rp->st, donor_run, &l);
    if (rc < 0)
        return rc;
    if (l.n == 0) {
        sr_info("pbt: trial %ld is in the bottom %zu of %zu at round %ld, but trial %ld has no "
                "checkpoint yet; going on",
                rp->trial, k, n, r, donor);
    } else {
        const struct sr_manifest *m = &l.v[l.n - 1];
        json_t *from = current_params(rp->st, rp->sw, rp->trial, NULL);
        json_t *dp = current_params(rp->st, rp->sw, donor, NULL);
        uint64_t state = sr_pbt_seed(rp->seed ^ UINT64_C(0x5042540000000000), rp->trial, r);
        json_t *to = sr_pbt_explore(rp->sw->pbt, rp->sw->spec, dp, &state);
        char host[256] = "";
        gethostname(host, sizeof(host) - 1);
        *d = json_pack("{s:i,s:I,s:I,s:I,s:o,s:I,s:o,s:I,s:I,s:o,s:o,s:o,s:I,s:s,s:I}", "format", 1,
                       "trial", (json_int_t)rp->trial, "round", (json_int_t)r, "step",
                       (json_int_t)step, "value", isfinite(value) ? json_real(value) : json_null(),
                       "donor", (json_int_t)donor, "donor_value",
                       isfinite(donor_value) ? json_real(donor_value) : json_null(), "donor_seq",
                       (json_int_t)m->seq, "donor_step", (json_int_t)m->step, "from",
                       from ? from : json_object(), "donor_params", dp ? dp : json_object(),
                       "params", to ? to : json_object(), "unix_ms", (json_int_t)sr_wall_ms(),
                       "host", host, "quantile", (json_int_t)k);
    }
    sr_ckpt_list_free(&l);
    return 0;
}

static int round_at(struct sr_run_pbt *rp, long r, double value, int64_t step)
{
    struct sr_pbt_val *vals = NULL;
    size_t n = 0;
    int own = 0;
    int rc = gather(rp, r, &vals, &n, &own);
    if (rc < 0)
        return rc;
    if (own) { /* an earlier attempt decided here */
        free(vals);
        sr_info("pbt: trial %ld recorded %s at round %ld before; not decided again", rp->trial,
                rp->rule.metric, r);
        return 0;
    }
    struct sr_pbt_val *all = realloc(vals, (n + 1) * sizeof(*vals));
    if (!all) {
        free(vals);
        return -ENOMEM;
    }
    all[n++] = (struct sr_pbt_val){.trial = rp->trial, .value = value};
    size_t k = 0;
    const long donor =
        sr_pbt_decide(&rp->rule, all, n, rp->trial, sr_pbt_seed(rp->seed, rp->trial, r), &k);
    double donor_value = NAN;
    for (size_t i = 0; i < n; i++)
        if (all[i].trial == donor)
            donor_value = all[i].value;
    free(all);
    json_t *d = NULL;
    if (donor >= 0 && (rc = decision(rp, r, value, step, donor, donor_value, k, n, &d)) < 0)
        return rc;
    if (d) { /* the decision first: a value recorded means the decision stands */
        json_t *existing = NULL;
        rc = sr_pbt_put_decision(rp->st, rp->sw->name, d, &existing);
        if (rc == -EEXIST && existing) {
            sr_info("pbt: trial %ld's decision at round %ld was made before; carrying it out",
                    rp->trial, r);
            json_decref(d);
            d = existing;
            rc = 0;
        }
        if (rc < 0) {
            json_decref(d);
            return rc;
        }
    }
    rc = sr_pbt_put_value(rp->st, rp->sw->name, rp->trial, r, step, value);
    if (rc < 0 && rc != -EEXIST)
        sr_warn("pbt: cannot record trial %ld at round %ld: %s", rp->trial, r, sr_strerror(rc));
    if (!d) {
        sr_info("pbt: %s %g at step %" PRId64 " is not in the bottom %zu of the %zu trials' newest "
                "values at round %ld; going on",
                rp->rule.metric, value, step, k, n, r);
        return 0;
    }
    char ch[200];
    sr_pbt_changes(json_object_get(d, "from"), json_object_get(d, "params"), ch, sizeof(ch));
    snprintf(rp->detail, sizeof(rp->detail),
             "round %ld: bottom %zu of %zu; trial %" JSON_INTEGER_FORMAT
             "'s step %" JSON_INTEGER_FORMAT ", %s",
             r, k, n, json_integer_value(json_object_get(d, "donor")),
             json_integer_value(json_object_get(d, "donor_step")), ch);
    sr_info("pbt: %s %g at step %" PRId64
            " is in the bottom %zu of the %zu trials' newest values at round %ld: "
            "trial %ld takes trial %" JSON_INTEGER_FORMAT
            "'s checkpoint at step %" JSON_INTEGER_FORMAT " (%s)",
            rp->rule.metric, value, step, k, n, r, rp->trial,
            json_integer_value(json_object_get(d, "donor")),
            json_integer_value(json_object_get(d, "donor_step")), ch);
    json_decref(d);
    rp->exploit = 1;
    return 1;
}

static int on_metric(void *ctx, const char *name, double value, int64_t step,
                     struct sr_limit_hit *hit)
{
    struct sr_run_pbt *rp = ctx;
    if (strcmp(name, rp->rule.metric) != 0 || step < rp->rule.interval || rp->exploit)
        return 0;
    const long r = (long)(step / rp->rule.interval);
    if (r <= rp->done_round)
        return 0;
    const int rc = round_at(rp, r, value, step);
    if (rc < 0) {
        sr_warn("pbt: cannot decide trial %ld at round %ld: %s (tried again at the next report)",
                rp->trial, r, sr_strerror(rc));
        return 0;
    }
    rp->done_round = r;
    if (rc == 1) {
        *hit = (struct sr_limit_hit){.cause = "exploit",
                                     .what = "sweep",
                                     .limit = (double)(r * rp->rule.interval),
                                     .used = (double)step,
                                     .detail = rp->detail,
                                     .hint = rp->hint};
        return 1;
    }
    return 0;
}

int sr_run_pbt_settle(struct sr_run_pbt *rp, struct sr_supervise_config *c,
                      const struct sr_sweep *sw, long trial, const struct sr_commits_config *cfg,
                      const char *scratch)
{
    memset(rp, 0, sizeof(*rp));
    if (trial < 0 || !sw->pbt || sr_pbt_from_json(sw->pbt, &rp->rule) < 0)
        return GO_ON;
    if (sr_cfg_multinode(c)) {
        sr_warn("pbt: a multi-node trial takes no other trial's checkpoint; PBT is off for it");
        return GO_ON;
    }
    rp->st = c->st;
    rp->sw = sw;
    rp->trial = trial;
    rp->seed = (uint64_t)json_integer_value(json_object_get(sw->spec, "seed"));
    json_t *lineage = NULL;
    int rc = sr_pbt_lineage(c->st, sw->name, trial, &lineage);
    if (rc < 0)
        return sr_fail(rc, "pbt: cannot read the trial's lineage");
    const size_t n = json_array_size(lineage);
    const json_t *last = n ? json_array_get(lineage, n - 1) : NULL;
    if (last && !json_object_get(last, "applied"))
        rc = apply(sw, trial, last, cfg, scratch);
    if (last)
        rp->done_round = (long)json_integer_value(json_object_get(last, "round"));
    json_decref(lineage);
    if (rc < 0)
        return sr_fail(rc, "pbt: cannot take the donor's checkpoint");
    c->limits.metric_hook = on_metric;
    c->limits.metric_ctx = rp;
    snprintf(rp->hint, sizeof(rp->hint), "it starts again from the donor's checkpoint");
    sr_info("pbt: %s:%s every %" PRId64 " steps, quantile %g", rp->rule.metric,
            rp->rule.maximize ? "max" : "min", rp->rule.interval, rp->rule.quantile);
    return GO_ON;
}

int sr_run_pbt_again(const struct sr_run_pbt *rp, int code)
{
    return rp->exploit && code == SR_EX_LIMIT;
}
