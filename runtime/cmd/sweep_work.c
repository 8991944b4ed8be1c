/*
 * sweep_work.c - `spotrun sweep work NAME`, the plain fleet's worker
 * (docs/sweeps.md): a second supervisor beside `spotrun run`'s. It runs
 * trials one after another (or --slots at once) as child `spotrun run
 * --sweep NAME --trial K` wrappers, so each trial gets everything a run
 * gets (resume, notices, restarts, the lease); the run's lease is the
 * claim, its end mark the result. No new coordination service: the worker
 * only reads the end marks' listing and the trials' leases.
 *
 * One thread: signals (SIGCHLD, TERM, INT, HUP) are blocked and taken in
 * one sigtimedwait loop (work_loop) that reaps trials, fills free slots and
 * writes the worker's keep-alive (sweep_life.h). A drain sends each running
 * trial's wrapper one TERM (its notice) and waits for them all.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "child.h"
#include "cli.h"
#include "history.h"
#include "lease.h"
#include "log.h"
#include "nvml.h"
#include "prices.h"
#include "sweep.h"
#include "sweep_budget.h"
#include "sweep_claim.h"
#include "sweep_driver.h"
#include "sweep_life.h"
#include "sweep_steer.h"
#include "units.h"

struct work_opts {
    uint64_t slots, max_trials;
    int until_empty;
    int64_t poll_ms;
    const char *driver; /* --driver CMD: may add trials when none is free */
};

struct slot {
    pid_t pid; /* 0 = free */
    long trial;
    struct sr_lease *claim; /* the trial's lease, claimed for its wrapper (lease.h) */
};

struct worker {
    const struct work_opts *o;
    const char *name;
    struct sr_store *st;
    struct sr_sweep sw;
    unsigned char *ended;   /* per trial: SR_TRIAL_* from the last listing */
    int64_t *busy_until;    /* per trial: another worker had it (ms, sr_now_ms); NEVER: skipped */
    unsigned char *started; /* per trial: it ran before (sweep_claim.h), once read_started */
    int read_started;       /* started[] is from this look at the store (refresh clears it) */
    size_t n_alloc;
    struct slot *slots;
    char **run_args; /* passed to every `spotrun run` */
    char self[PATH_MAX];
    char **gpus; /* CUDA_VISIBLE_DEVICES per slot, NULL = leave it */
    sigset_t orig_mask;
    int draining, drained, stop_code, errors; /* drained: the running trials were sent TERM */
    uint64_t ran;
    size_t foreign;            /* trials skipped for good: their run is another's */
    unsigned seed;             /* of the choice among candidates */
    struct sr_lease *claimed;  /* claimable()'s claim of the trial it chose, NULL = none */
    int64_t defined_at;        /* when the definition was last read (sr_now_ms) */
    size_t limited;            /* trials that stopped at a time limit or budget (exit 124) */
    int over_budget;           /* the sweep's budget is spent: no more claims */
    struct sr_sweep_life life; /* this worker's own record (sweep_life.h) */
    int64_t driven_at;         /* when --driver last ran (sr_now_ms) */
    int driver_errors;         /* its failures in a row */
    /* the operator's steering (sweep_steer.h), read before each claim */
    struct sr_steer_state steer;
    int paused_said; /* "paused" said for the pause in force */
};

static size_t running(const struct worker *w)
{
    size_t n = 0;
    for (uint64_t i = 0; i < w->o->slots; i++)
        n += w->slots[i].pid != 0;
    return n;
}

static int trial_running_here(const struct worker *w, long k)
{
    for (uint64_t i = 0; i < w->o->slots; i++)
        if (w->slots[i].pid && w->slots[i].trial == k)
            return 1;
    return 0;
}

/* The end marks' listing; with definition, the definition first (--add
 * may have appended trials). */
static int refresh(struct worker *w, int definition)
{
    if (definition || !w->sw.trials) {
        struct sr_sweep sw;
        const int rc = sr_sweep_read(w->st, w->name, &sw);
        if (rc < 0)
            return rc;
        sr_sweep_free(&w->sw);
        w->sw = sw;
    }
    const size_t n = sr_sweep_count(&w->sw);
    w->read_started = 0;
    if (n > w->n_alloc) {
        unsigned char *e = realloc(w->ended, n);
        unsigned char *r = e ? realloc(w->started, n) : NULL;
        int64_t *b = r ? realloc(w->busy_until, n * sizeof(*b)) : NULL;
        if (e)
            w->ended = e;
        if (r)
            w->started = r;
        if (!b)
            return -ENOMEM;
        w->busy_until = b;
        memset(b + w->n_alloc, 0, (n - w->n_alloc) * sizeof(*b));
        w->n_alloc = n;
    }
    return sr_sweep_list_ends(w->st, w->name, n, w->ended);
}

