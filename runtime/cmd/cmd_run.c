/*
 * cmd_run.c - `spotrun run [options] -- command...`: resolve the run's
 * identity and local paths, take its lease, handle --fresh and DONE, then
 * hand over to the supervisor (run_main reads as that sequence).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
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
#include "history.h"
#include "interval.h"
#include "labels.h"
#include "log.h"
#include "gpu_sampler.h"
#include "events.h"
#include "metrics.h"
#include "runsum.h"
#include "nodes.h"
#include "run_limits.h"
#include "run_rungs.h"
#include "sweep_rungs.h"
#include "runid.h"
#include "signame.h"
#include "supervisor.h"
#include "sweep.h"
#include "units.h"

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

struct run_opts {
    const char *run_id, *ckpt_dir, *work_dir, *signal;
    const char *metrics_file, *log_format;
    const char *every; /* a duration or "auto" */
    int64_t every_ms, settle_ms, grace_ms, backoff_ms;
    int every_auto;
    int64_t mtbf_ms, every_min_ms, every_max_ms; /* --every auto */
    uint64_t keep, max_restarts, threads, level, full_every;
    int fresh, no_preload, keep_work;
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
        sr_pathf(rec, sizeof(rec), "%s/ckpt-dir", run_dir) == 0) {
        rc = sr_write_file_atomic(rec, real, strlen(real));
        if (rc < 0)
            sr_warn("cannot record the checkpoint directory: %s", sr_strerror(rc));
    }
    sr_err_clear();
    return 0;
}

/* What run_main works with: the supervisor's settings and the local paths
 * they point into. */
struct run_ctx {
    struct sr_supervise_config c;
    char cwd[PATH_MAX], self[PATH_MAX], run_id[256], root[PATH_MAX];
    char local[300]; /* the run's name in the work root: "<run>", ".n<rank>" per node */
    char run_dir[PATH_MAX + 300], ckpt[PATH_MAX + 300], sock[PATH_MAX + 300];
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
    json_t *labels;              /* the start events' "labels" (NULL: none) */
};

/* The steps below return -1 when the run goes on, else the exit code. */
#define GO_ON (-1)

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
        c->max_restarts = n.nodes > 1 ? 0 : 3;
    if (n.nodes > 1)
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
    if (r->c.nodes > 1)
        snprintf(r->local, sizeof(r->local), "%s.n%u", r->run_id, r->c.node_rank);
    else
        snprintf(r->local, sizeof(r->local), "%s", r->run_id);
    if (!o->ckpt_dir || !*o->ckpt_dir)
        rc = sr_pathf(r->ckpt, sizeof(r->ckpt), "%s/%s/ckpt", r->root, r->local);
    else if (o->ckpt_dir[0] == '/')
        rc = sr_pathf(r->ckpt, sizeof(r->ckpt), "%s", o->ckpt_dir);
    else
        rc = sr_pathf(r->ckpt, sizeof(r->ckpt), "%s/%s", r->cwd, o->ckpt_dir);
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
 * work dir, not a directory of someone else's files. */
static int check_ckpt_target(const struct run_ctx *r)
{
    char what[PATH_MAX + 320];
    snprintf(what, sizeof(what), "--ckpt-dir %s", r->ckpt);
    const int ours = ckpt_is_ours(r->root, r->local, r->run_dir, r->ckpt);
    const int code = sr_check_target("run", what, r->ckpt, ours, r->c.st, r->root);
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
    if (o->lease_ttl_ms <= 0)
        return GO_ON;
    const int ttl_s = (int)((o->lease_ttl_ms + 999) / 1000);
    const int64_t wait_ms = o->lease_wait_ms < 0 ? 2 * o->lease_ttl_ms : o->lease_wait_ms;
    const int rank = r->c.nodes > 1 ? (int)r->c.node_rank : -1;
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
    if (rc == 0 && access(r->ckpt, F_OK) == 0)
        rc = sr_empty_dir(r->ckpt);
    return rc < 0 ? sr_fail(rc, "--fresh") : GO_ON;
}

/* The command of the run's newest "start" event (the last attempt's log:
 * its "argv"), or NULL when none is recorded (a run from before the field,
 * or one made by push). The caller frees it. */
