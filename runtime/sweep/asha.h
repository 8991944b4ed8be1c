/*
 * asha.h - a sweep's early-stopping rule: asynchronous successive halving
 * (ASHA; Li et al., "A System for Massively Parallel Hyperparameter
 * Tuning", MLSys 2020), the pure part (docs/sweeps.md, "Early stopping").
 *
 * The rule (sweep init --early-stop
 * METRIC:min|max[,grace=N][,eta=K][,max=M][,patient]) puts rungs at steps
 * r_k = grace * eta^k (k = 0, 1, ...; r_k <= max when max is given). A
 * trial's first report of METRIC at a step >= r_k is its value at rung k;
 * it goes on iff fewer than max(1, floor(n / eta)) of the other values
 * recorded at rung k are strictly better than it (n: those values and its
 * own; the smallest are the best with min, the largest with max; ties
 * share a place, so ties go on). While fewer than eta values are recorded
 * that is "it is the best so far there, ties included" (Optuna's
 * SuccessiveHalvingPruner); with patient, every trial goes on then
 * instead (nobody waits for another trial either way: asynchronous
 * promotion). A value that is not a number is the worst.
 *
 * Pure: no I/O, no clock, no globals. The store side is sweep_rungs.h.
 */
#ifndef SPOTRUN_ASHA_H
#define SPOTRUN_ASHA_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define SR_ASHA_METRIC_MAX 64 /* [A-Za-z0-9_.:-]{1,64}, as `spotrun metric` takes */
#define SR_ASHA_RUNGS_MAX 64  /* rungs of one rule (grace * 2^63 overflows first) */
#define SR_ASHA_STEP_MAX ((int64_t)1 << 53)

struct sr_asha {
    char metric[SR_ASHA_METRIC_MAX + 1];
    int maximize;  /* mode max: larger is better */
    int64_t grace; /* the first rung's step, >= 1 (default 1) */
    int64_t eta;   /* the reduction factor, >= 2 (default 3) */
    int64_t max;   /* the last step a rung may be at, 0 = no limit */
    int patient;   /* fewer than eta values at a rung: every trial goes on */
};

/* The "METRIC:min|max" head of spec (up to its first comma): the metric
 * ([A-Za-z0-9_.:-]{1,64}) and whether larger is better. Returns the head's
 * length, or -EINVAL with err said. Shared by --early-stop and --pbt. */
int sr_metric_mode_parse(const char *spec, char metric[SR_ASHA_METRIC_MAX + 1], int *maximize,
                         char *err, size_t errlen);
/* A rule "METRIC:min|max[,OPTION]...": the head as sr_metric_mode_parse,
 * then each OPTION (len bytes at opt, not NUL-terminated) handed to
 * each, which says what is wrong in err and returns < 0. 0 or -EINVAL. */
typedef int (*sr_rule_option_fn)(void *ctx, const char *opt, size_t len, char *err, size_t errlen);
int sr_rule_parse(const char *spec, char metric[SR_ASHA_METRIC_MAX + 1], int *maximize,
                  sr_rule_option_fn each, void *ctx, char *err, size_t errlen);

/* Parses "METRIC:min|max[,grace=N][,eta=K][,max=M][,patient]" (the metric is the
 * text before the last ':' of the first field). -EINVAL with the reason in
 * err (naming the part of the spec that is wrong). */
int sr_asha_parse(const char *spec, struct sr_asha *out, char *err, size_t errlen);
/* The rule as stored in definition part 0 ("early_stop"):
 * {"metric","mode","grace","eta","max","patient"} ("max" absent when none,
 * "patient" absent unless true: a definition made before it reads the
 * same). */
json_t *sr_asha_to_json(const struct sr_asha *a);
/* The rule from its JSON: 0, -EBADMSG when it is not a valid rule. */
int sr_asha_from_json(const json_t *o, struct sr_asha *out);
/* "loss:min,grace=1,eta=3,max=9[,patient]", the spec that gives this rule. */
void sr_asha_format(const struct sr_asha *a, char *buf, size_t len);

/* The rungs' steps, ascending: how many (at most cap are written). */
size_t sr_asha_rungs(const struct sr_asha *a, int64_t *steps, size_t cap);
/* The rung index k whose step is r_k, -1 when step is no rung's. */
int sr_asha_rung_of(const struct sr_asha *a, int64_t step);

/* Whether a is better than b under the rule's mode (a NaN is never
 * better; anything is better than a NaN). */
int sr_asha_better(const struct sr_asha *a, double x, double y);
/* Whether a rung at step judges at all: every rung but one at max itself
 * (a trial that got there has done its steps: it records its value and
 * goes on to its end, as a trial at max_t is complete in Ray Tune's ASHA;
 * pruning it would only turn a finished trial into a stopped one). */
int sr_asha_judges(const struct sr_asha *a, int64_t rung_step);
/* How many of the n + 1 values at a rung (the recorded ones and the
 * trial's own) go on: max(1, floor((n + 1) / eta)); all of them while
 * fewer than eta with patient. */
size_t sr_asha_keep(const struct sr_asha *a, size_t n);
/* The decision for value at a rung whose recorded values are values[0..n)
 * (value itself NOT among them): 1 = go on, 0 = stop. */
int sr_asha_promote(const struct sr_asha *a, double value, const double *values, size_t n);

#endif
