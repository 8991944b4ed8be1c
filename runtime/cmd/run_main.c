/*
 * run_main.c - `spotrun run` itself (cmd_run.h): resolve the run's
 * identity and local paths, take its lease, handle --fresh and DONE, then
 * hand over to the supervisor; sr_run_main reads as that sequence, in three
 * phases (before the lease, under it, after the job).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "checkpointer.h"
#include "cmd_run.h"
#include "control.h"
#include "dirmark.h"
#include "events.h"
#include "fsutil.h"
#include "gpu_sampler.h"
#include "keeper.h"
#include "lease.h"
#include "log.h"
#include "metrics.h"
#include "nodes.h"
#include "runid.h"
#include "runsum.h"
#include "signame.h"
#include "pbt.h"
#include "sweep_rungs.h"

static int parse_signal(const char *name)
{
    return !name || !*name ? SIGUSR1 : spotrun_signal_parse(name);
}

/* libspotrun.so: $SPOTRUN_PRELOAD, else beside the binary (installed:
 * ../lib, build tree: ../preload), so an unpacked tarball works anywhere. */
int sr_find_preload(const char *self, char *out, size_t len)
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
    char found[PATH_MAX], real[PATH_MAX];
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        if (sr_pathf(found, sizeof(found), "%s/%s", dir, rel[i]) == 0 && access(found, R_OK) == 0)
            /* The job's LD_PRELOAD and --version name it without "..". */
            return snprintf(out, len, "%s", realpath(found, real) ? real : found) < (int)len
                       ? 0
                       : -ENAMETOOLONG;
    }
    return -ENOENT;
}

/* The run dir's record of a --ckpt-dir it made or took: its path, then its
 * device and inode. The dir is the run's when it is that file, or when it
 * was removed and made again at that path (a trainer's rmtree + makedirs);
 * a record of an older version holds the path only. */
static int ckpt_recorded(const struct run_ctx *r)
{
    char rec[PATH_MAX + 320], real[PATH_MAX], *buf = NULL;
    size_t len = 0;
    int ours = 0;
    if (sr_pathf(rec, sizeof(rec), "%s/ckpt-dir", r->run_dir) == 0 &&
        sr_read_file(rec, PATH_MAX + 64, &buf, &len) == 0) {
        char *nl = strchr(buf, '\n');
        unsigned long long dev = 0, ino = 0;
        struct sr_file_id id;
        if (nl)
            *nl = '\0';
        if (nl && sscanf(nl + 1, "%llu %llu", &dev, &ino) == 2 && sr_file_id(r->ckpt, 1, &id) == 0)
            ours = id.dev == dev && id.ino == ino;
        if (!ours && sr_path_resolve(r->ckpt, real, sizeof(real)) == 0)
            ours = strcmp(buf, real) == 0;
    }
    free(buf);
    sr_err_clear();
    return ours;
}

/* The checkpoint directory is the run's own when it is the default one
 * (the same file as RUN_DIR/ckpt, however the user named it), carries the
 * run's mark (dirmark.h), or is the one the run dir records. */
static int ckpt_is_ours(const struct run_ctx *r)
{
    char def[PATH_MAX + 310], mark[SR_RUN_ID_MAX + 8], parent[PATH_MAX + 300];
    if (!r->ckpt_named)
        return 1;
    if (sr_pathf(def, sizeof(def), "%s/ckpt", r->run_dir) == 0 && sr_same_file(r->ckpt, 1, def, 0))
        return 1;
    const char *base = strrchr(r->ckpt, '/');
    sr_dirname(r->ckpt, parent, sizeof(parent));
    if (access(r->ckpt, F_OK) < 0 && base && strcmp(base, "/ckpt") == 0 &&
        sr_same_file(parent, 1, r->run_dir, 0)) /* the default one, not made yet */
        return 1;
    if (sr_dir_mark_get(r->ckpt, mark, sizeof(mark)) && strcmp(mark, r->run_id) == 0)
        return 1;
    return ckpt_recorded(r);
}

