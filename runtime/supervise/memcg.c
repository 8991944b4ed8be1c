/*
 * memcg.c - the OOM-kill count of the job's memory cgroup (see memcg.h).
 */
#include "memcg.h"

#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEXT_MAX 8192 /* memory.events and memory.oom_control are a few lines */

const char *sr_memcg_root(void)
{
    const char *r = getenv("SPOTRUN_CGROUP_ROOT");
    return r && *r ? r : "/sys/fs/cgroup";
}

int sr_memcg_count(const char *text, const char *key, uint64_t *out)
{
    const size_t k = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, k) != 0 || p[k] != ' ')
            continue;
        char *end;
        errno = 0;
        const unsigned long long v = strtoull(p + k + 1, &end, 10);
        if (errno || end == p + k + 1 || (*end && *end != '\n'))
            return -EBADMSG;
        *out = (uint64_t)v;
        return 0;
    }
    return -ENOENT;
}

/* The count in path, or -errno. */
static int count_in(const char *path, uint64_t *out)
{
    char buf[TEXT_MAX];
    const ssize_t n = sr_read_small(path, buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    return sr_memcg_count(buf, "oom_kill", out);
}

/* A cgroup path as /proc says it: absolute, without "..", and short
 * enough to name a file below root. */
static int sane_path(const char *p, size_t len)
{
    if (len == 0 || p[0] != '/' || len > 3000)
        return 0;
    for (size_t i = 0; i + 1 < len; i++)
        if (p[i] == '.' && p[i + 1] == '.')
            return 0;
    return 1;
}

/* Tries root/<sub>/<path>/<file>; 0 when its count was read. */
static int try_file(struct sr_memcg *m, const char *root, const char *sub, const char *p,
                    size_t len, const char *file)
{
    char path[sizeof(m->path)];
    const int w = snprintf(path, sizeof(path), "%s%s%.*s%s%s", root, sub, (int)len, p,
                           len > 1 ? "/" : "", file);
    if (w < 0 || (size_t)w >= sizeof(path))
        return -ENAMETOOLONG;
    uint64_t c;
    const int rc = count_in(path, &c);
    if (rc < 0)
        return rc;
    snprintf(m->path, sizeof(m->path), "%s", path);
    m->start = c;
    return 0;
}

int sr_memcg_open_text(struct sr_memcg *m, const char *root, const char *text)
{
    memset(m, 0, sizeof(*m));
    const char *v2 = NULL, *v1 = NULL;
    size_t v2len = 0, v1len = 0;
    /* Lines are "ID:CONTROLLERS:PATH": "0::/x" is v2's, "N:...memory...:/x" v1's. */
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        const size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (c2) {
            const char *p = c2 + 1;
            const size_t plen = len - (size_t)(p - line);
            const size_t clen = (size_t)(c2 - c1 - 1);
            if (c1 - line == 1 && line[0] == '0' && clen == 0) {
                v2 = p;
                v2len = plen;
            } else {
                /* one of the comma-separated controllers is "memory" */
                for (const char *q = c1 + 1; q < c2;) {
                    const char *comma = memchr(q, ',', (size_t)(c2 - q));
                    const char *e = comma ? comma : c2;
                    if (e - q == 6 && memcmp(q, "memory", 6) == 0) {
                        v1 = p;
                        v1len = plen;
                    }
                    q = e + 1;
                }
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    if (v2 && sane_path(v2, v2len)) {
        /* unified (v2 only), then hybrid (v2 beside v1 at unified/) */
        if (try_file(m, root, "", v2, v2len, "memory.events") == 0 ||
            try_file(m, root, "/unified", v2, v2len, "memory.events") == 0)
            return 0;
    }
    if (v1 && sane_path(v1, v1len) &&
        try_file(m, root, "/memory", v1, v1len, "memory.oom_control") == 0)
        return 0;
    m->path[0] = '\0';
    return -ENOENT;
}

int sr_memcg_open(struct sr_memcg *m, const char *root, pid_t pid)
{
    char path[64], buf[TEXT_MAX];
    snprintf(path, sizeof(path), "/proc/%ld/cgroup", (long)pid);
    const ssize_t n = sr_read_small(path, buf, sizeof(buf));
    if (n < 0) {
        memset(m, 0, sizeof(*m));
        return -ENOENT;
    }
    return sr_memcg_open_text(m, root, buf);
}

int sr_memcg_oom_rose(const struct sr_memcg *m)
{
    if (!m->path[0])
        return -ENOENT;
    uint64_t now;
    const int rc = count_in(m->path, &now);
    if (rc < 0)
        return rc;
    return now > m->start;
}
