/*
 * history_load.c - a run's history read from the store (history.h): its
 * event logs listed, each read whole (a log past EVENTS_MAX: its head and
 * its tail), folded and derived.
 */
#include "history.h"
#include "history_int.h"

#include <errno.h>
#include <stdio.h>

#include "catalog.h"
#include "events.h"
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

/* A log past EVENTS_MAX (written by an older wrapper that did not thin
 * metric values, or planted): its first and last EVENTS_PART bytes, whole
 * lines only, hold the attempt's start, its end, its cause and its last
 * metric summaries; what lies between (metric values mostly) is left out,
 * with a warning. Two ranged reads: memory stays bounded. */
static int add_head_tail(struct sr_history *h, struct sr_store *st, const char *key)
{
    uint64_t size = 0;
    int rc = sr_store_size(st, key, &size);
    if (rc < 0)
        return rc;
    if (size <= 2 * (uint64_t)EVENTS_PART)
        return -EFBIG; /* replaced meanwhile by something odd: say so */
    const struct sr_range plan[2] = {{0, EVENTS_PART}, {size - EVENTS_PART, EVENTS_PART}};
    struct sr_source src;
    rc = sr_store_source_ranged(st, key, plan, 2, &src);
    if (rc < 0)
        return rc;
    char *buf = malloc(EVENTS_PART);
    if (!buf)
        rc = -ENOMEM;
    for (int i = 0; rc == 0 && i < 2; i++) {
        rc = src.read_at(src.ctx, buf, EVENTS_PART, plan[i].off);
        if (rc < 0)
            break;
        const char *p = buf, *end = buf + EVENTS_PART;
        if (i == 0) { /* the head, up to its last whole line */
            while (end > p && end[-1] != '\n')
                end--;
        } else { /* the tail, from its first whole line */
            const char *nl = memchr(p, '\n', EVENTS_PART);
            p = nl ? nl + 1 : end;
        }
        add_lines(h, p, (size_t)(end - p));
    }
    free(buf);
    sr_store_source_close(st, &src);
    if (rc == 0)
        sr_warn("the event log %s is %.0f MiB: read its first and last %u MiB only (the values "
                "between, metrics mostly, are left out)",
                key, (double)size / (1 << 20), EVENTS_PART >> 20);
    return rc;
}

int sr_hist_load_logs(struct sr_store *st, const char *run_id, const struct sr_strlist *names,
                      int done, struct sr_history *h)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < names->n; i++) {
        if (sr_events_attempt_of(names->v[i]) == UINT32_MAX)
            continue; /* not a log spotrun writes (sr_events_next_attempt warns) */
        char key[512];
        snprintf(key, sizeof(key), "%s/events/%s", run_id, names->v[i]);
        char *buf = NULL;
        size_t len = 0;
        int g = sr_store_get(st, key, EVENTS_MAX, &buf, &len);
        if (g == -EFBIG) {
            sr_err_clear();
            g = add_head_tail(h, st, key);
            len = 0;
        }
        if (g == -ENOENT)
            continue;                     /* deleted meanwhile (--fresh) */
        if (g == -EBADMSG || g == -EFBIG) /* not a regular file, or absurdly large */
            sr_warn("ignoring the event log %s: %s", key, sr_strerror(g));
        else if (g < 0)
            rc = g;
        else
            add_lines(h, buf, len);
        free(buf);
    }
    if (rc < 0)
        return rc;
    h->done_marker = done;
    sr_hist_derive(h);
    return 0;
}

int sr_hist_load(struct sr_store *st, const char *run_id, struct sr_history *h)
{
    char prefix[256];
    snprintf(prefix, sizeof(prefix), "%s/events", run_id);
    struct sr_strlist names = {0};
    int rc = sr_store_list(st, prefix, &names);
    const int done = rc == 0 ? sr_ckpt_is_done(st, run_id) : 0;
    if (rc == 0 && done < 0)
        rc = done;
    if (rc == 0)
        rc = sr_hist_load_logs(st, run_id, &names, done, h);
    sr_strlist_free(&names);
    return rc;
}
