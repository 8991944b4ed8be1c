/*
 * pbt.h - population-based training over the store (docs/sweeps.md,
 * "Population-based training"): the rule, the decision (pure) and the
 * records.
 *
 * The rule (sweep init --pbt METRIC:min|max,interval=K[,quantile=Q] and
 * --perturb NAME=RULE) makes a round of every K steps of METRIC: a trial's
 * first report at a step >= r*K (r >= 1) is its value at round r. Among
 * it and every other trial's newest value (at the highest round it
 * recorded from r-3 up: the wrapper gathers them, run_pbt.c), sorted best
 * first (ties by trial), the bottom ceil(n*Q) (at most n/2) take the newest
 * checkpoint of one of the top as many (drawn) and go on with that
 * trial's parameters perturbed (explore, sweep.h sr_sweep_explore). The
 * draws come from a generator seeded by the sweep's seed, the trial and
 * the round: the same set of values gives the same decision.
 *
 *   sweeps/<name>/pbt/rounds/<R>/<TRIAL>.json   trial's value at round R:
 *       {"format","trial","round","step","value","unix_ms","host"}
 *   sweeps/<name>/pbt/lineage/<TRIAL>/<R>.json  trial's exploit at round R:
 *       {"format","trial","round","step","value","donor","donor_value",
 *        "donor_seq","donor_step","from":{...},"params":{...},"unix_ms","host"}
 *   sweeps/<name>/pbt/lineage/<TRIAL>/<R>.applied.json  the exploit is done:
 *       the donor's checkpoint is the trial's checkpoint "seq"
 *
 * All create-only: a second write of the same round's value or decision
 * finds the first one, which stands (a decision is made once, whoever
 * crashes). A trial's current parameters are those of its newest
 * decision (its sweep values before any).
 */
#ifndef SPOTRUN_PBT_H
#define SPOTRUN_PBT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define SR_PBT_FACTORS_MAX 8

struct sr_pbt {
    char metric[65];
    int maximize;
    int64_t interval; /* K >= 1 */
    double quantile;  /* (0, 0.5] */
};

/* "METRIC:min|max,interval=K[,quantile=Q]": 0, or -EINVAL with err. */
int sr_pbt_parse(const char *spec, struct sr_pbt *out, char *err, size_t errlen);
/* "NAME=RULE" of --perturb (RULE: F1,F2,...[,resample=P] | resample[=P] |
 * keep) checked; *name_len gets the name's length. 0, or -EINVAL with err. */
int sr_pbt_perturb_check(const char *spec, size_t *name_len, char *err, size_t errlen);
/* The stored form: {"metric","mode","interval","quantile","perturb":{NAME:RULE}}. */
json_t *sr_pbt_to_json(const struct sr_pbt *p, json_t *perturb);
int sr_pbt_from_json(const json_t *o, struct sr_pbt *out);

/* One value at a round. */
struct sr_pbt_val {
    long trial;
    double value;
};
/* The decision for trial among vals[0..n) (its own among them): the donor
 * (>= 0) when it is in the bottom quantile, -1 when it goes on as it is.
 * *k gets the quantile's size. Pure. */
long sr_pbt_decide(const struct sr_pbt *p, const struct sr_pbt_val *vals, size_t n, long trial,
                   uint64_t seed, size_t *k);
/* The generator's seed for (sweep seed, trial, round). */
uint64_t sr_pbt_seed(uint64_t sweep_seed, long trial, long round);
/* The explore of params (an object name -> value) by the sweep's specs
 * and the rule's perturb: a new object. */
json_t *sr_pbt_explore(const json_t *pbt_json, const json_t *spec, const json_t *params,
                       uint64_t *state);

/* ---- records ---- */
int sr_pbt_put_value(struct sr_store *st, const char *sweep, long trial, long round, int64_t step,
                     double value);
/* Every value at round (skipping ones not believed). */
int sr_pbt_list_values(struct sr_store *st, const char *sweep, long round, struct sr_pbt_val **out,
                       size_t *n);
/* Writes the decision d (its "trial" and "round" say where) create-only;
 * -EEXIST when one is there: *existing (may be NULL) gets it. */
int sr_pbt_put_decision(struct sr_store *st, const char *sweep, const json_t *d, json_t **existing);
/* Trial's decisions, by round (an array, each with "applied": seq or
 * absent), believed ones only. */
int sr_pbt_lineage(struct sr_store *st, const char *sweep, long trial, json_t **out);
int sr_pbt_mark_applied(struct sr_store *st, const char *sweep, long trial, long round,
                        uint64_t seq);
/* Removes trial's records (run --fresh of the trial). */
int sr_pbt_remove_trial(struct sr_store *st, const char *sweep, long trial);

/* "lr 0.01 -> 0.008, bs 32 -> 64": the parameters that differ between two
 * decisions' parameter objects (from: before, to: after; "-" for one
 * absent), or "parameters unchanged". */
void sr_pbt_changes(const json_t *from, const json_t *to, char *buf, size_t len);

#endif
