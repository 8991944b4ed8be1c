/*
 * sweep_driver.h - `sweep work --driver CMD`: a worker with nothing to
 * claim runs a driver that may add trials to the sweep (an Optuna study,
 * python3 -m spotrun.optuna_driver; docs/sweeps.md, "Model-based search").
 * The driver holds no state: it reads the store and appends trials
 * create-only, so any worker may run it, several at once.
 */
#ifndef SPOTRUN_SWEEP_DRIVER_H
#define SPOTRUN_SWEEP_DRIVER_H

#include <signal.h>

/* Runs cmd through /bin/sh -c and waits for it, with SPOTRUN_SWEEP=sweep,
 * SPOTRUN_STORE=store_url and SPOTRUN_BIN=self in its environment and mask
 * as its signal mask. Its exit code (128+N for a signal), or a negative
 * errno when it cannot start. Only its own child is waited for. */
int sr_sweep_driver_run(const char *cmd, const char *sweep, const char *store_url, const char *self,
                        const sigset_t *mask);

#endif
