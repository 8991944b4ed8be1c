/*
 * sweepworkersout.h - a sweep's machine time as its workers recorded it
 * (runtime/record/sweepworkers.h) as `sweep show` and `stats` print it: a
 * "workers:" line and the --json "workers" object, their cost at the
 * recorded prices (spot for a worker without one). Pure: prints and
 * builds JSON.
 */
#ifndef SPOTRUN_SWEEPWORKERSOUT_H
#define SPOTRUN_SWEEPWORKERSOUT_H

#include <jansson.h>
#include <stdio.h>

#include "sweepworkers.h"

/* "workers:     2 (0.0500 worker-hours: 0.0400 running trials, 0.0100 idle); cost $0.18,
 * idle $0.04" (a worker without a recorded price is priced at spot; none:
 * "cost - (give --price-per-hour)"). Nothing without records. */
void sr_sv_workers_print(FILE *f, const struct sr_sv_workers *ws, double spot);
/* The --json "workers" object (docs/json-schema.md), new reference. */
json_t *sr_sv_workers_json(const struct sr_sv_workers *ws, double spot);

#endif
