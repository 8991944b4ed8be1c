/*
 * cmd_run.c - `spotrun run [options] -- command...`: the options (their
 * table, defaults and SPOTRUN_* twins) and the checks made of them before
 * anything is opened; then run_main.c runs it (cmd_run.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_run.h"
#include "interval.h"
#include "log.h"
#include "units.h"

/* Inside a job (SPOTRUN_CONTROL is set) the variables the outer wrapper gave
 * the job (SPOTRUN_RUN_ID, SPOTRUN_CKPT_DIR, SPOTRUN_SIGNAL,
 * SPOTRUN_GPU_MEM_LIMIT, SPOTRUN_NODES, SPOTRUN_NODE_RANK, SPOTRUN_SWEEP,
 * SPOTRUN_TRIAL) describe the outer run: they are no settings of a
 * `spotrun run` started there, which is a new run unless its flags say
 * otherwise. */
static const char *twin(const char *env)
{
    const char *ctl = getenv("SPOTRUN_CONTROL");
    return ctl && *ctl ? NULL : env;
}

/* --every DURATION or auto, and the bounds of auto. */
static int every_opts(struct run_opts *o)
{
    o->every_auto = o->every && strcmp(o->every, "auto") == 0;
    if (o->every && *o->every && !o->every_auto &&
        sr_parse_duration_ms(o->every, &o->every_ms) < 0) {
        /* The value is the environment's own string when no flag gave one. */
        const int env = o->every == getenv("SPOTRUN_EVERY");
        fprintf(stderr, "spotrun run: invalid %s\"%s\"%s (a duration like 30s, 10m, 1h, or auto)\n",
                env ? "SPOTRUN_EVERY=" : "value ", o->every, env ? "" : " for --every");
        return SR_EX_USAGE;
    }
    if (o->mtbf_ms <= 0) {
        fprintf(stderr, "spotrun run: --mtbf must be a positive duration (e.g. 6h)\n");
        return SR_EX_USAGE;
    }
    if (o->every_min_ms < 100 || o->every_max_ms < o->every_min_ms) {
        fprintf(stderr, "spotrun run: --every-min must be at least 100ms, and --every-max at "
                        "least --every-min\n");
        return SR_EX_USAGE;
    }
    return GO_ON;
}

/* --label KEY=VALUE (repeatable) on top of SPOTRUN_LABELS, a comma list:
 * checked before anything is opened; a flag replaces the same key. */
static int label_opts(struct run_opts *o)
{
    /* The first value is the environment's own string when it gave one. */
    const char *env = getenv("SPOTRUN_LABELS");
    char err[256];
    for (size_t i = 0; i < o->label.n; i++) {
        const int from_env = i == 0 && env && o->label.v[0] == env;
        const int rc = from_env ? sr_labels_add_list(&o->labels, env, err, sizeof(err))
                                : sr_labels_add(&o->labels, o->label.v[i], err, sizeof(err));
        if (rc < 0) {
            fprintf(stderr, "spotrun run: %s%s\n", from_env ? "SPOTRUN_LABELS: " : "", err);
            return SR_EX_USAGE;
        }
    }
    return GO_ON;
}

/* One --ckpt-exclude pattern: relative to the checkpoint directory. */
static int exclude_add(struct run_opts *o, const char *pat, const char *from)
{
    if (!*pat || *pat == '/' || strlen(pat) >= 1024) {
        fprintf(stderr,
                "spotrun run: %sinvalid --ckpt-exclude pattern \"%.80s\": give a glob relative "
                "to the checkpoint directory (*.log, logs, tb/events.*)\n",
                from, pat);
        return SR_EX_USAGE;
    }
    if (o->nexclude == SR_OPTLIST_MAX) {
        fprintf(stderr, "spotrun run: at most %d --ckpt-exclude patterns\n", SR_OPTLIST_MAX);
        return SR_EX_USAGE;
    }
    o->exclude[o->nexclude++] = pat;
    return GO_ON;
}

