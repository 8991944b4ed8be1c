/*
 * cmd_sweep_steer.c - `spotrun sweep cancel|retry|pause|resume|priority`
 * (docs/sweeps.md, "Steering"), and what a `sweep work` worker reads of
 * them before each claim.
 *
 * Each command records one action in the sweep's steering history
 * (sweep_steer.h: create-only, numbered, with who and when); the state is
 * the fold of that history. The commands only write the store: the
 * workers honour the state before each claim, and each trial's wrapper at
 * its start and within seconds while it runs (one cheap look every 3 s:
 * run_limits.c), so nothing here signals a process. Two writes besides the history: `cancel` marks
 * a trial that no wrapper holds end/K.cancelled at once (a wrapper that takes it later refuses it:
 * the action is written first), and `retry` removes the trial's failed, cancelled or pruned mark
 * (only that) after its action is written.
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
#include "cli.h"
#include "lease.h"
#include "log.h"
#include "sweep.h"
#include "sweep_steer.h"
#include "units.h"

/* What a steering command reads before it writes. */
struct steer_ctx {
    const char *cmd; /* "sweep cancel", for messages */
    struct sr_cmd_ctx c;
    struct sr_sweep sw;
    struct sr_steer_state state;
    unsigned char *ended; /* per trial: SR_TRIAL_* from the end marks' listing */
    long *trials;         /* the TRIAL operands */
    size_t n_trials;
};

static void steer_close(struct steer_ctx *x)
{
    sr_steer_free(&x->state);
    free(x->ended);
    free(x->trials);
    sr_sweep_free(&x->sw);
    sr_store_close(x->c.st);
}

/* "3" or "3..5": appended to x->trials. 0, or -EINVAL after a message. */
static int parse_trial(struct steer_ctx *x, const char *op)
{
    const size_t n = sr_sweep_count(&x->sw);
    const char *dots = strstr(op, "..");
    char lo_s[32] = "", hi_s[32] = "";
    snprintf(lo_s, sizeof(lo_s), "%.*s", dots ? (int)(dots - op) : (int)strlen(op), op);
    snprintf(hi_s, sizeof(hi_s), "%s", dots ? dots + 2 : lo_s);
    int64_t lo, hi;
    if (sr_parse_int(lo_s, 0, SR_SWEEP_TRIALS_MAX - 1, &lo) < 0 ||
        sr_parse_int(hi_s, 0, SR_SWEEP_TRIALS_MAX - 1, &hi) < 0 || hi < lo) {
        fprintf(stderr, "spotrun %s: invalid trial \"%s\" (a trial number K, or a range A..B)\n",
                x->cmd, op);
        return -EINVAL;
    }
    if ((size_t)hi >= n) {
        fprintf(stderr, "spotrun %s: sweep %s has %zu trial%s (0..%zu): no trial %" PRId64 "\n",
                x->cmd, x->sw.name, n, n == 1 ? "" : "s", n ? n - 1 : 0, hi);
        return -EINVAL;
    }
    long *t = realloc(x->trials, (x->n_trials + (size_t)(hi - lo) + 1) * sizeof(long));
    if (!t)
        return -ENOMEM;
    x->trials = t;
    for (int64_t k = lo; k <= hi; k++)
        x->trials[x->n_trials++] = (long)k;
    return 0;
}

/* The preamble: options, the sweep, its steering and end marks, the TRIAL
 * operands (from ops[1], when with_trials). -1 to go on, else the exit
 * code (said). */
static int steer_open(struct steer_ctx *x, const struct sr_cmd *cmd, const struct sr_opt *opts,
                      int argc, char **argv, int with_trials)
{
    memset(x, 0, sizeof(*x));
    x->cmd = cmd->name;
    int code = sr_cmd_start(cmd, opts, argc, argv, &x->c);
    if (code >= 0)
        return code;
    int rc = sr_sweep_read(x->c.st, x->c.ops[0], &x->sw);
    if (rc < 0) {
        fprintf(stderr, "spotrun %s: %s\n", x->cmd, sr_strerror(rc));
        code = rc == -EINVAL ? SR_EX_USAGE : sr_exit_code(rc);
        sr_store_close(x->c.st);
        memset(x, 0, sizeof(*x));
        return code;
    }
    const size_t n = sr_sweep_count(&x->sw);
    if (with_trials && !x->c.ops[1]) {
        fprintf(stderr, "spotrun %s: which trials? Give their numbers: %s %s TRIAL...\n", x->cmd,
                x->cmd, x->sw.name);
        steer_close(x);
        return SR_EX_USAGE;
    }
    for (char **op = x->c.ops + 1; with_trials && *op; op++)
        if ((rc = parse_trial(x, *op)) < 0) {
            steer_close(x);
            return rc == -EINVAL ? SR_EX_USAGE : sr_exit_code(rc);
        }
    x->ended = malloc(n ? n : 1);
    rc = x->ended ? sr_sweep_list_ends(x->c.st, x->sw.name, n, x->ended) : -ENOMEM;
    if (rc == 0)
        rc = sr_steer_read(x->c.st, x->sw.name, n, &x->state);
    if (rc < 0) {
        code = sr_fail(rc, "cannot read the sweep's steering and end marks");
        steer_close(x);
        return code;
    }
    return -1;
}