static json_t *recorded_argv(struct sr_store *st, const char *run,
                             const struct sr_supervise_config *c)
{
    /* This node's own logs: the nodes of a multi-node run may run
     * different commands (a launcher's --node_rank). */
    char mine[32] = "";
    if (c->nodes > 1)
        snprintf(mine, sizeof(mine), "-n%u.jsonl", c->node_rank);
    char prefix[PATH_MAX];
    snprintf(prefix, sizeof(prefix), "%s/events", run);
    struct sr_strlist names;
    if (sr_store_list(st, prefix, &names) < 0) {
        sr_err_clear();
        return NULL;
    }
    json_t *argv = NULL;
    for (size_t i = names.n; i-- > 0 && !argv;) {
        char key[PATH_MAX + 300], *buf = NULL;
        size_t len = 0;
        const size_t nl = strlen(names.v[i]), ml = strlen(mine);
        if (!strstr(names.v[i], ".jsonl") ||
            (ml ? nl < ml || strcmp(names.v[i] + nl - ml, mine) != 0
                : !!strstr(names.v[i], "-n")) ||
            snprintf(key, sizeof(key), "%s/%s", prefix, names.v[i]) >= (int)sizeof(key) ||
            sr_store_get(st, key, 64u << 20, &buf, &len) < 0) {
            sr_err_clear();
            continue;
        }
        for (char *line = buf, *next; line && *line; line = next) {
            if ((next = strchr(line, '\n')))
                *next++ = '\0';
            json_t *o = json_loads(line, 0, NULL);
            const char *ev = json_string_value(json_object_get(o, "event"));
            json_t *a = json_object_get(o, "argv");
            if (ev && strcmp(ev, "start") == 0 && json_is_array(a)) {
                json_decref(argv);
                argv = json_incref(a);
            }
            json_decref(o);
        }
        free(buf);
    }
    sr_strlist_free(&names);
    return argv;
}

/* A command as a shell would take it back: words with anything but
 * [A-Za-z0-9_./=:,+@%-] in single quotes. */
static void shell_words(char *out, size_t len, size_t n, const char *(*word)(void *, size_t),
                        void *ctx)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && o < len; i++) {
        const char *w = word(ctx, i);
        const int plain = *w && strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_./=:,+@%-") == strlen(w);
        int k = snprintf(out + o, len - o, "%s%s%s%s", i ? " " : "", plain ? "" : "'", w,
                         plain ? "" : "'");
        o = k < 0 ? len : o + (size_t)k;
    }
    if (o >= len && len > 4)
        memcpy(out + len - 4, "...", 4);
}

static const char *json_word(void *ctx, size_t i)
{
    const char *w = json_string_value(json_array_get(ctx, i));
    return w ? w : "?";
}

static const char *argv_word(void *ctx, size_t i)
{
    return ((char **)ctx)[i];
}

/* A run that finished (DONE in the store) is not run again. Read once, under
 * the lease: a wrapper that finished the run while this one waited for the
 * lease is seen. Asked to run another command than the one that finished
 * it, the wrapper refuses (64) rather than exit 0 for a command it never
 * ran. */
static int stop_if_done(const struct run_ctx *r)
{
    const int rc = sr_ckpt_is_done(r->c.st, r->run_id);
    if (rc < 0)
        return sr_fail(rc, "cannot read the store");
    if (rc == 0)
        return GO_ON;
    json_t *was = recorded_argv(r->c.st, r->run_id, &r->c);
    size_t n = 0;
    while (r->c.argv[n])
        n++;
    int same = !was || json_array_size(was) == n;
    for (size_t i = 0; same && i < n; i++)
        same = strcmp(json_word(was, i), r->c.argv[i]) == 0;
    if (!same) {
        char then[1024], now[1024];
        shell_words(then, sizeof(then), json_array_size(was), json_word, was);
        shell_words(now, sizeof(now), n, argv_word, r->c.argv);
        fprintf(stderr,
                "spotrun run: run %s already finished with `%s` (DONE in %s); this asks for "
                "`%s`, which was not run: use --fresh to start the run over with it, or another "
                "--run-id\n",
                r->run_id, then, sr_store_url(r->c.st), now);
        json_decref(was);
        return SR_EX_USAGE;
    }
    json_decref(was);
    sr_info("run %s is already done (DONE in %s); use --fresh to start it over", r->run_id,
            sr_store_url(r->c.st));
    return 0;
}

