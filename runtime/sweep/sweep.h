/*
 * sweep.h - a sweep: many trials of one command, each an ordinary run
 * named "<sweep>-<K>" (docs/sweeps.md).
 *
 *   sweeps/<name>/def/000000.json   the definition: parameter names, the command
 *                                   with {param} placeholders, trials 0..n-1
 *   sweeps/<name>/def/000001.json   trials appended later (sweep init --add)
 *   sweeps/<name>/end/<K>.done      trial K ended: the job exited 0
 *   sweeps/<name>/end/<K>.failed    trial K failed past --max-restarts
 *                                   ({"exit_code","cause","unix_ms","host"})
 *   sweeps/<name>/end/<K>.cancelled trial K was cancelled (sweep cancel), and
 *   sweeps/<name>/end/<K>.pruned    pruned (early stopping): the same fields
 *   sweeps/<name>/rungs/...         early stopping's rung records (sweep_rungs.h)
 *   <name>-<K>/SWEEP                trial K's run is this sweep's: {"sweep","id","trial"},
 *                                   written create-only by the trial's first wrapper
 *
 * Every object is create-only (sr_store_put_if with no match): a definition
 * part is never replaced, so trial K means the same parameters forever, and
 * two `sweep init --add` racing get consecutive parts. The end marks are
 * named by state so that one listing of end/ gives every trial's state
 * (fleet workers and `sweep show` never read 1000 objects to find the
 * open ones). Who is running a trial is its run's LEASE (lease.h).
 *
 * Nothing read from the store is trusted: a part that does not parse, whose
 * "sweep" or "part" is not its key's, a trial with the wrong parameters or
 * values that are not strings makes the whole sweep unreadable (-EBADMSG
 * with a message), never a partial one. An end mark counts only when its
 * content agrees with its name (trial, state) and its exit code is 0..255.
 *
 * A trial's run is provably the trial's: part 0 carries a random id, and
 * the trial's run records it (SWEEP). A run named "<name>-<K>" that does
 * not is never adopted: sweep init refuses to define a sweep over such
 * runs, and a trial's wrapper refuses to run one.
 */
#ifndef SPOTRUN_SWEEP_H
#define SPOTRUN_SWEEP_H

#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define SR_SWEEP_NAME_MAX 120      /* "<name>-<K>" stays a run id (manifest.h) */
#define SR_SWEEP_TRIALS_MAX 100000 /* trials per sweep */
#define SR_SWEEP_PARAMS_MAX 32     /* parameters per trial */
#define SR_SWEEP_PARAM_NAME_MAX 63 /* [A-Za-z_][A-Za-z0-9_]* */
#define SR_SWEEP_VALUE_MAX 256     /* bytes of one value */
#define SR_SWEEP_FORMAT 1
#define SR_SWEEP_SEARCH UINT_MAX /* sr_sweep_generate: a search space, no trials */

/* A sweep's definition, all parts read. */
struct sr_sweep {
    char name[SR_SWEEP_NAME_MAX + 1];
    json_t *params;  /* array of the parameter names, in order */
    json_t *command; /* array of strings with {param} placeholders; may be empty */
    json_t *trials;  /* array of objects: param name -> value (a string) */
    json_t *spec;    /* how part 0's trials were made: {"param":[...],"random":K,"seed":S} */
    unsigned parts;  /* definition objects read */
    size_t first_part_trials; /* trials of part 0 (the ones sweep init defined) */
    char id[33];              /* part 0's random id ("" in definitions made before ids) */
    /* part 0's "labels" (sweep init --label): an object of label -> value
     * as read, NULL = none; every trial's run gets them (labels.h checks
     * them there). */
    json_t *labels;
    /* part 0's "early_stop" (sweep init --early-stop; asha.h), NULL = none */
    json_t *early_stop;
    /* part 0's "best" (sweep init --best): 1 = "best-step" (each done
     * trial ranked by its best value at any step), 0 = "final" (absent:
     * by its last reported value) */
    int best_step;
    /* part 0's "objectives" (sweep init --objective METRIC:min|max):
     * [{"metric","direction"}], checked (sr_sweep_objectives_valid); NULL
     * = none */
    json_t *objectives;
    /* part 0's "pbt" (sweep init --pbt, --perturb; pbt.h), NULL = none */
    json_t *pbt;
};

