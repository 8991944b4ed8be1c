/*
 * proctree.h - the job's process tree, read from /proc: every process below
 * the wrapper (a subreaper, so processes whose parent died - a daemon that
 * setsid()s and forks, an orphaned trainer - are still below it).
 *
 * Used to send the checkpoint request to every process of the job
 * (launchers such as torchrun, `sh -c`, accelerate), to stop everything the
 * job started, and to tell a signal sent from inside the job's tree (its own
 * business) from a notice sent from outside.
 *
 * Linux only; a process may appear or exit while the tree is read: each call
 * acts on a snapshot, and a process that exited in between is skipped.
 */
#ifndef SPOTRUN_PROCTREE_H
#define SPOTRUN_PROCTREE_H

#include <stddef.h>
#include <sys/types.h>

/* Makes this process the reaper of its orphaned descendants. */
int sr_proctree_subreaper(void);

/* Reads `name` under /proc/<pid> ("stat", "wchan"...) into buf
 * (NUL-terminated, cut at len - 1); -errno, -ENOENT when empty. */
int sr_proc_read(pid_t pid, const char *name, char *buf, size_t len);

/* Sends sig to every descendant of root (not root itself). With
 * only_listeners, only to processes that catch or ignore sig (so that a
 * process that never asked for it is not killed by its default action). Returns how many were
 * signalled, or -errno when /proc cannot be read. */
int sr_proctree_signal(pid_t root, int sig, int only_listeners);
/* The same, to the descendants outside process group pgid (those that
 * left the job's group with setsid): after kill(-pgid, sig), every process
 * gets sig once (a second TERM would kill a job that exits from its TERM
 * handler, as Python does once its finalization restores SIG_DFL). */
int sr_proctree_signal_outside(pid_t root, int sig, pid_t pgid);

/* The descendants of root (not root itself) into *pids (malloc'd, the
 * caller frees), in no particular order; -errno when /proc cannot be read. */
int sr_proctree_list(pid_t root, pid_t **pids, size_t *n);

/* 1 when pid catches or ignores sig (SigCgt / SigIgn), else 0. */
int sr_proctree_catches(pid_t pid, int sig);

/* 1 when pid is a descendant of root (or root itself), else 0. */
int sr_proctree_contains(pid_t root, pid_t pid);

#endif