/* A run keeps its kind (docs/multinode.md, "One owner, one kind"): a
 * multi-node run is not taken over by one node unless asked for
 * (--restore-parts all: every part into this directory), nor a single-node
 * run by a group. Read under the lease, after --fresh. */
static int check_kind(const struct run_ctx *r)
{
    if (r->c.restore_all)
        return GO_ON;
    uint32_t have;
    uint64_t seq;
    const int rc = sr_run_nodes(r->c.st, r->run_id, &have, &seq);
    if (rc < 0)
        return sr_fail(rc, "cannot read the store");
    const uint32_t want = r->c.nodes;
    /* A group of another size is the restore's to refuse (it names both). */
    if (have == 0 || have == want || (have > 1 && want > 1))
        return GO_ON;
    if (have == SR_RUN_MULTI)
        fprintf(stderr,
                "spotrun run: run %s is a multi-node run (its nodes' leases LEASE.<rank> are in "
                "%s; no checkpoint yet): run it with --nodes N --node-rank R on every node, or "
                "start it over on one node with --fresh\n",
                r->run_id, sr_store_url(r->c.st));
    else if (have > 1)
        fprintf(stderr,
                "spotrun run: run %s is a multi-node run of %u nodes (its newest checkpoint, seq "
                "%llu, has one part per node) and this is a single-node run: run it with "
                "--nodes %u on every node, resume it here with --restore-parts all (every part "
                "into this directory), or start it over with --fresh\n",
                r->run_id, have, (unsigned long long)seq, have);
    else
        fprintf(stderr,
                "spotrun run: run %s is a single-node run (its newest checkpoint, seq %llu, was "
                "made by one node) and this is node %u of %u: resume it with --restore-parts "
                "all on every node (each gets the whole checkpoint), run it on one node without "
                "--nodes, or start it over with --fresh\n",
                r->run_id, (unsigned long long)seq, r->c.node_rank, want);
    return SR_EX_USAGE;
}

/* Interruptions the interval should expect: preemptions, and attempts that
 * vanished (the node went without a word, as a spot instance may). */
static uint64_t interruptions(const struct sr_history *h)
{
    uint64_t n = h->preemptions;
    for (size_t i = 0; i < h->n_att; i++)
        n += h->att[i].end == SR_END_VANISHED;
    return n;
}

/* A sweep's trials (runs "<sweep>-<K>") share their instances' fate: their
 * preemptions and instance time are pooled. Bounded, so that a huge sweep
 * costs a bounded start. */
#define SWEEP_RUNS_MAX 256

static void sweep_history(struct sr_store *st, const char *sweep, const char *self,
                          struct sr_every_auto *a)
{
    struct sr_strlist runs = {0};
    const size_t plen = strlen(sweep);
    if (sr_ckpt_list_runs(st, &runs) < 0) {
        sr_err_clear();
        return;
    }
    size_t loaded = 0;
    for (size_t i = 0; i < runs.n && loaded < SWEEP_RUNS_MAX; i++) {
        const char *id = runs.v[i];
        if (strncmp(id, sweep, plen) != 0 || id[plen] != '-' || strcmp(id, self) == 0)
            continue;
        struct sr_history h;
        sr_hist_init(&h);
        if (sr_hist_load(st, id, &h) == 0) {
            a->hist_instance_ms += h.instance_ms;
            a->hist_preemptions += interruptions(&h);
            loaded++;
        }
        sr_hist_free(&h);
    }
    sr_strlist_free(&runs);
    sr_err_clear();
    if (loaded)
        a->mtbf_scope = "sweep";
}

/* --every auto starts from what the run's history measured: its instance
 * time and preemptions (pooled over the sweep's trials when it is one), and
 * its stage p50 (docs/interval.md). */
