/*
 * runsum_writer.c - the wrapper's side of SUMMARY.json (see runsum.h):
 * one history of the run kept in memory, the earlier attempts' logs read
 * once, each flushed log's new lines folded in, the summary put after
 * each flush.
 *
 * Threads: the events flush hook calls it one call at a time (events.c's
 * flush_mu), from whichever thread flushed; nothing else touches it until
 * close.
 */
#include "runsum.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "log.h"

#define LOGS_MAX 64 /* attempts of this process whose logs it folds */

struct sr_runsum_writer {
    struct sr_store *st;
    char run[256];
    struct sr_history h;
    int loaded; /* the earlier attempts' logs are in h */
    int warned; /* a write failed once (said) */
    struct {
        uint32_t attempt;
        size_t folded; /* bytes of its log already in h */
    } logs[LOGS_MAX];
    size_t n_logs;
};

int sr_runsum_writer_open(struct sr_store *st, const char *run, struct sr_runsum_writer **out)
{
    struct sr_runsum_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->st = st;
    snprintf(w->run, sizeof(w->run), "%s", run);
    sr_hist_init(&w->h);
    *out = w;
    return 0;
}

void sr_runsum_writer_close(struct sr_runsum_writer *w)
{
    if (!w)
        return;
    sr_hist_free(&w->h);
    free(w);
}

static void fold(struct sr_history *h, const char *buf, size_t len)
{
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(buf + i, '\n', len - i);
        const size_t end = nl ? (size_t)(nl - buf) : len;
        if (end > i)
            sr_hist_add_line(h, buf + i, end - i); /* a cut line is skipped */
        i = end + 1;
    }
}

/* The logs of attempts before attempt, as the store has them (a wrapper
 * killed with -9 left its log: that attempt is vanished once ours starts). */
static int load_earlier(struct sr_runsum_writer *w, uint32_t attempt)
{
    char prefix[300];
    snprintf(prefix, sizeof(prefix), "%s/events", w->run);
    struct sr_strlist names = {0};
    int rc = sr_store_list(w->st, prefix, &names);
    for (size_t i = 0; rc == 0 && i < names.n; i++) {
        const uint32_t a = sr_events_attempt_of(names.v[i]);
        if (a == UINT32_MAX || a >= attempt)
            continue;
        char key[600];
        snprintf(key, sizeof(key), "%s/%s", prefix, names.v[i]);
        char *buf = NULL;
        size_t len = 0;
        const int g = sr_store_get(w->st, key, 256u << 20, &buf, &len);
        if (g == 0)
            fold(&w->h, buf, len);
        else if (g != -ENOENT && g != -EBADMSG && g != -EFBIG)
            rc = g;
        free(buf);
    }
    sr_strlist_free(&names);
    return rc;
}

static int write_summary(struct sr_runsum_writer *w)
{
    sr_hist_derive(&w->h);
    struct sr_runsum r;
    int rc = sr_runsum_from_history(&w->h, w->run, &r);
    json_t *o = rc == 0 ? sr_runsum_to_json(&r) : NULL;
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (rc == 0 && !text)
        rc = -ENOMEM;
    char key[300];
    snprintf(key, sizeof(key), "%s/%s", w->run, SR_RUNSUM_NAME);
    if (rc == 0)
        rc = sr_store_put(w->st, key, text, strlen(text));
    free(text);
    json_decref(o);
    sr_runsum_free(&r);
    return rc;
}

void sr_runsum_writer_flushed(void *ctx, uint32_t attempt, int node, const char *log, size_t len)
{
    struct sr_runsum_writer *w = ctx;
    if (!w || node)
        return; /* a multi-node run: stats reads its logs */
    int rc = 0;
    if (!w->loaded) {
        rc = load_earlier(w, attempt);
        w->loaded = rc == 0;
    }
    size_t k = 0;
    while (k < w->n_logs && w->logs[k].attempt != attempt)
        k++;
    if (rc == 0 && k == w->n_logs) {
        if (k == LOGS_MAX)
            return; /* restarted that often in one process: keep the last summary */
        w->logs[w->n_logs++].attempt = attempt;
    }
    /* A late flush of fewer bytes (another thread's, reordered) adds nothing. */
    if (rc == 0 && len > w->logs[k].folded) {
        fold(&w->h, log + w->logs[k].folded, len - w->logs[k].folded);
        w->logs[k].folded = len;
        rc = write_summary(w);
    }
    if (rc < 0) {
        if (!w->warned)
            sr_warn("cannot write %s/%s (spotrun stats reads the event logs instead): %s", w->run,
                    SR_RUNSUM_NAME, sr_strerror(rc));
        else
            sr_debug("cannot write %s/%s: %s", w->run, SR_RUNSUM_NAME, sr_strerror(rc));
        w->warned = 1;
        sr_err_clear();
    }
}
