/*
 * outtail.h - the tee of the job's stderr: the job writes into a pipe, a
 * thread of the wrapper forwards every byte unchanged to the wrapper's own
 * stderr and keeps the last SR_TAIL_MAX_BYTES of them, so that a failed
 * attempt's "exit" event can carry the last lines of its output ("tail",
 * docs/events.md): on a spot machine the local log is lost with it.
 *
 * Only stderr is teed (stdout stays the wrapper's own, untouched), and only
 * when it is not a terminal (the job keeps its tty, colours, progress bars)
 * and is open. The job blocks no more than the terminal would make it: the
 * thread writes as fast as the original stderr takes it, with the pipe's
 * buffer in between; a stderr whose reader is gone (EPIPE) is no longer
 * written to, and the job's output is still kept.
 *
 * Threads: one, started by sr_outtail_open(), stopped by sr_outtail_close();
 * sr_outtail_take() is called by the supervisor's thread.
 */
#ifndef SPOTRUN_OUTTAIL_H
#define SPOTRUN_OUTTAIL_H

#include <jansson.h>
#include <stdint.h>

struct sr_outtail;
struct sup;

/* Starts the tee of fd out_fd. Returns 0 with *t, or -errno; *t is NULL
 * (and 0 returned) when out_fd is closed or a terminal: nothing to tee. */
int sr_outtail_open(struct sr_outtail **t, int out_fd);

/* The pipe's write end, for the job's fd 2 (close-on-exec here); -1 for none. */
int sr_outtail_fd(const struct sr_outtail *t);

/* Waits (bounded) until what the job wrote is forwarded, then returns the
 * cleaned last lines kept since the previous take (malloc'd, NULL when
 * none) and forgets them. */
char *sr_outtail_take(struct sr_outtail *t);
/* The same, and in *last_ms when the newest of those bytes was read (unix
 * ms; 0 when none). */
char *sr_outtail_take_at(struct sr_outtail *t, int64_t *last_ms);

/* Closes the write end, forwards what is left (bounded) and stops. */
void sr_outtail_close(struct sr_outtail *t);

/* The supervisor's side: the fd the job's stderr goes to (the tee is
 * started on the first call; -1 = the wrapper's own), and the "tail" of an
 * "exit" event whose code is not 0, outside a notice's stop (always forgets
 * what was kept). */
int sup_job_stderr(struct sup *s);
void sup_output_tail(struct sup *s, json_t *ex);

#endif
