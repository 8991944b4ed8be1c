/*
 * cmd_sweep.c - `spotrun sweep init|set|delete` and the `sweep` dispatcher
 * (docs/sweeps.md).
 *
 * init writes the sweep's definition into the store (sweep.h), set its
 * budget, delete removes it with its trial runs under each run's lease.
 * The worker, `sweep work`, is sweep_work.c; the steering commands
 * cmd_sweep_steer.c; show and report cmd_sweep_view.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asha.h"
#include "catalog.h"
#include "cli.h"
#include "keeper.h"
#include "labels.h"
#include "layout.h"
#include "lease.h"
#include "pbt.h"
#include "log.h"
#include "sweep.h"
#include "sweep_budget.h"
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
    const char *best; /* --best final|best-step */
    struct sr_optlist objective;
    const char *pbt;
    struct sr_optlist perturb;
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

/* A --early-stop or --pbt RULE refused (err: why, example: a valid one);
 * SR_EX_USAGE. */
static int rule_refused(const char *opt, const char *rule, const char *err, const char *example)
{
    fprintf(stderr, "spotrun sweep init: invalid --%s \"%.200s\": %s (e.g. %s)\n", opt, rule, err,
            example);
    return SR_EX_USAGE;
}

/* Such a rule given with --add (why: said after); SR_EX_USAGE. */
static int rule_with_add(const char *opt, const char *why)
{
    fprintf(stderr, "spotrun sweep init: --%s is given when the sweep is made, not with --add%s\n",
            opt, why);
    return SR_EX_USAGE;
}

/* --early-stop: the sweep's early-stopping rule (asha.h), part of its
 * definition like the labels. 0, or SR_EX_USAGE after saying why. */
static int init_early_stop(const struct init_opts *o, struct sr_sweep *def)
{
    if (!o->early_stop)
        return 0;
    struct sr_asha rule;
    char err[200];
    if (sr_asha_parse(o->early_stop, &rule, err, sizeof(err)) < 0)
        return rule_refused("early-stop", o->early_stop, err, "loss:min,grace=1,eta=3,max=100");
    if (o->add)
        return rule_with_add("early-stop", " (every trial is judged by the same rule)");
    def->early_stop = sr_asha_to_json(&rule);
    return def->early_stop ? 0 : SR_EX_SOFTWARE;
}

/* --pbt and --perturb: population-based training (pbt.h), part of the
 * definition. 0, or SR_EX_USAGE after saying why. */
static int init_pbt(const struct init_opts *o, struct sr_sweep *def)
{
    if (!o->pbt && o->perturb.n) {
        fprintf(stderr, "spotrun sweep init: --perturb needs --pbt (the rule it perturbs for)\n");
        return SR_EX_USAGE;
    }
    if (!o->pbt)
        return 0;
    struct sr_pbt rule;
    char err[200];
    if (sr_pbt_parse(o->pbt, &rule, err, sizeof(err)) < 0)
        return rule_refused("pbt", o->pbt, err, "loss:min,interval=4,quantile=0.25");
    if (o->add)
        return rule_with_add("pbt", "");
    if (o->early_stop) {
        fprintf(stderr, "spotrun sweep init: --pbt and --early-stop do not go together (PBT "
                        "replaces a bad trial's weights instead of stopping it)\n");
        return SR_EX_USAGE;
    }
    json_t *perturb = json_object();
    for (size_t i = 0; i < o->perturb.n; i++) {
        size_t nlen = 0;
        if (sr_pbt_perturb_check(o->perturb.v[i], &nlen, err, sizeof(err)) < 0) {
            fprintf(stderr,
                    "spotrun sweep init: invalid --perturb \"%.200s\": %s (e.g. lr=0.8,1.2 or "
                    "lr=0.5,2,resample=0.25 or opt=resample or seed=keep)\n",
                    o->perturb.v[i], err);
            json_decref(perturb);
            return SR_EX_USAGE;
        }
        char name[SR_SWEEP_PARAM_NAME_MAX + 1];
        snprintf(name, sizeof(name), "%.*s", (int)nlen, o->perturb.v[i]);
        json_object_set_new(perturb, name, json_string(o->perturb.v[i] + nlen + 1));
    }
    def->pbt = sr_pbt_to_json(&rule, perturb);
    json_decref(perturb);
    return def->pbt ? 0 : SR_EX_SOFTWARE;
}

/* Every --perturb names a parameter of the sweep. */
static int pbt_names_check(const struct sr_sweep *def)
{
    const char *name;
    const json_t *v;
    json_object_foreach(json_object_get(def->pbt, "perturb"), name, v)
    {
        size_t i = 0;
        while (i < sr_sweep_nparams(def) && strcmp(sr_sweep_param(def, i), name) != 0)
            i++;
        if (i == sr_sweep_nparams(def)) {
            fprintf(stderr, "spotrun sweep init: --perturb %s: the sweep has no parameter %s\n",
                    name, name);
            return SR_EX_USAGE;
        }
    }
    return 0;
}

