/*
 * history_load.c - a run's history read from the store (history.h): its
 * event logs listed, each read whole (a log past EVENTS_MAX: its head and
 * its tail), folded and derived; or read once and kept (struct
 * sr_hist_logs, struct sr_hist_once) for several readers to fold.
 */
#include "history.h"
#include "history_int.h"

#include <errno.h>
#include <stdio.h>

#include "catalog.h"
#include "events.h"
#include "layout.h"
#include "log.h"

#define EVENTS_MAX (64u << 20) /* one attempt's log read whole; far above any real one */
#define EVENTS_PART (8u << 20) /* of a larger log: its first and its last bytes read */

static void add_lines(struct sr_history *h, const char *buf, size_t len)
{
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n > 0)
            sr_hist_add_line(h, p, n); /* a torn last line is skipped */
        p += n + 1;
    }
}

/* Appends the whole lines of the part of a log read at off (the head: up
 * to its last newline; the tail: from its first) to out. */
static size_t whole_lines(char *out, const char *p, size_t n, int head)
{
    const char *end = p + n;
    if (head) {
        while (end > p && end[-1] != '\n')
            end--;
    } else {
        const char *nl = memchr(p, '\n', n);
        p = nl ? nl + 1 : end;
    }
    memcpy(out, p, (size_t)(end - p));
    return (size_t)(end - p);
}

/* A log past EVENTS_MAX (written by an older wrapper that did not thin
 * metric values, or planted): its first and last EVENTS_PART bytes, whole
 * lines only, hold the attempt's start, its end, its cause and its last
 * metric summaries; what lies between (metric values mostly) is left out,
 * with a warning. Two ranged reads: memory stays bounded. */
static int read_head_tail(struct sr_store *st, const char *key, char **buf, size_t *len,
                          uint64_t *size)
{
    int rc = sr_store_size(st, key, size);
    if (rc < 0)
        return rc;
    if (*size <= 2 * (uint64_t)EVENTS_PART)
        return -EFBIG; /* replaced meanwhile by something odd: say so */
    const struct sr_range plan[2] = {{0, EVENTS_PART}, {*size - EVENTS_PART, EVENTS_PART}};
    struct sr_source src;
    rc = sr_store_source_ranged(st, key, plan, 2, &src);
    if (rc < 0)
        return rc;
    char *part = malloc(EVENTS_PART);
    *buf = malloc(2 * (size_t)EVENTS_PART);
    *len = 0;
    if (!part || !*buf)
        rc = -ENOMEM;
    for (int i = 0; rc == 0 && i < 2; i++) {
        rc = src.read_at(src.ctx, part, EVENTS_PART, plan[i].off);
        if (rc == 0)
            *len += whole_lines(*buf + *len, part, EVENTS_PART, i == 0);
    }
    free(part);
    sr_store_source_close(st, &src);
    if (rc == 0)
        sr_warn("the event log %s is %.0f MiB: read its first and last %u MiB only (the values "
                "between, metrics mostly, are left out)",
                key, (double)*size / (1 << 20), EVENTS_PART >> 20);
    return rc;
}

/* Reads the log name of run: its lines in *buf (malloc'd), *len bytes, the
 * object's size in *size. 1 when there is nothing to fold (deleted
 * meanwhile, or not a log: said), 0, or -errno. */
static int read_log(struct sr_store *st, const char *run_id, const char *name, char **buf,
                    size_t *len, uint64_t *size)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/" SR_KEY_EVENTS "/%s", run_id, name);
    *buf = NULL;
    *len = 0;
    int g = sr_store_get(st, key, EVENTS_MAX, buf, len);
    *size = *len;
    if (g == -EFBIG) {
        g = read_head_tail(st, key, buf, len, size);
    }
    if (g == -ENOENT || g == -EBADMSG || g == -EFBIG) {
        if (g != -ENOENT) /* not a regular file, or absurdly large */
            sr_warn("ignoring the event log %s: %s", key, sr_strerror(g));
        free(*buf);
        *buf = NULL;
        return 1; /* -ENOENT: deleted meanwhile (--fresh) */
    }
    if (g < 0) {
        free(*buf);
        *buf = NULL;
    }
    return g;
}