/* Records the checkpoint dir in the run's work dir (ckpt_recorded). */
static void record_ckpt_dir(const struct run_ctx *r)
{
    char real[PATH_MAX], rec[PATH_MAX + 320], text[PATH_MAX + 64];
    struct sr_file_id id;
    if (sr_path_resolve(r->ckpt, real, sizeof(real)) < 0 || sr_file_id(r->ckpt, 1, &id) < 0 ||
        sr_pathf(rec, sizeof(rec), "%s/ckpt-dir", r->run_dir) < 0)
        return;
    const int n = snprintf(text, sizeof(text), "%s\n%llu %llu\n", real, id.dev, id.ino);
    const int rc = n > 0 && (size_t)n < sizeof(text) ? sr_write_file_atomic(rec, text, (size_t)n)
                                                     : -ENAMETOOLONG;
    if (rc < 0)
        sr_warn("cannot record the checkpoint directory: %s", sr_strerror(rc));
}

/* Whether dir holds anything (1), nothing (0). */
static int dir_has_files(const char *dir)
{
    DIR *d = opendir(dir);
    int any = 0;
    for (struct dirent *e; d && !any && (e = readdir(d));)
        any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return any;
}

/* How this run commits a checkpoint it did not get from its job (--adopt, a
 * PBT exploit): its store, lease and the codec settings of its flags. */
static struct sr_commits_config commits_config(const struct run_opts *o, const struct run_ctx *r,
                                               struct sr_lease *lease)
{
    return (struct sr_commits_config){.st = r->c.st,
                                      .run_id = r->run_id,
                                      .keep = (unsigned)o->keep,
                                      .threads = (int)o->threads,
                                      .level = (int)o->level,
                                      .full_every = (unsigned)o->full_every,
                                      .lease = lease,
                                      .epoch = r->c.epoch};
}

/* --adopt: what the checkpoint dir holds becomes the run's newest
 * checkpoint (as `spotrun push` makes one), before the job starts from it. */
static int adopt_ckpt_dir(const struct run_opts *o, const struct run_ctx *r, struct sr_lease *lease)
{
    struct sr_commits_config cfg = commits_config(o, r, lease);
    struct sr_manifest m = {0};
    if (sr_cfg_multinode(
            &r->c)) { /* one node's files are no checkpoint its other nodes can resume */
        fprintf(stderr, "spotrun run: --adopt is for single-node runs (this one has %u nodes)\n",
                r->c.nodes);
        return SR_EX_USAGE;
    }
    if (!lease && sr_ckpt_max_epoch(r->c.st, r->run_id, &cfg.epoch) < 0)
        cfg.epoch = 0; /* as supervise() does without a lease */
    const int rc = sr_push_dir(&cfg, r->ckpt, -1, &m);
    if (rc < 0)
        return sr_fail(rc, "--adopt");
    sr_info("--adopt: the files %s holds are checkpoint %" PRIu64 " of run %s", r->ckpt, m.seq,
            r->run_id);
    return GO_ON;
}

/* Creates the checkpoint directory (before any training: a parent that is
 * not writable shows now; 0700, like every directory spotrun makes), with
 * --adopt takes what it holds, marks it as the run's and records it in the
 * run's work dir. */
static int claim_ckpt_dir(const struct run_opts *o, const struct run_ctx *r, struct sr_lease *lease)
{
    const int existed = access(r->ckpt, F_OK) == 0;
    int rc = sr_mkdirs(r->ckpt, 0700);
    if (rc < 0)
        return sr_fail(rc, "cannot create the checkpoint directory");
    if (o->adopt && existed && !ckpt_is_ours(r) && dir_has_files(r->ckpt)) {
        const int code = adopt_ckpt_dir(o, r, lease);
        if (code != GO_ON)
            return code;
    } else if (o->adopt) {
        sr_info("--adopt: %s holds nothing to adopt (it is run %s's or empty)", r->ckpt, r->run_id);
    }
    (void)sr_dir_mark_run(r->ckpt, r->run_id);
    record_ckpt_dir(r);
    sr_err_clear();
    return GO_ON;
}

/* The run's work dir WORK_ROOT/RUN is spotrun's only if spotrun made it
 * (its marker, dirmark.h): made now when missing (0700, and the work root
 * too), else checked. One spotrun did not make, or a symlink, is refused
 * and nothing in it is touched. */
