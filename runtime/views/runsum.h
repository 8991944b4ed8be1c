/*
 * runsum.h - TEMPORARY stand-in for branch runsum's per-run summary (the
 * interface it promised); replaced by the real one at `git merge runsum`.
 */
#ifndef SPOTRUN_RUNSUM_H
#define SPOTRUN_RUNSUM_H

#include <stddef.h>
#include <stdint.h>

#include "history.h"
#include "labels.h"
#include "store.h"

struct sr_runsum_attempt {
    uint32_t attempt, nodes;
    char host[128], cloud[32], instance_type[64], zone[64];
    int64_t start_ms, end_ms;
    enum sr_hist_cause cause;
    int64_t lost_ms;
    double price_per_hour;
    unsigned gpus;
    uint64_t gpu_samples;
    double gpu_util_mean, gpu_idle_share;
    double stage_seconds;
    unsigned notices;
};

struct sr_runsum {
    char run[256];
    struct sr_labels labels;
    enum sr_hist_state state;
    struct sr_runsum_attempt *att;
    size_t n_att;
    int from_logs;
};

void sr_runsum_free(struct sr_runsum *r);
int sr_runsum_from_history(const struct sr_history *h, const char *run, struct sr_runsum *out);
int sr_runsum_load_all(struct sr_store *st, const char *prefix, struct sr_runsum **out, size_t *n);

#endif
