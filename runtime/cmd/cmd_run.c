/*
 * cmd_run.c - `spotrun run [options] -- command...`: resolve the run's
 * identity and local paths, handle DONE and --fresh, then hand over to the
 * supervisor.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "catalog.h"
#include "cli.h"
#include "control.h"
#include "dirmark.h"
#include "keeper.h"
#include "lease.h"
#include "fsutil.h"
#include "log.h"
#include "metrics.h"
#include "runid.h"
#include "signame.h"
#include "supervisor.h"
#include "units.h"

static int parse_signal(const char *name)
{
    return !name || !*name ? SIGUSR1 : spotrun_signal_parse(name);
}

/* libspotrun.so: $SPOTRUN_PRELOAD, else beside the binary (installed:
 * ../lib, build tree: ../preload). */
static int find_preload(const char *self, char *out, size_t len)
{
    const char *env = getenv("SPOTRUN_PRELOAD");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return access(out, R_OK) == 0 ? 0 : -ENOENT;
    }
    char dir[PATH_MAX];
    sr_dirname(self, dir, sizeof(dir));
    static const char *const rel[] = {"../lib/libspotrun.so", "../preload/libspotrun.so",
                                      "libspotrun.so"};
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        if (sr_pathf(out, len, "%s/%s", dir, rel[i]) == 0 && access(out, R_OK) == 0)
            return 0;
    }
    return -ENOENT;
}

struct run_opts {
    const char *run_id, *ckpt_dir, *work_dir, *signal;
    const char *metrics_file, *log_format;
    int64_t every_ms, settle_ms, grace_ms, backoff_ms;
    uint64_t keep, max_restarts, threads, level;
    int fresh, no_preload;
    uint64_t gpu_mem_limit;
    const char *notice, *aws_imds, *gcp_metadata, *azure_metadata;
    int64_t poll_ms;
    enum sr_cloud cloud;
    int64_t lease_ttl_ms, lease_wait_ms;
};

/* The run's lease (sr_keeper_take). It stays reachable until exit: a
 * persist abandoned at a deadline may still consult it (and is refused
 * once released). */
static struct sr_lease *run_lease;

static int fresh_start(struct sr_store *st, const char *run_id, const char *ckpt_dir)
{
    sr_info("--fresh: deleting run %s from %s", run_id, sr_store_url(st));
    int rc = sr_ckpt_clear_run(st, run_id);
    /* Emptied, not removed: it keeps its mark, and may be a mount point. */
    if (rc == 0 && access(ckpt_dir, F_OK) == 0)
        rc = sr_empty_dir(ckpt_dir);
    return rc;
}

/* The checkpoint directory is the run's own when it is the default one
 * (inside the run's work dir, also as made by older versions) or the one
 * this run's work dir records (a filesystem without user xattrs, or a job
 * that removed and recreated it). */
static int ckpt_is_ours(const char *root, const char *run_id, const char *run_dir, const char *ckpt)
{
    char def[PATH_MAX + 300], a[PATH_MAX], b[PATH_MAX], rec[PATH_MAX + 320], *buf = NULL;
    size_t len = 0;
    if (sr_path_resolve(ckpt, a, sizeof(a)) < 0)
        return 0;
    if (sr_pathf(def, sizeof(def), "%s/%s/ckpt", root, run_id) == 0 &&
        sr_path_resolve(def, b, sizeof(b)) == 0 && strcmp(a, b) == 0)
        return 1;
    int ours = 0;
    if (sr_pathf(rec, sizeof(rec), "%s/ckpt-dir", run_dir) == 0 &&
        sr_read_file(rec, PATH_MAX, &buf, &len) == 0)
        ours = strcmp(buf, a) == 0;
    free(buf);
    sr_err_clear();
    return ours;
}

/* Creates the checkpoint directory (before any training: a parent that is
 * not writable shows now), marks it as spotrun's and records it in the
 * run's work dir. */