/* --ckpt-exclude GLOB (repeatable) after SPOTRUN_CKPT_EXCLUDE, a comma list. */
static int exclude_opts(struct run_opts *o)
{
    const char *env = getenv("SPOTRUN_CKPT_EXCLUDE");
    for (size_t i = 0; i < o->exclude_opt.n; i++) {
        if (i > 0 || !env || o->exclude_opt.v[0] != env) {
            if (exclude_add(o, o->exclude_opt.v[i], "") != GO_ON)
                return SR_EX_USAGE;
            continue;
        }
        snprintf(o->exclude_env, sizeof(o->exclude_env), "%s", env);
        char *save = NULL;
        for (char *p = strtok_r(o->exclude_env, ",", &save); p; p = strtok_r(NULL, ",", &save))
            if (exclude_add(o, p, "SPOTRUN_CKPT_EXCLUDE: ") != GO_ON)
                return SR_EX_USAGE;
    }
    return GO_ON;
}

/* --stall-timeout DURATION, auto or off. */
static int stall_opts(struct run_opts *o)
{
    const char *v = o->stall_timeout;
    o->stall_auto = v && strcmp(v, "auto") == 0;
    o->stall_timeout_ms = 0;
    if (!v || !*v || o->stall_auto || strcmp(v, "off") == 0)
        return GO_ON;
    const int env = v == getenv("SPOTRUN_STALL_TIMEOUT");
    if (sr_parse_duration_ms(v, &o->stall_timeout_ms) < 0 || o->stall_timeout_ms < 1000) {
        fprintf(stderr,
                "spotrun run: invalid %s\"%s\"%s (a duration of at least 1s like 90s or 10m, "
                "auto or off)\n",
                env ? "SPOTRUN_STALL_TIMEOUT=" : "value ", v, env ? "" : " for --stall-timeout");
        return SR_EX_USAGE;
    }
    return GO_ON;
}

/* The metadata endpoints (flags or SPOTRUN_* twins) are URLs a request can
 * go to as written: refused at parse, never a surprise port. */
static int endpoint_opts(const struct run_opts *o)
{
    const struct {
        const char *flag, *url;
    } eps[] = {{"aws-imds", o->aws_imds},
               {"gcp-metadata", o->gcp_metadata},
               {"azure-metadata", o->azure_metadata}};
    for (size_t i = 0; i < sizeof(eps) / sizeof(eps[0]); i++) {
        char why[160];
        if (eps[i].url && *eps[i].url && sr_notice_url_check(eps[i].url, why, sizeof(why)) < 0) {
            fprintf(
                stderr,
                "spotrun run: invalid --%s \"%s\": %s (give a URL like http://169.254.169.254)\n",
                eps[i].flag, eps[i].url, why);
            return SR_EX_USAGE;
        }
    }
    return GO_ON;
}

/* What the options say, checked before anything is opened: GO_ON, or
 * SR_EX_USAGE after saying which one is wrong. */
static int check_opts(struct run_opts *o)
{
    if (sr_log_set_format(o->log_format) < 0) {
        fprintf(stderr, "spotrun run: invalid value \"%s\" for --log-format (text or json)\n",
                o->log_format);
        return SR_EX_USAGE;
    }
    if (sr_cloud_parse(o->notice, &o->cloud) < 0) {
        fprintf(stderr,
                "spotrun run: invalid value \"%s\" for --notice (auto, aws, gcp, azure "
                "or none)\n",
                o->notice);
        return SR_EX_USAGE;
    }
    if (endpoint_opts(o) != GO_ON)
        return SR_EX_USAGE;
    if (o->poll_ms < 10) {
        fprintf(stderr, "spotrun run: --poll-interval must be at least 10ms\n");
        return SR_EX_USAGE;
    }
    if (o->lease_ttl_ms > 0 && o->lease_ttl_ms < 1000) {
        fprintf(stderr, "spotrun run: --lease-ttl must be at least 1s (or 0: no lease)\n");
        return SR_EX_USAGE;
    }
    if (every_opts(o) != GO_ON || stall_opts(o) != GO_ON || label_opts(o) != GO_ON ||
        exclude_opts(o) != GO_ON || sr_run_limits_given(&o->limits) != 0)
        return SR_EX_USAGE;
    if (o->level > 19) {
        fprintf(stderr, "spotrun run: --level must be 1..19\n");
        return SR_EX_USAGE;
    }
    return GO_ON;
}

