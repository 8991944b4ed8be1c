/*
 * cmd_store.c - the commands that work on the store alone: ls, show, pull,
 * push, gc. None of them needs a running wrapper.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "checkpointer.h"
#include "cli.h"
#include "fsutil.h"
#include "log.h"
#include "units.h"

static void fmt_time(int64_t unix_s, char *buf, size_t len)
{
    const time_t t = (time_t)unix_s;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

/* Parses options and operands for the store commands; opens the store.
 * Returns -1 when the command should go on, else an exit code. */
static int store_cmd_start(const char *cmd, const struct sr_opt *opts, int argc, char **argv,
                           int min_ops, int max_ops, const char *usage, const char *about,
                           char ***ops, struct sr_store **st)
{
    int first;
    int rc = sr_opts_parse(cmd, opts, argc, argv, 0, &first);
    if (rc)
        return rc;
    if (sr_common.help) {
        sr_opts_help(stdout, usage, about, opts);
        return 0;
    }
    int n = 0;
    while (argv[first + n])
        n++;
    if (n < min_ops || n > max_ops) {
        fprintf(stderr, "spotrun %s: %s (usage: %s)\n", cmd,
                n < min_ops ? "missing argument" : "too many arguments", usage);
        return SR_EX_USAGE;
    }
    *ops = argv + first;
    if (n > 0 && !sr_run_id_valid((*ops)[0]) && strcmp(cmd, "ls") != 0) {
        fprintf(stderr, "spotrun %s: invalid run id \"%s\"\n", cmd, (*ops)[0]);
        return SR_EX_USAGE;
    }
    rc = sr_open_store(st);
    if (rc < 0)
        return sr_fail(rc, "cannot open the store");
    return -1;
}

int sr_cmd_ls(int argc, char **argv)
{
    const struct sr_opt opts[] = {SR_OPTS_COMMON};
    char **ops;
    struct sr_store *st;
    int code =
        store_cmd_start("ls", opts, argc, argv, 0, 0, "spotrun ls",
                        "Lists the runs in the store with their newest checkpoint.", &ops, &st);
    if (code >= 0)
        return code;
    struct sr_strlist runs = {0};
    int rc = sr_run_list(st, &runs);
    if (rc < 0) {
        code = sr_fail(rc, "cannot list the store");
        goto out;
    }
    printf("%-32s %-12s %5s %8s %10s %10s  %s\n", "RUN", "STATE", "CKPTS", "NEWEST", "STEP", "SIZE",
           "CREATED");
    for (size_t i = 0; i < runs.n; i++) {
        struct sr_ckpt_list l = {0};
        sr_ckpt_list(st, runs.v[i], &l);
        const int done = sr_run_is_done(st, runs.v[i]) == 1;
        char step[24] = "-", size[32] = "-", when[32] = "-", seq[24] = "-";
        if (l.n) {
            const struct sr_manifest *m = &l.v[l.n - 1];
            sr_format_step(m->step, step, sizeof(step));
            sr_format_size(m->stored_bytes, size, sizeof(size));
            fmt_time(m->created, when, sizeof(when));
            snprintf(seq, sizeof(seq), "%" PRIu64, m->seq);
        }
        printf("%-32s %-12s %5zu %8s %10s %10s  %s\n", runs.v[i],
               done  ? "done"
               : l.n ? "checkpointed"
                     : "started",
               l.n, seq, step, size, when);
        sr_ckpt_list_free(&l);
    }
out:
    sr_strlist_free(&runs);
    sr_store_close(st);
    return code < 0 ? 0 : code;
}

