/*
 * cmd_control.c - the commands that talk to a running wrapper over its
 * control socket: `spotrun commit` and `spotrun metric` (from inside the
 * job) and `spotrun notify` (a preemption notice delivered by hand or by a
 * script).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "control.h"
#include "log.h"
#include "manifest.h"
#include "units.h"

int sr_cmd_commit(const struct sr_cmd *cmd, int argc, char **argv)
{
    const char *control = NULL;
    int64_t step = -1, timeout_ms = 0;
    const struct sr_opt opts[] = {{"step", 'n', "SPOTRUN_COMMIT_STEP", SR_OPT_STEP, &step, "N",
                                   "training step the checkpoint holds"},
                                  {"control", 0, "SPOTRUN_CONTROL", SR_OPT_STR, &control, "PATH",
                                   "control socket of the wrapper (set for the job)"},
                                  {"timeout", 't', "SPOTRUN_COMMIT_TIMEOUT", SR_OPT_DURATION,
                                   &timeout_ms, "DURATION",
                                   "give up waiting for staging after this long (default: wait)"},
                                  SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    const int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    if (ctx.ops[0]) {
        fprintf(stderr, "spotrun commit: unexpected argument \"%s\"\n", ctx.ops[0]);
        return SR_EX_USAGE;
    }
    if (!control || !*control) {
        fprintf(stderr,
                "spotrun commit: not running under `spotrun run` (SPOTRUN_CONTROL is not set)\n");
        return SR_EX_USAGE;
    }
    const char *nodes = getenv("SPOTRUN_NODES");
    if (step < 0 && nodes && strcmp(nodes, "1") != 0 && *nodes) {
        fprintf(stderr,
                "spotrun commit: a multi-node run (SPOTRUN_NODES=%s) needs --step N: the "
                "step is what makes the nodes' parts one checkpoint\n",
                nodes);
        return SR_EX_USAGE;
    }
    if (step > SR_SET_STEP_MAX && nodes && strcmp(nodes, "1") != 0 && *nodes) {
        fprintf(stderr,
                "spotrun commit: step %" PRId64 " is too large for a multi-node checkpoint "
                "(at most %" PRId64 ": its seq, step + 1, is named in 10 digits)\n",
                step, SR_SET_STEP_MAX);
        return SR_EX_USAGE;
    }
    char req[64], reply[512];
    if (step >= 0)
        snprintf(req, sizeof(req), "COMMIT %" PRId64, step);
    else
        snprintf(req, sizeof(req), "COMMIT -");
    const int rc =
        sr_ctl_call(control, req, reply, sizeof(reply), timeout_ms ? (int)timeout_ms : -1);
    if (rc < 0)
        return sr_fail(rc, "commit");
    if (strncmp(reply, "OK ", 3) != 0) {
        fprintf(stderr, "spotrun: commit failed: %s\n",
                strncmp(reply, "ERR ", 4) == 0 ? reply + 4 : reply);
        return SR_EX_IOERR;
    }
    char step_s[24];
    sr_format_step(step, step_s, sizeof(step_s));
    sr_debug("checkpoint %s staged (step %s)", reply + 3, step >= 0 ? step_s : "unknown");
    return 0;
}

/* NAME=VALUE: a metric name ([A-Za-z0-9_.:-]{1,64}) and a finite decimal. */
static int parse_metric_arg(const char *arg, char *name, size_t name_len, double *value)
{
    const char *eq = strchr(arg, '=');
    const size_t n = eq ? (size_t)(eq - arg) : 0;
    if (n == 0 || n >= name_len || n > 64)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)arg[i]) && !strchr("_.:-", arg[i]))
            return -EINVAL;
    memcpy(name, arg, n);
    name[n] = '\0';
    return sr_parse_real(eq + 1, value);
}

