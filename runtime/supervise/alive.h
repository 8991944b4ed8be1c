/*
 * alive.h - the keep-alive interval of every process that records its own
 * lifetime in the store: a run's attempts (alive.c) and sweep workers
 * (runtime/cmd/sweep_life.c).
 */
#ifndef SPOTRUN_ALIVE_H
#define SPOTRUN_ALIVE_H

#include <stdint.h>

#define SR_KEEPALIVE_MS 60000 /* default: an attempt's end is known to a minute */

/* SPOTRUN_KEEPALIVE_MS (for tests: 100 to 3600000) when valid, else
 * SR_KEEPALIVE_MS (an invalid value is said as a warning). */
int64_t sr_keepalive_ms(void);

#endif
