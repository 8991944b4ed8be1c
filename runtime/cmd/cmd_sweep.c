/*
 * cmd_sweep.c - `spotrun sweep init|work|show|report` (docs/sweeps.md).
 *
 * init writes the sweep's definition into the store (sweep.h). work is the
 * plain-fleet worker: it runs trials one after another (or --slots at once)
 * as child `spotrun run --sweep NAME --trial K` wrappers, so each trial gets
 * everything a run gets (resume, notices, restarts, the lease); the run's
 * lease is the claim, its end mark the result. No new coordination service:
 * the worker only reads the end marks' listing and the trials' leases.
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
#include "keeper.h"
#include "asha.h"
#include "labels.h"
#include "lease.h"
#include "log.h"
#include "prices.h"
#include "sweep.h"
#include "sweep_budget.h"
#include "sweep_driver.h"
#include "sweep_life.h"
#include "sweep_steer.h"
#include "units.h"

/* ---- sweep init -------------------------------------------------------------- */

struct init_opts {
    struct sr_optlist params;
    uint64_t random; /* UINT64_MAX: not given; 0: a search space (a driver adds trials) */
    const char *seed;
    int add;
    uint64_t at; /* --at N: add only at trial N; UINT64_MAX: not given */
    double max_cost, price_per_hour;
    struct sr_optlist label;
    const char *early_stop;
};

/* A sweep's budget needs a price per hour to count its trials' instance
 * hours with. 0, or the usage error printed. */
static int budget_check(const char *cmd, double max_cost, double price)
{
    if (max_cost <= 0 || price > 0)
        return 0;
    fprintf(stderr,
            "spotrun %s: --max-cost %.2f needs --price-per-hour P: what one trial's instance "
            "costs per hour (a trial's own --prices entry wins for its instance type)\n",
            cmd, max_cost);
    return SR_EX_USAGE;
}

/* Writes the sweep's budget (a new version, sweep_budget.h) and says so. */
static int budget_write(struct sr_store *st, const char *name, double max_cost, double price)
{
    const struct sr_sweep_budget b = {.max_cost = max_cost, .price_per_hour = price};
    unsigned v = 0;
    const int rc = sr_sweep_budget_set(st, name, &b, &v);
    if (rc < 0)
        return sr_fail(rc, "cannot write the sweep's budget");
    if (max_cost > 0)
        printf("sweep %s: budget %.2f at %.4g per trial-hour (version %u)\n", name, max_cost, price,
               v);
    else if (price > 0)
        printf("sweep %s: no budget; trials priced at %.4g per hour (version %u)\n", name, price,
               v);
    else
        printf("sweep %s: no budget (version %u)\n", name, v);
    return 0;
}

/* --add [--at N]: appends def's trials as the sweep's next part, and says
 * which. The exit code. */
static int init_add(struct sr_store *st, const struct init_opts *o, const struct sr_sweep *def)
{
    if (sr_sweep_count(def) == 0) {
        fprintf(stderr, "spotrun sweep init: --add --random 0 adds no trial: give the trials' "
                        "values (--param lr=0.001) or --random K\n");
        return SR_EX_USAGE;
    }
    size_t first = 0;
    const int rc = sr_sweep_add_at(st, def, o->at == UINT64_MAX ? SIZE_MAX : (size_t)o->at, &first);
    if (rc == 0)
        printf("sweep %s: added trials %zu..%zu\n", def->name, first,
               first + sr_sweep_count(def) - 1);
    if (rc == -EINVAL || rc == -EEXIST || rc == -ESTALE)
        fprintf(stderr, "spotrun sweep init: %s\n", sr_strerror(rc));
    /* a definition that disagrees with the stored one is 65, always; a
     * lost race for --at is 75: read again and retry */
    return rc == 0         ? 0
           : rc == -EINVAL ? SR_EX_USAGE
           : rc == -EEXIST ? SR_EX_DATAERR
           : rc == -ESTALE ? SR_EX_TEMPFAIL
                           : sr_fail(rc, "sweep init --add");
}

/* Every {placeholder} of def's command must name a parameter: checked on
 * trial 0, or on a stand-in trial when a search space has none yet. */
static int init_probe(struct sr_sweep *def, char **args)
{
    if (!json_array_size(def->command))
        return 0;
    const int stand_in = sr_sweep_count(def) == 0;
    if (stand_in) {
        json_t *t = json_object();
        for (size_t i = 0; i < sr_sweep_nparams(def); i++)
            json_object_set_new(t, sr_sweep_param(def, i), json_string("0"));
        json_array_append_new(def->trials, t);
    }
    char **probe = NULL;
    const int rc = sr_sweep_expand(def, 0, args, &probe);
    sr_sweep_argv_free(probe);
    if (stand_in)
        json_array_remove(def->trials, 0);
    return rc;
}