static int every_history(struct run_ctx *r)
{
    struct sr_every_auto *a = &r->c.every_auto;
    if (!a->on)
        return GO_ON;
    struct sr_history h;
    sr_hist_init(&h);
    const int rc = sr_hist_load(r->c.st, r->run_id, &h);
    if (rc < 0) {
        sr_warn("--every auto: cannot read the run's history (%s); starting from the priors",
                sr_strerror(rc));
    } else {
        a->hist_instance_ms = h.instance_ms;
        a->hist_preemptions = interruptions(&h);
        a->hist_cost_ms = h.staged ? (int64_t)(h.stage_p50 * 1000.0 + 0.5) : 0;
    }
    sr_hist_free(&h);
    sr_err_clear();
    const char *sweep = r->trial >= 0 ? r->sweep.name : NULL;
    const size_t n = sweep ? strlen(sweep) : 0;
    if (n && strncmp(r->run_id, sweep, n) == 0 && r->run_id[n] == '-')
        sweep_history(r->c.st, sweep, r->run_id, a);
    sr_debug("--every auto: history %" PRId64 "ms on instances, %" PRIu64
             " interruption(s), stage p50 %" PRId64 "ms",
             a->hist_instance_ms, a->hist_preemptions, a->hist_cost_ms);
    return GO_ON;
}

/* --stall-timeout: the run's earlier stalls count toward --max-restarts, so
 * that a run that hangs each time it is rerun stops; once it heartbeated,
 * an attempt that hangs before its first heartbeat is judged too. */
static int stall_history(struct run_ctx *r)
{
    if (!r->c.stall_auto && !r->c.stall_timeout_ms)
        return GO_ON;
    struct sr_history h;
    sr_hist_init(&h);
    const int rc = sr_hist_load(r->c.st, r->run_id, &h);
    if (rc < 0)
        sr_warn("--stall-timeout: cannot read the run's history (%s); its earlier stalls are not "
                "counted",
                sr_strerror(rc));
    else
        r->c.prior_stalls = sr_hist_stalls(&h);
    if (rc >= 0) /* then every attempt is judged from its start */
        r->c.prior_beaten = sr_hist_heartbeated(&h, &r->c.prior_startup_ms);
    sr_hist_free(&h);
    sr_err_clear();
    if (r->c.prior_stalls && r->c.nodes <= 1) /* multi-node: the engine reruns the group */
        sr_info("run %s stalled %u time(s) before (--max-restarts %u counts them)", r->run_id,
                r->c.prior_stalls, r->c.max_restarts);
    return GO_ON;
}

static int claim_ckpt(const struct run_ctx *r)
{
    const int rc = claim_ckpt_dir(r->ckpt, r->run_dir);
    return rc < 0 ? sr_fail(rc, "cannot create the checkpoint directory") : GO_ON;
}

/* The supervisor runs the job; its exit code is the run's. Without a lease,
 * manifests record the store's newest epoch. */
static int supervise(const struct run_opts *o, struct run_ctx *r, struct sr_lease *lease)
{
    struct sr_metrics *metrics = NULL;
    if (o->metrics_file && *o->metrics_file) {
        const int rc = sr_metrics_open(&metrics, o->metrics_file, r->c.st, r->run_id);
        if (rc < 0)
            sr_warn("no metrics file: cannot read the run's history: %s", sr_strerror(rc));
    }
    r->c.lease = lease;
    if (!lease && sr_ckpt_max_epoch(r->c.st, r->run_id, &r->c.epoch) < 0)
        r->c.epoch = 0; /* the restore reports an unreadable store */
    /* A single-node run keeps its SUMMARY.json (runsum.h); a multi-node
     * run's nodes would overwrite each other's, so stats reads its logs. */
    struct sr_runsum_writer *summary = NULL;
    if (r->c.nodes <= 1 && sr_runsum_writer_open(r->c.st, r->run_id, &summary) == 0) {
        r->c.on_flush = sr_runsum_writer_flushed;
        r->c.on_flush_ctx = summary;
    } else if (r->c.nodes > 1) {
        sr_runsum_mark_logs(r->c.st, r->run_id); /* listed in summaries/ all the same */
    }
    const int code = sr_supervise(&r->c);
    sr_runsum_writer_close(summary); /* no log calls it once sr_supervise returned */
    sr_metrics_close(metrics);
    return code;
}

