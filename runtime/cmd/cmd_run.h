/*
 * cmd_run.h - what the files of `spotrun run` share (not a public header:
 * only runtime/cmd/ includes it). The command is four files:
 *
 *   cmd_run.c     the options: the table, their SPOTRUN_* twins, the checks
 *                 made before anything is opened (sr_cmd_run)
 *   run_main.c    the run itself, step by step: settings, local paths, the
 *                 lease, --fresh, the supervisor, the clean-up (sr_run_main)
 *   run_trial.c   a sweep's trial: which one, its command and environment,
 *                 its binding to the run, its end mark
 *   run_checks.c  the pre-checks against the run's record in the store: a
 *                 done run, the run's kind, the history --every auto and
 *                 --stall-timeout start from
 *
 * Steps return GO_ON (-1) when the run goes on, else the exit code; they
 * print their own messages.
 */
#ifndef SPOTRUN_CMD_RUN_H
#define SPOTRUN_CMD_RUN_H

#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>

#include "cli.h"
#include "dirmark.h"
#include "labels.h"
#include "manifest.h"
#include "notice.h"
#include "run_limits.h"
#include "run_pbt.h"
#include "run_quota.h"
#include "run_rungs.h"
#include "supervisor.h"
#include "sweep.h"

/* The options as parsed (cmd_run.c). */
/* --keep's default: the newest few, so that a run's store does not grow
 * without bound, with room to fall back past a bad newest one. */
#define SR_KEEP_DEFAULT 3

struct run_opts {
    const char *run_id, *ckpt_dir, *work_dir, *signal;
    const char *metrics_file, *log_format;
    const char *every; /* a duration or "auto" */
    int64_t every_ms, settle_ms, grace_ms, backoff_ms;
    int every_auto;
    int64_t mtbf_ms, every_min_ms, every_max_ms; /* --every auto */
    uint64_t keep, max_restarts, threads, level, full_every;
    int fresh, no_preload, keep_work, adopt;
    int wait_quota; /* --wait-quota: held, not refused, by a quota used up */
    uint64_t gpu_mem_limit;
    const char *notice, *aws_imds, *gcp_metadata, *azure_metadata;
    int64_t poll_ms;
    enum sr_cloud cloud;
    int64_t lease_ttl_ms, lease_wait_ms;
    const char *nodes, *node_rank, *restore_parts; /* multi-node (docs/multinode.md) */
    int64_t peer_poll_ms;
    const char *sweep, *trial; /* a sweep's trial (docs/sweeps.md) */
    const char *stall_timeout; /* a duration, auto or off (docs/runtime.md) */
    int64_t stall_timeout_ms;
    int64_t stall_startup_ms; /* --stall-startup, 0 = learned */
    int stall_auto;
    /* time limits and budgets (run_limits.h) */
    struct sr_run_limits_opts limits;
    struct sr_optlist label; /* --label, after SPOTRUN_LABELS (label_opts) */
    struct sr_labels labels; /* what they say, checked before the run starts */
    /* --ckpt-exclude, after SPOTRUN_CKPT_EXCLUDE (a comma list, split in
     * exclude_env): the patterns (exclude_opts) */
    struct sr_optlist exclude_opt;
    char exclude_env[4096];
    const char *exclude[SR_OPTLIST_MAX];
    size_t nexclude;
};

/* Not given: 3 restarts, none in a multi-node run (the engine restarts the
 * whole group there; a restart in place could only hang in collectives). */
#define MAX_RESTARTS_DEFAULT UINT64_MAX

/* What run_main works with: the supervisor's settings and the local paths
 * they point into. */
struct run_ctx {
    struct sr_supervise_config c;
    char cwd[PATH_MAX], self[PATH_MAX], run_id[256], root[PATH_MAX];
    char local[300]; /* the run's name in the work root: "<run>", ".n<rank>" per node */
    char run_dir[PATH_MAX + 300], ckpt[PATH_MAX + 300], sock[PATH_MAX + 300];
    char work_nonce[SR_OWNER_NONCE_LEN + 1]; /* the run dir's marker (dirmark.h) */
    int ckpt_named;                          /* --ckpt-dir given: the user's directory */
    char preload[PATH_MAX], cloud_cache[PATH_MAX + 32];
    /* a sweep's trial: its definition, index, command and the outcome */
    struct sr_sweep sweep;
    long trial; /* -1: not a sweep's trial */
    char **trial_argv;
    char trial_run_id[SR_RUN_ID_MAX + 1];
    struct sr_supervise_result result;
    int supervised; /* the job ran (remove_work) */
    sigset_t start_mask;
    struct sr_run_limits limits; /* time limits and budgets (run_limits.h) */
    struct sr_run_rungs rungs;   /* a trial's early stopping (run_rungs.h) */
    struct sr_run_pbt pbt;       /* a trial's population-based training (run_pbt.h) */
    struct sr_run_quota quota;   /* the quotas of its labels (run_quota.h) */
    json_t *labels;              /* the start events' "labels" (NULL: none) */
    /* The run's history, read once under the lease by the first step that
     * needs it (limits, --every auto, --stall-timeout, the metrics file,
     * the summary writer) and passed on */
    struct sr_hist_once hist;
};

/* The steps below return -1 when the run goes on, else the exit code. */
#define GO_ON (-1)

/* The run, from its parsed options to the exit code (run_main.c). */
int sr_run_main(const struct run_opts *opts, char **cmd);

/* run_trial.c: --sweep: the trial's definition, index, command and run id
 * into r (r->trial -1 when the run is no sweep's trial; *cmd becomes the
 * trial's command); the job's SPOTRUN_SWEEP, SPOTRUN_TRIAL and
 * SPOTRUN_PARAM_* set, or unset for any other run. */
int sr_run_trial_select(struct run_opts *o, char ***cmd, struct run_ctx *r);
/* Under the lease: the trial's run is made the trial's (SR_EX_CANTCREAT
 * when it is another's). */
int sr_run_trial_bind(const struct run_ctx *r);
/* A trial marked failed is not run again (its exit code). */
int sr_run_trial_refuse_failed(const struct run_ctx *r);
/* The run's labels (the sweep's under its own) into r->c.labels. */
void sr_run_labels(const struct run_opts *o, struct run_ctx *r);
/* After the run: the trial's end mark (done, failed, cancelled) from the
 * exit code and the supervisor's result. */
void sr_run_trial_mark_end(struct run_ctx *r, int code);

/* run_checks.c, under the lease: a run DONE in the store is not run again
 * (0, or 64 when asked for another command); a run keeps its kind
 * (single- or multi-node, 64); --every auto and --stall-timeout start from
 * the run's history (they never stop the run). */
int sr_run_stop_if_done(const struct run_ctx *r);
int sr_run_check_kind(const struct run_ctx *r);
int sr_run_every_history(struct run_ctx *r);
int sr_run_stall_history(struct run_ctx *r);

#endif