/* busy_until of a trial this worker never takes again: its run is not the
 * trial's (another sweep's, one made by hand), which no retry changes. */
#define NEVER INT64_MAX

/* Every trial ended, or is one this worker skips for good. */
static int all_ended(const struct worker *w)
{
    for (size_t k = 0; k < sr_sweep_count(&w->sw); k++)
        if (w->ended[k] == SR_TRIAL_OPEN && w->busy_until[k] != NEVER &&
            !sr_steer_cancelled(&w->steer, k))
            return 0;
    return 1;
}

static int skip_foreign(struct worker *w, long k);

/* A claim whose wrapper did not take it over (it never started, or ended
 * before its acquisition): released at once, so that no one waits for it
 * to expire; a claim taken over is left alone (lease.h). */
static void unclaim(struct sr_lease **claim)
{
    if (!*claim)
        return;
    sr_lease_release(*claim);
    sr_err_clear();
    sr_lease_free(*claim);
    *claim = NULL;
}

/* A trial that is neither ended nor owned, -1 when none: one of the first
 * CANDIDATES of the trials claimed first (sweep_claim.h: the highest
 * priority, then one that ran before over a fresh one) at random, so that
 * workers starting together (a fleet scaling up) do not all race for
 * trial 0. The chosen trial's lease is claimed here (w->claimed,
 * sr_lease_claim), and its wrapper takes the claim over: two workers that
 * choose the same trial race for one conditional write, and the loser
 * chooses again, instead of starting a wrapper that loses the lease and
 * exits 73. Which trials ran before: once per look at the store, and
 * only when there is a choice. */
#define CANDIDATES 4
#define CLAIM_TTL_S 60 /* a wrapper takes its claim over within seconds */
static int free_now(const struct worker *w, size_t k, int64_t now)
{
    return w->ended[k] == SR_TRIAL_OPEN && !sr_steer_cancelled(&w->steer, k) &&
           !trial_running_here(w, (long)k) && w->busy_until[k] <= now;
}

/* started[]: read when more than one trial is free and it is not read
 * since the last refresh; unreadable, the order goes without it. */
static void read_started(struct worker *w, size_t n_free)
{
    if (w->read_started || n_free < 2)
        return;
    const size_t n = sr_sweep_count(&w->sw);
    const int rc = sr_claim_list_started(w->st, w->name, n, w->started);
    if (rc < 0) {
        sr_debug("sweep %s: cannot list which trials ran before (%s): claiming by priority only",
                 w->name, sr_strerror(rc));
        memset(w->started, 0, n);
    }
    sr_err_clear();
    w->read_started = 1;
}

/* Whether trial k's run is done (1: then it is left for a --poll, or for
 * good when the run is not the trial's at all). */
static int done_elsewhere(struct worker *w, long k, const char *run, int64_t now)
{
    const int done = sr_ckpt_is_done(w->st, run) == 1;
    sr_err_clear();
    if (done)
        w->busy_until[k] = skip_foreign(w, k) ? NEVER : now + w->o->poll_ms;
    return done;
}

static long claimable(struct worker *w)
{
    const int64_t now = sr_now_ms();
    const size_t n = sr_sweep_count(&w->sw);
    struct sr_claim_trial *t = calloc(n ? n : 1, sizeof(*t));
    if (!t)
        return -1;
    long k = -1;
    for (;;) {
        size_t n_free = 0;
        for (size_t i = 0; i < n; i++)
            n_free += (t[i].free = free_now(w, i, now));
        read_started(w, n_free);
        for (size_t i = 0; i < n; i++)
            t[i] = (struct sr_claim_trial){.free = t[i].free,
                                           .priority = sr_steer_priority(&w->steer, i),
                                           .started = w->read_started && w->started[i]};
        long open[CANDIDATES];
        const size_t got = sr_claim_order(t, n, open, CANDIDATES);
        if (got == 0)
            break;
        k = open[rand_r(&w->seed) % got];
        char run[SR_SWEEP_NAME_MAX + 16];
        sr_sweep_run_id(w->name, (size_t)k, run, sizeof(run));
        /* A trial that ran before (its summary is listed) may have just
         * been finished by another worker's wrapper, whose worker has not
         * written the end mark yet: one HEAD of DONE spares a claim and a
         * wrapper that would find it done. */
        if (t[k].started && done_elsewhere(w, k, run, now)) {
            k = -1;
            continue;
        }
        struct sr_lease_info info;
        const int rc = sr_lease_claim(w->st, run, CLAIM_TTL_S, &w->claimed, &info);
        if (rc == -EBUSY) {
            w->busy_until[k] = now + w->o->poll_ms;
            k = -1;
            sr_err_clear();
            continue;
        }
        if (rc < 0) /* unclaimed: its wrapper's own acquisition decides */
            sr_debug("sweep %s: cannot claim trial %ld (%s)", w->name, k, sr_strerror(rc));
        sr_err_clear();
        /* not known to have run, yet its run had an owner (epoch > 1) */
        if (rc == 0 && !t[k].started && sr_lease_epoch(w->claimed) > 1 &&
            done_elsewhere(w, k, run, now)) {
            unclaim(&w->claimed);
            k = -1;
            continue;
        }
        break;
    }
    free(t);
    return k;
}

