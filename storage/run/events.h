/*
 * events.h - the run's event log: JSON lines, one object per attempt in the
 * store (<run>/events/<attempt>.jsonl; S3 has no append, so the whole
 * attempt's log is rewritten on flush). Each line has "event", "time"
 * (ISO-8601 UTC), "unix_ms", "attempt" and the event's own fields.
 * Metric values past a budget are thinned (metricthin.h), so that no job
 * can make a log, or the memory that holds it, grow without bound.
 *
 * Thread-safe: the supervisor loop and the checkpointer threads emit.
 */
#ifndef SPOTRUN_EVENTS_H
#define SPOTRUN_EVENTS_H

#include <jansson.h>
#include <stdint.h>

#include "store.h"

struct sr_events;

/* Highest attempt number: the six digits of the log's name. A log named
 * above it ("4294967295.jsonl") is not spotrun's: ignored with a warning,
 * as are event lines that claim such an attempt (history.c). */
#define SR_ATTEMPT_MAX 999999u

/* The attempt of an event log's name ("000012.jsonl" or a node's
 * "000012-n3.jsonl": 12), or UINT32_MAX
 * when the name is not one: digits only, at most SR_ATTEMPT_MAX. */
uint32_t sr_events_attempt_of(const char *name);

/* The attempt number for a new start of run: 1 + the highest attempt that
 * has an event log, or 0 for a new run; never above SR_ATTEMPT_MAX (the
 * last attempt number is reused rather than wrapped to 0). */
int sr_events_next_attempt(struct sr_store *st, const char *run_id, uint32_t *attempt);
/* The same for node rank of a multi-node run: counting that node's logs
 * (and single-node ones), so every node numbers the group's starts alike. */
int sr_events_next_attempt_node(struct sr_store *st, const char *run_id, int rank,
                                uint32_t *attempt);

int sr_events_open(struct sr_events **out, struct sr_store *st, const char *run_id,
                   uint32_t attempt);
/* A multi-node run: this wrapper's log is <attempt>-n<rank>.jsonl (the
 * nodes of a group start attempts together) and every line carries
 * "node": rank. Call right after sr_events_open. */
void sr_events_set_node(struct sr_events *ev, const char *run_id, uint32_t rank);
/* Appends an event; takes ownership of fields (may be NULL). */
void sr_events_emit(struct sr_events *ev, const char *type, json_t *fields);
/* json_dumps(o, flags) with every number in its shortest form that reads
 * back as the same double (0.066, not 0.066000000000000003): the event log's
 * lines and `show --events`. Free with free(). */
char *sr_events_dumps(const json_t *o, size_t flags);
/* Writes the attempt's log to the store. */
int sr_events_flush(struct sr_events *ev);

/* A log's flush hook, told after each successful flush of that log (the
 * run's summary, runtime/record/runsum.h; the supervisor sets its
 * configuration's on_flush on each attempt's log): the attempt, whether the
 * log is a node's (multi-node), and the whole log as just written (len
 * bytes, complete lines; a later flush of the same log only appends to
 * them) and the size of the object now in the store (stored: len plus the
 * metric_summary lines that follow the log, rewritten at each flush;
 * docs/events.md, "Metric volume"). Called from the flushing thread under
 * the log's lock, one call at a time: it must not block or call into this
 * module (copy what it needs and return; a slow store must never stall an
 * emitter). Setting it (NULL to clear) waits for a call under way, so ctx
 * may be freed once it is cleared. */
typedef void (*sr_events_flushed_fn)(void *ctx, uint32_t attempt, int node, const char *log,
                                     size_t len, size_t stored);
void sr_events_on_flush(struct sr_events *ev, sr_events_flushed_fn fn, void *ctx);
/* Flushes and frees. */
void sr_events_close(struct sr_events *ev);

/* One observer of every event this process emits (the metrics file): called
 * with the complete event object, from the emitting thread, outside any lock
 * of this module. Set it before the supervisor starts and clear it (NULL)
 * after it returns; it must be thread-safe. */
typedef void (*sr_events_observer)(void *ctx, const json_t *event);
void sr_events_observe(sr_events_observer fn, void *ctx);
/* A passing reading for the observer only, never written to a log (the
 * live GPU gauges of the metrics file): {"event": type, "unix_ms": now}
 * and fields (taken), no attempt. Any thread. */
void sr_events_tell(const char *type, json_t *fields);

#endif
