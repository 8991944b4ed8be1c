/*
 * layout.c - the store's key layout: builders and the listing's parser
 * (layout.h, docs/store.md "Layout").
 */
#include "layout.h"

#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int keyf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int keyf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int sr_key_join(char *buf, size_t len, const char *prefix, const char *name)
{
    return keyf(buf, len, "%s/%s", prefix, name);
}

int sr_key_run(char *buf, size_t len, const char *run, const char *name)
{
    return keyf(buf, len, "%s/%s", run, name);
}

int sr_key_lease(char *buf, size_t len, const char *run, int rank)
{
    if (rank < 0)
        return keyf(buf, len, "%s/" SR_KEY_LEASE, run);
    return keyf(buf, len, "%s/" SR_KEY_LEASE ".%d", run, rank);
}

int sr_key_ckpt(char *buf, size_t len, const char *run, uint64_t seq, const char *name)
{
    if (name && *name)
        return keyf(buf, len, "%s/" SR_KEY_CKPT "/%010" PRIu64 "/%s", run, seq, name);
    return keyf(buf, len, "%s/" SR_KEY_CKPT "/%010" PRIu64, run, seq);
}

int sr_key_event_log(char *buf, size_t len, const char *run, uint32_t attempt, int node)
{
    if (node < 0)
        return keyf(buf, len, "%s/" SR_KEY_EVENTS "/%06" PRIu32 ".jsonl", run, attempt);
    return keyf(buf, len, "%s/" SR_KEY_EVENTS "/%06" PRIu32 "-n%d.jsonl", run, attempt, node);
}

int sr_key_suspect(char *buf, size_t len, const char *run, uint64_t seq)
{
    return keyf(buf, len, "%s/" SR_KEY_SUSPECT "/%010" PRIu64 ".json", run, seq);
}

int sr_key_summaries(char *buf, size_t len, const char *run)
{
    return keyf(buf, len, SR_KEY_SUMMARIES "/%s.json", run);
}

int sr_key_sweep(char *buf, size_t len, const char *sweep, const char *fmt, ...)
{
    const int n = snprintf(buf, len, SR_KEY_SWEEPS "/%s/", sweep);
    if (n < 0 || (size_t)n >= len)
        return -ENAMETOOLONG;
    va_list ap;
    va_start(ap, fmt);
    const int m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
    va_end(ap);
    return m < 0 || (size_t)m >= len - (size_t)n ? -ENAMETOOLONG : 0;
}

int sr_list_run(struct sr_store *st, const char *run, const char *name, struct sr_strlist *names)
{
    char prefix[512];
    const int rc = sr_key_run(prefix, sizeof(prefix), run, name);
    return rc < 0 ? rc : sr_store_list(st, prefix, names);
}

int sr_list_sweep(struct sr_store *st, const char *sweep, const char *dir, struct sr_strlist *names)
{
    char prefix[512];
    const int rc = sr_key_sweep(prefix, sizeof(prefix), sweep, "%s", dir);
    return rc < 0 ? rc : sr_store_list(st, prefix, names);
}

int sr_key_is_lease(const char *name)
{
    if (strncmp(name, SR_KEY_LEASE, strlen(SR_KEY_LEASE)) != 0)
        return 0;
    const char *r = name + strlen(SR_KEY_LEASE);
    return *r == '\0' || *r == '.';
}

enum sr_run_obj sr_key_classify(const char *rest, const char **name)
{
    static const char ev[] = SR_KEY_EVENTS "/";
    if (strncmp(rest, ev, sizeof(ev) - 1) == 0 && rest[sizeof(ev) - 1] &&
        !strchr(rest + sizeof(ev) - 1, '/')) {
        if (name)
            *name = rest + sizeof(ev) - 1;
        return SR_OBJ_EVENT_LOG;
    }
    if (strcmp(rest, SR_KEY_DONE) == 0)
        return SR_OBJ_DONE;
    if (sr_key_is_lease(rest))
        return SR_OBJ_LEASE;
    return SR_OBJ_OTHER;
}

uint32_t sr_key_log_attempt(const char *name, int *node)
{
    const size_t digits = strspn(name, "0123456789");
    const char *rest = name + digits;
    int rank = -1;
    if (strncmp(rest, "-n", 2) == 0) { /* a node's log in a multi-node run */
        const size_t r = strspn(rest + 2, "0123456789");
        rank = r >= 1 && r <= 3 ? atoi(rest + 2) : -1;
        rest = r >= 1 && r <= 3 ? rest + 2 + r : "";
    }
    if (digits == 0 || digits > 9 || strcmp(rest, ".jsonl") != 0)
        return UINT32_MAX;
    if (node)
        *node = rank;
    return (uint32_t)strtoul(name, NULL, 10);
}