static int claim_ckpt_dir(const char *ckpt, const char *run_dir)
{
    char real[PATH_MAX], rec[PATH_MAX + 320];
    int rc = sr_mkdirs(ckpt, 0755);
    if (rc < 0)
        return rc;
    (void)sr_dir_mark(ckpt);
    if (sr_path_resolve(ckpt, real, sizeof(real)) == 0 && sr_mkdirs(run_dir, 0700) == 0 &&
        sr_pathf(rec, sizeof(rec), "%s/ckpt-dir", run_dir) == 0 &&
        (rc = sr_write_file_atomic(rec, real, strlen(real))) < 0)
        sr_warn("cannot record the checkpoint directory: %s", sr_strerror(rc));
    sr_err_clear();
    return 0;
}

static int run_main(struct run_opts *o, char **cmd)
{
    struct sr_supervise_config c = {.argv = cmd,
                                    .every_ms = o->every_ms,
                                    .settle_ms = o->settle_ms,
                                    .grace_ms = o->grace_ms,
                                    .backoff_ms = o->backoff_ms,
                                    .max_restarts = (unsigned)o->max_restarts,
                                    .keep = (unsigned)o->keep,
                                    .threads = (int)o->threads,
                                    .level = (int)o->level,
                                    .gpu_mem_limit = o->gpu_mem_limit};
    char cwd[PATH_MAX], self[PATH_MAX], run_id[256], root[PATH_MAX], run_dir[PATH_MAX + 300];
    char ckpt[PATH_MAX + 300], sock[PATH_MAX + 300], preload[PATH_MAX];
    c.signo = parse_signal(o->signal);
    if (c.signo == SIGKILL || c.signo == SIGSTOP) {
        fprintf(stderr,
                "spotrun run: --signal %s cannot be caught by the job; use SIGUSR1 or "
                "another catchable signal\n",
                o->signal);
        return SR_EX_USAGE;
    }
    if (c.signo < 0) {
        fprintf(stderr,
                "spotrun run: invalid value \"%s\" for --signal (e.g. SIGUSR1, USR2, "
                "SIGRTMIN+2, 12)\n",
                o->signal);
        return SR_EX_USAGE;
    }
    if (!getcwd(cwd, sizeof(cwd)))
        return sr_fail(-errno, "getcwd");
    int rc = sr_runid_expand(o->run_id, cmd, cwd, run_id, sizeof(run_id));
    if (rc < 0) {
        fprintf(stderr, "spotrun run: %s\n", sr_strerror(rc));
        return SR_EX_USAGE;
    }
    const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[n > 0 ? n : 0] = '\0';
    rc = sr_work_root(o->work_dir, root, sizeof(root));
    if (rc < 0)
        return sr_fail(rc, "work directory");
    if (!o->ckpt_dir || !*o->ckpt_dir)
        rc = sr_pathf(ckpt, sizeof(ckpt), "%s/%s/ckpt", root, run_id);
    else if (o->ckpt_dir[0] == '/')
        rc = sr_pathf(ckpt, sizeof(ckpt), "%s", o->ckpt_dir);
    else
        rc = sr_pathf(ckpt, sizeof(ckpt), "%s/%s", cwd, o->ckpt_dir);
    if (rc == 0)
        rc = sr_pathf(run_dir, sizeof(run_dir), "%s/%s", root, run_id);
    if (rc < 0)
        return sr_fail(rc, "local paths");
    if ((rc = sr_control_path(run_dir, sock, sizeof(sock))) < 0)
        return sr_fail(rc, "control socket");
    c.run_id = run_id;
    c.run_dir = run_dir;
    c.ckpt_dir = ckpt;
    c.control_path = sock;
    c.self = self;
    char cloud_cache[PATH_MAX + 32];
    c.notice = (struct sr_notice_config){.cloud = o->cloud,
                                         .aws_url = o->aws_imds,
                                         .gcp_url = o->gcp_metadata,
                                         .azure_url = o->azure_metadata,
                                         .poll_ms = o->poll_ms,
                                         .cache_path = cloud_cache};
    if (sr_pathf(cloud_cache, sizeof(cloud_cache), "%s/cloud.cache", root) < 0)
        c.notice.cache_path = NULL;
    if (!o->no_preload) {
        if (find_preload(self, preload, sizeof(preload)) == 0)
            c.preload = preload;
        else
            sr_warn("libspotrun.so not found (set SPOTRUN_PRELOAD); running without the shim");
    }
    rc = sr_open_store(&c.st);
    if (rc < 0)
        return sr_fail(rc, "cannot open the store");
    char what[PATH_MAX + 320];
    snprintf(what, sizeof(what), "--ckpt-dir %s", ckpt);
    int code =
        sr_check_target("run", what, ckpt, ckpt_is_ours(root, run_id, run_dir, ckpt), c.st, root);
    if (code != 0) {
        sr_store_close(c.st);
        return code;
    }
    /* Another wrapper of this run on this machine answers on the control
     * socket: say so at once rather than wait for its lease. */
    char pong[64];
    if (sr_ctl_call(sock, "STATUS", pong, sizeof(pong), 2000) == 0) {
        fprintf(stderr, "spotrun: run %s is already running on this machine (%s answers)\n", run_id,
                sock);
        code = SR_EX_CANTCREAT;
    } else if (!o->fresh && (rc = sr_ckpt_is_done(c.st, run_id)) == 1) {
        sr_info("run %s is already done (DONE in %s); use --fresh to start it over", run_id,
                sr_store_url(c.st));
    } else if (o->lease_ttl_ms > 0 &&
               (code = sr_keeper_take(c.st, run_id, (int)((o->lease_ttl_ms + 999) / 1000),
                                      o->lease_wait_ms < 0 ? 2 * o->lease_ttl_ms : o->lease_wait_ms,
                                      "not starting (--lease-wait)", &run_lease)) != 0) {
        /* not ours */
    } else if (o->fresh && (rc = fresh_start(c.st, run_id, ckpt)) < 0) {
        code = sr_fail(rc, "--fresh");
    } else if ((rc = sr_ckpt_is_done(c.st, run_id)) != 0) {
        if (rc < 0)
            code = sr_fail(rc, "cannot read the store");
        else
            sr_info("run %s is already done (DONE in %s); use --fresh to start it over", run_id,
                    sr_store_url(c.st));
    } else if ((rc = claim_ckpt_dir(ckpt, run_dir)) < 0) {
        code = sr_fail(rc, "cannot create the checkpoint directory");
    } else {
        struct sr_metrics *metrics = NULL;
        if (o->metrics_file && *o->metrics_file &&
            (rc = sr_metrics_open(&metrics, o->metrics_file, c.st, run_id)) < 0)
            sr_warn("no metrics file: cannot read the run's history: %s", sr_strerror(rc));
        c.lease = run_lease;
        if (!run_lease && sr_ckpt_max_epoch(c.st, run_id, &c.epoch) < 0)
            c.epoch = 0; /* the restore reports an unreadable store */
        code = sr_supervise(&c);
        sr_metrics_close(metrics);
    }
    if (run_lease && (rc = sr_lease_release(run_lease)) < 0)
        sr_warn("cannot release the lease (it expires on its own): %s", sr_strerror(rc));
    sr_store_close(c.st);
    return code;
}

