/*
 * writers.h - which file of the checkpoint directory a process of the job
 * holds open for writing now, read from /proc (each process's fd links and
 * the open flags in fdinfo), and how a process that held one ended.
 *
 * What counts as a writer: a regular file under the directory (at any
 * depth, --ckpt-exclude's paths left out) open O_WRONLY or O_RDWR without
 * O_APPEND. A file opened for appending is a log that only grows (its
 * prefix is whole at any moment, as the codec archives it: codec.h), not a
 * save in place. A file unlinked while open (a temporary) is no longer
 * part of the directory.
 *
 * A snapshot: a process may open or close a file while the tree is read,
 * so the answer is what held at some moment during the call. Costs one
 * readdir of /proc/PID/fd per process of the tree and one read of fdinfo
 * per fd that points into the directory: callers pay it at a decision (a
 * settle, a stop), never per step. Linux only. No state, thread-safe.
 */
#ifndef SPOTRUN_WRITERS_H
#define SPOTRUN_WRITERS_H

#include <stddef.h>
#include <sys/types.h>

struct sr_writer {
    pid_t pid;      /* 0: none */
    char file[256]; /* relative to the directory ("ckpt.pt", "opt/state.bin") */
};

/* The first writer found among the descendants of root (not root itself)
 * of a file under dir: 1 and *w, 0 when none (w->pid 0), -errno when dir
 * or /proc cannot be read. */
int sr_writers_find(pid_t root, const char *dir, const char *const *exclude, size_t nexclude,
                    struct sr_writer *w);

/* How process pid ended, while it is a zombie: SR_FATE_RUNNING (it has not
 * ended, or its pid was reused), SR_FATE_EXITED (exit(): whatever it wrote
 * it finished), SR_FATE_KILLED (a signal ended it: a file it held open for
 * writing may be half-written), SR_FATE_GONE (reaped: nothing tells). */
enum sr_fate { SR_FATE_RUNNING, SR_FATE_EXITED, SR_FATE_KILLED, SR_FATE_GONE };
enum sr_fate sr_writers_fate(pid_t pid);

#endif
