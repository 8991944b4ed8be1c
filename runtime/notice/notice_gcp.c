/*
 * notice_gcp.c - GCP preemption through the metadata server.
 *
 * Two keys, each on its own thread with a long poll (GCP's
 * wait_for_change; the answer comes the moment the value changes, so there
 * is no polling delay): instance/preempted ("TRUE": about 30 s remain) and
 * instance/maintenance-event ("TERMINATE_ON_HOST_MAINTENANCE": the VM
 * stops for host maintenance, announced 60 s ahead; back to "NONE":
 * withdrawn; live migration is only logged). The first read of a key is a
 * plain GET, so a value that is already set is seen, and its ETag makes the
 * long poll wait for a change from exactly that value; without an ETag (a
 * proxy that drops it) the long poll goes without last_etag, as GCP's own
 * docs do, rather than falling back to polling.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "notice_int.h"
#include "units.h"

#define LONG_POLL_S 300
#define PREEMPT_NOTICE_MS 30000
#define MAINTENANCE_NOTICE_MS 60000

struct key {
    const char *path;
    /* Reacts to a value: 1 when there is nothing left to watch, 0 to go
     * on, -1 for a value this key never has. */
    int (*on_value)(struct sr_nw *w, const char *value, int *state);
};

static void post(struct sr_nw *w, enum sr_notice_kind kind, int64_t ms, const char *what)
{
    struct sr_notice_event ev = {.kind = kind};
    if (kind == SR_NOTICE_PREEMPT) {
        ev.deadline_ms = sr_now_ms() + ms;
        ev.deadline_wall_ms = sr_wall_ms() + ms;
    }
    snprintf(ev.source, sizeof(ev.source), "gcp");
    snprintf(ev.what, sizeof(ev.what), "%s", what);
    snprintf(ev.id, sizeof(ev.id), "%s", strchr(what, ' ') ? "maintenance-event" : what);
    sr_notice_post(w->n, &ev);
}

static int on_preempted(struct sr_nw *w, const char *value, int *state)
{
    (void)state;
    if (strcmp(value, "TRUE") != 0)
        return strcmp(value, "FALSE") == 0 ? 0 : -1;
    post(w, SR_NOTICE_PREEMPT, PREEMPT_NOTICE_MS, "preempted");
    return 1; /* a preemption is never taken back */
}

/* state: 0 NONE, 1 live migration, 2 termination; acts on changes only. */
static int on_maintenance(struct sr_nw *w, const char *value, int *state)
{
    const int now = strstr(value, "TERMINATE") ? 2 : strstr(value, "MIGRATE") ? 1 : 0;
    if (now == 0 && strcmp(value, "NONE") != 0)
        return -1;
    if (now == *state)
        return 0;
    if (now == 2)
        post(w, SR_NOTICE_PREEMPT, MAINTENANCE_NOTICE_MS, "maintenance-event TERMINATE");
    else if (*state == 2)
        post(w, SR_NOTICE_WITHDRAWN, 0, "maintenance-event NONE");
    if (now == 1)
        sr_info("GCP announces a live migration (%s): nothing to do", value);
    *state = now;
    return 0;
}

static void watch_key(struct sr_nw *w, const struct key *k)
{
    char etag[128] = "", prev[128] = "", url[2400];
    int state = 0, known = 0; /* known: a value was read (with or without an ETag) */
    const char *const hdr[] = {"Metadata-Flavor: Google", NULL};
    while (!sr_nw_stopping(w)) {
        if (etag[0])
            snprintf(url, sizeof(url), "%s%s?wait_for_change=true&timeout_sec=%d&last_etag=%s",
                     w->n->gcp_url, k->path, LONG_POLL_S, etag);
        else if (known) /* no ETag: wait for a change from the value now (GCP's own docs) */
            snprintf(url, sizeof(url), "%s%s?wait_for_change=true&timeout_sec=%d", w->n->gcp_url,
                     k->path, LONG_POLL_S);
        else
            snprintf(url, sizeof(url), "%s%s", w->n->gcp_url, k->path);
        struct sr_http r;
        const int64_t t0 = sr_now_ms();
        const int waited = known;
        const int rc =
            sr_nw_request(w, "GET", url, hdr, NULL, known ? (LONG_POLL_S + 10) * 1000L : 5000L, &r);
        int done = 0;
        if (rc == -ECANCELED)
            break;
        if (rc < 0) {
            sr_nw_warn(w, "cannot read %s%s: %s; retrying", w->n->gcp_url, k->path,
                       rc == -EMSGSIZE ? "answer too large" : r.error);
            etag[0] = '\0';
            known = 0;
        } else if (r.status == 200 && r.body && r.len < 64) {
            char value[64];
            snprintf(value, sizeof(value), "%s", r.body);
            value[strcspn(value, "\r\n")] = '\0';
            snprintf(prev, sizeof(prev), "%s", etag);
            snprintf(etag, sizeof(etag), "%s", r.etag);
            known = 1;
            done = k->on_value(w, value, &state);
            if (done < 0) {
                sr_nw_warn(w, "ignoring an unexpected value of %s from %s", k->path, w->n->gcp_url);
                etag[0] = '\0';
                known = 0;
            }
        } else {
            sr_nw_warn(w, "unexpected answer from %s%s (HTTP %ld, %zu bytes); retrying",
                       w->n->gcp_url, k->path, r.status, r.len);
            etag[0] = '\0';
            known = 0;
        }
        /* A long poll that comes back at once with nothing new (a server
         * that ignores wait_for_change) must not turn into a busy loop. */
        const int pause = rc < 0 || r.status != 200 || !known ||
                          (waited && sr_now_ms() - t0 < 50 && strcmp(r.etag, prev) == 0);
        sr_http_free(&r);
        sr_nw_round_end(w);
        if (done > 0)
            break;
        /* A long poll returns on a change; anything else is retried after
         * the poll interval so a broken server is not hammered. */
        if (pause && sr_nw_sleep(w, w->n->poll_ms) < 0)
            break;
    }
}

static void *maintenance_thread(void *arg)
{
    struct sr_nw w;
    if (sr_nw_init(arg, &w) < 0)
        return NULL;
    static const struct key k = {"/computeMetadata/v1/instance/maintenance-event", on_maintenance};
    watch_key(&w, &k);
    sr_nw_free(&w);
    return NULL;
}

void sr_gcp_watch(struct sr_nw *w)
{
    if (sr_notice_spawn(w->n, maintenance_thread) < 0)
        sr_warn("cannot watch GCP maintenance events; watching preemption only");
    static const struct key k = {"/computeMetadata/v1/instance/preempted", on_preempted};
    watch_key(w, &k);
}