/* --best and --objective: how the sweep names its best trial, part of its
 * definition like the labels. 0, or SR_EX_USAGE after saying why. */
static int init_best(const struct init_opts *o, struct sr_sweep *def)
{
    if (o->best && strcmp(o->best, "final") != 0 && strcmp(o->best, "best-step") != 0) {
        fprintf(stderr,
                "spotrun sweep init: invalid --best \"%.200s\": final (each done trial's last "
                "value, the default) or best-step (its best value at any step)\n",
                o->best);
        return SR_EX_USAGE;
    }
    if ((o->best || o->objective.n) && o->add) {
        fprintf(stderr, "spotrun sweep init: --best and --objective are given when the sweep is "
                        "made, not with --add (every trial is ranked by the same rule)\n");
        return SR_EX_USAGE;
    }
    def->best_step = o->best && strcmp(o->best, "best-step") == 0;
    if (!o->objective.n)
        return 0;
    def->objectives = json_array();
    for (size_t i = 0; i < o->objective.n; i++) {
        char err[200];
        json_t *obj = sr_sweep_objective_parse(o->objective.v[i], err, sizeof(err));
        if (!obj) {
            fprintf(stderr,
                    "spotrun sweep init: invalid --objective \"%.200s\": %s (e.g. "
                    "val_loss:min)\n",
                    o->objective.v[i], err);
            return SR_EX_USAGE;
        }
        json_array_append_new(def->objectives, obj);
    }
    if (!sr_sweep_objectives_valid(def->objectives)) {
        fprintf(stderr, "spotrun sweep init: --objective: at most %d, each metric once\n",
                SR_SWEEP_OBJECTIVES_MAX);
        return SR_EX_USAGE;
    }
    return 0;
}

/* The options that need no store: the name, --seed, --max-cost, --at;
 * *seed parsed, a --max-cost left out made 0. 0, or SR_EX_USAGE after
 * saying why. */
static int init_check(struct init_opts *o, const char *name, int64_t *seed)
{
    if (!sr_sweep_name_valid(name)) {
        fprintf(stderr,
                "spotrun sweep init: invalid sweep name \"%s\" (letters, digits, . _ -; at most "
                "%d; not \"sweeps\")\n",
                name, SR_SWEEP_NAME_MAX);
        return SR_EX_USAGE;
    }
    if (o->seed && sr_parse_int(o->seed, 0, INT64_MAX, seed) < 0) {
        fprintf(stderr,
                "spotrun sweep init: invalid value \"%s\" for --seed (a non-negative "
                "integer)\n",
                o->seed);
        return SR_EX_USAGE;
    }
    if (o->seed && o->random == UINT64_MAX) {
        fprintf(stderr, "spotrun sweep init: --seed needs --random K\n");
        return SR_EX_USAGE;
    }
    if (o->max_cost == 0) {
        fprintf(stderr, "spotrun sweep init: --max-cost 0 would start no trial: for no budget, "
                        "leave --max-cost out\n");
        return SR_EX_USAGE;
    }
    if (o->max_cost < 0)
        o->max_cost = 0;
    if (budget_check("sweep init", o->max_cost, o->price_per_hour))
        return SR_EX_USAGE;
    if (o->at != UINT64_MAX && !o->add) {
        fprintf(stderr, "spotrun sweep init: --at N needs --add\n");
        return SR_EX_USAGE;
    }
    return 0;
}

/* Writes def as a new sweep (or finds it defined, unchanged) and says so.
 * The exit code. */
static int init_create(struct sr_store *st, const struct sr_sweep *def, unsigned random)
{
    const int rc = sr_sweep_create(st, def);
    const char *again = rc == 1 ? " (already defined, unchanged)" : "";
    if (rc >= 0 && random == SR_SWEEP_SEARCH)
        printf("sweep %s: a search space of %zu parameter%s, no trials yet (a driver adds "
               "them)%s in %s\n",
               def->name, sr_sweep_nparams(def), sr_sweep_nparams(def) == 1 ? "" : "s", again,
               sr_store_url(st));
    else if (rc >= 0)
        printf("sweep %s: %zu trial%s%s in %s\n", def->name, sr_sweep_count(def),
               sr_sweep_count(def) == 1 ? "" : "s", again, sr_store_url(st));
    if (rc == -EEXIST || rc == -ENOTEMPTY)
        fprintf(stderr, "spotrun sweep init: %s\n", sr_strerror(rc));
    return rc >= 0            ? 0
           : rc == -EEXIST    ? SR_EX_DATAERR
           : rc == -ENOTEMPTY ? SR_EX_CANTCREAT
                              : sr_fail(rc, "sweep init");
}