int sr_cmd_metric(const struct sr_cmd *cmd, int argc, char **argv)
{
    const char *control = NULL;
    int64_t step = -1;
    const struct sr_opt opts[] = {{"step", 'n', "SPOTRUN_METRIC_STEP", SR_OPT_STEP, &step, "N",
                                   "training step the values belong to"},
                                  {"control", 0, "SPOTRUN_CONTROL", SR_OPT_STR, &control, "PATH",
                                   "control socket of the wrapper (set for the job)"},
                                  SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    const int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    char **ops = ctx.ops;
    if (!ops[0]) {
        fprintf(stderr, "spotrun metric: nothing to record (NAME=VALUE, e.g. loss=0.31)\n");
        return SR_EX_USAGE;
    }
    char names[16][72];
    double values[16];
    int count = 0;
    for (int i = 0; ops[i]; i++, count++) {
        if (count == 16) {
            fprintf(stderr, "spotrun metric: at most 16 values at once\n");
            return SR_EX_USAGE;
        }
        if (parse_metric_arg(ops[i], names[count], sizeof(names[count]), &values[count]) < 0) {
            /* Echo a bounded prefix of what was given, never all of it. */
            const size_t len = strlen(ops[i]);
            char more[48] = "";
            if (len > 80)
                snprintf(more, sizeof(more), "... (%zu characters)", len);
            fprintf(stderr,
                    "spotrun metric: invalid \"%.80s\"%s (NAME=VALUE: a name of up to 64 "
                    "letters, digits and _.:- and a finite decimal number)\n",
                    ops[i], more);
            return SR_EX_USAGE;
        }
    }
    if (!control || !*control) {
        fprintf(stderr,
                "spotrun metric: not running under `spotrun run` (SPOTRUN_CONTROL is not set)\n");
        return SR_EX_USAGE;
    }
    char stepbuf[24];
    sr_format_step(step, stepbuf, sizeof(stepbuf));
    for (int i = 0; i < count; i++) {
        char req[256], reply[512];
        snprintf(req, sizeof(req), "METRIC %.23s %.64s %.17g", stepbuf, names[i], values[i]);
        const int rc = sr_ctl_call(control, req, reply, sizeof(reply), 10000);
        if (rc < 0)
            return sr_fail(rc, "metric");
        if (strcmp(reply, "OK") != 0) {
            fprintf(stderr, "spotrun: metric %s: the wrapper answered: %s\n", names[i], reply);
            return SR_EX_SOFTWARE;
        }
    }
    return 0;
}

/* 1 when a wrapper answers for the local run dir <root>/<name>; sock gets
 * its control socket. */
static int answers(const char *root, const char *name, char *sock, size_t len)
{
    char run_dir[PATH_MAX + 256], reply[512];
    snprintf(run_dir, sizeof(run_dir), "%s/%s", root, name);
    return sr_control_path(run_dir, sock, len) == 0 &&
           sr_ctl_call(sock, "STATUS", reply, sizeof(reply), 2000) == 0;
}

/* The one live wrapper under the work root, when --run-id is not given. */
static int find_single_wrapper(const char *root, char *out, size_t len)
{
    DIR *d = opendir(root);
    if (!d)
        return sr_errf(-ENOENT, "no spotrun wrapper is running here (nothing in %s)", root);
    int found = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!sr_manifest_run_id_valid(de->d_name))
            continue;
        char sock[PATH_MAX + 300];
        if (answers(root, de->d_name, sock, sizeof(sock)) && found++ == 0)
            snprintf(out, len, "%s", sock);
    }
    closedir(d);
    if (found == 1)
        return 0;
    if (found == 0)
        return sr_errf(-ENOENT, "no spotrun wrapper is running under %s", root);
    return sr_errf(-EINVAL, "%d wrappers are running under %s: pick one with --run-id", found,
                   root);
}

/* A node of multi-node run run_id on this machine (its local state is
 * <root>/<run>.n<rank>): the first that answers. One is enough: it tells
 * the other nodes through the store. */