static int claim_work_dir(struct run_ctx *r)
{
    int rc = sr_mkdirs(r->root, 0700);
    if (rc < 0)
        return sr_fail(rc, "work directory");
    rc = sr_owned_dir_claim(r->root, r->local, r->local, r->work_nonce, NULL);
    if (rc == -EEXIST || rc == -ELOOP || rc == -ENOTDIR || rc == -EPERM) {
        fprintf(stderr,
                "spotrun run: %s; spotrun removes only what it made, so it uses nothing in it: "
                "choose another work root (--work-dir or SPOTRUN_WORK_DIR) or another --run-id "
                "(if an older spotrun made it, its checkpoints are in the store: remove it "
                "yourself)\n",
                sr_strerror(rc));
        return SR_EX_USAGE;
    }
    return rc < 0 ? sr_fail(rc, "work directory") : GO_ON;
}

/* Which node of how many (docs/multinode.md), what it restores, and the
 * restarts default that follows. */
static int nodes(const struct run_opts *o, struct run_ctx *r)
{
    struct sr_supervise_config *c = &r->c;
    struct sr_nodes n;
    if (sr_nodes_resolve(o->nodes, o->node_rank, &n) < 0) {
        fprintf(stderr, "spotrun run: %s\n", sr_strerror(-EINVAL));
        return SR_EX_USAGE;
    }
    c->nodes = n.nodes;
    c->node_rank = n.rank;
    const char *parts = o->restore_parts && *o->restore_parts ? o->restore_parts : "own";
    if (strcmp(parts, "own") != 0 && strcmp(parts, "all") != 0) {
        fprintf(stderr, "spotrun run: invalid value \"%s\" for --restore-parts (own or all)\n",
                parts);
        return SR_EX_USAGE;
    }
    c->restore_all = strcmp(parts, "all") == 0;
    c->peer_poll_ms = o->peer_poll_ms;
    /* A group is restarted by its engine, not in place; the stalls it may
     * take that way are the --max-restarts given, else the single-node
     * default (docs/multinode.md). */
    c->max_stalls = o->max_restarts == MAX_RESTARTS_DEFAULT ? 3 : (unsigned)o->max_restarts;
    if (o->max_restarts == MAX_RESTARTS_DEFAULT)
        c->max_restarts = sr_cfg_multinode(c) ? 0 : 3;
    if (sr_cfg_multinode(c))
        sr_debug("node %u of %u (from %s)", n.rank, n.nodes, n.from);
    return GO_ON;
}

/* The supervisor's settings from the options: the request signal, the
 * cloud notices and the shim. */
static int settings(const struct run_opts *o, char **cmd, struct run_ctx *r)
{
    struct sr_supervise_config *c = &r->c;
    *c = (struct sr_supervise_config){.argv = cmd,
                                      .every_ms = o->every_ms,
                                      .settle_ms = o->settle_ms,
                                      .ckpt_exclude = o->exclude,
                                      .n_ckpt_exclude = o->nexclude,
                                      .stall_timeout_ms = o->stall_timeout_ms,
                                      .stall_auto = o->stall_auto,
                                      .stall_startup_ms = o->stall_startup_ms,
                                      .grace_ms = o->grace_ms,
                                      .backoff_ms = o->backoff_ms,
                                      .max_restarts = (unsigned)o->max_restarts,
                                      .keep = (unsigned)o->keep,
                                      .full_every = (unsigned)o->full_every,
                                      .threads = (int)o->threads,
                                      .level = (int)o->level,
                                      .gpu_mem_limit = o->gpu_mem_limit,
                                      .signo = parse_signal(o->signal),
                                      .every_auto = {.on = o->every_auto,
                                                     .mtbf_prior_ms = o->mtbf_ms,
                                                     .min_ms = o->every_min_ms,
                                                     .max_ms = o->every_max_ms}};
    if (c->signo == SIGKILL || c->signo == SIGSTOP) {
        fprintf(stderr,
                "spotrun run: --signal %s cannot be caught by the job; use SIGUSR1 or "
                "another catchable signal\n",
                o->signal);
        return SR_EX_USAGE;
    }
    if (c->signo < 0) {
        fprintf(stderr,
                "spotrun run: invalid value \"%s\" for --signal (e.g. SIGUSR1, USR2, "
                "SIGRTMIN+2, 12)\n",
                o->signal);
        return SR_EX_USAGE;
    }
    if (sr_gpu_sample_ms_env(&c->gpu_sample_ms) < 0) {
        fprintf(stderr,
                "spotrun run: invalid SPOTRUN_GPU_SAMPLE_MS=\"%s\" (milliseconds between GPU "
                "utilization samples, %d to %d; 0 turns sampling off)\n",
                getenv("SPOTRUN_GPU_SAMPLE_MS"), SR_GPU_SAMPLE_MS_MIN, SR_GPU_SAMPLE_MS_MAX);
        return SR_EX_USAGE;
    }
    return nodes(o, r);
}