/* --max-cost / --price-per-hour once the trials are written: a price
 * alone is kept too, and changes no budget (--add). The exit code. */
static int init_budget(struct sr_store *st, const char *name, const struct init_opts *o)
{
    double max_cost = o->max_cost;
    if (max_cost <= 0 && o->price_per_hour <= 0)
        return 0;
    struct sr_sweep_budget old;
    if (max_cost <= 0 && sr_sweep_budget_read(st, name, &old) == 0)
        max_cost = old.max_cost;
    return budget_write(st, name, max_cost, o->price_per_hour);
}

static int cmd_init(const struct sr_cmd *cmd, int argc, char **argv)
{
    /* -1: not given; a given 0 is refused */
    struct init_opts o = {.max_cost = -1, .random = UINT64_MAX, .at = UINT64_MAX};
    const struct sr_opt opts[] = {
        {"param", 'p', NULL, SR_OPT_MULTI, &o.params, "NAME=VALUES",
         "a parameter: a=1,2,3 or n=0..7 (grid); uniform:LO,HI, loguniform:LO,HI, "
         "int:LO,HI[,step=S|,log], choice:a,b (with --random); absent: (a trial without it); "
         "repeat for each"},
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
         "early stopping, METRIC:min|max[,grace=N][,eta=K][,max=M][,patient]: at rungs "
         "grace*eta^k a trial whose METRIC is not in the top 1/eta so far (with fewer than eta "
         "values there: not the best so far; patient: goes on) checkpoints and stops (pruned); "
         "fixed when the sweep is made"},
        {"best", 0, NULL, SR_OPT_STR, &o.best, "RULE",
         "which value ranks a done trial: final (its last value, the default) or best-step "
         "(its best at any step); only done trials are named best; fixed when the sweep is "
         "made"},
        {"objective", 0, NULL, SR_OPT_MULTI, &o.objective, "METRIC:min|max",
         "what the sweep optimizes: one names the metric and direction of its best trial, "
         "several give a Pareto front (sweep show); repeatable; fixed when the sweep is made"},
        {"pbt", 0, NULL, SR_OPT_STR, &o.pbt, "RULE",
         "population-based training, METRIC:min|max,interval=K[,quantile=Q]: every K steps a "
         "trial in the bottom Q (default 0.25) of the values at that round takes the newest "
         "checkpoint of one in the top Q and goes on with its parameters perturbed; fixed when "
         "the sweep is made"},
        {"perturb", 0, NULL, SR_OPT_MULTI, &o.perturb, "NAME=RULE",
         "with --pbt, how a parameter is perturbed: factors F1,F2,... (one drawn, clamped to "
         "its range; default 0.8,1.2), resample=P (draw anew with probability P), resample or "
         "keep; a choice is resampled; repeatable"},
        SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    const char *name = ctx.ops[0];
    int64_t seed = 0;
    if (init_check(&o, name, &seed)) {
        sr_store_close(ctx.st);
        return SR_EX_USAGE;
    }
    struct sr_labels labels = {0};
    if (init_labels(&o, &labels)) {
        sr_store_close(ctx.st);
        return SR_EX_USAGE;
    }
    struct sr_sweep def = {0};
    if (init_early_stop(&o, &def) || init_best(&o, &def) || init_pbt(&o, &def)) {
        sr_sweep_free(&def);
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
    if (rc == 0 && def.pbt && pbt_names_check(&def)) {
        sr_sweep_free(&def);
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
        code = init_create(ctx.st, &def, random);
    }
    if (code == 0)
        code = init_budget(ctx.st, name, &o);
    sr_sweep_free(&def);
    sr_store_close(ctx.st);
    return code;
}

/* ---- sweep set ----------------------------------------------------------------- */

/* `sweep set NAME --max-cost AMOUNT [--price-per-hour P]`: a new budget
 * (0: none); the price stays unless given. Workers see it at their next
 * look, running trials at their next budget poll (--budget-poll). */
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
        sr_key_lease(key, sizeof(key), run, -1);
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
    {"sweep work", sr_cmd_sweep_work,
     "run the sweep's trials on this machine (a plain fleet's worker)",
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
     "stops within seconds (its wrapper looks every 3 s; exit 124, end mark cancelled); one not\n"
     "running is marked cancelled at once. No worker claims them again (sweep retry does).\n"
     "TRIAL is K or A..B. docs/sweeps.md, \"Steering\".",
     2, SR_CMD_ANY_OPS, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS},
    {"sweep retry", sr_cmd_sweep_retry, "put failed, cancelled or pruned trials back in the queue",
     "spotrun sweep retry NAME TRIAL...",
     "Records the retry, then removes each trial's failed, cancelled or pruned mark: workers\n"
     "take it again and it resumes from its newest checkpoint (starts from scratch without\n"
     "one). A done trial is refused (65), and so is one that has not ended; a running one\n"
     "too (73).",
     2, SR_CMD_ANY_OPS, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS},
    {"sweep pause", sr_cmd_sweep_pause, "workers start no trial until `sweep resume`",
     "spotrun sweep pause NAME [--stop]",
     "Workers stop claiming trials (they wait, and say so once); running trials go on, or\n"
     "with --stop checkpoint and stop within seconds (exit 124, no end mark) and are\n"
     "taken again after `sweep resume`.",
     1, 1, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS},
    {"sweep resume", sr_cmd_sweep_resume, "workers take trials again after `sweep pause`",
     "spotrun sweep resume NAME", "Ends the pause in force: workers claim at their next look.", 1,
     1, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS},
    {"sweep priority", sr_cmd_sweep_priority, "set trials' priority: higher is claimed first",
     "spotrun sweep priority NAME TRIAL... --set P",
     "Workers claim the open trials of the highest priority first (at random among the\n"
     "first four of it; at equal priority a trial that ran before, preempted or paused,\n"
     "before a fresh one); every trial's priority is 0 until set.",
     2, SR_CMD_ANY_OPS, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS},
    {"sweep show", sr_cmd_sweep_show, "one row per trial: state, attempts, cost, metrics",
     "spotrun sweep show NAME [TRIAL] [--sort METRIC] [--maximize NAME[,NAME]] [--json] "
     "[--price-per-hour P [--on-demand-price-per-hour P]]",
     "One row per trial: parameters, state, attempts, preemptions, lost work, instance\n"
     "hours, cost, and the last and best value of each metric the job reported (best: the\n"
     "smallest, or the largest for --maximize); the best trial: the best done trial by its\n"
     "final value (sweep init --best, --objective). With TRIAL, that trial alone: its\n"
     "metrics, learning curves and the rungs it reached, with why it was pruned (the rung,\n"
     "its value and the cut-off). See docs/sweep-show.md.",
     1, 2, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS | SR_CMD_READER},
    {"sweep report", sr_cmd_sweep_report, "draw every trial on one time axis (SVG or HTML)",
     "spotrun sweep report NAME [-o sweep.svg|sweep.html] [--sort METRIC [--maximize NAME]]",
     "Draws one lane per trial on a shared time axis: attempts, notices, restarts, done.", 1, 1,
     SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS | SR_CMD_READER},
    {"sweep export", sr_cmd_sweep_export, "write the sweep as a study in Optuna's storage",
     "spotrun sweep export NAME --optuna URL [--study NAME] [--metric NAME[:min|max]] [--space "
     "M:F]",
     "Writes every trial into the Optuna study (default: named after the sweep) at URL, an\n"
     "RDB URL (sqlite:///study.db) or journal:PATH: its parameters and their distributions,\n"
     "state (COMPLETE, PRUNED, FAIL, RUNNING), intermediate values per step and final\n"
     "value(s). Again later, it adds the new trials and finishes those that ended; a trial\n"
     "is matched by its number (user attr spotrun_trial). Needs Optuna in SPOTRUN_PYTHON,\n"
     "python3 or /usr/bin/python3 (69 without). docs/sweeps.md, \"Exporting to Optuna\".",
     1, 1, SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS},
};