static int node_wrapper(const char *root, const char *run_id, char *sock, size_t len)
{
    DIR *d = opendir(root);
    if (!d)
        return -ENOENT;
    const size_t n = strlen(run_id);
    int rc = -ENOENT;
    for (struct dirent *de; rc < 0 && (de = readdir(d));) {
        const char *rest = de->d_name + n;
        if (strncmp(de->d_name, run_id, n) != 0 || strncmp(rest, ".n", 2) != 0 || !rest[2] ||
            strspn(rest + 2, "0123456789") != strlen(rest + 2))
            continue;
        if (answers(root, de->d_name, sock, len))
            rc = 0;
    }
    closedir(d);
    return rc;
}

/* Length of the sweep name in a trial's run id "<sweep>-<K>", 0 when it is
 * not one. */
static size_t trial_prefix(const char *run_id)
{
    const char *dash = strrchr(run_id, '-');
    if (!dash || dash == run_id || !dash[1] || strspn(dash + 1, "0123456789") != strlen(dash + 1))
        return 0;
    return (size_t)(dash - run_id);
}

/* Run run_id is a sweep trial that does not run here (any more: its
 * worker has moved on, and a done trial removed its local state). The one
 * other trial of the same sweep whose wrapper answers here is what the
 * worker runs now, and a notice meant for the machine goes to it. */
static int sibling_trial(const char *root, const char *run_id, char *sock, size_t len, char *who,
                         size_t wlen)
{
    const size_t n = trial_prefix(run_id);
    DIR *d = n ? opendir(root) : NULL;
    if (!d)
        return -ENOENT;
    int found = 0;
    for (struct dirent *de; (de = readdir(d));) {
        char s[PATH_MAX + 300];
        if (strcmp(de->d_name, run_id) == 0 || trial_prefix(de->d_name) != n ||
            strncmp(de->d_name, run_id, n + 1) != 0 || !answers(root, de->d_name, s, sizeof(s)))
            continue;
        if (found++ == 0) {
            snprintf(sock, len, "%s", s);
            snprintf(who, wlen, "%s", de->d_name);
        }
    }
    closedir(d);
    return found == 1 ? 0 : -ENOENT;
}

/* The control socket of the wrapper to notify, waiting up to wait_ms for
 * one to answer (a wrapper started a moment ago is still restoring). */
static int find_wrapper(const char *control, const char *run_id, const char *root, int64_t wait_ms,
                        char *sock, size_t len)
{
    char run_dir[PATH_MAX + 256];
    if (run_id) {
        snprintf(run_dir, sizeof(run_dir), "%s/%s", root, run_id);
        const int rc = sr_control_path(run_dir, sock, len);
        if (rc < 0)
            return rc;
    } else if (control && *control) {
        snprintf(sock, len, "%s", control);
    }
    const int64_t until = sr_now_ms() + wait_ms;
    int said = 0;
    for (;;) {
        int rc = 0;
        char reply[512];
        if (!run_id && !(control && *control))
            rc = find_single_wrapper(root, sock, len);
        else
            rc = sr_ctl_call(sock, "STATUS", reply, sizeof(reply), 10000);
        if (rc < 0 && run_id && node_wrapper(root, run_id, sock, len) == 0)
            rc = 0;
        char who[NAME_MAX + 1];
        if (rc < 0 && run_id && sibling_trial(root, run_id, sock, len, who, sizeof(who)) == 0) {
            sr_info("run %s is not running here any more: its sweep worker runs %s now, which "
                    "gets the notice",
                    run_id, who);
            rc = 0;
        }
        if (rc == 0 || (rc != -ENOENT && rc != -ECONNREFUSED) || sr_now_ms() >= until) {
            if (rc == -ENOENT || rc == -ECONNREFUSED) {
                rc = -ECONNREFUSED; /* 69: nobody to serve the notice */
                if (run_id)
                    return sr_errf(rc,
                                   "no wrapper is running for run %s%s (nothing answers at %s); "
                                   "without --run-id, notify reaches the one wrapper running "
                                   "under the work dir",
                                   run_id, wait_ms ? " yet" : "", sock);
                if (control && *control)
                    return sr_errf(rc, "no wrapper answers at %s", sock);
                return sr_errf(rc, "no spotrun wrapper is running under %s", root);
            }
            return rc;
        }
        if (!said++) { /* never wait in silence: say for what, and how long at most */
            char dur[32];
            sr_format_duration_ms(wait_ms, dur, sizeof(dur));
            if (run_id)
                sr_info("no wrapper is running for run %s yet: waiting up to %s for one to answer "
                        "at %s (--wait)",
                        run_id, dur, sock);
            else if (control && *control)
                sr_info("no wrapper answers at %s yet: waiting up to %s for it (--wait)", sock,
                        dur);
            else
                sr_info("no spotrun wrapper is running under %s yet: waiting up to %s for one to "
                        "start (--wait)",
                        root, dur);
        }
        usleep(100 * 1000);
    }
}