static void describe(const struct worker *w, long k, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sr_sweep_nparams(&w->sw) && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s=%s", i ? " " : "", sr_sweep_param(&w->sw, i),
                              sr_sweep_value(&w->sw, (size_t)k, sr_sweep_param(&w->sw, i)));
}

static int spawn_trial(struct worker *w, uint64_t slot, long k)
{
    char trial[24];
    snprintf(trial, sizeof(trial), "%ld", k);
    size_t n = 0;
    while (w->run_args[n])
        n++;
    char **argv = calloc(n + 10, sizeof(char *));
    if (!argv)
        return -ENOMEM;
    size_t a = 0;
    argv[a++] = w->self;
    argv[a++] = "run";
    argv[a++] = "--sweep";
    argv[a++] = (char *)w->name;
    argv[a++] = "--trial";
    argv[a++] = trial;
    argv[a++] = "--lease-wait";
    argv[a++] = "0";
    for (size_t i = 0; i < n; i++)
        argv[a++] = w->run_args[i];
    argv[a] = NULL;
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &w->orig_mask);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    char gpu[256], from[192];
    /* each slot its GPU (child.h's environment builder replaces the
     * variable); the wrapper takes this worker's claim over */
    char *add[3] = {NULL, NULL, NULL};
    size_t n_add = 0;
    if (w->gpus) {
        snprintf(gpu, sizeof(gpu), "CUDA_VISIBLE_DEVICES=%s", w->gpus[slot]);
        add[n_add++] = gpu;
    }
    if (w->claimed) {
        snprintf(from, sizeof(from), "SPOTRUN_LEASE_FROM=%s", sr_lease_owner(w->claimed));
        add[n_add++] = from;
    }
    extern char **environ;
    char **built = n_add ? sr_env_build(add, NULL) : NULL;
    if (n_add && !built) {
        free(argv);
        posix_spawnattr_destroy(&attr);
        return -ENOMEM;
    }
    char **env = built ? built : environ;
    pid_t pid;
    const int rc = posix_spawn(&pid, w->self, NULL, &attr, argv, env);
    posix_spawnattr_destroy(&attr);
    sr_env_free(built);
    free(argv);
    if (rc != 0)
        return sr_errf(-rc, "cannot start %s: %s", w->self, strerror(rc));
    w->slots[slot].pid = pid;
    w->slots[slot].trial = k;
    w->slots[slot].claim = w->claimed;
    w->claimed = NULL;
    sr_sweep_life_trial(&w->life, k);
    char what[512];
    describe(w, k, what, sizeof(what));
    const int pinned = w->gpus && w->gpus[slot][0]; /* "": no GPU visible, none named */
    sr_info("sweep %s: trial %ld (%s)%s%s", w->name, k, what, pinned ? " on GPU " : "",
            pinned ? w->gpus[slot] : "");
    sr_debug("sweep %s: trial %ld: wrapper pid %d started", w->name, k, (int)pid);
    return 0;
}

/* Stops taking trials and asks the running ones to checkpoint and stop:
 * each child wrapper takes TERM from its parent as a notice. Once only: a
 * wrapper takes a second TERM as a second notice and stops waiting for its
 * checkpoint, so a trial that comes back 75 after the drain began, or a
 * second signal to the worker, must not send another. */
