/*
 * history_int.h - what the files of the history model share (history.c,
 * history_metrics.c, history_derive.c, history_load.c): growing its arrays,
 * reading an event's fields within bounds, and the folds one file makes
 * for another. Not for use outside runtime/record/history*.c.
 */
#ifndef SPOTRUN_HISTORY_INT_H
#define SPOTRUN_HISTORY_INT_H

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "units.h"

/* Grows *v (of n elements of size sz, capacity *cap) by one zeroed element. */
static inline void *grow(void **v, size_t *n, size_t *cap, size_t sz)
{
    if (*n == *cap) {
        const size_t c = *cap ? *cap * 2 : 8;
        void *p = realloc(*v, c * sz);
        if (!p)
            return NULL;
        *v = p;
        *cap = c;
    }
    char *e = (char *)*v + (*n)++ * sz;
    memset(e, 0, sz);
    return e;
}

/* Event logs are store contents: every number is bounded on the way in, so
 * that sums and differences of them stay in range and print sanely. */
#define SECONDS_MAX 1e9 /* 31 years: any stage, upload or restore time */
#define BYTES_MAX (INT64_C(1) << 53)
#define STEP_MAX (INT64_C(1) << 62) /* a real up to it converts exactly */

/* Integer field k in [lo, hi], else dflt (a real is taken when integral
 * enough to be in range: never a float-to-integer overflow). */
static inline int64_t int_in(const json_t *o, const char *k, int64_t lo, int64_t hi, int64_t dflt)
{
    const json_t *v = json_object_get(o, k);
    if (json_is_integer(v)) {
        const json_int_t x = json_integer_value(v);
        return x >= lo && x <= hi ? (int64_t)x : dflt;
    }
    if (json_is_real(v)) {
        const double x = json_real_value(v);
        return x >= (double)lo && x <= (double)hi ? (int64_t)x : dflt;
    }
    return dflt;
}

static inline int64_t int_of(const json_t *o, const char *k, int64_t dflt)
{
    return int_in(o, k, -SR_TIME_MAX_MS, SR_TIME_MAX_MS, dflt);
}

/* A duration in seconds: 0 unless in [0, SECONDS_MAX]. */
static inline double num_of(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    const double x = json_is_number(v) ? json_number_value(v) : 0.0;
    return x >= 0 && x <= SECONDS_MAX ? x : 0.0;
}

/* An amount or a count of ms: 0 unless finite and in [0, 1e15]. */
static inline double num_in(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    const double x = json_is_number(v) ? json_number_value(v) : 0.0;
    return x >= 0 && x <= 1e15 ? x : 0.0;
}

static inline uint64_t bytes_of(const json_t *o, const char *k, uint64_t dflt)
{
    return (uint64_t)int_in(o, k, 0, BYTES_MAX, (int64_t)dflt);
}

/* A real in [lo, hi], else nan (so that one bad field rejects its event). */
static inline double real_in(const json_t *o, const char *k, double lo, double hi)
{
    const json_t *v = json_object_get(o, k);
    const double x = json_is_number(v) ? json_number_value(v) : NAN;
    return x >= lo && x <= hi ? x : NAN;
}

/* A "metric" event: {"name":..,"value":..,"step":N} (step optional);
 * a "metric_summary" line (history_metrics.c). */
void sr_hist_add_metric(struct sr_history *h, const json_t *ev, uint32_t a, int64_t t);
void sr_hist_add_metric_summary(struct sr_history *h, const json_t *ev, uint32_t a, int64_t t);

#endif
