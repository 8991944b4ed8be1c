/*
 * sweeptrial.h - one trial of a sweep: its learning curves as `sweep show
 * --json` gives them ("curves"), and `sweep show NAME TRIAL`: its
 * parameters, state, metrics and curves, and the early-stopping rungs it
 * reached, with why it was pruned (the rung, its value, the cut-off it was
 * compared with). Pure: the caller reads the rung records (sweep_rungs.h).
 */
#ifndef SPOTRUN_SWEEPTRIAL_H
#define SPOTRUN_SWEEPTRIAL_H

#include <jansson.h>
#include <stdio.h>

#include "asha.h"
#include "sweep_rungs.h"
#include "sweepview.h"

/* A metric's learning curve, [[step, value], ...] in step order: the
 * points the history kept (sweeprec.h's bound); a step reported more than
 * once (an attempt resumed from an earlier checkpoint) holds the newest
 * attempt's value. When no value had a step, each step is null and the
 * values are in the order reported. */
json_t *sr_sv_curve_json(const struct sr_hist_metric *m);
/* The points of that curve: with steps, those that have a step, in step
 * order, one per step (the newest attempt's value); without, every point
 * in the order reported. *out is malloc'd (free it), *n points; 0 or
 * -ENOMEM. `sweep report`'s curves draw the same points. */
int sr_sv_curve_points(const struct sr_hist_metric *m, int steps, struct sr_hist_point **out,
                       size_t *n);
/* {"<metric>": curve, ...} of a trial ({} when it reported none). */
json_t *sr_sv_curves_json(const struct sr_sv_trial *t);

/* PBT (pbt.h): a trial's lineage as --json gives it, [{"round","step",
 * "donor","donor_step","donor_seq","from","params","applied"}], [] when
 * none; its parameter schedule [{"from_step","params","donor"}] (the
 * first entry its sweep values from step 0, donor null); `sweep show`'s
 * lineage lines, one per decision ("trial 3: from trial 1 @ step 8 (round
 * 2, lr 0.01 -> 0.008)"), and `sweep show NAME TRIAL`'s schedule. */
json_t *sr_sv_lineage_json(const struct sr_sv_trial *t);
json_t *sr_sv_schedule_json(const struct sr_sweepview *v, const struct sr_sv_trial *t);
void sr_sv_lineage_print(FILE *f, const struct sr_sweepview *v);
void sr_sv_schedule_print(FILE *f, const struct sr_sweepview *v, const struct sr_sv_trial *t);

/* The cut-off of a decision at a rung: the value a trial's value had to
 * equal or beat to go on, given the other values it was compared with
 * (values[0..n)) under rule: the keep-th best of them, keep =
 * sr_asha_keep(rule, n). *keep gets keep, or 0 when fewer than eta values
 * were there (only the best so far goes on). 0, or -1 when there is
 * nothing to beat (no values; ,patient with fewer than eta). */
int sr_sv_rung_cutoff(const struct sr_asha *rule, const double *values, size_t n, double *cut,
                      size_t *keep);

/* A trial's record at one rung, and for a pruning one what it was
 * compared with (the records at that rung written before it, the first
 * `seen` of them by time). */
struct sr_sv_rung_why {
    struct sr_rung_rec rec;
    int has_cut; /* cut and keep valid */
    double cut;
    size_t keep;
    size_t others; /* the other values found to compare with (rec.seen were) */
};

/* `sweep show NAME TRIAL`: rule may be NULL (no early stopping); why[0..n)
 * the trial's rung records in rung order. */
void sr_sv_trial_print(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o,
                       const struct sr_sv_trial *t, const struct sr_asha *rule,
                       const struct sr_sv_rung_why *why, size_t n);

#endif