static void drain(struct worker *w, const char *why)
{
    if (w->drained)
        return;
    sr_info("sweep %s: %s: checkpointing the running trials and stopping", w->name, why);
    w->drained = w->draining = 1;
    w->stop_code = SR_EX_TEMPFAIL;
    for (uint64_t i = 0; i < w->o->slots; i++)
        if (w->slots[i].pid)
            kill(w->slots[i].pid, SIGTERM);
}

/* Whether trial k's wrapper stopped for a notice: its run's last attempt
 * ended preempted, as the wrapper recorded it (a job's own exit 75 is a
 * failure there). When the log cannot tell, it did: draining is the safe
 * side. */
static int trial_preempted(const struct worker *w, long k)
{
    char run[SR_SWEEP_NAME_MAX + 16];
    sr_sweep_run_id(w->name, (size_t)k, run, sizeof(run));
    struct sr_history h;
    sr_hist_init(&h);
    const int rc = sr_hist_load(w->st, run, &h);
    const int preempted = rc < 0 || h.n_att == 0 || h.att[h.n_att - 1].end == SR_END_PREEMPTED ||
                          h.att[h.n_att - 1].end == SR_END_OPEN;
    sr_hist_free(&h);
    sr_err_clear();
    return preempted;
}

/* Whether trial k's wrapper stopped at the sweep's pause (--stop): its
 * run's last attempt ended "paused" (sweep_steer.h). */
static int trial_paused(const struct worker *w, long k)
{
    char run[SR_SWEEP_NAME_MAX + 16];
    sr_sweep_run_id(w->name, (size_t)k, run, sizeof(run));
    struct sr_history h;
    sr_hist_init(&h);
    const int paused =
        sr_hist_load(w->st, run, &h) == 0 && h.n_att && h.att[h.n_att - 1].cause == SR_CAUSE_PAUSED;
    sr_hist_free(&h);
    sr_err_clear();
    return paused;
}

/* Whether trial k's wrapper refused its run as another's (sweep.h: it
 * records another sweep or trial, or holds a run's objects but records no
 * sweep): then this worker skips the trial from now on, and says so once.
 * A run that another wrapper merely holds is not: it is tried again. */
static int skip_foreign(struct worker *w, long k)
{
    char run[SR_SWEEP_NAME_MAX + 16];
    sr_sweep_run_id(w->name, (size_t)k, run, sizeof(run));
    const int rc = sr_sweep_run_owner(w->st, &w->sw, (size_t)k, run);
    if (rc == -EEXIST) {
        sr_warn("sweep %s: skipping trial %ld from now on: %s", w->name, k, sr_strerror(rc));
        w->foreign++;
    }
    sr_err_clear();
    return rc == -EEXIST;
}

/* Trial k's wrapper exited code (not 0): 1 when the trial's end mark says
 * it ended (then it is counted and left alone), 0 when it has none. A job
 * that kept failing with 64, 73 or 75 (its own codes, which its wrapper
 * passes on) is the trial's failure, never the worker's: only without a
 * mark is the code spotrun's. The mark's name says it ended even when its
 * content is not believed. */
static int child_marked(struct worker *w, long k, int code)
{
    struct sr_trial_end_info end;
    const int mark = sr_sweep_read_end(w->st, w->name, (size_t)k, &end);
    if ((mark != 0 && mark != -EBADMSG) || end.state == SR_TRIAL_OPEN) {
        sr_err_clear();
        return 0;
    }
    w->ran++;
    w->errors = 0;
    if ((size_t)k < w->n_alloc)
        w->ended[k] = (unsigned char)end.state;
    if (end.state == SR_TRIAL_FAILED)
        sr_warn("sweep %s: trial %ld failed (%s); left alone", w->name, k,
                end.cause[0] ? end.cause : "its mark says so");
    if (end.state == SR_TRIAL_PRUNED)
        sr_info("sweep %s: trial %ld was pruned by early stopping; left alone", w->name, k);
    if (end.state == SR_TRIAL_DONE && code == SR_EX_TEMPFAIL) /* a notice as it finished */
        drain(w, "a notice came as a trial finished");
    return 1;
}

/* Trial k's wrapper exited code, not 0, and left no end mark: spotrun's
 * own code, which says whether and when to take the trial again. */