int sr_cmd_run(const struct sr_cmd *cmd, int argc, char **argv)
{
    struct run_opts o = {.lease_ttl_ms = 60000,
                         .lease_wait_ms = -1,
                         .keep = SR_KEEP_DEFAULT,
                         .grace_ms = 25000,
                         .backoff_ms = 1000,
                         .max_restarts = MAX_RESTARTS_DEFAULT,
                         .peer_poll_ms = 1000,
                         .limits.budget_poll_ms = 30000,
                         .limits.time_limit_ms = SR_LIMIT_NOT_GIVEN, /* 0 is refused */
                         .limits.attempt_time_limit_ms = SR_LIMIT_NOT_GIVEN,
                         .limits.max_cost = SR_LIMIT_NOT_GIVEN,
                         .notice = "auto",
                         .poll_ms = 1000,
                         .mtbf_ms = SR_INTERVAL_MTBF_PRIOR_MS,
                         .every_min_ms = SR_INTERVAL_MIN_MS,
                         .every_max_ms = SR_INTERVAL_MAX_MS};
    const struct sr_opt opts[] = {
        {"run-id", 'r', twin("SPOTRUN_RUN_ID"), SR_OPT_STR, &o.run_id, "ID",
         "run id or template ({index}, {slurm_job_id}, {env:VAR}...); default: from the command"},
        {"ckpt-dir", 'd', twin("SPOTRUN_CKPT_DIR"), SR_OPT_STR, &o.ckpt_dir, "DIR",
         "the job's checkpoint directory (default: WORK_DIR/RUN/ckpt)"},
        {"adopt", 0, "SPOTRUN_ADOPT", SR_OPT_FLAG, &o.adopt, NULL,
         "the files --ckpt-dir holds (a trainer's own checkpoint, another run's) become this "
         "run's newest checkpoint, then it runs (default: such a directory is refused)"},
        {"work-dir", 0, "SPOTRUN_WORK_DIR", SR_OPT_STR, &o.work_dir, "DIR",
         "local state (default: ~/.cache/spotrun)"},
        {"keep-work", 0, "SPOTRUN_KEEP_WORK", SR_OPT_FLAG, &o.keep_work, NULL,
         "keep the run's local work dir when the run is done (default: removed)"},
        {"every", 'e', "SPOTRUN_EVERY", SR_OPT_STR, &o.every, "DURATION",
         "ask the job for a checkpoint this often; auto: as often as it pays, from the "
         "measured checkpoint cost and preemption rate (docs/interval.md)"},
        {"mtbf", 0, "SPOTRUN_MTBF", SR_OPT_DURATION, &o.mtbf_ms, "DURATION",
         "--every auto: mean time between preemptions to assume until the run has been "
         "preempted (default 6h)"},
        {"every-min", 0, "SPOTRUN_EVERY_MIN", SR_OPT_DURATION, &o.every_min_ms, "DURATION",
         "--every auto: never more often than this (default 30s)"},
        {"every-max", 0, "SPOTRUN_EVERY_MAX", SR_OPT_DURATION, &o.every_max_ms, "DURATION",
         "--every auto: never less often than this, nor than half the MTBF (default 4h)"},
        {"keep", 'k', "SPOTRUN_KEEP", SR_OPT_UINT, &o.keep, "N",
         "keep the newest N checkpoints, older ones are deleted (default 3; 0: all; spotrun gc "
         "deletes by hand)"},
        {"full-every", 0, "SPOTRUN_FULL_EVERY", SR_OPT_UINT, &o.full_every, "N",
         "upload one checkpoint in N in full, the others as deltas of the newest (default 10; "
         "1: always full)"},
        {"settle", 0, "SPOTRUN_SETTLE", SR_OPT_DURATION, &o.settle_ms, "DURATION",
         "commit the directory once it stops changing for this long"},
        {"ckpt-exclude", 0, "SPOTRUN_CKPT_EXCLUDE", SR_OPT_MULTI, &o.exclude_opt, "GLOB",
         "leave these paths of the checkpoint directory out of checkpoints (repeatable; the "
         "environment's is a list: *.log,tb); a GLOB with a / matches the path, else the name"},
        {"grace", 'g', "SPOTRUN_GRACE", SR_OPT_DURATION, &o.grace_ms, "DURATION",
         "time left after SIGTERM/SIGINT (default 25s)"},
        {"max-restarts", 'm', "SPOTRUN_MAX_RESTARTS", SR_OPT_UINT, &o.max_restarts, "N",
         "restarts after crashes before giving up (default 3; 0 in a multi-node run)"},
        {"stall-timeout", 0, "SPOTRUN_STALL_TIMEOUT", SR_OPT_STR, &o.stall_timeout, "DURATION",
         "stop and restart a job that heartbeated and then made no progress this long; auto: "
         "learned from its heartbeats; off (default) (docs/runtime.md)"},
        {"stall-startup", 0, "SPOTRUN_STALL_STARTUP", SR_OPT_DURATION, &o.stall_startup_ms,
         "DURATION",
         "--stall-timeout, one node: once the run heartbeated, a later attempt that does not "
         "heartbeat within this of its start is stalled (default: 2 x its longest start-up "
         "seen, at least the timeout and 5m)"},
        {"backoff", 0, "SPOTRUN_BACKOFF", SR_OPT_DURATION, &o.backoff_ms, "DURATION",
         "first restart delay, doubled each time up to 60s (default 1s)"},
        {"signal", 's', twin("SPOTRUN_SIGNAL"), SR_OPT_STR, &o.signal, "SIG",
         "checkpoint-request signal (default SIGUSR1)"},
        {"fresh", 0, "SPOTRUN_FRESH", SR_OPT_FLAG, &o.fresh, NULL,
         "delete the run's checkpoints and start over"},
        {"gpu-mem-limit", 0, twin("SPOTRUN_GPU_MEM_LIMIT"), SR_OPT_SIZE, &o.gpu_mem_limit, "SIZE",
         "GPU memory each job process may allocate per device (the shim refuses the rest)"},
        {"no-preload", 0, "SPOTRUN_NO_PRELOAD", SR_OPT_FLAG, &o.no_preload, NULL,
         "do not load libspotrun.so into the job"},
        {"metrics-file", 0, "SPOTRUN_METRICS_FILE", SR_OPT_STR, &o.metrics_file, "PATH",
         "keep Prometheus metrics in PATH (node_exporter textfile collector: *.prom)"},
        {"log-format", 0, "SPOTRUN_LOG_FORMAT", SR_OPT_STR, &o.log_format, "FORMAT",
         "text (default) or json: one object per line with time, level, msg"},
        {"threads", 0, "SPOTRUN_THREADS", SR_OPT_UINT, &o.threads, "N",
         "compression threads (default: all CPUs)"},
        {"level", 0, "SPOTRUN_LEVEL", SR_OPT_UINT, &o.level, "N", "zstd level (default 3)"},
        {"lease-ttl", 0, "SPOTRUN_LEASE_TTL", SR_OPT_DURATION, &o.lease_ttl_ms, "DURATION",
         "single owner: the run's lease in the store lasts this long unless renewed (default "
         "60s; 0 = no lease)"},
        {"lease-wait", 0, "SPOTRUN_LEASE_WAIT", SR_OPT_DURATION, &o.lease_wait_ms, "DURATION",
         "wait this long for another owner's lease to be released or expire, then exit 73 "
         "(default: twice --lease-ttl)"},
        {"notice", 0, "SPOTRUN_NOTICE", SR_OPT_STR, &o.notice, "SOURCE",
         "cloud notices to watch: auto, aws, gcp, azure or none (default auto)"},
        {"poll-interval", 0, "SPOTRUN_POLL_INTERVAL", SR_OPT_DURATION, &o.poll_ms, "DURATION",
         "how often AWS and Azure metadata are read (default 1s)"},
        {"aws-imds", 0, "SPOTRUN_AWS_IMDS", SR_OPT_STR, &o.aws_imds, "URL",
         "AWS instance metadata endpoint (default http://169.254.169.254)"},
        {"gcp-metadata", 0, "SPOTRUN_GCP_METADATA", SR_OPT_STR, &o.gcp_metadata, "URL",
         "GCP metadata server (default http://169.254.169.254)"},
        {"azure-metadata", 0, "SPOTRUN_AZURE_METADATA", SR_OPT_STR, &o.azure_metadata, "URL",
         "Azure instance metadata endpoint (default http://169.254.169.254)"},
        {"nodes", 0, twin("SPOTRUN_NODES"), SR_OPT_STR, &o.nodes, "N",
         "a multi-node run of N wrappers, one per node (default: from Slurm's srun, AWS Batch "
         "or SkyPilot, else 1)"},
        {"node-rank", 0, twin("SPOTRUN_NODE_RANK"), SR_OPT_STR, &o.node_rank, "R",
         "this node's rank, 0..N-1 (a number or {env:NAME})"},
        {"restore-parts", 0, "SPOTRUN_RESTORE_PARTS", SR_OPT_STR, &o.restore_parts, "WHICH",
         "own (default): this node's part; all: every node's part in the directory"},
        {"peer-poll", 0, "SPOTRUN_PEER_POLL", SR_OPT_DURATION, &o.peer_poll_ms, "DURATION",
         "how often the other nodes' notices and parts are read from the store (default 1s)"},
        {"time-limit", 0, "SPOTRUN_TIME_LIMIT", SR_OPT_DURATION, &o.limits.time_limit_ms,
         "DURATION",
         "stop after a checkpoint (exit 124) once the run's attempts, every rerun counted, "
         "have run this long"},
        {"attempt-time-limit", 0, "SPOTRUN_ATTEMPT_TIME_LIMIT", SR_OPT_DURATION,
         &o.limits.attempt_time_limit_ms, "DURATION",
         "stop after a checkpoint (exit 124) once this attempt has run this long"},
        {"max-cost", 0, "SPOTRUN_MAX_COST", SR_OPT_PRICE, &o.limits.max_cost, "AMOUNT",
         "stop after a checkpoint (exit 124) once the run's instance hours cost this much"},
        {"price-per-hour", 0, "SPOTRUN_PRICE_PER_HOUR", SR_OPT_PRICE, &o.limits.price_per_hour,
         "PRICE", "what one instance costs per hour, for --max-cost (a --prices entry wins)"},
        {"prices", 0, "SPOTRUN_PRICES", SR_OPT_STR, &o.limits.prices, "FILE",
         "price table: instance_type spot_price [on_demand_price] per line "
         "(examples/prices/)"},
        {"instance-type", 0, "SPOTRUN_INSTANCE_TYPE", SR_OPT_STR, &o.limits.instance_type, "TYPE",
         "this instance's type, looked up in --prices and recorded with the run (default "
         "with --prices: from the cloud's metadata service)"},
        {"budget-poll", 0, "SPOTRUN_BUDGET_POLL", SR_OPT_DURATION, &o.limits.budget_poll_ms,
         "DURATION", "how often a sweep's spending and the run's quotas are read (default 30s)"},
        {"wait-quota", 0, "SPOTRUN_WAIT_QUOTA", SR_OPT_FLAG, &o.wait_quota, NULL,
         "a quota of the run's labels used up: wait for it (looking every --budget-poll), "
         "not exit 79"},
        {"sweep", 0, twin("SPOTRUN_SWEEP"), SR_OPT_STR, &o.sweep, "NAME",
         "run a trial of this sweep (spotrun sweep init); its command unless one is given"},
        {"trial", 0, twin("SPOTRUN_TRIAL"), SR_OPT_STR, &o.trial, "K",
         "the trial to run (default: the array index of Slurm, Kubernetes or AWS Batch)"},
        {"label", 0, "SPOTRUN_LABELS", SR_OPT_MULTI, &o.label, "KEY=VALUE",
         "label the run (repeatable; the environment's is a list: team=nlp,user=ana); "
         "recorded with it, for ls --label and stats"},
        SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    const int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    if (!ctx.ops[0] && !(o.sweep && *o.sweep)) {
        fprintf(stderr, "spotrun run: no command given (spotrun run -- command...)\n");
        return SR_EX_USAGE;
    }
    if (check_opts(&o) != GO_ON)
        return SR_EX_USAGE;
    return sr_run_main(&o, ctx.ops);
}