/* Records e; 0 or the exit code (said). */
static int record(struct steer_ctx *x, struct sr_steer_entry *e)
{
    unsigned seq = 0;
    const int rc = sr_steer_write(x->c.st, x->sw.name, e, &seq);
    if (rc < 0)
        return sr_fail(rc, "cannot record the steering action");
    sr_debug("sweep %s: steering action %u recorded", x->sw.name, seq);
    return 0;
}

/* The lease holder of trial k now, when a wrapper holds it: 1 and *in. */
static int running_now(struct steer_ctx *x, long k, struct sr_lease_info *in)
{
    char run[SR_SWEEP_NAME_MAX + 16];
    sr_sweep_run_id(x->sw.name, (size_t)k, run, sizeof(run));
    const int held =
        sr_lease_read_owner(x->c.st, run, in) == 0 && !sr_lease_takeable(in, sr_wall_ms() / 1000);
    return held;
}

/* ---- cancel ------------------------------------------------------------------ */

/* Trials not to cancel: ended otherwise (65, nothing written), or
 * cancelled already (left out). The rest stay in x->trials. */
static int cancel_filter(struct steer_ctx *x)
{
    size_t keep = 0;
    for (size_t i = 0; i < x->n_trials; i++) {
        const long k = x->trials[i];
        const unsigned char e = x->ended[k];
        if (e == SR_TRIAL_CANCELLED || sr_steer_cancelled(&x->state, (size_t)k)) {
            printf("sweep %s: trial %ld is cancelled already\n", x->sw.name, k);
        } else if (e != SR_TRIAL_OPEN) {
            fprintf(stderr,
                    "spotrun sweep cancel: trial %ld of sweep %s has ended (%s): nothing to "
                    "cancel; nothing recorded\n",
                    k, x->sw.name, sr_trial_end_name((enum sr_trial_end)e));
            return SR_EX_DATAERR;
        } else {
            x->trials[keep++] = k;
        }
    }
    x->n_trials = keep;
    return 0;
}

/* Trial k, cancelled: its end mark now when no wrapper holds it (one that
 * takes it later refuses it), else its wrapper stops it at its next look
 * at the steering (within seconds). */
static void cancel_one(struct steer_ctx *x, long k, const struct sr_steer_entry *e)
{
    struct sr_lease_info in;
    if (running_now(x, k, &in)) {
        printf("sweep %s: trial %ld cancelled: it runs on %s (pid %ld) and checkpoints and "
               "stops within seconds\n",
               x->sw.name, k, in.host, in.pid);
        return;
    }
    struct sr_trial_end_info end = {
        .state = SR_TRIAL_CANCELLED, .exit_code = SR_EX_LIMIT, .unix_ms = e->unix_ms};
    snprintf(end.cause, sizeof(end.cause), "cancelled");
    snprintf(end.by, sizeof(end.by), "%s", e->by);
    gethostname(end.host, sizeof(end.host) - 1);
    const int rc = sr_sweep_mark_end(x->c.st, x->sw.name, (size_t)k, &end);
    if (rc < 0) /* the action stands: workers and wrappers still honour it */
        sr_warn("sweep %s: cannot mark trial %ld cancelled: %s (it is cancelled all the same)",
                x->sw.name, k, sr_strerror(rc));
    printf("sweep %s: trial %ld cancelled: it is not running, and no worker takes it\n", x->sw.name,
           k);
}

int sr_cmd_sweep_cancel(const struct sr_cmd *cmd, int argc, char **argv)
{
    const struct sr_opt opts[] = {SR_OPTS_COMMON};
    struct steer_ctx x;
    int code = steer_open(&x, cmd, opts, argc, argv, 1);
    if (code >= 0)
        return code;
    code = cancel_filter(&x);
    if (code == 0 && x.n_trials) {
        struct sr_steer_entry e = {
            .action = SR_STEER_CANCEL, .trials = x.trials, .n_trials = x.n_trials};
        code = record(&x, &e);
        for (size_t i = 0; code == 0 && i < x.n_trials; i++)
            cancel_one(&x, x.trials[i], &e);
    }
    steer_close(&x);
    return code;
}