static void child_unmarked(struct worker *w, long k, int code)
{
    switch (code) {
    case SR_EX_CANTCREAT: /* another wrapper holds it, or its run is another's */
        if ((size_t)k < w->n_alloc)
            w->busy_until[k] = skip_foreign(w, k) ? NEVER : sr_now_ms() + w->o->poll_ms;
        return;
    case SR_EX_LIMIT: /* at its time limit or a budget: a rerun here would stop at once */
        if (trial_paused(w, k)) { /* sweep pause --stop: taken again after resume */
            if ((size_t)k < w->n_alloc)
                w->busy_until[k] = sr_now_ms() + w->o->poll_ms;
            return;
        }
        if ((size_t)k < w->n_alloc)
            w->busy_until[k] = NEVER;
        w->limited++;
        sr_warn("sweep %s: trial %ld stopped at a time limit or budget (exit 124); not taking it "
                "again here",
                w->name, k);
        return;
    case SR_EX_TEMPFAIL:
        if (trial_preempted(w, k)) {
            w->ran++;
            drain(w, "a trial was preempted");
            return;
        }
        break;        /* not a notice: a failure of its wrapper, tried again later */
    case SR_EX_QUOTA: /* a quota of its labels is used up: so for every trial here */
        if ((size_t)k < w->n_alloc)
            w->busy_until[k] = sr_now_ms() + w->o->poll_ms;
        sr_warn("sweep %s: trial %ld: a quota of its labels is used up (exit 79); not starting "
                "more trials (`spotrun quota show`; trials given --wait-quota wait instead)",
                w->name, k);
        w->draining = 1;
        w->stop_code = SR_EX_QUOTA;
        return;
    case SR_EX_USAGE:
        sr_warn("sweep %s: trial %ld: `spotrun run` refused its options (exit 64); stopping",
                w->name, k);
        w->draining = 1;
        w->stop_code = SR_EX_USAGE;
        return;
    }
    if ((size_t)k < w->n_alloc)
        w->busy_until[k] = sr_now_ms() + w->o->poll_ms;
    if (w->draining && code == 128 + SIGTERM) {
        /* stopped before it took the trial's lease: nothing to release */
        sr_info("sweep %s: trial %ld stopped before it started", w->name, k);
        return;
    }
    if (++w->errors >= 3) {
        sr_warn("sweep %s: `spotrun run` failed %d times in a row (last: trial %ld, exit %d); "
                "stopping",
                w->name, w->errors, k, code);
        w->draining = 1;
        w->stop_code = code;
    } else {
        sr_warn("sweep %s: trial %ld: `spotrun run` exited %d; trying again later", w->name, k,
                code);
    }
}

static void child_done(struct worker *w, struct slot *s, int status)
{
    const long k = s->trial;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    sr_debug("sweep %s: trial %ld: wrapper pid %d exited %d", w->name, k, (int)s->pid, code);
    s->pid = 0;
    if (code != 0)
        unclaim(&s->claim); /* it may have ended before taking the claim over */
    sr_lease_free(s->claim);
    s->claim = NULL;
    if (code == 0) {
        w->ran++;
        w->errors = 0;
        if ((size_t)k < w->n_alloc)
            w->ended[k] = SR_TRIAL_DONE;
        return;
    }
    if (!child_marked(w, k, code))
        child_unmarked(w, k, code);
}

static void reap(struct worker *w)
{
    for (;;) {
        int status;
        const pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0)
            return;
        for (uint64_t i = 0; i < w->o->slots; i++)
            if (w->slots[i].pid == pid)
                child_done(w, &w->slots[i], status);
    }
}

/* --driver: with nothing to claim (or every trial ended: force), runs the
 * driver, at most once a --poll otherwise, and reads the definition again.
 * 1 when it added trials, 0 when not, -1 when it failed; three failures in
 * a row stop the worker (no more claims) with the driver's code. */
static int drive(struct worker *w, int force)
{
    if (w->driver_errors >= 3)
        return -1;
    if (!w->o->driver || w->draining || (!force && w->driven_at + w->o->poll_ms > sr_now_ms()))
        return 0;
    w->driven_at = sr_now_ms();
    const size_t before = sr_sweep_count(&w->sw);
    const int rc =
        sr_sweep_driver_run(w->o->driver, w->name, sr_store_url(w->st), w->self, &w->orig_mask);
    if (rc != 0) {
        sr_warn("sweep %s: the driver `%s` failed (%s %d)%s", w->name, w->o->driver,
                rc < 0 ? "error" : "exit", rc < 0 ? -rc : rc,
                ++w->driver_errors >= 3
                    ? ": three times in a row, claiming no more trials (run it by hand to see why)"
                    : "");
        if (w->driver_errors >= 3)
            w->stop_code = rc > 0 && rc < 256 ? rc : SR_EX_SOFTWARE;
        return -1;
    }
    w->driver_errors = 0;
    w->defined_at = sr_now_ms();
    return refresh(w, 1) == 0 && sr_sweep_count(&w->sw) > before;
}