/* The run's id and its local paths: work root, run dir, checkpoint dir,
 * control socket, this binary. */
static int local_paths(const struct run_opts *o, char **cmd, struct run_ctx *r)
{
    if (!getcwd(r->cwd, sizeof(r->cwd)))
        return sr_fail(-errno, "getcwd");
    int rc = sr_runid_expand(o->run_id, cmd, r->cwd, r->run_id, sizeof(r->run_id));
    if (rc < 0) {
        fprintf(stderr, "spotrun run: %s\n", sr_strerror(rc));
        return SR_EX_USAGE;
    }
    const ssize_t n = readlink("/proc/self/exe", r->self, sizeof(r->self) - 1);
    r->self[n > 0 ? n : 0] = '\0';
    rc = sr_work_root(o->work_dir, r->root, sizeof(r->root));
    if (rc < 0)
        return sr_fail(rc, "work directory");
    /* Several nodes of a run may share a machine (several srun tasks per
     * node, or a test): each keeps its own local state. */
    if (sr_cfg_multinode(&r->c))
        snprintf(r->local, sizeof(r->local), "%s.n%u", r->run_id, r->c.node_rank);
    else
        snprintf(r->local, sizeof(r->local), "%s", r->run_id);
    if (!o->ckpt_dir || !*o->ckpt_dir)
        rc = sr_pathf(r->ckpt, sizeof(r->ckpt), "%s/%s/ckpt", r->root, r->local);
    else /* the user's path, symlinks resolved: one name from here on */
        rc = sr_path_resolve(o->ckpt_dir, r->ckpt, sizeof(r->ckpt));
    r->ckpt_named = o->ckpt_dir && *o->ckpt_dir;
    if (rc == 0)
        rc = sr_pathf(r->run_dir, sizeof(r->run_dir), "%s/%s", r->root, r->local);
    if (rc < 0)
        return sr_fail(rc, "local paths");
    rc = sr_control_path(r->run_dir, r->sock, sizeof(r->sock));
    if (rc < 0)
        return sr_fail(rc, "control socket");
    r->c.run_id = r->run_id;
    r->c.run_dir = r->run_dir;
    r->c.keep_work = o->keep_work;
    r->c.ckpt_dir = r->ckpt;
    r->c.ckpt_named = r->ckpt_named;
    r->c.control_path = r->sock;
    r->c.self = r->self;
    return GO_ON;
}

/* The cloud notice watcher (its answer cached in the work root) and the
 * shim to preload. */
static void notices_and_shim(const struct run_opts *o, struct run_ctx *r)
{
    r->c.notice = (struct sr_notice_config){.cloud = o->cloud,
                                            .aws_url = o->aws_imds,
                                            .gcp_url = o->gcp_metadata,
                                            .azure_url = o->azure_metadata,
                                            .poll_ms = o->poll_ms,
                                            .cache_path = r->cloud_cache};
    if (sr_pathf(r->cloud_cache, sizeof(r->cloud_cache), "%s/cloud.cache", r->root) < 0)
        r->c.notice.cache_path = NULL;
    if (o->no_preload)
        return;
    if (sr_find_preload(r->self, r->preload, sizeof(r->preload)) == 0)
        r->c.preload = r->preload;
    else
        sr_warn("libspotrun.so not found (set SPOTRUN_PRELOAD); running without the shim");
}

/* --ckpt-dir may be replaced by a restore: not the store, not spotrun's
 * work dir, not a directory of someone else's files: another run's (its
 * mark names it) or the user's own, unless --adopt takes them. */