/* ---- retry ------------------------------------------------------------------- */

/* Whether trial k may go back to the queue: failed, cancelled or pruned,
 * and no wrapper holds it. 0, or the exit code (said). */
static int retry_check(struct steer_ctx *x, long k)
{
    const unsigned char e = x->ended[k];
    struct sr_lease_info in;
    if (e == SR_TRIAL_DONE) {
        fprintf(stderr,
                "spotrun sweep retry: trial %ld of sweep %s is done: nothing to retry "
                "(`spotrun run --sweep %s --trial %ld --fresh` runs it again from scratch); "
                "nothing recorded\n",
                k, x->sw.name, x->sw.name, k);
        return SR_EX_DATAERR;
    }
    if (running_now(x, k, &in)) {
        fprintf(stderr,
                "spotrun sweep retry: trial %ld of sweep %s is running on %s (pid %ld): retry it "
                "once it has stopped; nothing recorded\n",
                k, x->sw.name, in.host, in.pid);
        return SR_EX_CANTCREAT;
    }
    if (e == SR_TRIAL_OPEN && !sr_steer_cancelled(&x->state, (size_t)k)) {
        fprintf(stderr,
                "spotrun sweep retry: trial %ld of sweep %s has not ended (not failed, "
                "cancelled or pruned): it is in the queue already; nothing recorded\n",
                k, x->sw.name);
        return SR_EX_DATAERR;
    }
    return 0;
}

/* Where trial k starts again, in words: from its newest checkpoint, or
 * from scratch when it has none (one cancelled before it ever ran). */
static const char *retry_from(struct steer_ctx *x, long k)
{
    char run[SR_SWEEP_NAME_MAX + 16];
    sr_sweep_run_id(x->sw.name, (size_t)k, run, sizeof(run));
    struct sr_ckpt_list l = {0};
    const int rc = sr_ckpt_list(x->c.st, run, &l);
    const size_t n = rc == 0 ? l.n : 0;
    if (rc == 0)
        sr_ckpt_list_free(&l);
    if (rc < 0 && rc != -ENOENT)
        return "it resumes from its newest checkpoint, if it has one";
    return n ? "it resumes from its newest checkpoint" : "it starts from scratch (no checkpoint)";
}

int sr_cmd_sweep_retry(const struct sr_cmd *cmd, int argc, char **argv)
{
    const struct sr_opt opts[] = {SR_OPTS_COMMON};
    struct steer_ctx x;
    int code = steer_open(&x, cmd, opts, argc, argv, 1);
    if (code >= 0)
        return code;
    for (size_t i = 0; code < 0 && i < x.n_trials; i++)
        if ((code = retry_check(&x, x.trials[i])) == 0)
            code = -1;
    if (code < 0) {
        struct sr_steer_entry e = {
            .action = SR_STEER_RETRY, .trials = x.trials, .n_trials = x.n_trials};
        code = record(&x, &e);
    }
    /* after the action: a worker that lists the marks between the two sees
     * the trial cancelled still, never open and cancelled at once */
    for (size_t i = 0; code == 0 && i < x.n_trials; i++) {
        const long k = x.trials[i];
        const unsigned char was = x.ended[k];
        int rc = 0;
        for (unsigned s = SR_TRIAL_FAILED; rc == 0 && s <= SR_TRIAL_PRUNED; s++)
            rc = sr_sweep_clear_mark(x.c.st, x.sw.name, (size_t)k, (enum sr_trial_end)s);
        if (rc < 0)
            code = sr_fail(rc, "cannot remove the trial's end mark (run sweep retry again)");
        else
            printf("sweep %s: trial %ld (%s) is back in the queue; %s\n", x.sw.name, k,
                   was != SR_TRIAL_OPEN ? sr_trial_end_name(was) : "cancelled", retry_from(&x, k));
    }
    steer_close(&x);
    return code;
}

/* ---- pause, resume ------------------------------------------------------------- */

