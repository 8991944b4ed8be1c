/*
 * cmd_quota.c - `spotrun quota set|show`: quotas per team or user
 * (record/quota.h; docs/cost.md, "Quotas and approvals").
 */
#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"
#include "units.h"
#include "quota.h"
#include "runsum.h"

#define NOT_GIVEN UINT64_MAX

static void date_of(int64_t ms, char *buf, size_t len)
{
    const time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The label operand: KEY=VALUE, as run --label takes it. 0 or 64. */
static int label_operand(const char *kv, struct sr_label *out)
{
    struct sr_labels l = {0};
    char err[256];
    if (sr_labels_add(&l, kv, err, sizeof(err)) < 0 || l.n != 1) {
        fprintf(stderr, "spotrun quota set: %s (give the label the quota is for: team=vision)\n",
                err);
        return SR_EX_USAGE;
    }
    *out = l.v[0];
    return 0;
}

/* Who sets it: --by, else $USER. 0 or 64. */
static int setter(const char *by, char *out, size_t len)
{
    const struct passwd *pw = by && *by ? NULL : getpwuid(getuid());
    const char *who = by && *by ? by : getenv("USER") ? getenv("USER") : pw ? pw->pw_name : NULL;
    if (!sr_quota_by_ok(who)) {
        fprintf(stderr,
                "spotrun quota set: give --by NAME (letters, digits and ._@+-, at most "
                "127): who sets the quota%s\n",
                by && *by ? "" : " (neither $USER nor this user's name is one)");
        return SR_EX_USAGE;
    }
    snprintf(out, len, "%s", who);
    return 0;
}

static void print_set(const struct sr_quota *q)
{
    printf("quota %s=%s version %u (per %s):", q->label.key, q->label.value, q->version,
           sr_quota_per_name(q->per));
    if (q->gpu_hours > 0)
        printf(" gpu-hours %.2f", q->gpu_hours);
    if (q->max_cost > 0)
        printf(" max-cost %.2f", q->max_cost);
    if (q->max_gpus_per_run > 0)
        printf(" max-gpus-per-run %llu", (unsigned long long)q->max_gpus_per_run);
    if (q->max_concurrent > 0)
        printf(" max-concurrent %llu", (unsigned long long)q->max_concurrent);
    if (q->approve_gpu_hours > 0)
        printf(" approve-above %.2f gpu-hours", q->approve_gpu_hours);
    if (q->approve_cost > 0)
        printf(" approve-above %.2f", q->approve_cost);
    if (q->gpu_hours <= 0 && q->max_cost <= 0 && !q->max_gpus_per_run && !q->max_concurrent &&
        q->approve_gpu_hours <= 0 && q->approve_cost <= 0)
        printf(" no limit");
    printf("; set by %s\n", q->by);
}

/* --per and --approve-above into set, and something to set at all: 0 or
 * 64 after a message. */
static int set_words(const char *per, const char *approve, const int given[SR_QUOTA_FIELDS],
                     struct sr_quota *set)
{
    if (per && sr_quota_per_parse(per, &set->per) < 0) {
        fprintf(stderr, "spotrun quota set: --per takes day, week or month, not \"%s\"\n", per);
        return SR_EX_USAGE;
    }
    if (approve &&
        sr_quota_parse_approve(approve, &set->approve_gpu_hours, &set->approve_cost) < 0) {
        fprintf(stderr,
                "spotrun quota set: --approve-above takes a size like 100gpu-hours (GPU-hours) "
                "or 250 (cost), not \"%s\"\n",
                approve);
        return SR_EX_USAGE;
    }
    for (int i = 0; i < SR_QUOTA_FIELDS; i++)
        if (given[i])
            return 0;
    fprintf(stderr, "spotrun quota set: nothing to set: give --gpu-hours, --max-cost, "
                    "--max-gpus-per-run, --max-concurrent, --per or --approve-above\n");
    return SR_EX_USAGE;
}

static int cmd_set(const struct sr_cmd *cmd, int argc, char **argv)
{
    double gpu_hours = -1, max_cost = -1;
    uint64_t gpus = NOT_GIVEN, concurrent = NOT_GIVEN;
    const char *per = NULL, *by = NULL, *approve = NULL;
    const struct sr_opt opts[] = {
        {"gpu-hours", 0, NULL, SR_OPT_PRICE, &gpu_hours, "HOURS",
         "GPU-hours the label's runs may use per period (0: no limit)"},
        {"max-cost", 0, NULL, SR_OPT_PRICE, &max_cost, "AMOUNT",
         "what the label's runs may cost per period (0: no limit)"},
        {"max-gpus-per-run", 0, NULL, SR_OPT_UINT, &gpus, "N",
         "GPUs one run may use (its CUDA_VISIBLE_DEVICES x nodes; 0: no limit)"},
        {"max-concurrent", 0, NULL, SR_OPT_UINT, &concurrent, "N",
         "runs of the label running at once (0: no limit)"},
        {"per", 0, NULL, SR_OPT_STR, &per, "day|week|month",
         "the period the hours and cost count over (UTC; default week, or as set before)"},
        {"approve-above", 0, NULL, SR_OPT_STR, &approve, "SIZE",
         "a run whose own limits exceed SIZE (100gpu-hours: its --time-limit x GPUs; 250: its "
         "--max-cost) needs `spotrun approve RUN` to start (0: none)"},
        {"by", 0, "SPOTRUN_BY", SR_OPT_STR, &by, "NAME", "who sets it (default $USER)"},
        SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    struct sr_quota set = {.gpu_hours = gpu_hours,
                           .max_cost = max_cost,
                           .max_gpus_per_run = gpus,
                           .max_concurrent = concurrent,
                           .unix_ms = sr_wall_ms()};
    const int given[SR_QUOTA_FIELDS] = {gpu_hours >= 0,          max_cost >= 0, gpus != NOT_GIVEN,
                                        concurrent != NOT_GIVEN, per != NULL,   approve != NULL};
    code = label_operand(ctx.ops[0], &set.label);
    if (code == 0)
        code = setter(by, set.by, sizeof(set.by));
    if (code == 0)
        code = set_words(per, approve, given, &set);
    struct sr_quota q;
    if (code == 0) {
        const int rc = sr_quota_set(ctx.st, &set, given, &q);
        if (rc < 0)
            code = sr_fail(rc, "cannot set the quota");
        else
            print_set(&q);
    }
    sr_store_close(ctx.st);
    return code;
}

/* 6 decimals, as stats --json rounds its numbers. */
static double round6(double v)
{
    return round(v * 1e6) / 1e6;
}

static json_t *show_json(const struct sr_quota *q, const struct sr_quota_use *u, int64_t since)
{
    char label[2 * SR_LABEL_MAX + 2], at[40], from[40];
    snprintf(label, sizeof(label), "%s=%s", q->label.key, q->label.value);
    date_of(q->unix_ms, at, sizeof(at));
    date_of(since, from, sizeof(from));
    double lim, used;
    const char *over = sr_quota_over(q, u, 0, 0, &lim, &used);
    return json_pack(
        "{s:s,s:I,s:s,s:s,s:I,s:s,s:s,s:{s:f,s:f,s:I,s:I,s:f,s:f},s:{s:f,s:f,s:I},s:s?}", "label",
        label, "version", (json_int_t)q->version, "per", sr_quota_per_name(q->per), "since", from,
        "since_ms", (json_int_t)since, "by", q->by, "set_at", at, "limits", "gpu_hours",
        q->gpu_hours, "max_cost", q->max_cost, "max_gpus_per_run", (json_int_t)q->max_gpus_per_run,
        "max_concurrent", (json_int_t)q->max_concurrent, "approve_above_gpu_hours",
        q->approve_gpu_hours, "approve_above_cost", q->approve_cost, "use", "gpu_hours",
        round6(u->gpu_hours), "cost", round6(u->cost), "running", (json_int_t)u->running, "over",
        over);
}

/* "12.50 of 500.00", or "12.50" without a limit. */
static void of(char *buf, size_t len, double used, double limit)
{
    if (limit > 0)
        snprintf(buf, len, "%.2f of %.2f", used, limit);
    else
        snprintf(buf, len, "%.2f", used);
}

static void show_text(const struct sr_quota *q, const struct sr_quota_use *u, int64_t since)
{
    char label[2 * SR_LABEL_MAX + 2], from[40], h[64], c[64], r[64], g[32];
    snprintf(label, sizeof(label), "%s=%s", q->label.key, q->label.value);
    date_of(since, from, sizeof(from));
    of(h, sizeof(h), u->gpu_hours, q->gpu_hours);
    of(c, sizeof(c), u->cost, q->max_cost);
    snprintf(r, sizeof(r), "%llu", (unsigned long long)u->running);
    if (q->max_concurrent)
        snprintf(r + strlen(r), sizeof(r) - strlen(r), " of %llu",
                 (unsigned long long)q->max_concurrent);
    snprintf(g, sizeof(g), "%llu", (unsigned long long)q->max_gpus_per_run);
    double lim, used;
    const char *over = sr_quota_over(q, u, 0, 0, &lim, &used);
    printf("%-24s %-5s %-20s %-22s %-22s %-10s %-8s %u %s%s%s\n", label, sr_quota_per_name(q->per),
           from, h, c, r, q->max_gpus_per_run ? g : "-", q->version, q->by, over ? "  OVER: " : "",
           over ? over : "");
}

static int cmd_show(const struct sr_cmd *cmd, int argc, char **argv)
{
    struct sr_view_opts vo = {0};
    const struct sr_opt opts[] = {SR_VIEW_OPTS(&vo), SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    struct sr_quota *qs = NULL;
    struct sr_quota_use *us = NULL;
    size_t nq = 0;
    const int64_t now = sr_wall_ms();
    const int rc = sr_quota_uses_now(ctx.st, now, &qs, &us, &nq);
    json_t *arr = vo.json ? json_array() : NULL;
    if (rc == 0 && !vo.json && nq)
        printf("%-24s %-5s %-20s %-22s %-22s %-10s %-8s %s\n", "QUOTA", "PER", "SINCE", "GPU-HOURS",
               "COST", "RUNNING", "GPUS/RUN", "VERSION BY");
    for (size_t i = 0; rc == 0 && i < nq; i++) {
        const int64_t since = sr_quota_period_start(now, qs[i].per);
        if (vo.json)
            json_array_append_new(arr, show_json(&qs[i], &us[i], since));
        else
            show_text(&qs[i], &us[i], since);
    }
    if (rc < 0)
        code = sr_fail(rc, "cannot read the quotas");
    else if (vo.json)
        code = sr_print_json(json_pack("{s:O}", "quotas", arr));
    else if (!nq)
        printf("no quotas in %s (set one with `spotrun quota set team=NAME --gpu-hours N`)\n",
               sr_store_url(ctx.st));
    else
        code = 0;
    json_decref(arr);
    free(us);
    free(qs);
    sr_store_close(ctx.st);
    return code;
}

int sr_cmd_approve(const struct sr_cmd *cmd, int argc, char **argv)
{
    const char *by = NULL;
    const struct sr_opt opts[] = {
        {"by", 0, "SPOTRUN_BY", SR_OPT_STR, &by, "NAME", "who approves it (required)"},
        SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    const char *run = ctx.ops[0];
    if (!by || !sr_quota_by_ok(by)) {
        fprintf(stderr, "spotrun approve: give --by NAME (letters, digits and ._@+-, at most "
                        "127): who approves the run\n");
        sr_store_close(ctx.st);
        return SR_EX_USAGE;
    }
    struct sr_approval a = {.unix_ms = sr_wall_ms()};
    snprintf(a.by, sizeof(a.by), "%s", by);
    const int rc = sr_approval_write(ctx.st, run, &a);
    char at[40];
    date_of(a.unix_ms, at, sizeof(at));
    if (rc == 0)
        printf("%s approved by %s at %s\n", run, a.by, at);
    else if (rc == -EEXIST) /* create-only: the first approval stands */
        printf("%s was already approved by %s at %s\n", run, a.by, at);
    else
        code = sr_fail(rc, "cannot record the approval");
    sr_store_close(ctx.st);
    return rc == 0 || rc == -EEXIST ? 0 : code;
}

static const struct sr_cmd subs[] = {
    {"quota set", cmd_set, "set a team's or user's quota (a new version)",
     "spotrun quota set KEY=VALUE [--gpu-hours H] [--max-cost X] [--max-gpus-per-run N] "
     "[--max-concurrent N] [--per day|week|month] [--approve-above SIZE] [--by NAME]",
     "Writes a new version of the quota of the runs labelled KEY=VALUE (run --label):\n"
     "the limits given replace the newest version's, the others stay (0: no limit).\n"
     "Every version is kept; the newest is in force. Runs check it before they start\n"
     "(exit 79 over it, or held with --wait-quota) and at each --budget-poll while they\n"
     "run (checkpoint, then stop with cause quota, exit 124). docs/cost.md.",
     1, 1, SR_CMD_NEEDS_STORE},
    {"quota show", cmd_show, "each quota and its use in the period so far",
     "spotrun quota show [--json]",
     "Prints each quota in force and its use in the current period (UTC): GPU-hours and\n"
     "cost as `spotrun stats --label KEY=VALUE --since START` adds them up, and the runs\n"
     "running now.",
     0, 0, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS | SR_CMD_READER},
};

int sr_cmd_quota(const struct sr_cmd *cmd, int argc, char **argv)
{
    (void)cmd;
    const int code = sr_cmd_group(subs, sizeof(subs) / sizeof(subs[0]), 5,
                                  "usage: spotrun quota set|show ...\n\n"
                                  "Quotas per team or user: what the runs carrying a label may "
                                  "use.\n\ncommands:\n",
                                  "", argc, argv);
    if (code >= 0)
        return code;
    fprintf(stderr, "spotrun quota: unknown command \"%s\" (set or show)\n", argv[1]);
    return SR_EX_USAGE;
}
