/*
 * run_rungs.c - a sweep trial's early stopping, the wrapper's side (see
 * run_rungs.h).
 */
#include "run_rungs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exits.h"
#include "log.h"
#include "sweep_rungs.h"
#include "units.h"

#define GO_ON (-1)

static int mark_pruned(const struct sr_run_rungs *rr)
{
    struct sr_trial_end_info end = {
        .state = SR_TRIAL_PRUNED, .exit_code = SR_EX_LIMIT, .unix_ms = sr_wall_ms()};
    snprintf(end.cause, sizeof(end.cause), "pruned");
    gethostname(end.host, sizeof(end.host) - 1);
    return sr_sweep_mark_end(rr->st, rr->sweep, (size_t)rr->trial, &end);
}

/* The other trials' values at rung k (malloc'd; *n of them). */
static int others(const struct sr_run_rungs *rr, unsigned k, double **vals, size_t *n)
{
    struct sr_rung_rec *recs = NULL;
    size_t nrec = 0;
    const int rc = sr_rung_list(rr->st, rr->sweep, k, &recs, &nrec);
    if (rc < 0)
        return rc;
    *n = 0;
    *vals = malloc((nrec ? nrec : 1) * sizeof(double));
    for (size_t i = 0; *vals && i < nrec; i++)
        if (recs[i].trial != rr->trial)
            (*vals)[(*n)++] = recs[i].value;
    free(recs);
    return *vals ? 0 : -ENOMEM;
}

/* Rung k, reached with value at step: 1 = stop the trial, 0 = go on,
 * -errno (the rung is tried again at the next report). */
static int judge(struct sr_run_rungs *rr, unsigned k, double value, int64_t step)
{
    struct sr_rung_rec rec;
    int rc = sr_rung_get(rr->st, rr->sweep, k, rr->trial, &rec);
    if (rc == 0 || rc == -EBADMSG) { /* an earlier attempt's: not judged again */
        sr_info("early stopping: trial %ld recorded %s %g at rung %u before; not judged again "
                "there",
                rr->trial, rr->rule.metric, rc == 0 ? rec.value : value, k);
        return 0;
    }
    if (rc != -ENOENT)
        return rc;
    double *vals = NULL;
    size_t n = 0;
    if ((rc = others(rr, k, &vals, &n)) < 0)
        return rc;
    const int judges = sr_asha_judges(&rr->rule, rr->steps[k]);
    const int go_on = !judges || sr_asha_promote(&rr->rule, value, vals, n);
    free(vals);
    const size_t keep = sr_asha_keep(&rr->rule, n);
    if (!judges)
        snprintf(rr->detail, sizeof(rr->detail),
                 "%s %g at step %" PRId64 " recorded at rung %u (step %" PRId64
                 " = max): the trial has done its steps",
                 rr->rule.metric, value, step, k, rr->steps[k]);
    else if (n + 1 < (size_t)rr->rule.eta && rr->rule.patient)
        snprintf(rr->detail, sizeof(rr->detail),
                 "%s %g at step %" PRId64 " is one of %zu values at rung %u (step %" PRId64
                 "), fewer than eta=%" PRId64 ": patient, nobody waits",
                 rr->rule.metric, value, step, n + 1, k, rr->steps[k], rr->rule.eta);
    else if (n + 1 < (size_t)rr->rule.eta)
        snprintf(rr->detail, sizeof(rr->detail),
                 "%s %g at step %" PRId64
                 " is %sthe best of the %zu value%s at rung %u (step %" PRId64
                 "), fewer than eta=%" PRId64 ": only the best so far goes on",
                 rr->rule.metric, value, step, go_on ? "" : "not ", n + 1, n ? "s" : "", k,
                 rr->steps[k], rr->rule.eta);
    else
        snprintf(rr->detail, sizeof(rr->detail),
                 "%s %g at step %" PRId64 " is %sin the top %zu of the %zu values at rung %u "
                 "(step %" PRId64 ")",
                 rr->rule.metric, value, step, go_on ? "" : "not ", keep, n + 1, k, rr->steps[k]);
    if (!go_on && (rc = mark_pruned(rr)) < 0) /* the mark first: see run_rungs.h */
        return rc;
    rec = (struct sr_rung_rec){.trial = rr->trial,
                               .rung = k,
                               .step = step,
                               .value = value,
                               .go_on = go_on,
                               .seen = (unsigned)n,
                               .unix_ms = sr_wall_ms()};
    rc = sr_rung_put(rr->st, rr->sweep, &rec);
    if (rc < 0 && rc != -EEXIST)
        sr_warn("early stopping: cannot record trial %ld at rung %u: %s", rr->trial, k,
                sr_strerror(rc));
    if (go_on)
        sr_info("early stopping: %s; going on", rr->detail);
    rr->pruned |= !go_on;
    return !go_on;
}

