/*
 * eventsview.h - an attempt's event log as a person reads it (`spotrun
 * show RUN --events`): one line per event, its time, the time since the
 * attempt's first event, its kind and its fields; a multi-line string (a
 * stall's Python traceback) as indented lines under it.
 */
#ifndef SPOTRUN_EVENTSVIEW_H
#define SPOTRUN_EVENTSVIEW_H

#include <stdint.h>
#include <stdio.h>

#include "store.h"

/* Prints the events of `attempt` (UINT32_MAX: the newest) of run_id, every
 * node's log of it in turn. 0, -ENOENT when the run has no such attempt, or
 * the store's error. */
int sr_events_print(FILE *f, struct sr_store *st, const char *run_id, uint32_t attempt);

#endif
