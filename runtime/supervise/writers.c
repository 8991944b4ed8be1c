/*
 * writers.c - the checkpoint directory's files a process of the job holds
 * open for writing (see writers.h).
 *
 * DESIGN: /proc is the truth of "open for writing now": inotify's
 * IN_CLOSE_WRITE says that a file opened for writing was closed, but the
 * kernel sends the same event when it closes the files of a process that
 * died (kill -9, the OOM killer), so a close cannot tell a finished save
 * from a torn one; the fd table and its flags can, while the process
 * lives. The supervisor asks at its decisions and remembers the answer
 * (savewait.c).
 */
#include "writers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codec.h"
#include "proctree.h"

/* Whether rel (a path under the directory) or a directory above it is
 * left out by the patterns (codec.h: a directory left out takes its
 * contents along). */
static int excluded(const char *const *pats, size_t n, const char *rel)
{
    if (!n)
        return 0;
    char prefix[PATH_MAX];
    const size_t len = strlen(rel);
    if (len >= sizeof(prefix))
        return 0;
    memcpy(prefix, rel, len + 1);
    for (char *slash = prefix;; slash++) {
        char *next = strchr(slash, '/');
        if (next)
            *next = '\0';
        const char *name = strrchr(prefix, '/') ? strrchr(prefix, '/') + 1 : prefix;
        if (sr_pack_excluded(pats, n, prefix, name))
            return 1;
        if (!next)
            return 0;
        *next = '/';
        slash = next;
    }
}

/* The open flags of pid's fd (fdinfo's "flags:", octal); -1 when gone. */
static long fd_flags(pid_t pid, const char *fd)
{
    char name[300], buf[512];
    snprintf(name, sizeof(name), "fdinfo/%s", fd);
    if (sr_proc_read(pid, name, buf, sizeof(buf)) < 0)
        return -1;
    const char *p = strstr(buf, "flags:");
    return p ? strtol(p + 6, NULL, 8) : -1;
}

/* A file of the directory (prefix: its real path, with a '/') that pid
 * holds open for writing: 1 and *w, else 0. */
static int scan_pid(pid_t pid, const char *prefix, const char *const *exclude, size_t nexclude,
                    struct sr_writer *w)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return 0; /* exited, or not ours to read */
    const size_t plen = strlen(prefix);
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char link[PATH_MAX];
        const ssize_t n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
        if (n <= (ssize_t)plen)
            continue;
        link[n] = '\0';
        if (strncmp(link, prefix, plen) != 0)
            continue;
        static const char deleted[] = " (deleted)";
        if ((size_t)n > sizeof(deleted) && strcmp(link + n - (sizeof(deleted) - 1), deleted) == 0)
            continue;
        const char *rel = link + plen;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode) ||
            excluded(exclude, nexclude, rel))
            continue;
        const long flags = fd_flags(pid, e->d_name);
        if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY || (flags & O_APPEND))
            continue;
        w->pid = pid;
        snprintf(w->file, sizeof(w->file), "%s", rel);
        found = 1;
    }
    closedir(d);
    return found;
}

int sr_writers_find(pid_t root, const char *dir, const char *const *exclude, size_t nexclude,
                    struct sr_writer *w)
{
    w->pid = 0;
    w->file[0] = '\0';
    char real[PATH_MAX], prefix[PATH_MAX + 1];
    if (!realpath(dir, real))
        return -errno;
    snprintf(prefix, sizeof(prefix), "%s/", strcmp(real, "/") == 0 ? "" : real);
    pid_t *pids;
    size_t n;
    const int rc = sr_proctree_list(root, &pids, &n);
    if (rc < 0)
        return rc;
    int found = 0;
    for (size_t i = 0; i < n && !found; i++)
        found = scan_pid(pids[i], prefix, exclude, nexclude, w);
    free(pids);
    return found;
}

enum sr_fate sr_writers_fate(pid_t pid)
{
    char buf[1024];
    if (sr_proc_read(pid, "stat", buf, sizeof(buf)) < 0)
        return SR_FATE_GONE;
    const char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return SR_FATE_GONE;
    const char state = p[2];
    if (state != 'Z' && state != 'X')
        return SR_FATE_RUNNING;
    /* Field 52, exit_code (Linux 3.5): the status waitpid() would give;
     * the fields after ')' start with the third, state. */
    int field = 3;
    const char *q = p + 2;
    while (field < 52 && (q = strchr(q, ' ')))
        q++, field++;
    if (!q)
        return SR_FATE_GONE;
    const int status = atoi(q);
    return WIFSIGNALED(status) ? SR_FATE_KILLED : SR_FATE_EXITED;
}
