/*
 * evidence.h - what a stalled job's processes were doing, for the
 * "stalled" event (docs/events.md): each process's name, state, kernel
 * wait channel and the CPU it used during the stall window, and the Python
 * tracebacks of the processes that registered for them (SPOTRUN_STALL_DIR,
 * python/spotrun/_stall.py).
 *
 * The CPU baseline is a snapshot of every process's utime+stime, taken by
 * the supervisor when it sees a heartbeat (at most once a poll); the CPU of
 * the window is the difference at the stall (a process born since counts
 * from zero). Everything is read from /proc; a process that exits meanwhile
 * is skipped. Not thread-safe (the supervisor's loop).
 */
#ifndef SPOTRUN_EVIDENCE_H
#define SPOTRUN_EVIDENCE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SR_EVIDENCE_PROCS_MAX 256      /* processes described (the first ones found) */
#define SR_EVIDENCE_TRACE_MAX 65536    /* bytes of tracebacks in the event */
#define SR_EVIDENCE_TRACE_WAIT_MS 1000 /* how long to wait for them */

struct sr_cpu_base {
    pid_t pid[SR_EVIDENCE_PROCS_MAX];
    int64_t cpu_ms[SR_EVIDENCE_PROCS_MAX];
    size_t n;
};

/* The CPU each descendant of root has used so far. */
void sr_evidence_cpu_snapshot(pid_t root, struct sr_cpu_base *b);

/* [{"pid","comm","state","wchan","cpu_ms"}...] for the descendants of root,
 * cpu_ms since base; NULL when /proc cannot be read. */
json_t *sr_evidence_procs(pid_t root, const struct sr_cpu_base *base);

/* Whether the job is stopped (SIGSTOP, or held by a debugger): every live
 * descendant of root is in state T or t. Returns how many live descendants
 * there are (zombies do not count), with how many are stopped in
 * *n_stopped and the first max of their pids in stopped; -errno when /proc
 * cannot be read. */
int sr_evidence_stopped(pid_t root, pid_t *stopped, size_t max, size_t *n_stopped);

/* Sends signo to each descendant of root that registered in dir
 * (<dir>/<pid>.tb exists) and catches it, waits up to wait_ms for their
 * files to grow and settle, and returns what they wrote, each under a
 * "--- pid N (comm) ---" line, at most max bytes (malloc'd; NULL when no
 * process registered or none wrote). */
char *sr_evidence_tracebacks(pid_t root, const char *dir, int signo, size_t max, int wait_ms);

#endif