static int check_ckpt_target(const struct run_opts *o, const struct run_ctx *r)
{
    char what[PATH_MAX + 320], mark[SR_RUN_ID_MAX + 8] = "", hint[3 * PATH_MAX];
    snprintf(what, sizeof(what), "--ckpt-dir %s", r->ckpt);
    const int ours = ckpt_is_ours(r);
    const int other = !ours && sr_dir_mark_get(r->ckpt, mark, sizeof(mark)) &&
                      strcmp(mark, SR_DIR_MARK_ANY) != 0 && dir_has_files(r->ckpt);
    if (other && !o->adopt) {
        fprintf(stderr,
                "spotrun run: %s holds the checkpoint of run %s (spotrun's mark on it), not of "
                "run %s: not replacing it; resume that run (--run-id %s), choose another "
                "--ckpt-dir, or start run %s from those files with --adopt\n",
                what, mark, r->run_id, mark, r->run_id);
        return SR_EX_USAGE;
    }
    snprintf(hint, sizeof(hint),
             "; or, if they are your trainer's own checkpoint, make them the first checkpoint of "
             "run %s: spotrun run --adopt --run-id %s -d %s -- ...",
             r->run_id, r->run_id, r->ckpt);
    const int code = sr_check_target("run", what, r->ckpt,
                                     ours       ? 1
                                     : o->adopt ? SR_TARGET_ADOPT
                                                : 0,
                                     r->c.st, r->root, hint);
    return code != 0 ? code : GO_ON;
}

/* Another wrapper of this run on this machine answers on the control
 * socket: say so at once rather than wait for its lease. */
static int refuse_second_wrapper(const struct run_ctx *r)
{
    char pong[64];
    if (sr_ctl_call(r->sock, "STATUS", pong, sizeof(pong), 2000) != 0)
        return GO_ON;
    fprintf(stderr, "spotrun: run %s is already running on this machine (%s answers)\n", r->run_id,
            r->sock);
    return SR_EX_CANTCREAT;
}

/* Single owner: the run's lease in the store (none with --lease-ttl 0). */
static int take_lease(const struct run_opts *o, const struct run_ctx *r, struct sr_lease **lease)
{
    /* a sweep worker claimed the run for this wrapper (sr_lease_claim); not
     * the job's to see */
    const char *from = getenv("SPOTRUN_LEASE_FROM");
    if (from) {
        sr_lease_accept_from(from);
        unsetenv("SPOTRUN_LEASE_FROM");
    }
    if (o->lease_ttl_ms <= 0)
        return GO_ON;
    const int ttl_s = (int)((o->lease_ttl_ms + 999) / 1000);
    const int64_t wait_ms = o->lease_wait_ms < 0 ? 2 * o->lease_ttl_ms : o->lease_wait_ms;
    const int rank = sr_cfg_rank(&r->c);
    const int code = sr_keeper_take_rank(r->c.st, r->run_id, rank, ttl_s, wait_ms,
                                         "not starting (--lease-wait)", lease);
    return code != 0 ? code : GO_ON;
}

/* From the lease on, a TERM/INT/HUP (a fleet worker draining, Slurm, a
 * shutdown) waits for the supervisor, which takes it as a notice and
 * releases the lease; dying of it here would hold the run until the lease
 * expires. The job starts with the mask spotrun started with. */
static void hold_notices(struct run_ctx *r)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, &r->start_mask);
    r->c.orig_mask = &r->start_mask;
}

/* --fresh: the run's store objects go, and the checkpoint directory is
 * emptied, not removed: it keeps its mark, and may be a mount point. */
static int start_fresh(const struct run_ctx *r)
{
    sr_info("--fresh: deleting run %s from %s", r->run_id, sr_store_url(r->c.st));
    int rc = sr_ckpt_clear_run(r->c.st, r->run_id);
    if (rc == 0 && r->trial >= 0)
        rc = sr_sweep_clear_end(r->c.st, r->sweep.name, (size_t)r->trial);
    if (rc == 0 && r->trial >= 0) /* early stopping judges it again from scratch */
        rc = sr_rung_remove_trial(r->c.st, r->sweep.name, r->trial);
    if (rc == 0 && r->trial >= 0 && r->sweep.pbt) /* and PBT: its lineage starts again */
        rc = sr_pbt_remove_trial(r->c.st, r->sweep.name, r->trial);
    if (rc == 0 && access(r->ckpt, F_OK) == 0)
        rc = sr_empty_dir_log(r->ckpt, r->ckpt_named ? "--fresh" : NULL);
    return rc < 0 ? sr_fail(rc, "--fresh") : GO_ON;
}