/* --objective's METRIC:min|max (the direction after the last ':'): an
 * object {"metric","direction"}, or NULL with err saying why. */
#define SR_SWEEP_OBJECTIVES_MAX 8
json_t *sr_sweep_objective_parse(const char *spec, char *err, size_t errlen);
/* 1 when o is an array of at most SR_SWEEP_OBJECTIVES_MAX such objects,
 * each metric named once. */
int sr_sweep_objectives_valid(const json_t *o);
/* Objective i's metric and whether larger is better (i < its count). */
const char *sr_sweep_objective(const struct sr_sweep *sw, size_t i, int *maximize);
size_t sr_sweep_nobjectives(const struct sr_sweep *sw);

/* A sweep name: a run id of at most SR_SWEEP_NAME_MAX characters, not
 * "sweeps". */
int sr_sweep_name_valid(const char *name);
/* A parameter name: [A-Za-z_][A-Za-z0-9_]*, at most SR_SWEEP_PARAM_NAME_MAX. */
int sr_sweep_param_name_valid(const char *name);

/* Reads every definition part of name: 0, -ENOENT (no such sweep, with a
 * message), -EBADMSG (a part that is not a valid definition), store errors. */
int sr_sweep_read(struct sr_store *st, const char *name, struct sr_sweep *out);
void sr_sweep_free(struct sr_sweep *sw);

size_t sr_sweep_count(const struct sr_sweep *sw);
size_t sr_sweep_nparams(const struct sr_sweep *sw);
const char *sr_sweep_param(const struct sr_sweep *sw, size_t i);
/* Trial's value of param, NULL when out of range. */
const char *sr_sweep_value(const struct sr_sweep *sw, size_t trial, const char *param);

/* Writes def as part 0 of a new sweep (def->name, params, command, trials,
 * spec; parts and id are ignored, a new id is drawn): 0 when created, 1 when
 * the same definition (parameters, command and exactly part 0's trials) is
 * already there, -EEXIST when a different one is (the message says what
 * differs), -ENOTEMPTY when the store holds runs "<name>-<K>" this sweep
 * did not make (the message names some). */
int sr_sweep_create(struct sr_store *st, const struct sr_sweep *def);
/* Appends more->trials to sweep more->name as its next part. -EEXIST when
 * the parameter names are not the sweep's, or a command is given that is
 * not the sweep's (the stored one stays: the message says so). *first gets
 * the index of the first new trial. */
int sr_sweep_add(struct sr_store *st, const struct sr_sweep *more, size_t *first);
/* sr_sweep_add only while the sweep has exactly `at` trials (the new ones
 * get at, at+1, ...): -ESTALE with a message, nothing written, when it has
 * another count (another writer came first: read again). A driver that
 * asks a sampler for trial N adds it so, and never exceeds its total. */
int sr_sweep_add_at(struct sr_store *st, const struct sr_sweep *more, size_t at, size_t *first);

/* Whose run run_id is, as trial of sw: 0 when it records this sweep and
 * trial (SWEEP), 1 when it holds nothing but leases (nothing to adopt),
 * -EEXIST with a message when it is another's (another sweep or trial, or a
 * run with checkpoints, events or DONE that records no sweep), store
 * errors. */
int sr_sweep_run_owner(struct sr_store *st, const struct sr_sweep *sw, size_t trial,
                       const char *run_id);
/* The same, and binds an empty run to the trial (create-only SWEEP): 0
 * when the run is the trial's now, -EEXIST (another's), store errors. Call
 * it holding the run's lease, before reading anything else of the run. */
int sr_sweep_bind_run(struct sr_store *st, const struct sr_sweep *sw, size_t trial,
                      const char *run_id);

/* Trial's command: each {param} in tmpl replaced by its value ("{{" and
 * "}}" stand for braces). -EINVAL with a message for an unknown parameter
 * or an unclosed brace. Free *out with sr_sweep_argv_free(). */
int sr_sweep_expand(const struct sr_sweep *sw, size_t trial, char *const tmpl[], char ***out);
void sr_sweep_argv_free(char **argv);

/* The run id of trial K: "<name>-<K>". */
void sr_sweep_run_id(const char *name, size_t trial, char *buf, size_t len);
/* The trial of a run id of sweep name, or -1 when it is not one. */
long sr_sweep_trial_of(const char *name, const char *run_id);

