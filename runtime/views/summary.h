/*
 * summary.h - a run's history as people and programs read it: the lines of
 * `spotrun show` and `ls`, and their stable --json form (docs/json-schema.md).
 *
 * Output only: the numbers come from history.c.
 */
#ifndef SPOTRUN_SUMMARY_H
#define SPOTRUN_SUMMARY_H

#include <jansson.h>
#include <stdio.h>

#include "history.h"

#define SR_JSON_SCHEMA_VERSION 1

/* Cost of the instance time at the given prices (0 when no price). */
void sr_hist_cost(const struct sr_history *h, const struct sr_hist_prices *p, double *spot,
                  double *on_demand);

/* The prices a view of h uses: p itself when it has a spot price (the
 * viewer's --price-per-hour wins), else the price h's attempts recorded
 * (their start events' price_per_hour: run's or the sweep's
 * --price-per-hour), when every session with instance time recorded one:
 * as one price per instance-hour (the mean weighted by each session's
 * hours x nodes, so that the cost is what a budget counts). p's on-demand
 * price is kept. Returns 1 when out holds a recorded price, else 0. */
int sr_hist_view_prices(const struct sr_history *h, const struct sr_hist_prices *p,
                        struct sr_hist_prices *out);

/* "wall time:", "preemptions:", "lost work:", ... lines for `show`; the
 * cost at sr_hist_view_prices(). */
void sr_summary_print(FILE *f, const struct sr_history *h, const struct sr_hist_prices *p);
/* One "attempt N ..." line per attempt. */
void sr_summary_print_attempts(FILE *f, const struct sr_history *h);

/* The last lines of an attempt's stderr (its exit event's "tail", already
 * cleaned: history.h), under a heading, each line after indent and "| ". */
/* "; pruned work 3s; cancelled work 1s" after a lost-work figure: the work
 * of attempts a sweep dropped is no loss; each printed only when not 0. */
void sr_summary_print_dropped(FILE *f, int64_t pruned_ms, int64_t cancelled_ms);
void sr_summary_print_tail(FILE *f, const char *indent, const char *tail);
/* The same, saying when its last line was written (tail_ms, unix ms) and
 * how long before the attempt ended (end_ms); either 0 = unknown. */
void sr_summary_print_tail_at(FILE *f, const char *indent, const char *tail, int64_t tail_ms,
                              int64_t end_ms);
/* The run-level fields of the --json schema (new reference); the cost at
 * sr_hist_view_prices(), its "price_from" "flag" or "recorded". */
json_t *sr_summary_json(const struct sr_history *h, const struct sr_hist_prices *p);
/* One metric: {"last", "min", "max", "count", "last_step", "min_step",
 * "max_step", "maximize", "best", "best_step"}, or with best {"last",
 * "best", "count", "last_step", "best_step", "maximize"}; best is the max
 * when maximize. */
json_t *sr_summary_metric_json(const struct sr_hist_metric *m, int best, int maximize);
/* The "metrics:" block of `show`: per metric its last value and step and
 * its best (sr_hist_metric_maximized's direction) and step. Nothing when
 * the job reported none. */
void sr_summary_print_metrics(FILE *f, const struct sr_history *h);
/* `ls --long`'s cell: "NAME=LAST" of each of names (n of them; "-" for one
 * the run lacks), or with n 0, of the first two metrics the run reported;
 * "-" when none. */
void sr_summary_metrics_cell(const struct sr_history *h, const char *const *names, size_t n,
                             char *buf, size_t len);
/* The attempts array of the --json schema (new reference). */
json_t *sr_summary_attempts_json(const struct sr_history *h);

/* "$1.23" style money, "-" when the value is unknown (< 0). */
void sr_format_money(double v, char *buf, size_t len);
/* ISO-8601 UTC of unix ms. */
void sr_format_iso_ms(int64_t unix_ms, char *buf, size_t len);

#endif