#define NOTIFY_WAIT_MAX_MS (INT64_C(3600) * 1000)

int sr_cmd_notify(const struct sr_cmd *cmd, int argc, char **argv)
{
    const char *control = NULL, *run_id = NULL, *work_dir = NULL, *source = "manual";
    int64_t deadline_ms = 30000, wait_ms = 10000;
    const struct sr_opt opts[] = {
        {"deadline", 'd', "SPOTRUN_NOTIFY_DEADLINE", SR_OPT_DURATION, &deadline_ms, "DURATION",
         "time until the instance goes away (default 30s)"},
        {"run-id", 'r', "SPOTRUN_RUN_ID", SR_OPT_STR, &run_id, "ID", "the run to notify"},
        {"control", 0, "SPOTRUN_CONTROL", SR_OPT_STR, &control, "PATH", "control socket path"},
        {"work-dir", 0, "SPOTRUN_WORK_DIR", SR_OPT_STR, &work_dir, "DIR",
         "local state of the wrappers (default: ~/.cache/spotrun)"},
        {"source", 0, "SPOTRUN_NOTIFY_SOURCE", SR_OPT_STR, &source, "NAME",
         "name of the notice's source, for the log (default manual)"},
        {"wait", 'w', "SPOTRUN_NOTIFY_WAIT", SR_OPT_DURATION, &wait_ms, "DURATION",
         "wait this long for the wrapper to come up (default 10s, at most 1h; 0 = not at all)"},
        SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int rc = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (rc >= 0)
        return rc;
    if (ctx.ops[0]) {
        fprintf(stderr, "spotrun notify: unexpected argument \"%s\"\n", ctx.ops[0]);
        return SR_EX_USAGE;
    }
    if (wait_ms > NOTIFY_WAIT_MAX_MS) {
        fprintf(stderr,
                "spotrun notify: --wait must be at most 1h (a wrapper comes up in seconds; for a "
                "run not started yet, notify it once it runs)\n");
        return SR_EX_USAGE;
    }
    if (!sr_ctl_source_valid(source)) {
        fprintf(stderr,
                "spotrun notify: --source must be 1 to 31 letters, digits and _.:- (it names the "
                "notice in the logs and for the other nodes)\n");
        return SR_EX_USAGE;
    }
    char sock[PATH_MAX + 300], root[PATH_MAX];
    rc = sr_work_root(work_dir, root, sizeof(root));
    if (rc < 0 && !control)
        return sr_fail(rc, "notify");
    rc = find_wrapper(control, run_id, root, wait_ms, sock, sizeof(sock));
    if (rc < 0)
        return sr_fail(rc, "notify");
    char req[128], reply[512];
    snprintf(req, sizeof(req), "NOTIFY %" PRId64 " %.31s", deadline_ms, source);
    rc = sr_ctl_call(sock, req, reply, sizeof(reply), 10000);
    if (rc < 0)
        return sr_fail(rc, "notify");
    if (strcmp(reply, "OK") != 0) {
        fprintf(stderr, "spotrun: notify: the wrapper answered: %s\n", reply);
        return SR_EX_SOFTWARE;
    }
    sr_info("notice delivered to %s", sock);
    return 0;
}