/* Gives the lease back but keeps it allocated until the process exits: a
 * persist abandoned at a deadline (sr_commits_stop) may still consult it
 * after run_main returns, and is refused once it is released. The one
 * static here only keeps it reachable for that while (no leak report). */
static void release_lease(struct sr_lease *lease)
{
    static struct sr_lease *until_exit __attribute__((used));
    if (!lease)
        return;
    const int rc = sr_lease_release(lease);
    if (rc < 0)
        sr_warn("cannot release the lease (it expires on its own): %s", sr_strerror(rc));
    until_exit = lease;
}

/* ---- a sweep's trial (docs/sweeps.md) -------------------------------------- */

/* The trial index: --trial, else the engine's array index (*from names
 * which). */
static int trial_index(const struct run_opts *o, const struct sr_sweep *sw, long *trial,
                       const char **from_out)
{
    static const char *const engines[] = {"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX",
                                          "AWS_BATCH_JOB_ARRAY_INDEX"};
    const char *v = o->trial && *o->trial ? o->trial : NULL, *from = "--trial";
    for (size_t i = 0; !v && i < sizeof(engines) / sizeof(engines[0]); i++)
        if ((v = getenv(engines[i])) && *v)
            from = engines[i];
        else
            v = NULL;
    if (!v) {
        fprintf(stderr,
                "spotrun run: which trial of sweep %s? Give --trial K, or run it as a Slurm "
                "array task, a Kubernetes Indexed Job or an AWS Batch array child\n",
                sw->name);
        return SR_EX_USAGE;
    }
    int64_t k;
    const size_t n = sr_sweep_count(sw);
    if (sr_parse_int(v, 0, SR_SWEEP_TRIALS_MAX, &k) < 0) {
        fprintf(stderr, "spotrun run: %s=\"%s\" is not a trial index (0, 1, 2, ...)\n", from, v);
        return SR_EX_USAGE;
    }
    if (n == 0) {
        fprintf(stderr,
                "spotrun run: %s=%s: sweep %s has no trials (add some with `spotrun "
                "sweep init %s --add`)\n",
                from, v, sw->name, sw->name);
        return SR_EX_USAGE;
    }
    if ((size_t)k >= n) {
        fprintf(stderr, "spotrun run: %s=%s: sweep %s has %zu trial%s (0..%zu)\n", from, v,
                sw->name, n, n == 1 ? "" : "s", n - 1);
        return SR_EX_USAGE;
    }
    *trial = (long)k;
    *from_out = from;
    return GO_ON;
}

/* SPOTRUN_SWEEP, SPOTRUN_TRIAL and SPOTRUN_PARAM_<NAME> for the job (it
 * inherits the wrapper's environment); none of them in any other run. */
static void trial_env(const struct sr_sweep *sw, long trial)
{
    extern char **environ;
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e; e++)
            if (strncmp(*e, "SPOTRUN_PARAM_", 14) == 0) {
                char name[128];
                snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
                unsetenv(name);
                again = 1;
                break;
            }
    }
    unsetenv("SPOTRUN_SWEEP");
    unsetenv("SPOTRUN_TRIAL");
    if (!sw)
        return;
    char buf[32];
    snprintf(buf, sizeof(buf), "%ld", trial);
    setenv("SPOTRUN_SWEEP", sw->name, 1);
    setenv("SPOTRUN_TRIAL", buf, 1);
    for (size_t i = 0; i < sr_sweep_nparams(sw); i++) {
        const char *p = sr_sweep_param(sw, i);
        char name[SR_SWEEP_PARAM_NAME_MAX + 16];
        size_t n = (size_t)snprintf(name, sizeof(name), "SPOTRUN_PARAM_");
        for (; *p && n + 1 < sizeof(name); p++)
            name[n++] = (char)toupper((unsigned char)*p);
        name[n] = '\0';
        setenv(name, sr_sweep_value(sw, (size_t)trial, sr_sweep_param(sw, i)), 1);
    }
}

/* --sweep: the trial's definition, index, command (the one given, else the
 * sweep's, with {param} filled in) and run id (<sweep>-<K> unless
 * --run-id says otherwise). */
