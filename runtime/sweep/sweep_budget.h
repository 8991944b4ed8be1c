/*
 * sweep_budget.h - a sweep's budget: what all its trials together may cost
 * (docs/sweeps.md, "Budget").
 *
 *   sweeps/<name>/budget/<NNNNNN>.json   {"format","sweep","version","max_cost",
 *                                          "price_per_hour","host","unix_ms"}
 *
 * Each change (sweep init --max-cost, sweep set) is a new object, written
 * create-only with the next number, as definition parts are: two changes
 * racing get consecutive numbers and the later one wins; nothing is ever
 * overwritten. The highest number is the budget in force.
 *
 * Nothing read is trusted: an object whose name, sweep or version is not
 * its key's, or whose amounts are not finite non-negative numbers, makes the
 * read fail (-EBADMSG with a message naming it), never a crash or a wrong
 * budget.
 */
#ifndef SPOTRUN_SWEEP_BUDGET_H
#define SPOTRUN_SWEEP_BUDGET_H

#include "store.h"

struct sr_sweep_budget {
    double max_cost;       /* 0 = no budget */
    double price_per_hour; /* of one trial's instance, 0 = none given */
    unsigned version;      /* the object's number; set by read */
};

/* The budget in force: 0, -ENOENT (none set), or -errno with a message. */
int sr_sweep_budget_read(struct sr_store *st, const char *name, struct sr_sweep_budget *out);
/* Writes b as the next version (b->version is ignored; *version, may be
 * NULL, gets it). 0 or -errno with a message. */
int sr_sweep_budget_set(struct sr_store *st, const char *name, const struct sr_sweep_budget *b,
                        unsigned *version);

#endif