/* Inside a job (SPOTRUN_CONTROL is set) the variables the outer wrapper gave
 * the job (SPOTRUN_RUN_ID, SPOTRUN_CKPT_DIR, SPOTRUN_SIGNAL,
 * SPOTRUN_GPU_MEM_LIMIT) describe the outer run: they are no settings of a
 * `spotrun run` started there, which is a new run unless its flags say
 * otherwise. */
static const char *twin(const char *env)
{
    const char *ctl = getenv("SPOTRUN_CONTROL");
    return ctl && *ctl ? NULL : env;
}

int sr_cmd_run(int argc, char **argv)
{
    struct run_opts o = {.lease_ttl_ms = 60000,
                         .lease_wait_ms = -1,
                         .grace_ms = 25000,
                         .backoff_ms = 1000,
                         .max_restarts = 3,
                         .notice = "auto",
                         .poll_ms = 1000};
    const struct sr_opt opts[] = {
        {"run-id", 'r', twin("SPOTRUN_RUN_ID"), SR_OPT_STR, &o.run_id, "ID",
         "run id or template ({index}, {slurm_job_id}, {env:VAR}...); default: from the command"},
        {"ckpt-dir", 'd', twin("SPOTRUN_CKPT_DIR"), SR_OPT_STR, &o.ckpt_dir, "DIR",
         "the job's checkpoint directory (default: WORK_DIR/RUN/ckpt)"},
        {"work-dir", 0, "SPOTRUN_WORK_DIR", SR_OPT_STR, &o.work_dir, "DIR",
         "local state (default: ~/.cache/spotrun)"},
        {"every", 'e', "SPOTRUN_EVERY", SR_OPT_DURATION, &o.every_ms, "DURATION",
         "ask the job for a checkpoint this often"},
        {"keep", 'k', "SPOTRUN_KEEP", SR_OPT_UINT, &o.keep, "N",
         "keep the newest N checkpoints (default: all)"},
        {"settle", 0, "SPOTRUN_SETTLE", SR_OPT_DURATION, &o.settle_ms, "DURATION",
         "commit the directory once it stops changing for this long"},
        {"grace", 'g', "SPOTRUN_GRACE", SR_OPT_DURATION, &o.grace_ms, "DURATION",
         "time left after SIGTERM/SIGINT (default 25s)"},
        {"max-restarts", 'm', "SPOTRUN_MAX_RESTARTS", SR_OPT_UINT, &o.max_restarts, "N",
         "restarts after crashes before giving up (default 3)"},
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
        SR_OPTS_COMMON};
    int first;
    int rc = sr_opts_parse("run", opts, argc, argv, 1, &first);
    if (rc)
        return rc;
    if (sr_common.help) {
        sr_opts_help(stdout, "spotrun run [options] -- command [args...]",
                     "Runs the command, resumes it from its newest checkpoint, restarts it after\n"
                     "crashes, and checkpoints it before a preemption (exit 75: requeue me).",
                     opts);
        return 0;
    }
    if (!argv[first]) {
        fprintf(stderr, "spotrun run: no command given (spotrun run -- command...)\n");
        return SR_EX_USAGE;
    }
    if (sr_log_set_format(o.log_format) < 0) {
        fprintf(stderr, "spotrun run: invalid value \"%s\" for --log-format (text or json)\n",
                o.log_format);
        return SR_EX_USAGE;
    }
    if (sr_cloud_parse(o.notice, &o.cloud) < 0) {
        fprintf(stderr,
                "spotrun run: invalid value \"%s\" for --notice (auto, aws, gcp, azure "
                "or none)\n",
                o.notice);
        return SR_EX_USAGE;
    }
    if (o.poll_ms < 10) {
        fprintf(stderr, "spotrun run: --poll-interval must be at least 10ms\n");
        return SR_EX_USAGE;
    }
    if (o.lease_ttl_ms > 0 && o.lease_ttl_ms < 1000) {
        fprintf(stderr, "spotrun run: --lease-ttl must be at least 1s (or 0: no lease)\n");
        return SR_EX_USAGE;
    }
    if (o.level > 19) {
        fprintf(stderr, "spotrun run: --level must be 1..19\n");
        return SR_EX_USAGE;
    }
    return run_main(&o, argv + first);
}