/* The supervisor runs the job; its exit code is the run's. Without a lease,
 * manifests record the store's newest epoch. */
static int supervise(const struct run_opts *o, struct run_ctx *r, struct sr_lease *lease)
{
    struct sr_metrics *metrics = NULL;
    if (o->metrics_file && *o->metrics_file) {
        const int rc = sr_metrics_open(&metrics, o->metrics_file, r->c.st, r->run_id,
                                       sr_hist_once_logs(&r->hist));
        if (rc < 0)
            sr_warn("no metrics file: cannot read the run's history: %s", sr_strerror(rc));
    }
    r->c.lease = lease;
    if (!lease && sr_ckpt_max_epoch(r->c.st, r->run_id, &r->c.epoch) < 0)
        r->c.epoch = 0; /* the restore reports an unreadable store */
    /* A single-node run keeps its summary (runsum.h); a multi-node
     * run's nodes would overwrite each other's, so stats reads its logs. */
    struct sr_runsum_writer *summary = NULL;
    /* The logs read at the start, if a step needed them; else the writer
     * reads them on its own thread, not before the job starts. */
    const struct sr_hist_logs *earlier = r->hist.tried ? sr_hist_once_logs(&r->hist) : NULL;
    if (!sr_cfg_multinode(&r->c) &&
        sr_runsum_writer_open(r->c.st, r->run_id, earlier, &summary) == 0) {
        r->c.on_flush = sr_runsum_writer_flushed;
        r->c.on_flush_ctx = summary;
    } else if (sr_cfg_multinode(&r->c)) {
        sr_runsum_mark_logs(r->c.st, r->run_id); /* listed in summaries/ all the same */
    }
    sr_hist_once_free(&r->hist); /* folded by those that needed it */
    const int code = sr_supervise(&r->c);
    sr_runsum_writer_close(summary); /* no log calls it once sr_supervise returned */
    sr_metrics_close(metrics);
    return code;
}

/* Gives the lease back but keeps it allocated until the process exits: a
 * persist abandoned at a deadline (sr_commits_stop) may still consult it
 * after run_main returns, and is refused once it is released. The one
 * static here only keeps it reachable for that while (no leak report; at
 * file scope, where clang does not take a store-only variable for dead). */
static struct sr_lease *lease_until_exit __attribute__((used));

static void release_lease(struct sr_lease *lease)
{
    if (!lease)
        return;
    const int rc = sr_lease_release(lease);
    if (rc < 0)
        sr_warn("cannot release the lease (it expires on its own): %s", sr_strerror(rc));
    lease_until_exit = lease;
}

