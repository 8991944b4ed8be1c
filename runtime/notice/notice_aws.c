/*
 * notice_aws.c - AWS spot notices through IMDSv2.
 *
 * A session token (PUT /latest/api/token, TTL 6 h) comes from the
 * process's IMDSv2 token cache (storage/http/imds.h, shared with the
 * placement lookup and the S3 credentials): renewed a minute before it
 * expires, and at once when the service answers 401. Each poll
 * reads spot/instance-action (404: nothing; 200: {"action","time"}, the
 * deadline is "time") and events/recommendations/rebalance (an early
 * warning: checkpoint, keep running). A token PUT that times out is the
 * classic container symptom: the instance's hop limit of 1 drops the
 * answer one hop before the container. That is said plainly with the fix,
 * and the watcher falls back to IMDSv1 when the instance still allows it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "imds.h"
#include "log.h"
#include "notice_int.h"
#include "notice_parse.h"
#include "units.h"

#define REQUEST_TIMEOUT_MS 2000

struct aws {
    struct sr_nw *w;
    char token[SR_IMDS_TOKEN_MAX]; /* this round's, from the cache */
    long put_status;               /* of a token PUT that was refused */
    int v1;                        /* the token PUT timed out and IMDSv1 answers */
    char posted_action[64], posted_rebalance[64];
};

/* The token PUT on the watcher's cancellable transport (sr_imds_fetch_fn). */
static int put_token(void *ctx, const char *url, const char *header, char *tok, size_t len)
{
    struct aws *a = ctx;
    const char *const hdr[] = {header, NULL};
    struct sr_http r;
    int rc = sr_nw_request(a->w, "PUT", url, hdr, NULL, REQUEST_TIMEOUT_MS, &r);
    a->put_status = rc == 0 ? r.status : 0;
    if (rc == 0 && r.status == 200 && r.body && r.len > 0 && r.len < len)
        memcpy(tok, r.body, r.len + 1);
    else if (rc == 0)
        rc = -EACCES;
    if (rc < 0 && rc != -EACCES && rc != -ECANCELED && rc != -ETIMEDOUT)
        sr_nw_warn(a->w, "cannot reach the AWS metadata service at %s: %s; retrying",
                   a->w->n->aws_url, rc == -EMSGSIZE ? "answer too large" : r.error);
    sr_http_free(&r);
    return rc;
}

static int get_token(struct aws *a)
{
    struct sr_notice *n = a->w->n;
    a->put_status = 0;
    const int rc = sr_imds_token(n->aws_url, put_token, a, a->token, sizeof(a->token));
    if (rc == 0) {
        a->v1 = 0;
        return 0;
    }
    a->token[0] = '\0';
    if (rc == -ETIMEDOUT)
        sr_nw_warn(a->w,
                   "the IMDSv2 token request to %s/latest/api/token timed out: inside a container "
                   "this is the instance's metadata hop limit (raise it to 2: aws ec2 "
                   "modify-instance-metadata-options --instance-id ID "
                   "--http-put-response-hop-limit 2); trying IMDSv1",
                   n->aws_url);
    else if (rc == -EACCES)
        sr_nw_warn(a->w, "the IMDSv2 token request to %s/latest/api/token was refused (HTTP %ld)",
                   n->aws_url, a->put_status);
    return rc;
}

/* GET path with the token (or without, on IMDSv1). */
static int get(struct aws *a, const char *path, struct sr_http *r)
{
    char url[2100], hdr[600];
    snprintf(url, sizeof(url), "%s%s", a->w->n->aws_url, path);
    snprintf(hdr, sizeof(hdr), "X-aws-ec2-metadata-token: %s", a->token);
    const char *const hdrs[] = {hdr, NULL};
    const int rc =
        sr_nw_request(a->w, "GET", url, a->v1 ? NULL : hdrs, NULL, REQUEST_TIMEOUT_MS, r);
    if (rc < 0 && rc != -ECANCELED)
        sr_nw_warn(a->w, "cannot read %s: %s; retrying", url,
                   rc == -EMSGSIZE ? "answer too large" : r->error);
    return rc;
}

