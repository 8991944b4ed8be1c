/*
 * metrics.h - `spotrun run --metrics-file PATH`: the run's numbers in the
 * Prometheus text exposition format (version 0.0.4), for node_exporter's
 * textfile collector or any scraper that reads a file.
 *
 * DESIGN: the metrics are a view of the run's history (history.h), seeded
 * from the event logs already in the store (so counters cover the whole run,
 * across nodes) and fed every event this process emits (events.h observer).
 * The file is rewritten atomically (temp file in the same directory, then
 * rename) at each event, and every 10 s by a small thread so that
 * spotrun_last_checkpoint_age_seconds stays current. One mutex serialises
 * the observer (called from the supervisor and checkpointer threads) and the
 * refresh thread.
 */
#ifndef SPOTRUN_METRICS_H
#define SPOTRUN_METRICS_H

#include <stdio.h>

#include "history.h"
#include "store.h"

struct sr_metrics;

/* Loads the run's history (folds logs, the run's logs as the wrapper read
 * them at its start; NULL: reads them), writes the file once, starts
 * observing events. */
int sr_metrics_open(struct sr_metrics **out, const char *path, struct sr_store *st,
                    const char *run_id, const struct sr_hist_logs *logs);
/* Stops observing, writes the file a last time, frees. NULL is fine. */
void sr_metrics_close(struct sr_metrics *m);

/* The exposition text of h at wall time now_ms (pure, for tests). */
void sr_metrics_render(FILE *f, const char *run_id, const struct sr_history *h, int64_t now_ms);

#endif
