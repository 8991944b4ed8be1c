/*
 * run_quota.c - `spotrun run` under a team's or user's quota (see
 * run_quota.h).
 */
#include "run_quota.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exits.h"
#include "log.h"
#include "quota.h"
#include "runsum.h"
#include "units.h"

#define GO_ON (-1)

/* The quota found over (the first of them). */
struct verdict {
    struct sr_quota q;
    struct sr_quota_use u;
    const char *measure; /* sr_quota_over's, or "approval" */
    double limit, used;
    size_t matched; /* quotas the run's labels match */
    char size[160]; /* "approval": the run's size in words */
};

static int matches(const struct sr_run_quota *rq, const struct sr_quota *q)
{
    const char *v = sr_labels_get(&rq->labels, q->label.key);
    return v && strcmp(v, q->label.value) == 0;
}

/* This run's own open attempt, if the record has one (a rerun of a run
 * whose wrapper vanished): not another run running. */
static uint64_t own_running(const struct sr_runsum *runs, size_t n, const char *run_id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(runs[i].run, run_id) == 0)
            return runs[i].n_att && runs[i].att[runs[i].n_att - 1].cause == SR_CAUSE_NONE;
    return 0;
}

/* The run's size against q's --approve-above: 1 and v when it needs an
 * approval it does not have. */
static int unapproved(struct sr_run_quota *rq, const struct sr_quota *q, struct verdict *v)
{
    const double gpus = rq->gpus ? (double)rq->gpus : 1.0;
    const double h = (double)rq->time_limit_ms / 3600000.0 * gpus;
    char size[160] = "";
    if (q->approve_gpu_hours > 0 && (rq->time_limit_ms <= 0 || h > q->approve_gpu_hours))
        snprintf(size, sizeof(size),
                 rq->time_limit_ms <= 0 ? "no --time-limit bounds its GPU-hours"
                                        : "its --time-limit x %.0f GPU(s) is %.2f GPU-hours",
                 gpus, h);
    else if (q->approve_cost > 0 && (rq->max_cost <= 0 || rq->max_cost > q->approve_cost))
        snprintf(size, sizeof(size),
                 rq->max_cost <= 0 ? "no --max-cost bounds its cost" : "its --max-cost is %.2f",
                 rq->max_cost);
    if (!size[0])
        return 0;
    if (!rq->approved) { /* the run's own approval, else its sweep's */
        int rc = sr_approval_read(rq->st, rq->run_id, &rq->approval);
        if (rc == -ENOENT && rq->sweep)
            rc = sr_approval_read(rq->st, rq->sweep, &rq->approval);
        if (rc < 0 && rc != -ENOENT)
            return rc;
        rq->approved = rc == 0;
    }
    if (rq->approved)
        return 0;
    *v = (struct verdict){.q = *q, .measure = "approval", .matched = v->matched};
    v->limit = q->approve_gpu_hours > 0 ? q->approve_gpu_hours : q->approve_cost;
    snprintf(v->size, sizeof(v->size), "%s", size);
    return 1;
}

/* One matching quota's verdict into v: 1 when over. */
static int judge(struct sr_run_quota *rq, const struct sr_quota *q, const struct sr_runsum *runs,
                 size_t n, int starting, struct verdict *v)
{
    if (starting) {
        const int a = unapproved(rq, q, v);
        if (a != 0)
            return a;
    }
    struct sr_quota_use u;
    const int rc = sr_quota_use_in(runs, n, q, sr_wall_ms(), &u);
    if (rc < 0)
        return rc;
    if (starting) {
        const uint64_t own = own_running(runs, n, rq->run_id);
        u.running = u.running > own ? u.running - own : 0;
    }
    double limit, used;
    const char *m = sr_quota_over(q, &u, starting ? rq->gpus : 0, starting, &limit, &used);
    if (!m)
        return 0;
    *v = (struct verdict){
        .q = *q, .u = u, .measure = m, .limit = limit, .used = used, .matched = v->matched};
    return 1;
}