int sr_cmd_show(int argc, char **argv)
{
    const struct sr_opt opts[] = {SR_OPTS_COMMON};
    char **ops;
    struct sr_store *st;
    int code = store_cmd_start("show", opts, argc, argv, 1, 1, "spotrun show RUN",
                               "Shows a run's checkpoints: step, size, ratio, time.", &ops, &st);
    if (code >= 0)
        return code;
    struct sr_ckpt_list l = {0};
    int rc = sr_ckpt_list(st, ops[0], &l);
    uint32_t attempts = 0;
    if (rc == 0)
        rc = sr_events_next_attempt(st, ops[0], &attempts);
    if (rc < 0) {
        code = sr_fail(rc, "cannot read the store");
        goto out;
    }
    if (l.n == 0 && attempts == 0) {
        fprintf(stderr, "spotrun: show: no run \"%s\" in %s\n", ops[0], sr_store_url(st));
        code = SR_EX_NOINPUT;
        goto out;
    }
    const int done = sr_run_is_done(st, ops[0]) == 1;
    printf("run:         %s\nstore:       %s\nstate:       %s\nattempts:    %" PRIu32
           "\ncheckpoints: %zu\n\n",
           ops[0], sr_store_url(st),
           done  ? "done"
           : l.n ? "checkpointed"
                 : "started",
           attempts, l.n);
    printf("%8s %10s %10s %10s %7s %6s %8s  %-19s  %s\n", "SEQ", "STEP", "RAW", "STORED", "RATIO",
           "FILES", "STAGE", "CREATED", "HOST");
    for (size_t i = 0; i < l.n; i++) {
        const struct sr_manifest *m = &l.v[i];
        char step[24], raw[32], stored[32], when[32];
        sr_format_step(m->step, step, sizeof(step));
        sr_format_size(m->raw_bytes, raw, sizeof(raw));
        sr_format_size(m->stored_bytes, stored, sizeof(stored));
        fmt_time(m->created, when, sizeof(when));
        printf("%8" PRIu64 " %10s %10s %10s %6.2fx %6" PRIu64 " %7.2fs  %-19s  %s\n", m->seq, step,
               raw, stored, m->stored_bytes ? (double)m->raw_bytes / (double)m->stored_bytes : 0.0,
               m->files, m->stage_seconds, when, m->host);
    }
    code = -1;
out:
    sr_ckpt_list_free(&l);
    sr_store_close(st);
    return code < 0 ? 0 : code;
}

int sr_cmd_pull(int argc, char **argv)
{
    uint64_t seq = 0, threads = 0;
    const struct sr_opt opts[] = {{"seq", 0, "SPOTRUN_PULL_SEQ", SR_OPT_UINT, &seq, "N",
                                   "restore this checkpoint (default: newest)"},
                                  {"threads", 0, "SPOTRUN_THREADS", SR_OPT_UINT, &threads, "N",
                                   "decompression threads (default: all CPUs)"},
                                  SR_OPTS_COMMON};
    char **ops;
    struct sr_store *st;
    int code = store_cmd_start("pull", opts, argc, argv, 1, 2, "spotrun pull RUN [DIR]",
                               "Restores the newest (or --seq N) checkpoint of RUN into DIR\n"
                               "(default ./RUN). DIR ends up holding exactly the checkpoint.",
                               &ops, &st);
    if (code >= 0)
        return code;
    const char *dir = ops[1] ? ops[1] : ops[0];
    struct sr_manifest m;
    const int64_t t0 = sr_now_ms();
    const int rc = sr_ckpt_restore(st, ops[0], seq, dir, (int)threads, &m);
    if (rc < 0) {
        code = sr_fail(rc, "pull");
    } else {
        char raw[32];
        sr_format_size(m.raw_bytes, raw, sizeof(raw));
        char step[24];
        sr_format_step(m.step, step, sizeof(step));
        sr_info("restored checkpoint %" PRIu64 " (step %s, %s) of %s into %s in %.1fs", m.seq, step,
                raw, ops[0], dir, (double)(sr_now_ms() - t0) / 1000.0);
        code = 0;
    }
    sr_store_close(st);
    return code;
}