static int sweep_trial(struct run_opts *o, char ***cmd, struct run_ctx *r)
{
    r->trial = -1;
    if (!o->sweep || !*o->sweep) {
        trial_env(NULL, 0);
        return GO_ON;
    }
    int rc = sr_sweep_read(r->c.st, o->sweep, &r->sweep);
    if (rc < 0) {
        fprintf(stderr, "spotrun run: --sweep: %s\n", sr_strerror(rc));
        return rc == -EINVAL ? SR_EX_USAGE : sr_exit_code(rc);
    }
    const char *from = NULL;
    int code = trial_index(o, &r->sweep, &r->trial, &from);
    if (code != GO_ON)
        return code;
    char **tmpl = *cmd;
    if (!tmpl[0]) {
        static char *none[] = {NULL};
        const json_t *c = r->sweep.command;
        size_t n = json_array_size(c);
        tmpl = n ? calloc(n + 1, sizeof(char *)) : none;
        for (size_t i = 0; tmpl && i < n; i++)
            tmpl[i] = (char *)json_string_value(json_array_get(c, i));
        if (!tmpl || !tmpl[0]) {
            fprintf(stderr, "spotrun run: sweep %s stores no command: give one after --\n",
                    r->sweep.name);
            return SR_EX_USAGE;
        }
    }
    rc = sr_sweep_expand(&r->sweep, (size_t)r->trial, tmpl, &r->trial_argv);
    if (tmpl != *cmd && tmpl[0])
        free(tmpl);
    if (rc < 0) {
        fprintf(stderr, "spotrun run: sweep %s: %s\n", r->sweep.name, sr_strerror(rc));
        return SR_EX_USAGE;
    }
    *cmd = r->trial_argv;
    if (!o->run_id || !*o->run_id) {
        sr_sweep_run_id(r->sweep.name, (size_t)r->trial, r->trial_run_id, sizeof(r->trial_run_id));
        o->run_id = r->trial_run_id;
    }
    trial_env(&r->sweep, r->trial);
    /* Said once: an index from the engine says which trial this task is;
     * one given with --trial (a `sweep work` worker, which logs its claim
     * with the trial's parameters, or a person) is no news. */
    if (strcmp(from, "--trial") == 0)
        sr_debug("sweep %s trial %ld", r->sweep.name, r->trial);
    else
        sr_info("sweep %s trial %ld (%s)", r->sweep.name, r->trial, from);
    return GO_ON;
}

/* The trial's run is the trial's (it records the sweep, sweep.h), or it is
 * made so now, under the lease, before anything of it is read: a run that
 * merely has the trial's name (another sweep's, one made by hand) is never
 * resumed or taken as done. */
static int bind_trial(const struct run_ctx *r)
{
    if (r->trial < 0)
        return GO_ON;
    const int rc = sr_sweep_bind_run(r->c.st, &r->sweep, (size_t)r->trial, r->run_id);
    if (rc == -EEXIST) {
        fprintf(stderr, "spotrun run: %s\n", sr_strerror(rc));
        return SR_EX_CANTCREAT;
    }
    return rc < 0 ? sr_fail(rc, "cannot bind the trial's run") : GO_ON;
}

/* A trial that failed past --max-restarts is left alone: rerunning it (an
 * array rerun, a requeue) says so and fails the same way. */
static int refuse_failed_trial(const struct run_ctx *r)
{
    struct sr_trial_end_info end;
    const int rc = r->trial < 0
                       ? -ENOENT
                       : sr_sweep_read_failed(r->c.st, r->sweep.name, (size_t)r->trial, &end);
    if (rc == -EBADMSG) /* its name says failed; its content is not believed */
        sr_warn("%s", sr_strerror(rc));
    if (rc < 0 && rc != -EBADMSG) {
        sr_err_clear();
        return GO_ON;
    }
    sr_warn("trial %ld of sweep %s failed (%s on %s); it is left alone: add --fresh to run it "
            "again",
            r->trial, r->sweep.name, end.cause[0] ? end.cause : "gave up",
            end.host[0] ? end.host : "?");
    return end.exit_code > 0 && end.exit_code != SR_EX_TEMPFAIL ? end.exit_code : 1;
}

