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

/* Options of the views (show, ls): --json and the prices, with their
 * SPOTRUN_* twins. Strings, parsed by sr_prices_parse(). */
struct sr_view_opts {
    int json;
    const char *price, *on_demand_price;
};
#define SR_PRICE_OPTS(v)                                                                           \
    {"price-per-hour",                                                                             \
     0,                                                                                            \
     "SPOTRUN_PRICE_PER_HOUR",                                                                     \
     SR_OPT_STR,                                                                                   \
     &(v)->price,                                                                                  \
     "PRICE",                                                                                      \
     "instance price per hour, for the cost"},                                                     \
    {                                                                                              \
        "on-demand-price-per-hour", 0, "SPOTRUN_ON_DEMAND_PRICE_PER_HOUR", SR_OPT_STR,             \
            &(v)->on_demand_price, "PRICE", "on-demand price per hour, for the saving"             \
    }
#define SR_VIEW_OPTS(v)                                                                            \
    {"json",                                                                                       \
     0,                                                                                            \
     "SPOTRUN_JSON",                                                                               \
     SR_OPT_FLAG,                                                                                  \
     &(v)->json,                                                                                   \
     NULL,                                                                                         \
     "print JSON (schema: docs/json-schema.md)"},                                                  \
        SR_PRICE_OPTS(v)

/* Parses the prices of v; -EINVAL with a message naming the flag. */
int sr_prices_parse(const struct sr_view_opts *v, struct sr_hist_prices *p);

/* Cost of the instance time at the given prices (0 when no price). */
void sr_hist_cost(const struct sr_history *h, const struct sr_hist_prices *p, double *spot,
                  double *on_demand);

/* "wall time:", "preemptions:", "lost work:", ... lines for `show`. */
void sr_summary_print(FILE *f, const struct sr_history *h, const struct sr_hist_prices *p);
/* One "attempt N ..." line per attempt. */
void sr_summary_print_attempts(FILE *f, const struct sr_history *h);
/* The run-level fields of the --json schema (new reference). */
json_t *sr_summary_json(const struct sr_history *h, const struct sr_hist_prices *p);
/* The attempts array of the --json schema (new reference). */
json_t *sr_summary_attempts_json(const struct sr_history *h);

/* "$1.23" style money, "-" when the value is unknown (< 0). */
void sr_format_money(double v, char *buf, size_t len);
/* ISO-8601 UTC of unix ms. */
void sr_format_iso_ms(int64_t unix_ms, char *buf, size_t len);

#endif
