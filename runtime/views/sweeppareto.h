/*
 * sweeppareto.h - the Pareto front of a multi-objective sweep (`sweep show`
 * with 2+ `sweep init --objective`): the points no other point dominates.
 * Pure: numbers in, flags out.
 */
#ifndef SPOTRUN_SWEEPPARETO_H
#define SPOTRUN_SWEEPPARETO_H

#include <stddef.h>

/* v: n points of k values each (row-major, finite); max[j] 1 when larger
 * is better for value j. Sets front[i] to 1 when no other point
 * dominates point i (at least as good in every value, better in one),
 * else 0: equal points are all on the front. 0, or -ENOMEM. */
int sr_pareto_front(const double *v, size_t n, size_t k, const int *max, unsigned char *front);

#endif
