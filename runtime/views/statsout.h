/*
 * statsout.h - `spotrun stats` as people and programs read it: the text
 * table, --json (docs/json-schema.md, "stats"), --csv (RFC 4180) and the
 * --svg / --html charts (cost per group over time, preemption rate per
 * instance type and zone).
 *
 * Output only: the numbers come from stats.c. Every string from the store
 * goes through the format's escaping.
 */
#ifndef SPOTRUN_STATSOUT_H
#define SPOTRUN_STATSOUT_H

#include <jansson.h>
#include <stdio.h>

#include "stats.h"

/* The aligned table with a totals row and its notes. */
void sr_stats_print(FILE *f, const struct sr_stats_query *q, const struct sr_stats *s);
/* The --json document (new reference; NULL without memory). */
json_t *sr_stats_json(const struct sr_stats_query *q, const struct sr_stats *s);
/* A header row, then one row per group. */
void sr_stats_csv(FILE *f, const struct sr_stats_query *q, const struct sr_stats *s);
/* --format openmetrics (statsprom.c): a gauge family per quantity, a
 * sample per group with the --by keys as labels; then each quota in force
 * (qs[i]) with its use in its current period (us[i], as `quota show`);
 * "# EOF" at the end. */
struct sr_quota;
struct sr_quota_use;
void sr_stats_openmetrics(FILE *f, const struct sr_stats_query *q, const struct sr_stats *s,
                          const struct sr_quota *qs, const struct sr_quota_use *us, size_t nq);
/* The charts of runs under q (aggregated again by period, and by instance
 * type and zone); with html, a page around them and the table. 0 or
 * -ENOMEM. */
int sr_stats_svg(FILE *f, const struct sr_runsum *runs, size_t n, const struct sr_stats_query *q,
                 const struct sr_stats *s, int html);

#endif
