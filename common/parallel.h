/*
 * parallel.h - one job per index on a few threads: the readers of many
 * runs' objects (sweep show, stats) share it.
 *
 * Threads: sr_parallel_for() starts its threads and joins them before it
 * returns; each takes the next index off a shared counter. fn must be
 * safe to call from several threads at once for different indices.
 */
#ifndef SPOTRUN_PARALLEL_H
#define SPOTRUN_PARALLEL_H

#include <stddef.h>

#define SR_PARALLEL_MAX 64 /* threads at most */

/* fn(ctx, i) for every i in [0, n), on up to threads threads (0: 8); the
 * first negative return stops the others taking more and is returned,
 * with its thread's message (sr_errf) carried to the caller's thread.
 * Without a thread to be had, the caller's thread does the work. */
int sr_parallel_for(size_t n, unsigned threads, int (*fn)(void *ctx, size_t i), void *ctx);

#endif