/* --label: the sweep's labels, part of its definition (part 0, written
 * once): --add cannot change them, nor can `sweep set` (trials that ran
 * keep the labels they started with; two sets in one sweep would split
 * its cost). 0, or SR_EX_USAGE after saying why. */
static int init_labels(const struct init_opts *o, struct sr_labels *out)
{
    char err[256];
    for (size_t i = 0; i < o->label.n; i++)
        if (sr_labels_add(out, o->label.v[i], err, sizeof(err)) < 0) {
            fprintf(stderr, "spotrun sweep init: %s\n", err);
            return SR_EX_USAGE;
        }
    if (o->label.n && o->add) {
        fprintf(stderr, "spotrun sweep init: --label is given when the sweep is made, not with "
                        "--add (its trials all carry the sweep's labels)\n");
        return SR_EX_USAGE;
    }
    return 0;
}

/* --early-stop: the sweep's early-stopping rule (asha.h), part of its
 * definition like the labels. 0, or SR_EX_USAGE after saying why. */
static int init_early_stop(const struct init_opts *o, struct sr_sweep *def)
{
    if (!o->early_stop)
        return 0;
    struct sr_asha rule;
    char err[200];
    if (sr_asha_parse(o->early_stop, &rule, err, sizeof(err)) < 0) {
        fprintf(stderr,
                "spotrun sweep init: invalid --early-stop \"%.200s\": %s (e.g. "
                "loss:min,grace=1,eta=3,max=100)\n",
                o->early_stop, err);
        return SR_EX_USAGE;
    }
    if (o->add) {
        fprintf(stderr, "spotrun sweep init: --early-stop is given when the sweep is made, not "
                        "with --add (every trial is judged by the same rule)\n");
        return SR_EX_USAGE;
    }
    def->early_stop = sr_asha_to_json(&rule);
    return def->early_stop ? 0 : SR_EX_SOFTWARE;
}

