/*
 * sweepsteer.h - a sweep's steering as `sweep show` shows it: the history
 * of its operator's actions (who, when, what), the pause in force
 * (docs/sweeps.md, "Steering"; docs/json-schema.md). Pure: prints and
 * builds JSON from a state sweep_steer.h read.
 */
#ifndef SPOTRUN_SWEEPSTEER_H
#define SPOTRUN_SWEEPSTEER_H

#include <jansson.h>
#include <stdio.h>

#include "sweep_steer.h"

/* "paused:      by alice@host at 2026-...Z (--stop: running trials stop)"
 * when paused; nothing otherwise. */
void sr_sv_paused_print(FILE *f, const struct sr_steer_state *s);
/* The history under the table: one line per action; nothing without. */
void sr_sv_steer_print(FILE *f, const struct sr_steer_state *s);
/* [{"seq","action","trials","stop","priority","by","unix_ms"}...], new reference. */
json_t *sr_sv_steer_json(const struct sr_steer_state *s);
/* {"by","unix_ms","stop"} of the pause in force, or null; new reference. */
json_t *sr_sv_paused_json(const struct sr_steer_state *s);

#endif
