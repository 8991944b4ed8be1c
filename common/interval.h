/*
 * interval.h - how often to checkpoint: the first-order optimum of Young
 * (1974) and Daly (2006) for `spotrun run --every auto` (docs/interval.md).
 *
 * A job that checkpoints every T and pays C for each checkpoint (the time it
 * waits for the commit) loses, per unit of work, C / T to checkpoints and,
 * at a preemption, on average T / 2 of work done since the last one plus
 * the C of the checkpoint it was in the middle of. With preemptions
 * arriving at random (a Poisson process, mean time between them M) the
 * waste per unit of time is about C / T + (T / 2 + C) / M, smallest at
 *
 *     T = sqrt(2 C M)
 *
 * Assumptions (first order): exponential (memoryless) preemptions, C much
 * smaller than M (the formula is off by terms of order C / M), a constant C,
 * and the restart's own cost (requeue, restore) left out: it is paid once
 * per preemption whatever T is, so it does not move the optimum.
 *
 * Pure: numbers in, numbers out; no clock, I/O or globals. Times in ms.
 */
#ifndef SPOTRUN_INTERVAL_H
#define SPOTRUN_INTERVAL_H

#include <stdint.h>

/* The documented defaults of --every auto. */
#define SR_INTERVAL_COST_PRIOR_MS INT64_C(10000)    /* before any commit was measured */
#define SR_INTERVAL_MTBF_PRIOR_MS INT64_C(21600000) /* 6h: --mtbf, a spot instance's guess */
#define SR_INTERVAL_MIN_MS INT64_C(30000)           /* --every-min */
#define SR_INTERVAL_MAX_MS INT64_C(14400000)        /* --every-max: 4h */

/* sqrt(2 * cost * mtbf), then bounded: at most max_ms and mtbf / 2 (beyond
 * that the first-order model no longer holds), and at least min_ms (which
 * wins over the upper bounds when they cross). cost_ms <= 0 or mtbf_ms <= 0
 * give min_ms. *bound (may be NULL) is set to -1 when the lower bound
 * applied, 1 for an upper one, else 0. */
int64_t sr_interval_optimum(int64_t cost_ms, int64_t mtbf_ms, int64_t min_ms, int64_t max_ms,
                            int *bound);

/* Expected work lost per preemption with checkpoints every interval_ms
 * that each cost cost_ms: interval / 2 + cost (first order). */
int64_t sr_interval_loss_ms(int64_t interval_ms, int64_t cost_ms);

/* Expected overhead of the checkpoints themselves, a fraction of the time:
 * cost / interval (0 when interval_ms <= 0). */
double sr_interval_overhead(int64_t interval_ms, int64_t cost_ms);

/* The mean time between preemptions measured on instances: instance_ms /
 * preemptions, or prior_ms when nothing was preempted yet (one preemption
 * is needed before a measurement means anything). */
int64_t sr_interval_mtbf(int64_t instance_ms, uint64_t preemptions, int64_t prior_ms);

#endif