static int cmd_init(const struct sr_cmd *cmd, int argc, char **argv)
{
    /* -1: not given; a given 0 is refused */
    struct init_opts o = {.max_cost = -1, .random = UINT64_MAX, .at = UINT64_MAX};
    const struct sr_opt opts[] = {
        {"param", 'p', NULL, SR_OPT_MULTI, &o.params, "NAME=VALUES",
         "a parameter: a=1,2,3 or n=0..7 (grid); uniform:LO,HI, loguniform:LO,HI, int:LO,HI, "
         "choice:a,b (with --random); repeat for each"},
        {"random", 0, NULL, SR_OPT_UINT, &o.random, "K",
         "random search: K trials drawn from the parameters instead of the grid; 0: a search "
         "space only (a driver adds the trials: python3 -m spotrun.optuna_driver)"},
        {"seed", 0, NULL, SR_OPT_STR, &o.seed, "S",
         "random search seed (default 0): the same seed gives the same trials"},
        {"add", 0, NULL, SR_OPT_FLAG, &o.add, NULL,
         "append these trials to an existing sweep (same parameter names)"},
        {"at", 0, NULL, SR_OPT_UINT, &o.at, "N",
         "with --add: append only if the sweep has exactly N trials now, else exit 75 and "
         "write nothing (drivers racing never exceed their total)"},
        {"max-cost", 0, NULL, SR_OPT_PRICE, &o.max_cost, "AMOUNT",
         "the sweep's budget: no trial starts once its trials cost this much, and running "
         "ones checkpoint and stop (exit 124); change it with `sweep set`"},
        {"price-per-hour", 0, NULL, SR_OPT_PRICE, &o.price_per_hour, "PRICE",
         "what one trial's instance costs per hour: recorded by every trial (show, sweep "
         "show, stats) and counted by --max-cost"},
        {"label", 0, NULL, SR_OPT_MULTI, &o.label, "KEY=VALUE",
         "label every trial's run (repeatable; a trial's own --label wins on the same key); "
         "fixed when the sweep is made"},
        {"early-stop", 0, NULL, SR_OPT_STR, &o.early_stop, "RULE",
         "early stopping, METRIC:min|max[,grace=N][,eta=K][,max=M]: at rungs grace*eta^k a "
         "trial whose METRIC is not in the top 1/eta so far checkpoints and stops (pruned); "
         "fixed when the sweep is made"},
        SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    const char *name = ctx.ops[0];
    if (!sr_sweep_name_valid(name)) {
        fprintf(stderr,
                "spotrun sweep init: invalid sweep name \"%s\" (letters, digits, . _ -; at most "
                "%d; not \"sweeps\")\n",
                name, SR_SWEEP_NAME_MAX);
        sr_store_close(ctx.st);
        return SR_EX_USAGE;
    }
    int64_t seed = 0;
    if (o.seed && sr_parse_int(o.seed, 0, INT64_MAX, &seed) < 0) {
        fprintf(stderr,
                "spotrun sweep init: invalid value \"%s\" for --seed (a non-negative "
                "integer)\n",
                o.seed);
        sr_store_close(ctx.st);
        return SR_EX_USAGE;
    }
    if (o.seed && o.random == UINT64_MAX) {
        fprintf(stderr, "spotrun sweep init: --seed needs --random K\n");
        sr_store_close(ctx.st);
        return SR_EX_USAGE;
    }
    if (o.max_cost == 0) {
        fprintf(stderr, "spotrun sweep init: --max-cost 0 would start no trial: for no budget, "
                        "leave --max-cost out\n");
        sr_store_close(ctx.st);
        return SR_EX_USAGE;
    }
    if (o.max_cost < 0)
        o.max_cost = 0;
    if (budget_check("sweep init", o.max_cost, o.price_per_hour)) {
        sr_store_close(ctx.st);
        return SR_EX_USAGE;
    }
    if (o.at != UINT64_MAX && !o.add) {
        fprintf(stderr, "spotrun sweep init: --at N needs --add\n");
        sr_store_close(ctx.st);
        return SR_EX_USAGE;
    }
    struct sr_labels labels = {0};
    if (init_labels(&o, &labels)) {
        sr_store_close(ctx.st);
        return SR_EX_USAGE;
    }
    struct sr_sweep def = {0};
    if (init_early_stop(&o, &def)) {
        sr_store_close(ctx.st);
        return SR_EX_USAGE;
    }
    snprintf(def.name, sizeof(def.name), "%s", name);
    const unsigned random = o.random == UINT64_MAX ? 0
                            : o.random == 0        ? SR_SWEEP_SEARCH
                                                   : (unsigned)o.random;
    int rc = sr_sweep_generate(o.params.v, o.params.n, random, (uint64_t)seed, &def);
    if (rc == 0 && labels.n)
        def.labels = sr_labels_to_json(&labels);
    if (rc < 0) {
        fprintf(stderr, "spotrun sweep init: %s\n", sr_strerror(rc));
        sr_sweep_free(&def); /* its early_stop */
        sr_store_close(ctx.st);
        return SR_EX_USAGE;
    }
    def.command = json_array();
    for (char **a = ctx.ops + 1; *a; a++)
        json_array_append_new(def.command, json_string(*a));
    rc = init_probe(&def, ctx.ops + 1);
    if (rc < 0) {
        fprintf(stderr, "spotrun sweep init: %s\n", sr_strerror(rc));
        code = SR_EX_USAGE;
    } else if (o.add) {
        code = init_add(ctx.st, &o, &def);
    } else {
        rc = sr_sweep_create(ctx.st, &def);
        if (rc >= 0 && random == SR_SWEEP_SEARCH)
            printf("sweep %s: a search space of %zu parameter%s, no trials yet (a driver adds "
                   "them)%s in %s\n",
                   name, sr_sweep_nparams(&def), sr_sweep_nparams(&def) == 1 ? "" : "s",
                   rc == 1 ? " (already defined, unchanged)" : "", sr_store_url(ctx.st));
        else if (rc >= 0)
            printf("sweep %s: %zu trial%s%s in %s\n", name, sr_sweep_count(&def),
                   sr_sweep_count(&def) == 1 ? "" : "s",
                   rc == 1 ? " (already defined, unchanged)" : "", sr_store_url(ctx.st));
        if (rc == -EEXIST || rc == -ENOTEMPTY)
            fprintf(stderr, "spotrun sweep init: %s\n", sr_strerror(rc));
        code = rc >= 0            ? 0
               : rc == -EEXIST    ? SR_EX_DATAERR
               : rc == -ENOTEMPTY ? SR_EX_CANTCREAT
                                  : sr_fail(rc, "sweep init");
    }
    if (code == 0 && (o.max_cost > 0 || o.price_per_hour > 0)) { /* a price alone is kept too */
        struct sr_sweep_budget old;
        if (o.max_cost <= 0 && sr_sweep_budget_read(ctx.st, name, &old) == 0)
            o.max_cost = old.max_cost; /* and changes no budget (--add) */
        sr_err_clear();
        code = budget_write(ctx.st, name, o.max_cost, o.price_per_hour);
    }
    sr_sweep_free(&def);
    sr_store_close(ctx.st);
    return code;
}

/* ---- sweep set ----------------------------------------------------------------- */

/* `sweep set NAME --max-cost AMOUNT [--price-per-hour P]`: a new budget
 * (0: none); the price stays unless given. Workers see it at their next
 * look, running trials at their next poll (--budget-poll). */
static int cmd_set(const struct sr_cmd *cmd, int argc, char **argv)
{
    double max_cost = -1, price = -1;
    const struct sr_opt opts[] = {
        {"max-cost", 0, NULL, SR_OPT_PRICE, &max_cost, "AMOUNT",
         "the sweep's budget (0: no budget)"},
        {"price-per-hour", 0, NULL, SR_OPT_PRICE, &price, "PRICE",
         "what one trial's instance costs per hour (default: as set before)"},
        SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    const char *name = ctx.ops[0];
    struct sr_sweep sw;
    int rc = sr_sweep_read(ctx.st, name, &sw);
    if (rc < 0) {
        fprintf(stderr, "spotrun sweep set: %s\n", sr_strerror(rc));
        sr_store_close(ctx.st);
        return rc == -EINVAL ? SR_EX_USAGE : sr_exit_code(rc);
    }
    sr_sweep_free(&sw);
    struct sr_sweep_budget old;
    rc = sr_sweep_budget_read(ctx.st, name, &old);
    if (rc < 0 && rc != -ENOENT && rc != -EBADMSG) { /* a bad one is replaced */
        sr_store_close(ctx.st);
        return sr_fail(rc, "cannot read the sweep's budget");
    }
    sr_err_clear();
    if (max_cost < 0) {
        fprintf(stderr, "spotrun sweep set: nothing to set: give --max-cost AMOUNT (0: no "
                        "budget)\n");
        code = SR_EX_USAGE;
    } else {
        if (price < 0)
            price = rc == 0 ? old.price_per_hour : 0;
        code = budget_check("sweep set", max_cost, price);
        if (code == 0)
            code = budget_write(ctx.st, name, max_cost, price);
    }
    sr_store_close(ctx.st);
    return code;
}

/* ---- sweep work ---------------------------------------------------------------- */

struct work_opts {
    uint64_t slots, max_trials;
    int until_empty;
    int64_t poll_ms;
    const char *driver; /* --driver CMD: may add trials when none is free */
};

struct slot {
    pid_t pid; /* 0 = free */
    long trial;
};

struct worker {
    const struct work_opts *o;
    const char *name;
    struct sr_store *st;
    struct sr_sweep sw;
    unsigned char *ended; /* per trial: SR_TRIAL_* from the last listing */
    int64_t *busy_until;  /* per trial: another worker had it (ms, sr_now_ms); NEVER: skipped */
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
    if (n > w->n_alloc) {
        unsigned char *e = realloc(w->ended, n);
        int64_t *b = e ? realloc(w->busy_until, n * sizeof(*b)) : NULL;
        if (e)
            w->ended = e;
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

/* A trial that is neither ended nor owned, -1 when none: one of the first
 * CANDIDATES open trials at random, so that workers starting together (a
 * fleet scaling up) do not all race for trial 0 and lose the race by
 * starting a wrapper that exits 73. Only the chosen trial's lease is read. */
#define CANDIDATES 4
static int free_now(const struct worker *w, size_t k, int64_t now)
{
    return w->ended[k] == SR_TRIAL_OPEN && !sr_steer_cancelled(&w->steer, k) &&
           !trial_running_here(w, (long)k) && w->busy_until[k] <= now;
}

static long claimable(struct worker *w)
{
    const int64_t now = sr_now_ms(), now_s = sr_wall_ms() / 1000;
    for (;;) {
        long open[CANDIDATES];
        unsigned n = 0;
        /* the highest priority first (sweep priority); at random within it */
        long top = LONG_MIN;
        for (size_t k = 0; k < sr_sweep_count(&w->sw); k++)
            if (free_now(w, k, now) && sr_steer_priority(&w->steer, k) > top)
                top = sr_steer_priority(&w->steer, k);
        for (size_t k = 0; k < sr_sweep_count(&w->sw) && n < CANDIDATES; k++)
            if (free_now(w, k, now) && sr_steer_priority(&w->steer, k) == top)
                open[n++] = (long)k;
        if (n == 0)
            return -1;
        const long k = open[rand_r(&w->seed) % n];
        char run[SR_SWEEP_NAME_MAX + 16];
        sr_sweep_run_id(w->name, (size_t)k, run, sizeof(run));
        struct sr_lease_info info;
        if (sr_lease_read_owner(w->st, run, &info) == 0 && !sr_lease_takeable(&info, now_s)) {
            w->busy_until[k] = now + w->o->poll_ms;
            continue;
        }
        sr_err_clear();
        return k;
    }
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
    char gpu[256];
    /* each slot its GPU (child.h's environment builder replaces the variable) */
    char *add[2] = {gpu, NULL};
    if (w->gpus)
        snprintf(gpu, sizeof(gpu), "CUDA_VISIBLE_DEVICES=%s", w->gpus[slot]);
    extern char **environ;
    char **built = w->gpus ? sr_env_build(add, NULL) : NULL;
    if (w->gpus && !built) {
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
    sr_sweep_life_trial(&w->life, k);
    char what[512];
    describe(w, k, what, sizeof(what));
    sr_info("sweep %s: trial %ld (%s)%s%s", w->name, k, what, w->gpus ? " on GPU " : "",
            w->gpus ? w->gpus[slot] : "");
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

static void child_done(struct worker *w, struct slot *s, int status)
{
    const long k = s->trial;
    s->pid = 0;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    struct sr_trial_end_info end;
    if (code == 0) {
        w->ran++;
        w->errors = 0;
        if ((size_t)k < w->n_alloc)
            w->ended[k] = SR_TRIAL_DONE;
        return;
    }
    /* The trial's end mark first: a job that kept failing with 64, 73 or 75
     * (its own codes, which its wrapper passes on) is the trial's failure,
     * never the worker's. Only without a mark is the code spotrun's. The
     * mark's name says it ended even when its content is not believed. */
    const int mark = sr_sweep_read_end(w->st, w->name, (size_t)k, &end);
    if ((mark == 0 || mark == -EBADMSG) && end.state != SR_TRIAL_OPEN) {
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
        return;
    }
    sr_err_clear();
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
        break; /* not a notice: a failure of its wrapper, tried again later */
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
        if (budget_spent(w)) /* read only when a trial would start */
            return 1;
        if ((rc = spawn_trial(w, i, k)) < 0) {
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

static int parse_gpus(struct worker *w)
{
    if (w->o->slots <= 1)
        return 0;
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    char *list = strdup(env ? env : "");
    w->gpus = calloc(w->o->slots, sizeof(char *));
    if (!list || !w->gpus)
        return -ENOMEM;
    char *have[256];
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t && n < 256;
         t = strtok_r(NULL, ",", &save))
        have[n++] = t;
    /* set but empty: no GPU is visible, and none is made up for a slot */
    for (uint64_t i = 0; i < w->o->slots; i++) {
        char num[24];
        snprintf(num, sizeof(num), "%" PRIu64, i);
        w->gpus[i] = strdup(n ? have[i % n] : env ? "" : num);
    }
    free(list);
    if (env && n == 0)
        sr_warn("sweep %s: CUDA_VISIBLE_DEVICES is empty (no GPU): the %" PRIu64
                " slots run their trials without a GPU",
                w->name, w->o->slots);
    else if (n && n < w->o->slots)
        sr_warn("sweep %s: %" PRIu64 " slots share %zu GPU%s (CUDA_VISIBLE_DEVICES=%s): "
                "trials on one GPU compete for its memory; give --slots %zu for one each",
                w->name, w->o->slots, n, n == 1 ? "" : "s", env, n);
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

static int cmd_work(const struct sr_cmd *cmd, int argc, char **argv)
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
    w.seed = (unsigned)(getpid() ^ sr_wall_ms());
    /* the trials' wrappers say as much as this worker */
    if (sr_common.quiet)
        setenv("SPOTRUN_QUIET", "1", 1);
    if (sr_common.verbose)
        setenv("SPOTRUN_VERBOSE", "1", 1);
    const ssize_t n = readlink("/proc/self/exe", w.self, sizeof(w.self) - 1);
    w.self[n > 0 ? n : 0] = '\0';
    w.slots = calloc(o.slots, sizeof(*w.slots));
    int rc = w.slots ? refresh(&w, 1) : -ENOMEM;
    if (rc == 0)
        rc = parse_gpus(&w);
    int result;
    if (rc < 0) {
        result = rc == -EINVAL ? SR_EX_USAGE : sr_exit_code(rc);
        fprintf(stderr, "spotrun sweep work: %s\n", sr_strerror(rc));
    } else {
        sr_info("sweep %s: %zu trials, working with %" PRIu64 " slot%s", w.name,
                sr_sweep_count(&w.sw), o.slots, o.slots == 1 ? "" : "s");
        sr_sweep_life_begin(&w.life, ctx.st, w.name, (unsigned)o.slots, worker_price(&w));
        result = work_loop(&w);
        sr_sweep_life_end(&w.life);
        if (result == 0 && w.limited) {
            sr_warn("sweep %s: %zu trial%s stopped at a time limit or budget and %s not run "
                    "again here",
                    w.name, w.limited, w.limited == 1 ? "" : "s", w.limited == 1 ? "is" : "are");
            result = SR_EX_LIMIT;
        }
        if (result == 0 && w.foreign) {
            /* every other trial ended: these never ran, and never will here */
            sr_warn("sweep %s: %zu trial%s not run: %s run is another's (above); move it "
                    "away, then start a worker again (or define the sweep under another name)",
                    w.name, w.foreign, w.foreign == 1 ? "" : "s",
                    w.foreign == 1 ? "its" : "each one's");
            result = SR_EX_CANTCREAT;
        }
        sr_info("sweep %s: %" PRIu64 " trial%s run here; stopping (exit %d)", w.name, w.ran,
                w.ran == 1 ? "" : "s", result);
    }
    for (uint64_t i = 0; w.gpus && i < o.slots; i++)
        free(w.gpus[i]);
    free(w.gpus);
    free(w.slots);
    free(w.ended);
    free(w.busy_until);
    sr_steer_free(&w.steer);
    sr_sweep_free(&w.sw);
    sr_store_close(ctx.st);
    return result;
}

/* ---- sweep delete ------------------------------------------------------------- */

/* The sweep's own trial runs (those that record it, sr_sweep_run_owner):
 * runs "<name>-<K>" that do not are never touched. */
static int own_runs(struct sr_store *st, const struct sr_sweep *sw, struct sr_strlist *out,
                    size_t *foreign)
{
    memset(out, 0, sizeof(*out));
    struct sr_strlist runs;
    int rc = sr_ckpt_list_runs(st, &runs);
    for (size_t i = 0; rc == 0 && i < runs.n; i++) {
        const long k = sr_sweep_trial_of(sw->name, runs.v[i]);
        if (k < 0)
            continue;
        rc = sr_sweep_run_owner(st, sw, (size_t)k, runs.v[i]);
        if (rc == 0) {
            rc = sr_strlist_push(out, runs.v[i]);
        } else if (rc == -EEXIST) {
            sr_info("sweep %s: leaving run %s alone: %s", sw->name, runs.v[i], sr_strerror(rc));
            ++*foreign;
            rc = 0;
        } else if (rc == 1) {
            rc = 0;
        }
    }
    sr_strlist_free(&runs);
    if (rc < 0)
        sr_strlist_free(out);
    return rc;
}

/* Deletes one trial run as gc and run --fresh do: under its lease (the one
 * ownership rule), the run's objects (sr_ckpt_clear_run), then the lease
 * itself, released first. 0 or an exit code. */
static int delete_run(struct sr_store *st, const struct sr_sweep *sw, const char *run)
{
    struct sr_lease *lease = NULL;
    int code =
        sr_keeper_take(st, run, 60, 0, "not deleting its sweep while a wrapper runs it", &lease);
    if (code != 0)
        return code;
    /* whose it is, again under the lease */
    const long k = sr_sweep_trial_of(sw->name, run);
    int rc = sr_sweep_run_owner(st, sw, (size_t)k, run);
    if (rc == 0)
        rc = sr_ckpt_clear_run(st, run);
    else if (rc > 0 || rc == -EEXIST)
        rc = 0; /* not the sweep's (any more): left alone */
    if (rc < 0)
        code = sr_fail(rc, run);
    const int released = sr_lease_release(lease);
    sr_lease_free(lease);
    if (code == 0 && released == 0) {
        char key[SR_RUN_ID_MAX + 16];
        snprintf(key, sizeof(key), "%s/LEASE", run);
        if ((rc = sr_store_delete(st, key)) < 0)
            sr_warn("cannot delete %s (released): %s", key, sr_strerror(rc));
    }
    return code;
}

static int cmd_delete(const struct sr_cmd *cmd, int argc, char **argv)
{
    const struct sr_opt opts[] = {SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    struct sr_sweep sw;
    int rc = sr_sweep_read(ctx.st, ctx.ops[0], &sw);
    if (rc < 0) {
        fprintf(stderr, "spotrun sweep delete: %s\n", sr_strerror(rc));
        sr_store_close(ctx.st);
        return rc == -EINVAL ? SR_EX_USAGE : sr_exit_code(rc);
    }
    struct sr_strlist runs;
    size_t foreign = 0;
    rc = own_runs(ctx.st, &sw, &runs, &foreign);
    if (rc < 0)
        code = sr_fail(rc, "sweep delete: cannot list the store");
    /* a running trial refuses the whole delete before anything goes */
    const int64_t now_s = sr_wall_ms() / 1000;
    for (size_t i = 0; rc == 0 && code < 0 && i < runs.n; i++) {
        struct sr_lease_info in;
        if (sr_lease_read_owner(ctx.st, runs.v[i], &in) == 0 && !sr_lease_takeable(&in, now_s)) {
            fprintf(stderr,
                    "spotrun sweep delete: trial run %s is owned by %s (pid %ld): not deleting "
                    "sweep %s while it runs (stop its worker, or wait for it)\n",
                    runs.v[i], in.host, in.pid, sw.name);
            code = SR_EX_CANTCREAT;
        }
        sr_err_clear();
    }
    size_t deleted = 0;
    for (size_t i = 0; rc == 0 && code < 0 && i < runs.n; i++) {
        const int c = delete_run(ctx.st, &sw, runs.v[i]);
        if (c != 0)
            code = c;
        else
            deleted++;
    }
    if (rc == 0 && code < 0) {
        rc = sr_sweep_remove(ctx.st, sw.name);
        code = rc < 0 ? sr_fail(rc, "sweep delete") : 0;
    }
    if (code == 0)
        printf("sweep %s deleted: its definition, end marks and %zu trial run%s%s\n", sw.name,
               deleted, deleted == 1 ? "" : "s",
               foreign ? " (runs that are not its trials left alone)" : "");
    else if (deleted)
        fprintf(stderr,
                "spotrun sweep delete: %zu trial run%s deleted, the rest and the "
                "definition kept: run it again\n",
                deleted, deleted == 1 ? "" : "s");
    sr_strlist_free(&runs);
    sr_sweep_free(&sw);
    sr_store_close(ctx.st);
    return code;
}

/* ---- the dispatcher ------------------------------------------------------------ */

static const struct sr_cmd subs[] = {
    {"sweep init", cmd_init, "define a sweep: its parameters, trials and command",
     "spotrun sweep init NAME --param NAME=VALUES... [--random K --seed S] [--add] "
     "[-- command {param}...]",
     "Writes the sweep's definition into the store (create-only: the same definition again\n"
     "is a no-op, a different one an error; --add appends trials). Each trial K is the run\n"
     "NAME-K; its command has every {param} replaced by the trial's value.",
     1, SR_CMD_ANY_OPS, SR_CMD_NEEDS_STORE},
    {"sweep work", cmd_work, "run the sweep's trials on this machine (a plain fleet's worker)",
     "spotrun sweep work NAME [--slots K] [--max-trials N] [--until-empty] [-- run options]",
     "Takes a trial that is neither ended, cancelled nor owned (one of the first four open\n"
     "ones of the highest priority, at random; none while the sweep is paused), runs it as\n"
     "`spotrun run --sweep` (resume, notices, restarts), then the next. On a preemption\n"
     "notice (SIGTERM, or a trial's cloud notice) it checkpoints the running trials,\n"
     "releases them and exits 75.\n"
     "Options after -- go to every `spotrun run` (e.g. -- --every 10m --keep 2).",
     1, SR_CMD_ANY_OPS, SR_CMD_NEEDS_STORE},
    {"sweep set", cmd_set, "change the sweep's budget",
     "spotrun sweep set NAME --max-cost AMOUNT [--price-per-hour P]",
     "Sets the sweep's budget (0: none): what its trials together may cost, counting every\n"
     "attempt's instance hours. Workers stop claiming trials once it is reached, and running\n"
     "trials checkpoint and stop (exit 124); raising it lets work go on. docs/sweeps.md.",
     1, 1, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS},
    {"sweep delete", cmd_delete, "remove the sweep: its definition, end marks and trial runs",
     "spotrun sweep delete NAME",
     "Deletes each of the sweep's trial runs (those that record the sweep; a run that\n"
     "merely has a trial's name is left alone) under its lease, as gc does: a trial that\n"
     "a wrapper runs refuses the delete (exit 73) before anything is deleted. Then its end\n"
     "marks and definition.",
     1, 1, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS},
    {"sweep cancel", sr_cmd_sweep_cancel, "cancel trials: running ones checkpoint and stop",
     "spotrun sweep cancel NAME TRIAL...",
     "Records the cancel in the sweep's steering history. A running trial checkpoints and\n"
     "stops at its wrapper's next poll (--budget-poll; exit 124, end mark cancelled); one not\n"
     "running is marked cancelled at once. No worker claims them again (sweep retry does).\n"
     "TRIAL is K or A..B. docs/sweeps.md, \"Steering\".",
     2, SR_CMD_ANY_OPS, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS},
    {"sweep retry", sr_cmd_sweep_retry, "put failed, cancelled or pruned trials back in the queue",
     "spotrun sweep retry NAME TRIAL...",
     "Records the retry, then removes each trial's failed, cancelled or pruned mark: workers\n"
     "take it again and it resumes from its newest checkpoint. A done trial is refused (65),\n"
     "and so is one that has not ended; a running one too (73).",
     2, SR_CMD_ANY_OPS, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS},
    {"sweep pause", sr_cmd_sweep_pause, "workers start no trial until `sweep resume`",
     "spotrun sweep pause NAME [--stop]",
     "Workers stop claiming trials (they wait, and say so once); running trials go on, or\n"
     "with --stop checkpoint and stop at their next poll (exit 124, no end mark) and are\n"
     "taken again after `sweep resume`.",
     1, 1, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS},
    {"sweep resume", sr_cmd_sweep_resume, "workers take trials again after `sweep pause`",
     "spotrun sweep resume NAME", "Ends the pause in force: workers claim at their next look.", 1,
     1, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS},
    {"sweep priority", sr_cmd_sweep_priority, "set trials' priority: higher is claimed first",
     "spotrun sweep priority NAME TRIAL... --set P",
     "Workers claim the open trials of the highest priority first (at random among the\n"
     "first four of it); every trial's priority is 0 until set.",
     2, SR_CMD_ANY_OPS, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS},
    {"sweep show", sr_cmd_sweep_show, "one row per trial: state, attempts, cost, metrics",
     "spotrun sweep show NAME [--sort METRIC] [--maximize NAME[,NAME]] [--json] "
     "[--price-per-hour P [--on-demand-price-per-hour P]]",
     "One row per trial: parameters, state, attempts, preemptions, lost work, instance\n"
     "hours, cost, and the last and best value of each metric the job reported (best: the\n"
     "smallest, or the largest for --maximize). See docs/sweep-show.md.",
     1, 1, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS},
    {"sweep report", sr_cmd_sweep_report, "draw every trial on one time axis (SVG or HTML)",
     "spotrun sweep report NAME [-o sweep.svg|sweep.html] [--sort METRIC [--maximize NAME]]",
     "Draws one lane per trial on a shared time axis: attempts, notices, restarts, done.", 1, 1,
     SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS},
};

int sr_cmd_sweep(const struct sr_cmd *cmd, int argc, char **argv)
{
    (void)cmd;
    const char *sub = argc > 1 ? argv[1] : NULL;
    if (!sub || strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) {
        FILE *f = sub ? stdout : stderr;
        fprintf(f, "usage: spotrun sweep COMMAND NAME [options]\n\n"
                   "Hyperparameter sweeps: many trials of one command, each an ordinary run.\n\n"
                   "commands:\n");
        for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
            fprintf(f, "  %-9s %s\n", subs[i].name + 6, subs[i].summary);
        fprintf(
            f,
            "\nOn an engine, each array task runs `spotrun run --sweep NAME` (docs/sweeps.md).\n");
        return sub ? 0 : SR_EX_USAGE;
    }
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
        if (strcmp(sub, subs[i].name + 6) == 0)
            return subs[i].fn(&subs[i], argc - 1, argv + 1);
    const char *names[sizeof(subs) / sizeof(subs[0])];
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
        names[i] = subs[i].name + 6;
    const char *m = sr_did_you_mean(sub, names, sizeof(names) / sizeof(names[0]));
    if (m)
        fprintf(stderr,
                "spotrun sweep: unknown command \"%s\"; did you mean \"%s\"? (init, work, "
                "set, cancel, retry, pause, resume, priority, delete, show or report)\n",
                sub, m);
    else
        fprintf(stderr,
                "spotrun sweep: unknown command \"%s\" (init, work, set, cancel, retry, pause, "
                "resume, priority, delete, show or report)\n",
                sub);
    return SR_EX_USAGE;
}
