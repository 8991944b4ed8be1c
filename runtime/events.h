/*
 * events.h - the run's event log: JSON lines, one object per attempt in the
 * store (<run>/events/<attempt>.jsonl; S3 has no append, so the whole
 * attempt's log is rewritten on flush). Each line has "event", "time"
 * (ISO-8601 UTC), "unix_ms", "attempt" and the event's own fields.
 *
 * Thread-safe: the supervisor loop and the checkpointer threads emit.
 */
#ifndef SPOTRUN_EVENTS_H
#define SPOTRUN_EVENTS_H

#include <jansson.h>
#include <stdint.h>

#include "store.h"

struct sr_events;

/* The attempt number for a new start of run: 1 + the highest attempt that
 * has an event log, or 0 for a new run. */
int sr_events_next_attempt(struct sr_store *st, const char *run_id, uint32_t *attempt);

int sr_events_open(struct sr_events **out, struct sr_store *st, const char *run_id,
                   uint32_t attempt);
/* Appends an event; takes ownership of fields (may be NULL). */
void sr_events_emit(struct sr_events *ev, const char *type, json_t *fields);
/* Writes the attempt's log to the store. */
int sr_events_flush(struct sr_events *ev);
/* Flushes and frees. */
void sr_events_close(struct sr_events *ev);

/* One observer of every event this process emits (the metrics file): called
 * with the complete event object, from the emitting thread, outside any lock
 * of this module. Set it before the supervisor starts and clear it (NULL)
 * after it returns; it must be thread-safe. */
typedef void (*sr_events_observer)(void *ctx, const json_t *event);
void sr_events_observe(sr_events_observer fn, void *ctx);

#endif
