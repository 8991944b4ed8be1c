/*
 * stops.h - the stops spotrun makes to a job (a notice, a limit, the stall
 * watchdog, a lost lease): a plain enum that storage/run's quarantine rule
 * reads. What a stop means (causes, exit codes) is runtime/outcome's
 * (outcome.h): storage holds no exit code.
 */
#ifndef SPOTRUN_STOPS_H
#define SPOTRUN_STOPS_H

/* The stop spotrun was making when the job's process ended. The first of
 * these that applies wins: a lost lease over a stall, a stall over a limit,
 * a limit over a notice. */
enum sr_stop {
    SR_STOP_NONE,   /* nobody stopped it: the job ended by itself */
    SR_STOP_NOTICE, /* a preemption notice (cloud, signal, manual, another node's) */
    SR_STOP_LIMIT,  /* a time limit or budget */
    SR_STOP_STALL,  /* the hang watchdog */
    SR_STOP_LEASE,  /* another wrapper took the run over */
};

#endif