/* How a trial ended. */
enum sr_trial_end {
    SR_TRIAL_OPEN = 0,
    SR_TRIAL_DONE = 1,
    SR_TRIAL_FAILED = 2,
    SR_TRIAL_CANCELLED = 3, /* its sweep's operator cancelled it (sweep_steer.h) */
    SR_TRIAL_PRUNED = 4,    /* early stopping ended it */
};
/* "done", "failed", "cancelled", "pruned" ("" for open). */
const char *sr_trial_end_name(enum sr_trial_end s);
struct sr_trial_end_info {
    enum sr_trial_end state;
    int exit_code;   /* the job's last exit code (failed), 0 (done) */
    char cause[64];  /* "exit 3", "signal KILL" (failed), "pruned" */
    int64_t unix_ms; /* when it ended */
    char host[128];
    char by[128]; /* who ended it (cancelled: the operator's user@host), "" = unsaid */
};
/* Marks trial ended (create-only: a mark already there stays, 0). */
int sr_sweep_mark_end(struct sr_store *st, const char *name, size_t trial,
                      const struct sr_trial_end_info *end);
/* Reads trial's mark (done, failed, pruned): 0, -ENOENT when it has none. */
int sr_sweep_read_end(struct sr_store *st, const char *name, size_t trial,
                      struct sr_trial_end_info *end);
/* Reads only trial's failed mark (one request): 0, -ENOENT. */
int sr_sweep_read_failed(struct sr_store *st, const char *name, size_t trial,
                         struct sr_trial_end_info *end);
/* Reads only trial's mark of state s, as the marks' listing named it (one
 * request): 0, -ENOENT. */
int sr_sweep_read_mark(struct sr_store *st, const char *name, size_t trial, enum sr_trial_end s,
                       struct sr_trial_end_info *end);
/* Removes trial's marks (run --fresh of a trial). */
int sr_sweep_clear_end(struct sr_store *st, const char *name, size_t trial);
/* Removes trial's mark of one state only (sweep retry: never a done one). */
int sr_sweep_clear_mark(struct sr_store *st, const char *name, size_t trial, enum sr_trial_end s);
/* One listing of end/: state[K] for K < n (SR_TRIAL_OPEN when unmarked). */
int sr_sweep_list_ends(struct sr_store *st, const char *name, size_t n, unsigned char *state);
/* Removes the sweep's definition (part 0 first: from then on the sweep is
 * gone for every reader) and its end marks; its trials' runs are the
 * caller's (sweep delete). */
int sr_sweep_remove(struct sr_store *st, const char *name);

/* ---- making trials (sweep_gen.c) ----------------------------------------- */

/* Trials from parameter specs "name=..." (sweep init --param):
 *   grid (random == 0): every combination, the first parameter varying
 *   slowest, of "a=1,2,3" (values as written) and "n=0..7" (integers);
 *   random (random == K > 0): K trials drawn from a generator seeded with
 *   seed (the same specs and seed give the same trials on any machine) of
 *   "x=uniform:LO,HI", "x=loguniform:LO,HI" (LO > 0), "x=int:LO,HI"
 *   (inclusive), "x=choice:a,b,c"; a list or a range is a choice;
 *   a search space (random == SR_SWEEP_SEARCH): the random specs checked
 *   and kept in out->spec ("random": 0, "search": true), no trials: a
 *   driver adds them (python3 -m spotrun.optuna_driver, docs/sweeps.md).
 * Fills out->params, out->trials and out->spec. -EINVAL with a message
 * naming the spec for bad syntax, a duplicate name, too many trials. */
int sr_sweep_generate(const char *const specs[], size_t n, unsigned random, uint64_t seed,
                      struct sr_sweep *out);
/* PBT's explore (pbt.h) of one value of the parameter that --param spec
 * made: with probability resample (or always for a list, range or
 * choice, or when value is not a number, or no factors are given) a new
 * draw from spec; else value times one of factors (drawn), clamped to the
 * spec's range (an int rounded to its step). state is the generator's. */
int sr_sweep_explore(const char *spec, const char *value, const double *factors, size_t nfactors,
                     double resample, uint64_t *state, char *out, size_t len);

#endif
