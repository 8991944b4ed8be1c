/*
 * sweepview.h - a sweep as `spotrun sweep show` and `sweep report` show it:
 * the record of its trials (runtime/record/sweeprec.h: their states, their
 * runs' histories, the totals, read from the store) as a table and JSON, in
 * an order and against the best value that the options choose. Pure:
 * nothing here reads the store or exits.
 */
#ifndef SPOTRUN_SWEEPVIEW_H
#define SPOTRUN_SWEEPVIEW_H

#include <jansson.h>
#include <stdio.h>

#include "sweeprec.h"

/* How to show it: prices, the metrics whose best is the maximum (or the
 * minimum) against the name's convention, the sort. */
#define SR_SV_MAXIMIZE_MAX 32
struct sr_sv_opts {
    struct sr_hist_prices prices;
    const char *maximize[SR_SV_MAXIMIZE_MAX];
    size_t n_maximize;
    const char *minimize[SR_SV_MAXIMIZE_MAX];
    size_t n_minimize;
    const char *sort; /* a metric name, NULL = by trial index */
    /* The sweep's own rule (its definition, sr_sv_opts_from_sweep): which
     * value of a done trial ranks it (final: the last reported; best-step:
     * its best at any step), and its objectives (metric, larger better). */
    int best_step;
    const char *objective[SR_SWEEP_OBJECTIVES_MAX];
    int objective_max[SR_SWEEP_OBJECTIVES_MAX];
    size_t n_objectives;
};

/* Fills o's rule from sw's definition (--best, --objective). */
void sr_sv_opts_from_sweep(struct sr_sv_opts *o, const struct sr_sweep *sw);

const char *sr_sv_state_name(enum sr_sv_state s);
/* 1 when metric's best is its largest value: named in o->maximize, else
 * not in o->minimize, else an objective's direction, else
 * sr_hist_metric_maximized(metric). */
int sr_sv_maximized(const struct sr_sv_opts *o, const char *metric);
/* order[0..v->n): trial indices as shown: by o->sort's best (min first, max
 * first when maximized; trials without it last), then by index. */
void sr_sweepview_order(const struct sr_sweepview *v, const struct sr_sv_opts *o, size_t *order);
/* The metric "best" ranks by: the sweep's first objective, else o->sort,
 * else the first metric reported (NULL: none). */
const char *sr_sv_rank_metric(const struct sr_sweepview *v, const struct sr_sv_opts *o);
/* What ranks trial t by metric (docs/sweeps.md, "Best"): 1 and *value
 * (*step: its step, -1 unknown) when t ended done and reported metric, a
 * finite value: its last one, or its best with o->best_step; else 0
 * (pruned, cancelled, failed, running and queued trials are never best). */
int sr_sv_trial_value(const struct sr_sv_trial *t, const struct sr_sv_opts *o, const char *metric,
                      double *value, int64_t *step);
/* "final" or "best-step". */
const char *sr_sv_best_rule(const struct sr_sv_opts *o);
/* The best trial by sr_sv_rank_metric: the smallest sr_sv_trial_value
 * (largest when maximized; ties: the lowest index). NULL when no done
 * trial has a value; *metric is the metric's name (or NULL). */
const struct sr_sv_trial *sr_sweepview_best(const struct sr_sweepview *v,
                                            const struct sr_sv_opts *o, const char **metric);
/* With 2+ objectives: the trials on the Pareto front (sweeppareto.h) of
 * the done trials that reported every objective, by sr_sv_trial_value, in
 * index order; *out malloc'd (free it), *n of them. -ENOMEM. */
int sr_sweepview_pareto(const struct sr_sweepview *v, const struct sr_sv_opts *o, size_t **out,
                        size_t *n);
/* A trial's instance hours and cost at o's spot price (0 without). */
double sr_sv_trial_hours(const struct sr_sv_trial *t);

/* The search's progress (sweepprogress.c): one point per ended trial, in
 * the order they ended: the trial-hours every ended trial has cost so far,
 * and the best value of metric (sr_sv_rank_metric; *metric, NULL when
 * none) among the done ones (sr_sv_trial_value). *out is malloc'd (free
 * it), *n points. */
struct sr_sv_progress {
    size_t trial;
    double hours; /* ended trials' instance hours so far */
    double best;  /* the best value so far (has_best) */
    int has_best; /* some ended trial so far reported the metric */
    int improved; /* this trial's value is the new best */
};
int sr_sweepview_progress(const struct sr_sweepview *v, const struct sr_sv_opts *o,
                          const char **metric, struct sr_sv_progress **out, size_t *n);
/* "search:      best loss 0.12 (trial 7) after 1.2 of 4.5 trial-hours; 12
 * of 20 trials ended" (nothing before a trial that reported the metric
 * ended), and --json's "progress" (null before any trial ended). */
void sr_sv_progress_print(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o);
json_t *sr_sv_progress_json(const struct sr_sweepview *v, const struct sr_sv_opts *o);
/* `sweep report`'s chart of it, from x0 to x1 below top; its height (0:
 * nothing drawn, no trial that reported the metric has ended). f NULL:
 * the height only. */
double sr_sv_progress_svg(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o,
                          double x0, double x1, double top);

/* The header lines and the table of `sweep show`. */
void sr_sweepview_print(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o);
/* The --json document (docs/json-schema.md), new reference. */
json_t *sr_sweepview_json(const struct sr_sweepview *v, const struct sr_sv_opts *o,
                          const char *store_url);

#endif