int sr_cmd_sweep(const struct sr_cmd *cmd, int argc, char **argv)
{
    (void)cmd;
    const int code = sr_cmd_group(
        subs, sizeof(subs) / sizeof(subs[0]), 9,
        "usage: spotrun sweep COMMAND NAME [options]\n\n"
        "Hyperparameter sweeps: many trials of one command, each an ordinary run.\n\ncommands:\n",
        "\nOn an engine, each array task runs `spotrun run --sweep NAME` (docs/sweeps.md).\n", argc,
        argv);
    if (code >= 0)
        return code;
    const char *sub = argv[1];
    const char *names[sizeof(subs) / sizeof(subs[0])];
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
        names[i] = subs[i].name + 6;
    const char *m = sr_did_you_mean(sub, names, sizeof(names) / sizeof(names[0]));
    if (m)
        fprintf(stderr,
                "spotrun sweep: unknown command \"%s\"; did you mean \"%s\"? (init, work, "
                "set, cancel, retry, pause, resume, priority, delete, show, report or export)\n",
                sub, m);
    else
        fprintf(stderr,
                "spotrun sweep: unknown command \"%s\" (init, work, set, cancel, retry, pause, "
                "resume, priority, delete, show, report or export)\n",
                sub);
    return SR_EX_USAGE;
}
