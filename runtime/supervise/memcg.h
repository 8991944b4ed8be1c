/*
 * memcg.h - the OOM-kill count of the job's memory cgroup: what tells an
 * attempt the kernel's OOM killer ended from any other SIGKILL.
 *
 * The job's cgroup is read from /proc/<pid>/cgroup while the job exists (at
 * its start: a process that exited has no cgroup to read). Its count is the
 * "oom_kill N" line of cgroup v2's memory.events, or, on a v1 or hybrid
 * hierarchy, of the memory controller's memory.oom_control. The same file
 * is read again once the job has exited: a count that rose in between, with
 * the job killed by SIGKILL, is an OOM kill (docs/events.md, the "exit"
 * event's "oom"). Where no such file is readable nothing is known, and
 * nothing is guessed.
 *
 * The job may share its cgroup with the wrapper (and, in a container, with
 * anything else in it): a kill of another process of that cgroup while the
 * job died of a SIGKILL of other origin would read as the job's OOM kill.
 *
 * No threads, no allocation; the root of the cgroup mounts is a parameter
 * (SPOTRUN_CGROUP_ROOT, default /sys/fs/cgroup) so that tests plant a tree.
 */
#ifndef SPOTRUN_MEMCG_H
#define SPOTRUN_MEMCG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sr_memcg {
    char path[4096]; /* the file the count is read from; "" = none readable */
    uint64_t start;  /* its oom_kill count at sr_memcg_open() */
};

/* The root of the cgroup mounts: $SPOTRUN_CGROUP_ROOT, else /sys/fs/cgroup. */
const char *sr_memcg_root(void);

/* Finds the memory cgroup of pid below root and reads its count now.
 * 0, or -ENOENT when none is readable (m->path is "" then). */
int sr_memcg_open(struct sr_memcg *m, const char *root, pid_t pid);
/* The same from the text of a /proc/<pid>/cgroup file. */
int sr_memcg_open_text(struct sr_memcg *m, const char *root, const char *proc_cgroup);

/* 1 when the count rose since sr_memcg_open(), 0 when it did not, -errno
 * when it is not known (no file, or it cannot be read now). */
int sr_memcg_oom_rose(const struct sr_memcg *m);

/* The number after key at the start of a line of text ("oom_kill 3"):
 * 0, or -ENOENT when no line has it. */
int sr_memcg_count(const char *text, const char *key, uint64_t *out);

#endif