/* Whether the open directory fd holds nothing but spotrun's marker. */
static int only_marker_left(int fd)
{
    const int dup_fd = dup(fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    int others = d == NULL;
    for (struct dirent *e; d && !others && (e = readdir(d));)
        others = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
                 strcmp(e->d_name, SR_OWNER_MARK) != 0;
    if (d)
        closedir(d);
    else if (dup_fd >= 0)
        close(dup_fd);
    return !others;
}

/* A done run's local work dir is of no more use: every checkpoint is in
 * the store. What spotrun made there goes (the default checkpoint dir, the
 * spool, the socket, the job's page, the stall and GPU dirs), then the dir
 * itself when nothing else is left in it; with a --ckpt-dir elsewhere its
 * record that the dir is the run's stays (a rerun with --fresh knows it).
 * Only in the dir spotrun made (its marker, checked again: the same making
 * as at the start), through its descriptor, never through a symlink; the
 * checkpoint dir is the default one when it is the same file, however the
 * user named it. Done while the lease is held: no other wrapper of the run
 * uses it here. --keep-work keeps it all. */
static void remove_work(const struct run_opts *o, const struct run_ctx *r)
{
    if (o->keep_work)
        return;
    int rootfd = -1;
    const int fd = sr_owned_dir_open(r->root, r->local, r->local, r->work_nonce, &rootfd);
    if (fd < 0) {
        sr_warn("not removing the local work dir: %s", sr_strerror(fd));
        sr_err_clear();
        return;
    }
    static const char *const made[] = {"spool", "gpu", "stall", "job.page", "control.sock"};
    char path[PATH_MAX + 400];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof(made) / sizeof(made[0]); i++)
        if ((rc = sr_pathf(path, sizeof(path), "%s/%s", r->run_dir, made[i])) == 0)
            rc = sr_rmtree_at(fd, made[i], path);
    struct stat def;
    struct sr_file_id id;
    const int own = fstatat(fd, "ckpt", &def, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(def.st_mode) &&
                    sr_file_id(r->ckpt, 1, &id) == 0 && id.dev == (unsigned long long)def.st_dev &&
                    id.ino == (unsigned long long)def.st_ino;
    if (rc == 0 && own && (rc = sr_pathf(path, sizeof(path), "%s/ckpt", r->run_dir)) == 0)
        rc = sr_rmtree_at(fd, "ckpt", path);
    if (rc == 0 && own && unlinkat(fd, "ckpt-dir", 0) < 0 && errno != ENOENT)
        rc = -errno;
    if (rc < 0) {
        sr_warn("cannot remove the local work dir %s: %s", r->run_dir, sr_strerror(rc));
        sr_err_clear();
    } else if (only_marker_left(fd) && unlinkat(fd, SR_OWNER_MARK, 0) == 0 &&
               unlinkat(rootfd, r->local, AT_REMOVEDIR) == 0) {
        sr_info("removed the local work dir %s (the run is done; --keep-work keeps it)",
                r->run_dir);
    } else {
        sr_debug("left the local work dir %s: %s", r->run_dir, strerror(errno));
    }
    close(fd);
    close(rootfd);
}

/* Before the lease, with the store open: the trial, the local paths
 * and what may already refuse the run (its checkpoint directory, another
 * wrapper of it here). */
static int run_prepare(struct run_opts *o, char **cmd, struct run_ctx *r)
{
    int code = sr_run_trial_select(o, &cmd, r);
    if (code == GO_ON)
        sr_run_labels(o, r);
    if (code == GO_ON) {
        r->c.argv = cmd;
        code = local_paths(o, cmd, r);
    }
    if (code == GO_ON) { /* before anything can wait: which run, and where it goes */
        char where[PATH_MAX + 256];
        sr_store_describe(r->c.st, where, sizeof(where));
        sr_info("run %s, store %s", r->run_id, where);
        /* before the lease and the work dir: a hold for a quota holds nothing */
        const struct sr_run_quota_args qa = {r->run_id,
                                             r->labels,
                                             sr_cfg_nodes(&r->c),
                                             o->limits.budget_poll_ms,
                                             o->limits.time_limit_ms,
                                             o->limits.max_cost,
                                             o->wait_quota,
                                             r->trial >= 0 ? r->sweep.name : NULL};
        code = sr_run_quota_check(&r->quota, r->c.st, &qa);
    }
    if (code == GO_ON) {
        notices_and_shim(o, r);
        code = claim_work_dir(r);
        if (code == GO_ON)
            code = check_ckpt_target(o, r);
    }
    if (code == GO_ON)
        code = refuse_second_wrapper(r);
    return code;
}

/* A PBT trial's pending exploit carried out, and its hook (run_pbt.h). */
static int settle_pbt(const struct run_opts *o, struct run_ctx *r, struct sr_lease *lease)
{
    struct sr_commits_config cfg = commits_config(o, r, lease);
    if (!lease && sr_ckpt_max_epoch(r->c.st, r->run_id, &cfg.epoch) < 0)
        cfg.epoch = 0;
    char scratch[PATH_MAX + 400];
    if (sr_pathf(scratch, sizeof(scratch), "%s/pbt-in", r->run_dir) < 0)
        return sr_fail(-ENAMETOOLONG, "pbt");
    return sr_run_pbt_settle(&r->pbt, &r->c, &r->sweep, r->trial, &cfg, scratch);
}

/* Under the lease: the trial's binding, --fresh, the pre-checks against
 * the store, the run's limits and history, then the job. */
static int run_leased(const struct run_opts *o, struct run_ctx *r, struct sr_lease *lease)
{
    hold_notices(r);
    sr_hist_once_init(&r->hist, r->c.st, r->run_id);
    int code = sr_run_trial_bind(r);
    if (code == GO_ON && o->fresh)
        code = start_fresh(r);
    if (code == GO_ON && o->fresh)
        code = sr_run_trial_bind(r); /* --fresh deleted the record with the run */
    if (code == GO_ON)
        code = sr_run_stop_if_done(r);
    if (code == GO_ON)
        code = sr_run_check_kind(r);
    if (code == GO_ON)
        code = sr_run_trial_refuse_failed(r);
    if (code == GO_ON)
        code = sr_run_rungs_settle(&r->rungs, &r->c, &r->sweep, r->trial);
    if (code == GO_ON && r->sweep.pbt)
        code = settle_pbt(o, r, lease);
    if (code == GO_ON)
        code = claim_ckpt_dir(o, r, lease);
    if (code == GO_ON) /* under the lease: what the run used of its limits */
        code =
            sr_run_limits_settle(&r->limits, &r->c, r->run_id, r->sweep.name, r->trial, &r->hist);
    if (code == GO_ON)
        sr_run_quota_settle(&r->quota, &r->c);
    if (code == GO_ON)
        code = sr_run_every_history(r);
    if (code == GO_ON)
        code = sr_run_stall_history(r);
    if (code == GO_ON) {
        code = supervise(o, r, lease);
        r->supervised = 1;
    }
    sr_hist_once_free(&r->hist);
    return code;
}

/* What a trial started again after a PBT exploit keeps from the start
 * before: the open store and the run's lease, held across (no other
 * worker can claim the trial between the two). */
struct run_carry {
    struct sr_store *st;
    struct sr_lease *lease;
};

/* The carried lease, renewed: 0, or -1 when it is lost (taken again). */
static int renew_carried(struct run_carry *cy)
{
    if (!cy->lease)
        return -1;
    const int rc = sr_lease_renew(cy->lease);
    if (rc == 0)
        return 0;
    sr_warn("pbt: the run's lease could not be renewed across the restart (%s); taking it again",
            sr_strerror(rc));
    sr_err_clear();
    release_lease(cy->lease);
    cy->lease = NULL;
    return -1;
}

/* The run, step by step; each step says why it stops the run. With cy->st
 * set, a start again after a PBT exploit (cy: what it keeps); cy is
 * filled when the trial is to start again now. */
static int run_once(const struct run_opts *opts, char **cmd, struct run_carry *cy)
{
    struct run_opts o = *opts;
    struct run_ctx r = {.trial = -1};
    int code = settings(&o, cmd, &r);
    if (code == GO_ON)
        code = sr_run_limits_prepare(&r.limits, &opts->limits);
    if (code != GO_ON)
        return code;
    r.c.result = &r.result;
    const int rc = cy->st ? 0 : sr_open_store(&r.c.st, SR_OPEN_CREATE);
    if (rc < 0)
        return sr_fail(rc, "cannot open the store");
    if (cy->st)
        r.c.st = cy->st;
    struct sr_lease *lease = NULL;
    code = run_prepare(&o, cmd, &r);
    if (code == GO_ON && renew_carried(cy) == 0)
        lease = cy->lease;
    else if (code == GO_ON)
        code = take_lease(&o, &r, &lease);
    if (code == GO_ON)
        code = run_leased(&o, &r, lease);
    sr_run_trial_mark_end(&r, code);
    sr_run_rungs_end(&r.rungs, code);
    const int again = sr_run_pbt_again(&r.pbt, code);
    if (r.c.orig_mask) /* the next start blocks the notices again */
        sigprocmask(SIG_SETMASK, &r.start_mask, NULL);
    if (code == 0 && r.supervised)
        remove_work(&o, &r);
    *cy = (struct run_carry){0};
    if (again) {
        *cy = (struct run_carry){.st = r.c.st, .lease = lease};
    } else {
        release_lease(lease);
        sr_store_close(r.c.st);
    }
    sr_sweep_free(&r.sweep);
    sr_sweep_argv_free(r.trial_argv);
    sr_run_limits_free(&r.limits);
    json_decref(r.labels);
    return code;
}

int sr_run_main(const struct run_opts *opts, char **cmd)
{
    struct run_opts o = *opts;
    struct run_carry cy = {0};
    for (;;) {
        const int code = run_once(&o, cmd, &cy);
        if (!cy.st)
            return code;
        o.fresh = 0; /* the run goes on: nothing of it is deleted again */
        o.adopt = 0;
        sr_info("pbt: starting the trial again with the donor's checkpoint (its lease held)");
    }
}
