/*
 * prices.h - the price table (`--prices FILE`) and a run's cost from its
 * history.
 *
 * The file maps instance types to prices per hour, one type a line:
 *
 *     # instance_type   spot   on_demand
 *     g5.xlarge         0.42   1.006
 *
 * Fields are separated by blanks; `#` starts a comment; the on-demand
 * price may be left out (or `-`). Parsing is strict: a line with another
 * shape, a price that is not a non-negative decimal, or a type given twice
 * is an error naming file:line (docs/runtime.md, "Price table").
 *
 * Pure apart from reading the file; nothing here prints or exits.
 */
#ifndef SPOTRUN_PRICES_H
#define SPOTRUN_PRICES_H

#include <stddef.h>

#include "history.h"

#define SR_PRICES_MAX 4096         /* lines with a price */
#define SR_PRICES_FILE_MAX 1048576 /* bytes */

struct sr_price {
    char type[64];
    double spot, on_demand; /* per hour; on_demand 0 = not given */
};

struct sr_prices {
    struct sr_price *v;
    size_t n;
};

/* Reads path into *out (freed with sr_prices_free). 0, or -errno with a
 * message naming path:line and the cause (sr_strerror). */
int sr_prices_load(const char *path, struct sr_prices *out);
/* The same from text (tests; name is what messages call it). */
int sr_prices_parse(const char *name, const char *text, size_t len, struct sr_prices *out);
void sr_prices_free(struct sr_prices *p);
/* The entry of instance type type, or NULL (NULL table, or no such type). */
const struct sr_price *sr_prices_find(const struct sr_prices *p, const char *type);

/* The run's cost from its history: each session's instance hours x its
 * nodes x the spot price of its instance type in the table, else
 * fallback_per_hour. -1 when some session can be priced neither way. */
double sr_prices_run_cost(const struct sr_history *h, const struct sr_prices *tab,
                          double fallback_per_hour);

/* What a sweep's trials cost so far: the sum of sr_prices_run_cost() over
 * the runs "<sweep>-<K>" in the store (except except_run, may be NULL),
 * each priced by tab, else per_hour. 0 or -errno. Reads every trial's
 * history: call it seconds apart, never in a loop. */
int sr_prices_sweep_spent(struct sr_store *st, const char *sweep, const char *except_run,
                          const struct sr_prices *tab, double per_hour, double *spent);

#endif