/* Whether the sweep's budget (sweep_budget.h) is spent: then no trial is
 * claimed any more (said once); the running ones stop by themselves at
 * their next budget poll. */
static int budget_spent(struct worker *w)
{
    struct sr_sweep_budget b;
    int rc = sr_sweep_budget_read(w->st, w->name, &b);
    double spent = 0;
    if (rc == 0 && b.max_cost > 0)
        rc = sr_prices_sweep_spent(w->st, w->name, NULL, NULL, b.price_per_hour, &spent);
    if (rc == -ENOENT || (rc == 0 && b.max_cost <= 0)) {
        sr_err_clear();
        return 0;
    }
    if (rc < 0) { /* unreadable: claim nothing on a budget we cannot check */
        sr_warn("sweep %s: %s; not starting more trials", w->name, sr_strerror(rc));
        w->draining = 1;
        if (!w->stop_code)
            w->stop_code = sr_exit_code(rc);
        return 1;
    }
    if (spent < b.max_cost)
        return 0;
    if (!w->over_budget++)
        sr_warn("sweep %s: budget reached: %.2f of %.2f; not starting more trials (raise it with "
                "`spotrun sweep set %s --max-cost AMOUNT`)",
                w->name, spent, b.max_cost, w->name);
    if (!w->stop_code)
        w->stop_code = SR_EX_LIMIT;
    return 1;
}

/* Fills free slots; 1 when there is nothing left for this worker to wait
 * for (the loop ends once the running trials are back). */
static int fill(struct worker *w)
{
    if (w->draining || w->driver_errors >= 3)
        return 1;
    if (running(w) == w->o->slots) {
        /* nothing to claim: the end marks are listed once a slot frees;
         * only the steering is read, to say a pause as it comes */
        sr_work_steer(w->st, w->name, sr_sweep_count(&w->sw), &w->steer, &w->paused_said);
        return 0;
    }
    int rc = refresh(w, 0);
    if (rc == 0 &&
        sr_work_steer(w->st, w->name, sr_sweep_count(&w->sw), &w->steer, &w->paused_said) == 1)
        return all_ended(w); /* paused: claims nothing, says so once */
    long k = 0;
    for (uint64_t i = 0; i < w->o->slots; i++) {
        if (w->slots[i].pid)
            continue;
        if (w->o->max_trials && w->ran + running(w) >= w->o->max_trials)
            return 1;
        if ((k = claimable(w)) < 0 && rc == 0 && w->defined_at + w->o->poll_ms <= sr_now_ms()) {
            /* nothing free: trials may have been added since */
            w->defined_at = sr_now_ms();
            if ((rc = refresh(w, 1)) == 0)
                k = claimable(w);
        }
        if (rc < 0) {
            sr_warn("sweep %s: cannot read the store: %s", w->name, sr_strerror(rc));
            return 0;
        }
        if (k < 0 && drive(w, 0) > 0)
            k = claimable(w);
        if (k < 0)
            break;
        if (budget_spent(w)) { /* read only when a trial would start */
            unclaim(&w->claimed);
            return 1;
        }
        if ((rc = spawn_trial(w, i, k)) < 0) {
            unclaim(&w->claimed);
            sr_warn("sweep %s: %s", w->name, sr_strerror(rc));
            w->stop_code = SR_EX_SOFTWARE;
            return 1;
        }
    }
    if (all_ended(w)) { /* a driver may add more; a failing one is tried again */
        const int added = drive(w, 1);
        if (added <= 0)
            return added == 0 || w->driver_errors >= 3;
    }
    return k < 0 && w->o->until_empty;
}

/* The GPUs of this machine, for a worker whose CUDA_VISIBLE_DEVICES is
 * unset: NVML's count, else the driver's /dev/nvidiaN nodes (a driver
 * without NVML); 0 = none. */
static unsigned gpus_found(void)
{
    struct sr_nvml *nv = NULL;
    struct sr_nvml_dev devs[SR_NVML_MAX_DEVICES];
    char note[160];
    int n = sr_nvml_open(&nv) == 0
                ? sr_nvml_select(nv, NULL, devs, SR_NVML_MAX_DEVICES, note, sizeof(note))
                : -1;
    sr_nvml_close(nv);
    sr_err_clear();
    for (int i = 0; n < 0 && i <= SR_NVML_MAX_DEVICES; i++) {
        char dev[32];
        snprintf(dev, sizeof(dev), "/dev/nvidia%d", i);
        if (access(dev, F_OK) != 0)
            n = i;
    }
    return n > 0 ? (unsigned)n : 0;
}