int sr_cmd_sweep_pause(const struct sr_cmd *cmd, int argc, char **argv)
{
    int stop = 0;
    const struct sr_opt opts[] = {
        {"stop", 0, NULL, SR_OPT_FLAG, &stop, NULL,
         "running trials checkpoint and stop too (exit 124); they are taken again after "
         "`sweep resume`"},
        SR_OPTS_COMMON};
    struct steer_ctx x;
    int code = steer_open(&x, cmd, opts, argc, argv, 0);
    if (code >= 0)
        return code;
    if (x.state.paused && x.state.pause_stop >= stop) {
        printf("sweep %s is paused already%s\n", x.sw.name, x.state.pause_stop ? " (--stop)" : "");
        steer_close(&x);
        return 0;
    }
    struct sr_steer_entry e = {.action = SR_STEER_PAUSE, .stop = stop};
    code = record(&x, &e);
    if (code == 0)
        printf("sweep %s paused: workers start no trial%s; `spotrun sweep resume %s` goes on\n",
               x.sw.name,
               stop ? ", and running trials checkpoint and stop within seconds (exit 124)"
                    : "; running trials go on",
               x.sw.name);
    steer_close(&x);
    return code;
}

int sr_cmd_sweep_resume(const struct sr_cmd *cmd, int argc, char **argv)
{
    const struct sr_opt opts[] = {SR_OPTS_COMMON};
    struct steer_ctx x;
    int code = steer_open(&x, cmd, opts, argc, argv, 0);
    if (code >= 0)
        return code;
    if (!x.state.paused) {
        printf("sweep %s is not paused\n", x.sw.name);
        steer_close(&x);
        return 0;
    }
    struct sr_steer_entry e = {.action = SR_STEER_RESUME};
    code = record(&x, &e);
    if (code == 0)
        printf("sweep %s resumed: workers take trials again at their next look\n", x.sw.name);
    steer_close(&x);
    return code;
}

/* ---- priority ------------------------------------------------------------------ */

int sr_cmd_sweep_priority(const struct sr_cmd *cmd, int argc, char **argv)
{
    const char *set = NULL;
    const struct sr_opt opts[] = {
        {"set", 0, NULL, SR_OPT_STR, &set, "P",
         "the trials' priority: an integer, higher is claimed first (default 0)"},
        SR_OPTS_COMMON};
    struct steer_ctx x;
    int code = steer_open(&x, cmd, opts, argc, argv, 1);
    if (code >= 0)
        return code;
    int64_t p = 0;
    if (!set || sr_parse_int(set, -SR_STEER_PRIORITY_MAX, SR_STEER_PRIORITY_MAX, &p) < 0) {
        fprintf(stderr,
                "spotrun sweep priority: give --set P, an integer from %ld to %ld (higher is "
                "claimed first; 0 is every trial's default)\n",
                -SR_STEER_PRIORITY_MAX, SR_STEER_PRIORITY_MAX);
        steer_close(&x);
        return SR_EX_USAGE;
    }
    struct sr_steer_entry e = {.action = SR_STEER_PRIORITY,
                               .trials = x.trials,
                               .n_trials = x.n_trials,
                               .priority = (long)p};
    code = record(&x, &e);
    if (code == 0)
        printf("sweep %s: priority %ld for %zu trial%s; workers claim higher priorities first\n",
               x.sw.name, (long)p, x.n_trials, x.n_trials == 1 ? "" : "s");
    steer_close(&x);
    return code;
}

/* ---- what a worker reads ----------------------------------------------------------- */

int sr_work_steer(struct sr_store *st, const char *name, size_t n, struct sr_steer_state *state,
                  int *said)
{
    /* read before, for as many trials, and no new action since (one HEAD):
     * the state stands, no listing */
    const int same = state->owns_log && state->n == n && sr_steer_grew(st, name, state) == 0;
    if (!same) {
        struct sr_steer_state fresh;
        const int rc = sr_steer_reread(st, name, n, state, &fresh); /* only what is new */
        if (rc < 0) { /* claim nothing on steering we cannot read: a cancel may be in it */
            sr_warn("sweep %s: cannot read its steering: %s; not starting trials until it reads",
                    name, sr_strerror(rc));
            return 1;
        }
        sr_steer_free(state);
        *state = fresh;
    }
    const struct sr_steer_state *now = state;
    if (!now->paused) {
        if (*said)
            sr_info("sweep %s: resumed; taking trials again", name);
        *said = 0;
        return 0;
    }
    const struct sr_steer_entry *p = now->paused_by;
    if (*said != (int)p->seq + 1) {
        char when[32] = "?";
        const time_t t = (time_t)(p->unix_ms / 1000);
        struct tm tm;
        if (gmtime_r(&t, &tm))
            strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        sr_info("sweep %s: paused by %s at %s%s; not starting trials until `spotrun sweep "
                "resume %s`",
                name, p->by, when, now->pause_stop ? " (--stop: running trials stop)" : "", name);
        *said = (int)p->seq + 1;
    }
    return 1;
}