/* Reads the logs names of run: each folded into fold and freed when fold
 * is given (one log in memory at a time), else kept in keep. */
static int read_logs(struct sr_store *st, const char *run_id, const struct sr_strlist *names,
                     struct sr_history *fold, struct sr_hist_logs *keep)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < names->n; i++) {
        struct sr_hist_log log = {.attempt = sr_events_attempt_of(names->v[i])};
        if (log.attempt == UINT32_MAX)
            continue; /* not a log spotrun writes (sr_events_next_attempt warns) */
        rc = read_log(st, run_id, names->v[i], &log.buf, &log.len, &log.size);
        if (rc != 0) {
            rc = rc < 0 ? rc : 0; /* 1: nothing to fold */
            continue;
        }
        struct sr_hist_log *v =
            fold ? NULL : grow((void **)&keep->v, &keep->n, &keep->cap, sizeof(*keep->v));
        if (fold)
            add_lines(fold, log.buf, log.len);
        if (v)
            *v = log;
        else
            free(log.buf);
        if (!fold && !v)
            rc = -ENOMEM;
    }
    return rc;
}

int sr_hist_load_logs(struct sr_store *st, const char *run_id, const struct sr_strlist *names,
                      int done, struct sr_history *h)
{
    const int rc = read_logs(st, run_id, names, h, NULL);
    if (rc < 0)
        return rc;
    h->done_marker = done;
    sr_hist_derive(h);
    return 0;
}

/* The run's event logs' names and whether it is done (the DONE marker):
 * what both loads read first. 0, or -errno; the caller frees names. */
static int list_logs(struct sr_store *st, const char *run_id, struct sr_strlist *names, int *done)
{
    *names = (struct sr_strlist){0};
    int rc = sr_list_run(st, run_id, SR_KEY_EVENTS, names);
    *done = rc == 0 ? sr_ckpt_is_done(st, run_id) : 0;
    if (rc == 0 && *done < 0)
        rc = *done;
    return rc;
}

int sr_hist_logs_read(struct sr_store *st, const char *run_id, struct sr_hist_logs *l)
{
    struct sr_strlist names;
    int done;
    int rc = list_logs(st, run_id, &names, &done);
    l->done = done > 0;
    if (rc == 0)
        rc = read_logs(st, run_id, &names, NULL, l);
    sr_strlist_free(&names);
    return rc;
}

void sr_hist_from_logs(const struct sr_hist_logs *l, struct sr_history *h)
{
    for (size_t i = 0; i < l->n; i++)
        add_lines(h, l->v[i].buf, l->v[i].len);
    h->done_marker = l->done;
    sr_hist_derive(h);
}

void sr_hist_logs_free(struct sr_hist_logs *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].buf);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

int sr_hist_load(struct sr_store *st, const char *run_id, struct sr_history *h)
{
    struct sr_strlist names;
    int done;
    int rc = list_logs(st, run_id, &names, &done);
    if (rc == 0)
        rc = sr_hist_load_logs(st, run_id, &names, done, h);
    sr_strlist_free(&names);
    return rc;
}

void sr_hist_once_init(struct sr_hist_once *o, struct sr_store *st, const char *run_id)
{
    memset(o, 0, sizeof(*o));
    o->st = st;
    o->run_id = run_id;
    sr_hist_init(&o->h);
}

const struct sr_history *sr_hist_once_get(struct sr_hist_once *o, int *rc)
{
    if (!o->tried) {
        o->tried = 1;
        o->rc = sr_hist_logs_read(o->st, o->run_id, &o->logs);
        if (o->rc == 0)
            sr_hist_from_logs(&o->logs, &o->h);
        else
            sr_hist_logs_free(&o->logs);
    }
    *rc = o->rc;
    return o->rc == 0 ? &o->h : NULL;
}

const struct sr_hist_logs *sr_hist_once_logs(struct sr_hist_once *o)
{
    int rc;
    return sr_hist_once_get(o, &rc) ? &o->logs : NULL;
}

void sr_hist_once_free(struct sr_hist_once *o)
{
    sr_hist_logs_free(&o->logs);
    sr_hist_free(&o->h);
}
