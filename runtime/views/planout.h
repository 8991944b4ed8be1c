/*
 * planout.h - `spotrun plan` as people and programs read it: the text
 * tables, --json (docs/json-schema.md, "plan") and --svg.
 *
 * Output only: the numbers come from runtime/record/plan.c.
 */
#ifndef SPOTRUN_PLANOUT_H
#define SPOTRUN_PLANOUT_H

#include <jansson.h>
#include <stdio.h>

#include "plan.h"

/* The fleet's numbers, the curves' steps and, with a reserved price, the
 * plan per group (else a line saying what to pass). */
void sr_plan_print(FILE *f, const struct sr_plan_query *q, const struct sr_plan *p);
/* The --json document (new reference; NULL without memory). */
json_t *sr_plan_json(const struct sr_plan_query *q, const struct sr_plan *p);
/* --svg (plansvg.c): GPU-hours per week stacked by team; per group the
 * concurrency duration curve with the reserved line. 0, or -1 on a write
 * error. */
int sr_plan_svg(FILE *f, const struct sr_plan_query *q, const struct sr_plan *p);
/* The saving of reserved + spot over the cheaper of all on-demand and all
 * spot (per week). */
double sr_plan_saving(const struct sr_plan_group *g);

#endif