/* The run's labels: its sweep's, under its own (--label, SPOTRUN_LABELS);
 * every start event records them. */
static void run_labels(const struct run_opts *o, struct run_ctx *r)
{
    struct sr_labels all = {0};
    if (r->trial >= 0)
        sr_labels_from_json(&all, r->sweep.labels); /* entries that break the rules dropped */
    sr_labels_merge(&all, &o->labels);
    if (all.n)
        r->c.labels = r->labels = sr_labels_to_json(&all);
}

/* The trial's end mark: done once the run is DONE, failed when the job kept
 * failing past --max-restarts. */
static void mark_trial_end(struct run_ctx *r, int code)
{
    if (r->trial < 0)
        return;
    struct sr_trial_end_info end = {.unix_ms = sr_wall_ms(), .exit_code = code};
    gethostname(end.host, sizeof(end.host) - 1);
    /* done whatever the code: a done run that heard a notice as it
     * finished exits 75 (supervisor.c) */
    if ((code == 0 || code == SR_EX_TEMPFAIL) && sr_ckpt_is_done(r->c.st, r->run_id) == 1) {
        end.state = SR_TRIAL_DONE;
    } else if (r->result.gave_up) {
        end.state = SR_TRIAL_FAILED;
        snprintf(end.cause, sizeof(end.cause), "%s", r->result.cause);
    } else if (code == SR_EX_LIMIT &&
               sr_run_limits_trial_end(&r->limits, end.by, sizeof(end.by)) == SR_TRIAL_CANCELLED) {
        end.state = SR_TRIAL_CANCELLED; /* the operator's: never claimed again */
        snprintf(end.cause, sizeof(end.cause), "cancelled");
    } else {
        return;
    }
    const int rc = sr_sweep_mark_end(r->c.st, r->sweep.name, (size_t)r->trial, &end);
    if (rc < 0)
        sr_warn("cannot mark trial %ld of sweep %s %s: %s", r->trial, r->sweep.name,
                sr_trial_end_name(end.state), sr_strerror(rc));
    else
        sr_info("trial %ld of sweep %s %s", r->trial, r->sweep.name,
                end.state == SR_TRIAL_DONE ? "is done" : sr_trial_end_name(end.state));
}

/* A done run's local work dir is of no more use: every checkpoint is in
 * the store. What spotrun made there goes (the default checkpoint dir, the
 * spool, the socket, the job's page, the stall and GPU dirs), then the dir
 * itself when nothing else is left in it; with a --ckpt-dir elsewhere its
 * record that the dir is the run's stays (a rerun with --fresh knows it).
 * Done while the lease is held: no other wrapper of the run uses it here.
 * --keep-work keeps it all. */
static void remove_work(const struct run_opts *o, const struct run_ctx *r)
{
    if (o->keep_work)
        return;
    static const char *const made[] = {"spool", "gpu", "stall", "job.page", "control.sock"};
    char path[PATH_MAX + 400], def[PATH_MAX + 400];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof(made) / sizeof(made[0]); i++)
        if ((rc = sr_pathf(path, sizeof(path), "%s/%s", r->run_dir, made[i])) == 0)
            rc = sr_rmtree(path);
    const int own =
        sr_pathf(def, sizeof(def), "%s/ckpt", r->run_dir) == 0 && strcmp(def, r->ckpt) == 0;
    if (rc == 0 && own)
        rc = sr_rmtree(def);
    if (rc == 0 && own && sr_pathf(path, sizeof(path), "%s/ckpt-dir", r->run_dir) == 0 &&
        unlink(path) < 0 && errno != ENOENT)
        rc = -errno;
    if (rc < 0) {
        sr_warn("cannot remove the local work dir %s: %s", r->run_dir, sr_strerror(rc));
        sr_err_clear();
    } else if (rmdir(r->run_dir) == 0) {
        sr_info("removed the local work dir %s (the run is done; --keep-work keeps it)",
                r->run_dir);
    } else {
        sr_debug("left the local work dir %s: %s", r->run_dir, strerror(errno));
    }
}