static void on_action(struct aws *a, const struct sr_http *r)
{
    struct sr_aws_action act;
    if (sr_aws_parse_action(r->body, r->len, &act) < 0) {
        sr_nw_warn(a->w, "ignoring a malformed spot/instance-action answer from %s",
                   a->w->n->aws_url);
        return;
    }
    char key[sizeof(a->posted_action)];
    snprintf(key, sizeof(key), "%s %s", act.action, act.time);
    if (strcmp(key, a->posted_action) == 0)
        return;
    snprintf(a->posted_action, sizeof(a->posted_action), "%s", key);
    struct sr_notice_event ev = {.kind = SR_NOTICE_PREEMPT,
                                 .deadline_ms = sr_notice_mono(act.time_ms),
                                 .deadline_wall_ms = act.time_ms};
    snprintf(ev.source, sizeof(ev.source), "aws");
    snprintf(ev.what, sizeof(ev.what), "spot instance-action %s at %s", act.action, act.time);
    snprintf(ev.id, sizeof(ev.id), "%s", key);
    sr_notice_post(a->w->n, &ev);
}

static void on_rebalance(struct aws *a, const struct sr_http *r)
{
    int64_t t;
    if (sr_aws_parse_rebalance(r->body, r->len, &t) < 0) {
        sr_nw_warn(a->w, "ignoring a malformed rebalance recommendation from %s", a->w->n->aws_url);
        return;
    }
    char key[sizeof(a->posted_rebalance)];
    snprintf(key, sizeof(key), "%lld", (long long)t);
    if (strcmp(key, a->posted_rebalance) == 0)
        return;
    snprintf(a->posted_rebalance, sizeof(a->posted_rebalance), "%s", key);
    struct sr_notice_event ev = {.kind = SR_NOTICE_REBALANCE, .deadline_wall_ms = t};
    snprintf(ev.source, sizeof(ev.source), "aws");
    snprintf(ev.what, sizeof(ev.what), "rebalance recommendation");
    snprintf(ev.id, sizeof(ev.id), "rebalance %s", key);
    sr_notice_post(a->w->n, &ev);
}

/* One round: instance-action, then rebalance. -EAGAIN: token rejected. */
static int poll_once(struct aws *a)
{
    static const char *const paths[] = {"/latest/meta-data/spot/instance-action",
                                        "/latest/meta-data/events/recommendations/rebalance"};
    for (int i = 0; i < 2; i++) {
        struct sr_http r;
        const int rc = get(a, paths[i], &r);
        if (rc < 0)
            return rc;
        if (r.status == 401 && !a->v1) {
            /* expired or revoked: renew now */
            sr_imds_token_refused(a->w->n->aws_url, a->token);
            a->token[0] = '\0';
            sr_http_free(&r);
            return -EAGAIN;
        }
        if (r.status == 200)
            i == 0 ? on_action(a, &r) : on_rebalance(a, &r);
        else if (r.status != 404)
            sr_nw_warn(a->w, "unexpected HTTP %ld from %s%s", r.status, a->w->n->aws_url, paths[i]);
        sr_http_free(&r);
    }
    return 0;
}

/* After a token PUT timed out: does the instance still answer IMDSv1? */
static int try_v1(struct aws *a)
{
    a->v1 = 1;
    struct sr_http r;
    const int rc = get(a, "/latest/meta-data/spot/instance-action", &r);
    const long status = rc == 0 ? r.status : 0;
    sr_http_free(&r);
    if (status == 200 || status == 404) {
        sr_info("using IMDSv1 (no token) for %s", a->w->n->aws_url);
        return 0;
    }
    a->v1 = 0;
    if (status == 401)
        sr_nw_warn(a->w, "IMDSv1 is disabled on this instance and the IMDSv2 token request "
                         "times out: raise the metadata hop limit to 2; retrying");
    return -EACCES;
}

void sr_aws_watch(struct sr_nw *w)
{
    struct aws a = {.w = w};
    int renewed = 0;
    int64_t next = sr_now_ms();
    while (!sr_nw_stopping(w)) {
        int rc = 0;
        if (!a.v1) {
            rc = get_token(&a); /* the cache's, or a new one when it is due */
            if (rc == -ETIMEDOUT)
                rc = try_v1(&a);
        }
        if (rc == 0) {
            rc = poll_once(&a);
            if (rc == -EAGAIN && !renewed++)
                continue; /* once at once; a service that keeps refusing is polled */
        }
        renewed = 0;
        sr_nw_round_end(w);
        /* A fixed cadence: the time the requests took is not added to
         * the interval, so a notice waits at most one interval. */
        next += w->n->poll_ms;
        if (next < sr_now_ms())
            next = sr_now_ms();
        if (sr_nw_sleep(w, next - sr_now_ms()) < 0)
            break;
    }
}