int sr_cmd_push(int argc, char **argv)
{
    const char *step_s = NULL;
    uint64_t keep = 0, threads = 0, level = 0;
    const struct sr_opt opts[] = {
        {"step", 'n', "SPOTRUN_COMMIT_STEP", SR_OPT_STR, &step_s, "N", "step to record"},
        {"keep", 'k', "SPOTRUN_KEEP", SR_OPT_UINT, &keep, "N", "then keep only the newest N"},
        {"threads", 0, "SPOTRUN_THREADS", SR_OPT_UINT, &threads, "N",
         "compression threads (default: all CPUs)"},
        {"level", 0, "SPOTRUN_LEVEL", SR_OPT_UINT, &level, "N", "zstd level (default 3)"},
        SR_OPTS_COMMON};
    char **ops;
    struct sr_store *st;
    int code = store_cmd_start("push", opts, argc, argv, 2, 2, "spotrun push RUN DIR [--step N]",
                               "Snapshots DIR as a new checkpoint of RUN.", &ops, &st);
    if (code >= 0)
        return code;
    int64_t step = -1;
    if (step_s && (sr_parse_int(step_s, 0, INT64_MAX, &step) < 0)) {
        fprintf(stderr, "spotrun push: invalid value \"%s\" for --step\n", step_s);
        sr_store_close(st);
        return SR_EX_USAGE;
    }
    const struct sr_cp_config cfg = {.st = st,
                                     .run_id = ops[0],
                                     .keep = (unsigned)keep,
                                     .threads = (int)threads,
                                     .level = (int)level};
    /* Stage in the work dir, which usually shares a filesystem with the
     * default store (then the file store adopts the file without a copy),
     * where /tmp is often tmpfs. */
    char root[PATH_MAX], spool[PATH_MAX + 16], tmp[PATH_MAX + 64];
    uint64_t seq = 0;
    struct sr_manifest m;
    int rc = sr_work_root(NULL, root, sizeof(root));
    if (rc == 0)
        rc = sr_pathf(spool, sizeof(spool), "%s/push", root);
    if (rc == 0)
        rc = sr_mkdirs(spool, 0700);
    if (rc == 0)
        rc = sr_pathf(tmp, sizeof(tmp), "%s/%d.tar.zst", spool, (int)getpid());
    if (rc == 0)
        rc = sr_ckpt_next_seq(st, ops[0], &seq);
    if (rc == 0)
        rc = sr_cp_stage(&cfg, ops[1], seq, step, tmp, &m);
    if (rc == 0)
        rc = sr_cp_persist(&cfg, &m, tmp);
    unlink(tmp);
    if (rc < 0) {
        code = sr_fail(rc, "push");
    } else {
        char raw[32], stored[32];
        sr_format_size(m.raw_bytes, raw, sizeof(raw));
        sr_format_size(m.stored_bytes, stored, sizeof(stored));
        sr_info("pushed %s as checkpoint %" PRIu64 " of %s: %s -> %s", ops[1], seq, ops[0], raw,
                stored);
        code = 0;
    }
    sr_store_close(st);
    return code;
}

int sr_cmd_gc(int argc, char **argv)
{
    uint64_t keep = UINT64_MAX;
    const struct sr_opt opts[] = {{"keep", 'k', "SPOTRUN_KEEP", SR_OPT_UINT, &keep, "N",
                                   "checkpoints to keep (required, >= 1)"},
                                  SR_OPTS_COMMON};
    char **ops;
    struct sr_store *st;
    int code =
        store_cmd_start("gc", opts, argc, argv, 1, 1, "spotrun gc RUN --keep N",
                        "Deletes all but the newest N complete checkpoints of RUN.", &ops, &st);
    if (code >= 0)
        return code;
    if (keep == UINT64_MAX || keep == 0) {
        fprintf(stderr, "spotrun gc: --keep N (N >= 1) is required\n");
        sr_store_close(st);
        return SR_EX_USAGE;
    }
    unsigned deleted = 0;
    const int rc = sr_ckpt_gc(st, ops[0], (unsigned)keep, &deleted);
    if (rc < 0)
        code = sr_fail(rc, "gc");
    else {
        sr_info("deleted %u checkpoint(s) of %s, kept the newest %" PRIu64, deleted, ops[0], keep);
        code = 0;
    }
    sr_store_close(st);
    return code;
}