static int parse_gpus(struct worker *w)
{
    if (w->o->slots <= 1)
        return 0;
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    const unsigned found = env ? 0 : gpus_found();
    if (!env &&
        !found) { /* nothing to pin: the variable stays unset, and nothing is said of GPUs */
        sr_info("sweep %s: no GPU found (no NVML device, no /dev/nvidia0): the %" PRIu64
                " slots run their trials without GPU pinning (CUDA_VISIBLE_DEVICES left unset)",
                w->name, w->o->slots);
        return 0;
    }
    char numbers[SR_NVML_MAX_DEVICES * 4] = "";
    for (unsigned i = 0, at = 0; !env && i < found && at < sizeof(numbers); i++)
        at += (unsigned)snprintf(numbers + at, sizeof(numbers) - at, "%s%u", i ? "," : "", i);
    char *list = strdup(env ? env : numbers);
    w->gpus = calloc(w->o->slots, sizeof(char *));
    if (!list || !w->gpus) {
        free(list);
        return -ENOMEM;
    }
    char *have[256];
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t && n < 256;
         t = strtok_r(NULL, ",", &save))
        have[n++] = t;
    /* set but empty: no GPU is visible, and none is made up for a slot */
    for (uint64_t i = 0; i < w->o->slots; i++)
        w->gpus[i] = strdup(n ? have[i % n] : "");
    free(list);
    if (env && n == 0)
        sr_warn("sweep %s: CUDA_VISIBLE_DEVICES is empty (no GPU): the %" PRIu64
                " slots run their trials without a GPU",
                w->name, w->o->slots);
    else if (n && n < w->o->slots)
        sr_warn("sweep %s: %" PRIu64 " slots share %zu GPU%s (%s%s): "
                "trials on one GPU compete for its memory; give --slots %zu for one each",
                w->name, w->o->slots, n, n == 1 ? "" : "s",
                env ? "CUDA_VISIBLE_DEVICES=" : "found: ", env ? env : numbers, n);
    return 0;
}

/* What this worker's instance costs an hour, for its idle time: the
 * sweep's recorded price, else the trials' --price-per-hour, else
 * SPOTRUN_PRICE_PER_HOUR; 0 = unknown. */
static double worker_price(const struct worker *w)
{
    struct sr_sweep_budget b;
    if (sr_sweep_budget_read(w->st, w->name, &b) == 0 && b.price_per_hour > 0)
        return b.price_per_hour;
    sr_err_clear();
    const char *v = getenv("SPOTRUN_PRICE_PER_HOUR");
    for (size_t i = 0; w->run_args[i]; i++) {
        if (strcmp(w->run_args[i], "--") == 0)
            break;
        if (strcmp(w->run_args[i], "--price-per-hour") == 0 && w->run_args[i + 1])
            v = w->run_args[i + 1];
        else if (strncmp(w->run_args[i], "--price-per-hour=", 17) == 0)
            v = w->run_args[i] + 17;
    }
    char *end = NULL;
    const double p = v ? strtod(v, &end) : 0;
    return v && end != v && !*end && p > 0 && p < 1e12 ? p : 0;
}

static int work_loop(struct worker *w)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &w->orig_mask);
    int over = 0;
    for (;;) {
        reap(w);
        if (!over)
            over = fill(w);
        if (over && running(w) == 0)
            break;
        const int64_t alive = sr_sweep_life_tick(&w->life);
        const int64_t ms = alive < w->o->poll_ms ? alive : w->o->poll_ms;
        const struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
        siginfo_t si;
        const int sig = sigtimedwait(&set, &si, &ts);
        if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
            char why[64];
            snprintf(why, sizeof(why), "SIG%s", sigabbrev_np(sig));
            drain(w, why);
            over = 1;
        }
    }
    sigprocmask(SIG_SETMASK, &w->orig_mask, NULL);
    return w->stop_code;
}

/* The worker's own exit code once its loop ended: trials it will not run
 * (at a limit, or another's run) make a 0 a 124 or a 73, said. */