/* Every quota the run's labels match, read now: 1 and v when one is over,
 * 0 when none, -errno. starting: the checks before it starts (its GPUs,
 * the runs running) too. */
static int evaluate(struct sr_run_quota *rq, int starting, struct verdict *v)
{
    struct sr_quota *qs = NULL;
    size_t nq = 0, n = 0;
    struct sr_runsum *runs = NULL;
    int rc = sr_quota_read_all(rq->st, &qs, &nq), loaded = 0;
    v->matched = 0;
    for (size_t i = 0; rc >= 0 && i < nq; i++) {
        if (!matches(rq, &qs[i]))
            continue;
        v->matched++;
        if (!loaded++ && (rc = sr_runsum_load_all(rq->st, NULL, &runs, &n)) < 0)
            break;
        if ((rc = judge(rq, &qs[i], runs, n, starting, v)) == 1)
            break;
    }
    for (size_t i = 0; i < n; i++)
        sr_runsum_free(&runs[i]);
    free(runs);
    free(qs);
    return rc;
}

/* "cost 5.20 of 5.00 per week since 2026-12-07" */
static void describe(const char *rq_run, const struct verdict *v, char *buf, size_t len)
{
    char since[32];
    const time_t s = (time_t)(sr_quota_period_start(sr_wall_ms(), v->q.per) / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(since, sizeof(since), "%Y-%m-%d", &tm);
    if (strcmp(v->measure, "approval") == 0)
        snprintf(buf, len, "run %s needs an approval: %s, above %.2f %s (--approve-above)", rq_run,
                 v->size, v->limit, v->q.approve_gpu_hours > 0 ? "GPU-hours" : "in cost");
    else if (strcmp(v->measure, "gpus-per-run") == 0)
        snprintf(buf, len, "this run's %.0f GPUs are more than its %.0f GPUs per run", v->used,
                 v->limit);
    else if (strcmp(v->measure, "concurrent") == 0)
        snprintf(buf, len, "%.0f runs would run at once, %.0f allowed", v->used, v->limit);
    else if (strcmp(v->measure, "gpu-hours") == 0) /* small quotas too: 4 digits */
        snprintf(buf, len, "gpu-hours %.4g of %.4g used per %s since %s", v->used, v->limit,
                 sr_quota_per_name(v->q.per), since);
    else
        snprintf(buf, len, "%s %.2f of %.2f used per %s since %s", v->measure, v->used, v->limit,
                 sr_quota_per_name(v->q.per), since);
}

static const char *option_of(const char *measure)
{
    return strcmp(measure, "gpu-hours") == 0      ? "--gpu-hours HOURS"
           : strcmp(measure, "concurrent") == 0   ? "--max-concurrent N"
           : strcmp(measure, "gpus-per-run") == 0 ? "--max-gpus-per-run N"
                                                  : "--max-cost AMOUNT";
}

static int refuse(const struct sr_run_quota *rq, const struct verdict *v)
{
    char what[512];
    describe(rq->run_id, v, what, sizeof(what));
    if (strcmp(v->measure, "approval") == 0) {
        char whole[300] = "";
        if (rq->sweep)
            snprintf(whole, sizeof(whole),
                     " (or every trial of its sweep: `spotrun approve %s --by NAME`)", rq->sweep);
        fprintf(stderr,
                "spotrun run: quota %s=%s (version %u): %s: not starting it (exit 79); to "
                "approve it: `spotrun approve %s --by NAME`%s, then run it again (or give "
                "--wait-quota to wait for the approval)\n",
                v->q.label.key, v->q.label.value, v->q.version, what, rq->run_id, whole);
        return SR_EX_QUOTA;
    }
    fprintf(stderr,
            "spotrun run: quota %s=%s (version %u) is used up: %s: not starting run %s (exit "
            "79); raise it with `spotrun quota set %s=%s %s`, or give --wait-quota to wait for "
            "it (`spotrun quota show` lists the use)\n",
            v->q.label.key, v->q.label.value, v->q.version, what, rq->run_id, v->q.label.key,
            v->q.label.value, option_of(v->measure));
    return SR_EX_QUOTA;
}

/* --wait-quota: looks again every poll until no quota is over. */
static int hold(struct sr_run_quota *rq, struct verdict *v)
{
    char what[512];
    describe(rq->run_id, v, what, sizeof(what));
    char every[32];
    sr_format_duration_ms(rq->poll_ms, every, sizeof(every));
    sr_info("run %s held by quota %s=%s: %s; looking again every %s (--wait-quota)", rq->run_id,
            v->q.label.key, v->q.label.value, what, every);
    const int64_t since = sr_wall_ms();
    int rc = 1;
    while (rc != 0) {
        const struct timespec ts = {rq->poll_ms / 1000, (rq->poll_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
        rc = evaluate(rq, 1, v);
        if (rc < 0) {
            sr_warn("cannot read the quotas: %s (looking again)", sr_strerror(rc));
            sr_err_clear();
        }
    }
    rq->waited_ms = sr_wall_ms() - since;
    char w[32];
    sr_format_duration_ms(rq->waited_ms, w, sizeof(w));
    sr_info("run %s starts after waiting %s for its quota (queue time)", rq->run_id, w);
    return GO_ON;
}

/* The run's GPUs: CUDA_VISIBLE_DEVICES' entries x nodes; 0 = unknown. */
static uint64_t gpus_of(unsigned nodes)
{
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v || !*v)
        return 0;
    uint64_t n = 1;
    for (const char *p = v; *p; p++)
        n += *p == ',';
    return n * nodes; /* nodes: sr_cfg_nodes, 1 for a single node */
}

int sr_run_quota_check(struct sr_run_quota *q, struct sr_store *st,
                       const struct sr_run_quota_args *a)
{
    *q = (struct sr_run_quota){.st = st,
                               .run_id = a->run_id,
                               .sweep = a->sweep,
                               .poll_ms = a->poll_ms,
                               .time_limit_ms = a->time_limit_ms,
                               .max_cost = a->max_cost};
    sr_labels_from_json(&q->labels, a->labels);
    if (!q->labels.n)
        return GO_ON;
    q->gpus = gpus_of(a->nodes);
    const int wait = a->wait;
    struct verdict v = {0};
    const int rc = evaluate(q, 1, &v);
    q->applies = v.matched > 0;
    if (rc < 0)
        return sr_fail(rc, "cannot read the quotas");
    if (rc == 0)
        return GO_ON;
    return wait ? hold(q, &v) : refuse(q, &v);
}

/* limit.h's quota poll: GPU-hours and cost of the run's quotas. */
static int quota_poll(void *ctx, struct sr_limit_hit *hit)
{
    struct sr_run_quota *rq = ctx;
    struct verdict v = {0};
    const int rc = evaluate(rq, 0, &v);
    if (rc < 0) {
        sr_warn("cannot read the quotas: %s (read again at the next poll)", sr_strerror(rc));
        sr_err_clear();
        return rc;
    }
    if (rc == 0)
        return 0;
    snprintf(rq->label, sizeof(rq->label), "%s=%s", v.q.label.key, v.q.label.value);
    snprintf(rq->measure, sizeof(rq->measure), "%s", v.measure);
    *hit = (struct sr_limit_hit){.cause = "quota",
                                 .what = "quota",
                                 .limit = v.limit,
                                 .used = v.used,
                                 .quota = rq->label,
                                 .measure = rq->measure};
    return 1;
}

void sr_run_quota_settle(struct sr_run_quota *q, struct sr_supervise_config *c)
{
    c->quota_wait_ms = q->waited_ms;
    if (q->approved) {
        c->approved_by = q->approval.by;
        c->approved_ms = q->approval.unix_ms;
    }
    if (!q->applies)
        return;
    c->limits.quota_poll = quota_poll;
    c->limits.quota_ctx = q;
    c->limits.quota_poll_ms = q->poll_ms;
    c->keepalive_ms = q->poll_ms;
}