/* limit.h's metric hook. */
static int on_metric(void *ctx, const char *name, double value, int64_t step,
                     struct sr_limit_hit *hit)
{
    struct sr_run_rungs *rr = ctx;
    if (strcmp(name, rr->rule.metric) != 0)
        return 0;
    while (rr->next < rr->n_rungs && step >= rr->steps[rr->next]) {
        const unsigned k = (unsigned)rr->next;
        const int rc = judge(rr, k, value, step);
        if (rc < 0) {
            sr_warn("early stopping: cannot judge trial %ld at rung %u: %s (tried again at the "
                    "next report)",
                    rr->trial, k, sr_strerror(rc));
            return 0;
        }
        rr->next++;
        if (rc == 1) {
            *hit = (struct sr_limit_hit){.cause = "pruned",
                                         .what = "sweep",
                                         .limit = (double)rr->steps[k],
                                         .used = (double)step,
                                         .detail = rr->detail,
                                         .hint = rr->hint};
            return 1;
        }
    }
    return 0;
}

/* A trial marked pruned does not start: it stays stopped until `sweep
 * retry` removes its mark. */
static int refuse_pruned(const struct sr_sweep *sw, struct sr_store *st, long trial)
{
    struct sr_trial_end_info end;
    const int rc = sr_sweep_read_end(st, sw->name, (size_t)trial, &end);
    if ((rc != 0 && rc != -EBADMSG) || end.state != SR_TRIAL_PRUNED) {
        return GO_ON;
    }
    fprintf(stderr,
            "spotrun run: trial %ld of sweep %s was pruned by its early stopping; not starting "
            "it (exit 124); `spotrun sweep retry %s %ld` resumes it from its checkpoint\n",
            trial, sw->name, sw->name, trial);
    return SR_EX_LIMIT;
}

int sr_run_rungs_settle(struct sr_run_rungs *rr, struct sr_supervise_config *c,
                        const struct sr_sweep *sw, long trial)
{
    memset(rr, 0, sizeof(*rr));
    if (trial < 0 || !sw->early_stop)
        return GO_ON;
    rr->st = c->st;
    rr->sweep = sw->name;
    rr->trial = trial;
    const int code = refuse_pruned(sw, c->st, trial);
    if (code != GO_ON)
        return code;
    if (sr_asha_from_json(sw->early_stop, &rr->rule) < 0) /* sweep.c checked it */
        return GO_ON;
    rr->n_rungs = sr_asha_rungs(&rr->rule, rr->steps, SR_ASHA_RUNGS_MAX);
    if (sr_cfg_rank(c) > 0) /* rank 0 judges; a prune stops the group */
        return GO_ON;
    c->limits.metric_hook = on_metric;
    c->limits.metric_ctx = rr;
    snprintf(rr->hint, sizeof(rr->hint), "`spotrun sweep retry %s %ld` resumes it past its rung",
             sw->name, trial);
    char rule[160];
    sr_asha_format(&rr->rule, rule, sizeof(rule));
    sr_info("early stopping: %s (%zu rung%s from step %" PRId64 ")", rule, rr->n_rungs,
            rr->n_rungs == 1 ? "" : "s", rr->rule.grace);
    return GO_ON;
}

void sr_run_rungs_end(struct sr_run_rungs *rr, int code)
{
    if (!rr->pruned || code != SR_EX_LIMIT)
        return;
    const int rc = mark_pruned(rr);
    if (rc < 0)
        sr_warn("cannot mark trial %ld of sweep %s pruned: %s", rr->trial, rr->sweep,
                sr_strerror(rc));
    else
        sr_info("trial %ld of sweep %s was pruned by early stopping; `spotrun sweep retry %s "
                "%ld` resumes it",
                rr->trial, rr->sweep, rr->sweep, rr->trial);
}