static int worker_result(struct worker *w, int result)
{
    if (result == 0 && w->limited) {
        sr_warn("sweep %s: %zu trial%s stopped at a time limit or budget and %s not run "
                "again here",
                w->name, w->limited, w->limited == 1 ? "" : "s", w->limited == 1 ? "is" : "are");
        result = SR_EX_LIMIT;
    }
    if (result == 0 && w->foreign) {
        /* every other trial ended: these never ran, and never will here */
        sr_warn("sweep %s: %zu trial%s not run: %s run is another's (above); move it "
                "away, then start a worker again (or define the sweep under another name)",
                w->name, w->foreign, w->foreign == 1 ? "" : "s",
                w->foreign == 1 ? "its" : "each one's");
        result = SR_EX_CANTCREAT;
    }
    sr_info("sweep %s: %" PRIu64 " trial%s run here; stopping (exit %d)", w->name, w->ran,
            w->ran == 1 ? "" : "s", result);
    return result;
}

/* Reads the sweep, runs the loop with this worker's lifetime recorded
 * around it; the exit code. */
static int worker_run(struct worker *w)
{
    w->seed = (unsigned)(getpid() ^ sr_wall_ms());
    /* the trials' wrappers say as much as this worker */
    if (sr_common.quiet)
        setenv("SPOTRUN_QUIET", "1", 1);
    if (sr_common.verbose)
        setenv("SPOTRUN_VERBOSE", "1", 1);
    const ssize_t n = readlink("/proc/self/exe", w->self, sizeof(w->self) - 1);
    w->self[n > 0 ? n : 0] = '\0';
    w->slots = calloc(w->o->slots, sizeof(*w->slots));
    int rc = w->slots ? refresh(w, 1) : -ENOMEM;
    if (rc == 0)
        rc = parse_gpus(w);
    if (rc < 0) {
        fprintf(stderr, "spotrun sweep work: %s\n", sr_strerror(rc));
        return rc == -EINVAL ? SR_EX_USAGE : sr_exit_code(rc);
    }
    sr_info("sweep %s: %zu trials, working with %" PRIu64 " slot%s", w->name,
            sr_sweep_count(&w->sw), w->o->slots, w->o->slots == 1 ? "" : "s");
    sr_sweep_life_begin(&w->life, w->st, w->name, (unsigned)w->o->slots, worker_price(w));
    const int result = work_loop(w);
    sr_sweep_life_end(&w->life);
    return worker_result(w, result);
}

static void worker_free(struct worker *w)
{
    for (uint64_t i = 0; w->gpus && i < w->o->slots; i++)
        free(w->gpus[i]);
    free(w->gpus);
    for (uint64_t i = 0; w->slots && i < w->o->slots; i++)
        sr_lease_free(w->slots[i].claim); /* taken over, or expiring: not released */
    unclaim(&w->claimed);
    free(w->slots);
    free(w->ended);
    free(w->started);
    free(w->busy_until);
    sr_steer_free(&w->steer);
    sr_sweep_free(&w->sw);
}

int sr_cmd_sweep_work(const struct sr_cmd *cmd, int argc, char **argv)
{
    struct work_opts o = {.slots = 1, .poll_ms = 10000};
    const struct sr_opt opts[] = {
        {"slots", 0, "SPOTRUN_SLOTS", SR_OPT_UINT, &o.slots, "K",
         "run K trials at once, each with its own CUDA_VISIBLE_DEVICES (default 1)"},
        {"max-trials", 0, "SPOTRUN_MAX_TRIALS", SR_OPT_UINT, &o.max_trials, "N",
         "stop after N trials (default: no limit)"},
        {"until-empty", 0, "SPOTRUN_UNTIL_EMPTY", SR_OPT_FLAG, &o.until_empty, NULL,
         "stop when no trial is free now, instead of waiting for running ones to be released"},
        {"poll", 0, "SPOTRUN_SWEEP_POLL", SR_OPT_DURATION, &o.poll_ms, "DURATION",
         "how often to look for a free trial when none is (default 10s)"},
        {"driver", 0, "SPOTRUN_SWEEP_DRIVER", SR_OPT_STR, &o.driver, "CMD",
         "when no trial is free, run CMD (sh -c; at most once a --poll) to add trials, e.g. "
         "'python3 -m spotrun.optuna_driver --trials 40'"},
        SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    const int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    if (o.slots < 1 || o.slots > 256 || o.poll_ms < 10) {
        fprintf(stderr, "spotrun sweep work: --slots must be 1..256 and --poll at least 10ms\n");
        sr_store_close(ctx.st);
        return SR_EX_USAGE;
    }
    struct worker w = {.o = &o, .name = ctx.ops[0], .st = ctx.st, .run_args = ctx.ops + 1};
    const int result = worker_run(&w);
    worker_free(&w);
    sr_store_close(ctx.st);
    return result;
}
