/*
 * notice_azure.c - Azure Scheduled Events.
 *
 * Polls /metadata/scheduledevents (api-version 2020-07-01, header
 * "Metadata: true") and acts on Preempt and Terminate events that list this
 * VM by the name IMDS gives for it (compute/name). The first call may take
 * a long time while Azure enables the service for the VM, which is why it
 * runs here and not before the job starts. An event that was announced and
 * then disappears from the document was cancelled: it is reported
 * withdrawn. A document that cannot be read withdraws nothing. Once the
 * checkpoint is durable the supervisor acknowledges the event with
 * StartRequests so that Azure need not wait for NotBefore.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "notice_int.h"
#include "notice_parse.h"
#include "units.h"

#define API "api-version=2020-07-01"
#define FIRST_CALL_TIMEOUT_MS 120000
#define CALL_TIMEOUT_MS 10000
#define MIN_NOTICE_MS 30000 /* Preempt events come at least 30 s ahead */
#define MAX_EVENTS 16

struct azure {
    struct sr_nw *w;
    char vm[256];
    int vm_tries;
    char posted[MAX_EVENTS][128];
    size_t nposted;
};

static void fetch_vm_name(struct azure *a)
{
    char url[2200];
    snprintf(url, sizeof(url),
             "%s/metadata/instance/compute/name?api-version=2021-02-01&format=text",
             a->w->n->azure_url);
    const char *const hdr[] = {"Metadata: true", NULL};
    struct sr_http r;
    a->vm_tries++;
    if (sr_nw_request(a->w, "GET", url, hdr, NULL, 5000, &r) == 0 && r.status == 200 && r.body &&
        r.len > 0 && r.len < sizeof(a->vm)) {
        snprintf(a->vm, sizeof(a->vm), "%s", r.body);
        a->vm[strcspn(a->vm, "\r\n")] = '\0';
        sr_debug("azure: this VM is %s", a->vm);
    } else if (a->vm_tries == 3) {
        sr_warn("cannot read this VM's name from %s: acting on every Preempt/Terminate event", url);
    }
    sr_http_free(&r);
}

static int was_posted(const struct azure *a, const char *id)
{
    for (size_t i = 0; i < a->nposted; i++)
        if (strcmp(a->posted[i], id) == 0)
            return 1;
    return 0;
}

static void announce(struct azure *a, const struct sr_azure_event *e)
{
    struct sr_notice_event ev = {.kind = SR_NOTICE_PREEMPT, .needs_ack = 1};
    const int64_t now_wall = sr_wall_ms();
    int64_t wall = e->not_before_ms;
    if (wall == 0)
        wall = now_wall; /* started: no time left */
    if (wall < 0) {
        sr_warn("azure event %s has an unreadable NotBefore: assuming %d s", e->id,
                MIN_NOTICE_MS / 1000);
        wall = now_wall + MIN_NOTICE_MS;
    }
    ev.deadline_wall_ms = wall;
    ev.deadline_ms = sr_notice_mono(wall);
    snprintf(ev.source, sizeof(ev.source), "azure");
    snprintf(ev.what, sizeof(ev.what), "scheduled event %s (%s)", e->type, e->status);
    snprintf(ev.id, sizeof(ev.id), "%s", e->id);
    sr_notice_post(a->w->n, &ev);
}

static void on_document(struct azure *a, const struct sr_http *r)
{
    struct sr_azure_event ev[MAX_EVENTS];
    size_t n;
    if (sr_azure_parse_events(r->body, r->len, a->vm, ev, MAX_EVENTS, &n) < 0) {
        sr_nw_warn(a->w, "ignoring a malformed scheduled events document from %s",
                   a->w->n->azure_url);
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (!was_posted(a, ev[i].id) && a->nposted < MAX_EVENTS) {
            snprintf(a->posted[a->nposted++], sizeof(a->posted[0]), "%s", ev[i].id);
            announce(a, &ev[i]);
        }
    for (size_t i = 0; i < a->nposted;) {
        int still = 0;
        for (size_t k = 0; k < n && !still; k++)
            still = strcmp(ev[k].id, a->posted[i]) == 0;
        if (still) {
            i++;
            continue;
        }
        struct sr_notice_event w = {.kind = SR_NOTICE_WITHDRAWN};
        snprintf(w.source, sizeof(w.source), "azure");
        snprintf(w.what, sizeof(w.what), "scheduled event withdrawn");
        snprintf(w.id, sizeof(w.id), "%s", a->posted[i]);
        sr_notice_post(a->w->n, &w);
        memmove(a->posted[i], a->posted[i + 1], (a->nposted - i - 1) * sizeof(a->posted[0]));
        a->nposted--;
    }
}

void sr_azure_watch(struct sr_nw *w)
{
    struct azure a = {.w = w};
    char url[2200];
    snprintf(url, sizeof(url), "%s/metadata/scheduledevents?" API, w->n->azure_url);
    const char *const hdr[] = {"Metadata: true", NULL};
    int first = 1;
    int64_t next = sr_now_ms();
    while (!sr_nw_stopping(w)) {
        if (!a.vm[0] && a.vm_tries < 3)
            fetch_vm_name(&a);
        struct sr_http r;
        const int rc = sr_nw_request(w, "GET", url, hdr, NULL,
                                     first ? FIRST_CALL_TIMEOUT_MS : CALL_TIMEOUT_MS, &r);
        if (rc == -ECANCELED)
            break;
        if (rc < 0)
            sr_nw_warn(w, "cannot read %s: %s; retrying", url,
                       rc == -EMSGSIZE ? "answer too large" : r.error);
        else if (r.status == 200)
            on_document(&a, &r), first = 0;
        else
            sr_nw_warn(w, "unexpected HTTP %ld from %s; retrying", r.status, url);
        sr_http_free(&r);
        sr_nw_round_end(w);
        next += w->n->poll_ms; /* a fixed cadence, as for AWS */
        if (next < sr_now_ms())
            next = sr_now_ms();
        if (sr_nw_sleep(w, next - sr_now_ms()) < 0)
            break;
    }
}

int sr_azure_ack(struct sr_notice *n, const char *event_id)
{
    char url[2200], body[512];
    snprintf(url, sizeof(url), "%s/metadata/scheduledevents?" API, n->azure_url);
    json_t *doc = json_pack("{s:[{s:s}]}", "StartRequests", "EventId", event_id);
    char *txt = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!txt || strlen(txt) >= sizeof(body)) {
        free(txt);
        return -ENOMEM;
    }
    snprintf(body, sizeof(body), "%s", txt);
    free(txt);
    struct sr_nw w;
    int rc = sr_nw_init(n, &w);
    if (rc < 0)
        return rc;
    const char *const hdr[] = {"Metadata: true", NULL};
    struct sr_http r;
    rc = sr_nw_request(&w, "POST", url, hdr, body, 3000, &r);
    if (rc == 0 && r.status != 200)
        rc = sr_errf(-EPROTO, "HTTP %ld from %s", r.status, url);
    else if (rc < 0)
        rc = sr_errf(rc, "%s: %s", url, r.error[0] ? r.error : "cancelled");
    sr_http_free(&r);
    sr_nw_free(&w);
    return rc;
}
