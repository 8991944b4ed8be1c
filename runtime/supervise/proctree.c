/*
 * proctree.c - the job's process tree from /proc (see proctree.h).
 *
 * DESIGN: one pass over /proc collects (pid, ppid) pairs; descendants of
 * the root are then marked by repeated sweeps (a process's parent is marked
 * before or after it in pid order; a sweep that marks nothing ends it). A
 * tree of a few hundred processes costs a few milliseconds, paid only at a
 * request, a stop or a signal, never per step.
 */
#include "proctree.h"

#include "fsutil.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

struct proc {
    pid_t pid, ppid;
    int mark;
};

int sr_proctree_subreaper(void)
{
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 ? 0 : -errno;
}

int sr_proc_read(pid_t pid, const char *name, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
    const ssize_t n = sr_read_small(path, buf, len);
    return n > 0 ? 0 : n < 0 ? (int)n : -ENOENT;
}

/* The parent from /proc/<pid>/stat (fields start after the last ')'). */
static pid_t parent_of(pid_t pid)
{
    char buf[512];
    if (sr_proc_read(pid, "stat", buf, sizeof(buf)) < 0)
        return -1;
    const char *p = strrchr(buf, ')');
    int ppid;
    char state;
    if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2)
        return -1;
    return (pid_t)ppid;
}

/* Marks the descendants of root in v (root itself is not marked). */
static void mark_below(struct proc *v, size_t n, pid_t root)
{
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < n; i++) {
            if (v[i].mark)
                continue;
            int parent_marked = v[i].ppid == root;
            for (size_t j = 0; !parent_marked && j < n; j++)
                parent_marked = v[j].mark && v[j].pid == v[i].ppid;
            if (parent_marked)
                v[i].mark = changed = 1;
        }
    }
}

/* The processes of /proc, the descendants of root marked. */
static int snapshot(pid_t root, struct proc **out, size_t *count)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -errno;
    struct proc *v = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        const pid_t pid = (pid_t)atoi(e->d_name);
        const pid_t ppid = parent_of(pid);
        if (ppid < 0)
            continue; /* exited meanwhile */
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            struct proc *nv = realloc(v, cap * sizeof(*v));
            if (!nv) {
                free(v);
                closedir(d);
                return -ENOMEM;
            }
            v = nv;
        }
        v[n++] = (struct proc){pid, ppid, 0};
    }
    closedir(d);
    mark_below(v, n, root);
    *out = v;
    *count = n;
    return 0;
}

/* Whether pid catches or ignores sig (SigCgt / SigIgn of /proc/<pid>/status:
 * hex masks, bit sig-1). Blocked is not enough: a process that blocks the
 * signal for a moment (around a fork, a posix_spawn) and leaves it at its
 * default would die of it once it unblocks. */
static int listens(pid_t pid, int sig)
{
    char buf[4096];
    if (sr_proc_read(pid, "status", buf, sizeof(buf)) < 0)
        return 0;
    static const char *const keys[] = {"SigIgn:", "SigCgt:"};
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        const char *p = strstr(buf, keys[k]);
        if (!p)
            continue;
        const unsigned long long mask = strtoull(p + strlen(keys[k]), NULL, 16);
        if (sig >= 1 && sig <= 64 && (mask >> (sig - 1)) & 1)
            return 1;
    }
    return 0;
}

static int signal_below(pid_t root, int sig, int only_listeners, pid_t skip_pgid)
{
    struct proc *v = NULL;
    size_t n = 0;
    const int rc = snapshot(root, &v, &n);
    if (rc < 0)
        return rc;
    int sent = 0;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].mark || (only_listeners && !listens(v[i].pid, sig)))
            continue;
        if (skip_pgid > 0 && getpgid(v[i].pid) == skip_pgid)
            continue;
        if (kill(v[i].pid, sig) == 0)
            sent++;
    }
    free(v);
    return sent;
}

int sr_proctree_signal(pid_t root, int sig, int only_listeners)
{
    return signal_below(root, sig, only_listeners, 0);
}

int sr_proctree_signal_outside(pid_t root, int sig, pid_t pgid)
{
    return signal_below(root, sig, 0, pgid);
}

int sr_proctree_list(pid_t root, pid_t **pids, size_t *count)
{
    struct proc *v = NULL;
    size_t n = 0;
    const int rc = snapshot(root, &v, &n);
    if (rc < 0)
        return rc;
    pid_t *out = malloc((n ? n : 1) * sizeof(*out));
    if (!out) {
        free(v);
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].mark)
            out[k++] = v[i].pid;
    free(v);
    *pids = out;
    *count = k;
    return 0;
}

int sr_proctree_catches(pid_t pid, int sig)
{
    return listens(pid, sig);
}

int sr_proctree_contains(pid_t root, pid_t pid)
{
    for (int depth = 0; depth < 1024 && pid > 0; depth++) {
        if (pid == root)
            return 1;
        if (pid == 1)
            return 0;
        pid = parent_of(pid);
    }
    return 0;
}
