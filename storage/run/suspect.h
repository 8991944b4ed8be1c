/*
 * suspect.h - the process a stall most likely hangs on, from a "stalled"
 * event (docs/events.md): said by the wrapper's warning as it stops the job
 * and by `show` from the log, in the same words.
 */
#ifndef SPOTRUN_SUSPECT_H
#define SPOTRUN_SUSPECT_H

#include <jansson.h>
#include <stddef.h>

/* "pid 12 (python3) state T, wchan do_signal_stop, in hang_here (stall.py,
 * line 9)": the first process stopped (T) or in D, else the first listed
 * (the job itself), with the top frame of its current thread when the
 * event's traceback has one. "" when the event lists no process. Safe for
 * a terminal (the event may come from the store). */
void sr_stall_suspect(const json_t *ev, char *dst, size_t len);

#endif
