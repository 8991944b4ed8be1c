/*
 * evidence.c - what a stalled job's processes were doing (see evidence.h).
 */
#include "evidence.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proctree.h"

struct stat_line {
    char comm[32];
    char state;
    int64_t cpu_ms;
};

/* /proc/<pid>/stat: comm is between the first '(' and the last ')' (it may
 * hold spaces and parentheses); utime and stime are fields 14 and 15. */
static int stat_of(pid_t pid, struct stat_line *out)
{
    char buf[1024];
    if (sr_proc_read(pid, "stat", buf, sizeof(buf)) < 0)
        return -ENOENT;
    const char *open_p = strchr(buf, '('), *close_p = strrchr(buf, ')');
    if (!open_p || !close_p || close_p < open_p)
        return -EBADMSG;
    size_t len = (size_t)(close_p - open_p - 1);
    if (len >= sizeof(out->comm))
        len = sizeof(out->comm) - 1;
    memcpy(out->comm, open_p + 1, len);
    out->comm[len] = '\0';
    unsigned long long ut = 0, st = 0;
    /* after ')': state ppid pgrp session tty tpgid flags minflt cminflt
     * majflt cmajflt utime stime */
    if (sscanf(close_p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &out->state,
               &ut, &st) != 3)
        return -EBADMSG;
    const long hz = sysconf(_SC_CLK_TCK);
    out->cpu_ms = (int64_t)((ut + st) * 1000ull / (unsigned long long)(hz > 0 ? hz : 100));
    return 0;
}

void sr_evidence_cpu_snapshot(pid_t root, struct sr_cpu_base *b)
{
    b->n = 0;
    pid_t *pids = NULL;
    size_t n = 0;
    if (sr_proctree_list(root, &pids, &n) < 0)
        return;
    for (size_t i = 0; i < n && b->n < SR_EVIDENCE_PROCS_MAX; i++) {
        struct stat_line s;
        if (stat_of(pids[i], &s) == 0) {
            b->pid[b->n] = pids[i];
            b->cpu_ms[b->n++] = s.cpu_ms;
        }
    }
    free(pids);
}

static int64_t base_of(const struct sr_cpu_base *b, pid_t pid)
{
    for (size_t i = 0; b && i < b->n; i++)
        if (b->pid[i] == pid)
            return b->cpu_ms[i];
    return 0;
}

json_t *sr_evidence_procs(pid_t root, const struct sr_cpu_base *base)
{
    pid_t *pids = NULL;
    size_t n = 0;
    if (sr_proctree_list(root, &pids, &n) < 0)
        return NULL;
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n && i < SR_EVIDENCE_PROCS_MAX; i++) {
        struct stat_line s;
        if (stat_of(pids[i], &s) < 0)
            continue;
        char wchan[128] = "";
        (void)sr_proc_read(pids[i], "wchan", wchan, sizeof(wchan));
        if (strcmp(wchan, "0") == 0)
            wchan[0] = '\0'; /* running, or hidden by the kernel */
        const char state[2] = {s.state, '\0'};
        int64_t cpu = s.cpu_ms - base_of(base, pids[i]);
        json_t *comm = json_string(s.comm); /* NULL: not UTF-8 */
        json_t *wc = json_string(wchan);
        json_array_append_new(arr, json_pack("{s:i,s:o,s:s,s:o,s:I}", "pid", (int)pids[i], "comm",
                                             comm ? comm : json_string("?"), "state", state,
                                             "wchan", wc ? wc : json_string(""), "cpu_ms",
                                             (json_int_t)(cpu < 0 ? 0 : cpu)));
    }
    free(pids);
    return arr;
}

int sr_evidence_stopped(pid_t root, pid_t *stopped, size_t max, size_t *n_stopped)
{
    pid_t *pids = NULL;
    size_t n = 0, live = 0;
    *n_stopped = 0;
    const int rc = sr_proctree_list(root, &pids, &n);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        struct stat_line s;
        if (stat_of(pids[i], &s) < 0 || s.state == 'Z' || s.state == 'X')
            continue;
        live++;
        if (s.state != 'T' && s.state != 't')
            continue;
        if (*n_stopped < max)
            stopped[*n_stopped] = pids[i];
        ++*n_stopped;
    }
    free(pids);
    return (int)live;
}

/* ---- tracebacks -------------------------------------------------------------- */

struct tb {
    pid_t pid;
    char comm[32];
    off_t from, size;
    int64_t changed_ms;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static off_t size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1;
}

/* Appends the bytes [from, size) of path to out (bounded by max). */
static void append_file(const char *path, off_t from, off_t size, char *out, size_t *used,
                        size_t max)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    while (from < size && *used < max) {
        size_t want = (size_t)(size - from);
        if (want > max - *used)
            want = max - *used;
        const ssize_t r = pread(fd, out + *used, want, from);
        if (r <= 0)
            break;
        *used += (size_t)r;
        from += r;
    }
    close(fd);
}

char *sr_evidence_tracebacks(pid_t root, const char *dir, int signo, size_t max, int wait_ms)
{
    pid_t *pids = NULL;
    size_t n = 0;
    if (!dir || !*dir || signo <= 0 || sr_proctree_list(root, &pids, &n) < 0)
        return NULL;
    struct tb *v = calloc(n ? n : 1, sizeof(*v));
    size_t k = 0;
    char path[4200];
    for (size_t i = 0; v && i < n && k < SR_EVIDENCE_PROCS_MAX; i++) {
        snprintf(path, sizeof(path), "%s/%d.tb", dir, (int)pids[i]);
        const off_t sz = size_of(path);
        /* Only a process that registered (its file) and still catches the
         * signal: to any other its default action could be death. */
        if (sz < 0 || !sr_proctree_catches(pids[i], signo))
            continue;
        struct stat_line s = {0};
        (void)stat_of(pids[i], &s);
        v[k] = (struct tb){.pid = pids[i], .from = sz, .size = sz, .changed_ms = 0};
        snprintf(v[k].comm, sizeof(v[k].comm), "%s", s.comm);
        if (kill(pids[i], signo) == 0)
            k++;
    }
    free(pids);
    if (!v || k == 0) {
        free(v);
        return NULL;
    }
    /* Wait until every file grew and then stood still for 50 ms, or the
     * time is up (a process stopped by SIGSTOP never writes). */
    const int64_t until = mono_ms() + wait_ms;
    for (;;) {
        const int64_t t = mono_ms();
        size_t settled = 0;
        for (size_t i = 0; i < k; i++) {
            snprintf(path, sizeof(path), "%s/%d.tb", dir, (int)v[i].pid);
            const off_t sz = size_of(path);
            if (sz > v[i].size) {
                v[i].size = sz;
                v[i].changed_ms = t;
            }
            if (v[i].changed_ms && t - v[i].changed_ms >= 50)
                settled++;
        }
        if (settled == k || t >= until)
            break;
        usleep(10 * 1000);
    }
    char *out = malloc(max + 1);
    size_t used = 0;
    for (size_t i = 0; out && i < k && used < max; i++) {
        if (v[i].size <= v[i].from)
            continue;
        char head[96];
        const int h =
            snprintf(head, sizeof(head), "--- pid %d (%s) ---\n", (int)v[i].pid, v[i].comm);
        for (int j = 0; j < h && used < max; j++)
            out[used++] = head[j];
        snprintf(path, sizeof(path), "%s/%d.tb", dir, (int)v[i].pid);
        append_file(path, v[i].from, v[i].size, out, &used, max);
    }
    free(v);
    if (out && used == 0) {
        free(out);
        return NULL;
    }
    if (out)
        out[used] = '\0';
    return out;
}