/* The run, step by step; each step says why it stops the run. */
static int run_main(const struct run_opts *opts, char **cmd)
{
    struct run_opts o = *opts;
    struct run_ctx r = {.trial = -1};
    int code = settings(&o, cmd, &r);
    if (code == GO_ON)
        code = sr_run_limits_prepare(&r.limits, &opts->limits);
    if (code != GO_ON)
        return code;
    r.c.result = &r.result;
    const int rc = sr_open_store(&r.c.st, 1);
    if (rc < 0)
        return sr_fail(rc, "cannot open the store");
    code = sweep_trial(&o, &cmd, &r);
    if (code == GO_ON)
        run_labels(&o, &r);
    if (code == GO_ON) {
        r.c.argv = cmd;
        code = local_paths(&o, cmd, &r);
    }
    if (code == GO_ON) { /* before anything can wait: which run, and where it goes */
        char where[PATH_MAX + 256];
        sr_store_describe(r.c.st, where, sizeof(where));
        sr_info("run %s, store %s", r.run_id, where);
    }
    struct sr_lease *lease = NULL;
    if (code == GO_ON) {
        notices_and_shim(&o, &r);
        code = check_ckpt_target(&r);
    }
    if (code == GO_ON)
        code = refuse_second_wrapper(&r);
    if (code == GO_ON)
        code = take_lease(&o, &r, &lease);
    if (code == GO_ON)
        hold_notices(&r);
    if (code == GO_ON)
        code = bind_trial(&r);
    if (code == GO_ON && o.fresh)
        code = start_fresh(&r);
    if (code == GO_ON && o.fresh)
        code = bind_trial(&r); /* --fresh deleted the record with the run */
    if (code == GO_ON)
        code = stop_if_done(&r);
    if (code == GO_ON)
        code = check_kind(&r);
    if (code == GO_ON)
        code = refuse_failed_trial(&r);
    if (code == GO_ON)
        code = sr_run_rungs_settle(&r.rungs, &r.c, &r.sweep, r.trial);
    if (code == GO_ON)
        code = claim_ckpt(&r);
    if (code == GO_ON) /* under the lease: what the run used of its limits */
        code = sr_run_limits_settle(&r.limits, &r.c, r.run_id, r.sweep.name, r.trial);
    if (code == GO_ON)
        code = every_history(&r);
    if (code == GO_ON)
        code = stall_history(&r);
    if (code == GO_ON) {
        code = supervise(&o, &r, lease);
        r.supervised = 1;
    }
    mark_trial_end(&r, code);
    sr_run_rungs_end(&r.rungs, code);
    if (code == 0 && r.supervised)
        remove_work(&o, &r);
    release_lease(lease);
    sr_store_close(r.c.st);
    sr_sweep_free(&r.sweep);
    sr_sweep_argv_free(r.trial_argv);
    sr_run_limits_free(&r.limits);
    json_decref(r.labels);
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

int sr_cmd_run(const struct sr_cmd *cmd, int argc, char **argv)
{
    struct run_opts o = {.lease_ttl_ms = 60000,
                         .lease_wait_ms = -1,
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
         "keep the newest N checkpoints (default: all)"},
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
         "DURATION", "a sweep's trial: how often the sweep's spending is read (default 30s)"},
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
    if (endpoint_opts(&o) != GO_ON)
        return SR_EX_USAGE;
    if (o.poll_ms < 10) {
        fprintf(stderr, "spotrun run: --poll-interval must be at least 10ms\n");
        return SR_EX_USAGE;
    }
    if (o.lease_ttl_ms > 0 && o.lease_ttl_ms < 1000) {
        fprintf(stderr, "spotrun run: --lease-ttl must be at least 1s (or 0: no lease)\n");
        return SR_EX_USAGE;
    }
    if (every_opts(&o) != GO_ON || stall_opts(&o) != GO_ON || label_opts(&o) != GO_ON ||
        exclude_opts(&o) != GO_ON || sr_run_limits_given(&o.limits) != 0)
        return SR_EX_USAGE;
    if (o.level > 19) {
        fprintf(stderr, "spotrun run: --level must be 1..19\n");
        return SR_EX_USAGE;
    }
    return run_main(&o, ctx.ops);
}
