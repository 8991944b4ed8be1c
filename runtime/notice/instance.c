/*
 * instance.c - where this instance runs, from the metadata service (see
 * instance.h): its type for `run --prices` (synchronous, at the start), and
 * its placement for the notice watcher (on the watcher's placement thread,
 * through the watcher's interruptible client). The requests and the checks
 * of the answers are the same for both; only the transport differs.
 */
#include "instance.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "imds.h"
#include "log.h"
#include "notice_int.h"
#include "notice_parse.h"

/* Each request is bounded: 500 ms to connect, 1.5 s in all. */
#define CONNECT_MS 500L
#define TIMEOUT_MS 1500L
/* Plain answers are a word; Azure's compute document a few KB. */
#define ANSWER_MAX (32 * 1024)

struct answer {
    char buf[ANSWER_MAX];
    size_t len;
    int too_big;
    long status; /* 0: no answer */
};

/* One GET or PUT: 0 and the body in a when the answer is 200, else
 * -ENOENT (-ECANCELED: the watcher is stopping). */
struct getter {
    int (*get)(void *ctx, const char *method, const char *url, const char *header,
               struct answer *a);
    void *ctx;
};

/* ---- synchronous transport (sr_instance_type) ----------------------------- */

static int easy_get(void *ctx, const char *method, const char *url, const char *header,
                    struct answer *a)
{
    (void)ctx;
    const char *const hdrs[] = {header, NULL};
    struct sr_http_rx rx = {.dst = a->buf, .dst_len = sizeof(a->buf) - 1, .dst_fd = -1};
    const CURLcode cc = sr_http_fetch(method, url, hdrs, CONNECT_MS, TIMEOUT_MS, &rx);
    free(rx.resp); /* an error's body */
    a->len = (size_t)rx.got;
    a->buf[a->len] = '\0';
    a->too_big = rx.err != 0;
    a->status = rx.status;
    return cc == CURLE_OK && rx.status == 200 && !a->too_big ? 0 : -ENOENT;
}

/* ---- the watcher's transport (sr_placement_fetch) ------------------------- */

static int nw_get(void *ctx, const char *method, const char *url, const char *header,
                  struct answer *a)
{
    struct sr_nw *w = ctx;
    const char *const hdrs[] = {header, NULL};
    struct sr_http r;
    a->len = 0;
    a->too_big = 0;
    a->buf[0] = '\0';
    const int rc = sr_nw_request(w, method, url, header ? hdrs : NULL, NULL, TIMEOUT_MS, &r);
    a->status = rc == 0 ? r.status : 0;
    if (rc == -ECANCELED)
        return rc;
    const int ok = rc == 0 && r.status == 200 && r.len < sizeof(a->buf);
    if (ok && r.len) {
        memcpy(a->buf, r.body, r.len);
        a->buf[r.len] = '\0';
        a->len = r.len;
    }
    sr_http_free(&r);
    return ok ? 0 : -ENOENT;
}

/* ---- the services ---------------------------------------------------------- */

/* GET base+path as a word into buf (left as it was when there is none);
 * *status the answer's (0: none). */
static int get_word(const struct getter *g, const char *base, const char *path, const char *header,
                    char *buf, size_t len, long *status)
{
    char url[2200];
    struct answer a;
    snprintf(url, sizeof(url), "%s%s", base, path);
    a.status = 0;
    const int rc = g->get(g->ctx, "GET", url, header, &a);
    if (status)
        *status = a.status;
    if (rc < 0)
        return rc;
    return sr_metadata_word(a.buf, a.len, buf, len) < 0 ? -ENOENT : 0;
}

/* The IMDSv2 token PUT on g (sr_imds_fetch_fn). */
static int put_token(void *ctx, const char *url, const char *header, char *tok, size_t len)
{
    const struct getter *g = ctx;
    struct answer a;
    const int rc = g->get(g->ctx, "PUT", url, header, &a);
    if (rc < 0)
        return rc;
    if (a.len >= SR_IMDS_TOKEN_MAX || a.len >= len)
        return -ENOENT;
    snprintf(tok, len, "%.*s", (int)strcspn(a.buf, "\r\n"), a.buf);
    return 0;
}

/* The instance type with the process's IMDSv2 token (imds.h), or without
 * one (IMDSv1, where the instance still allows it) when none is had; a
 * token the service refuses (401) is dropped and a new one tried once.
 * *h is the header for the next reads (hdr, or NULL). */
static int aws_type(const struct getter *g, const char *base, struct sr_placement *p, char *hdr,
                    size_t hlen, const char **h)
{
    char tok[SR_IMDS_TOKEN_MAX];
    for (int round = 0;; round++) {
        const int t = sr_imds_token(base, put_token, (void *)g, tok, sizeof(tok));
        if (t == -ECANCELED)
            return t;
        if (t == 0)
            snprintf(hdr, hlen, "X-aws-ec2-metadata-token: %s", tok);
        *h = t == 0 ? hdr : NULL;
        long status = 0;
        const int rc = get_word(g, base, "/latest/meta-data/instance-type", *h, p->instance_type,
                                sizeof(p->instance_type), &status);
        if (status != 401 || !*h || round > 0)
            return rc;
        sr_imds_token_refused(base, tok);
    }
}

static int from_aws(const struct getter *g, const char *base, int all, struct sr_placement *p)
{
    char hdr[600];
    const char *h = NULL;
    int rc = aws_type(g, base, p, hdr, sizeof(hdr), &h);
    if (!all || rc == -ECANCELED)
        return rc;
    rc = get_word(g, base, "/latest/meta-data/placement/availability-zone", h, p->zone,
                  sizeof(p->zone), NULL);
    if (rc != -ECANCELED)
        rc = get_word(g, base, "/latest/meta-data/placement/region", h, p->region,
                      sizeof(p->region), NULL);
    return rc;
}

static int from_gcp(const struct getter *g, const char *base, int all, struct sr_placement *p)
{
    const char *h = "Metadata-Flavor: Google";
    int rc = get_word(g, base, "/computeMetadata/v1/instance/machine-type", h, p->instance_type,
                      sizeof(p->instance_type), NULL);
    if (!all || rc == -ECANCELED)
        return rc;
    rc = get_word(g, base, "/computeMetadata/v1/instance/zone", h, p->zone, sizeof(p->zone), NULL);
    if (rc == 0 && sr_gcp_region_of(p->zone, p->region, sizeof(p->region)) < 0)
        p->region[0] = '\0';
    return rc;
}

static int from_azure(const struct getter *g, const char *base, int all, struct sr_placement *p)
{
    const char *h = "Metadata: true";
    if (!all)
        return get_word(g, base,
                        "/metadata/instance/compute/vmSize?api-version=2021-02-01&format=text", h,
                        p->instance_type, sizeof(p->instance_type), NULL);
    char url[2200];
    struct answer a;
    snprintf(url, sizeof(url), "%s/metadata/instance/compute?api-version=2021-02-01", base);
    const int rc = g->get(g->ctx, "GET", url, h, &a);
    if (rc < 0)
        return rc;
    return sr_azure_parse_compute(a.buf, a.len, p) < 0 ? -ENOENT : 0;
}

static int (*const from[])(const struct getter *, const char *, int, struct sr_placement *) = {
    [SR_CLOUD_AWS] = from_aws, [SR_CLOUD_GCP] = from_gcp, [SR_CLOUD_AZURE] = from_azure};

static int known(const struct sr_placement *p)
{
    return p->instance_type[0] || p->zone[0] || p->region[0];
}

/* "http://host:port/" and "http://host:port" are the same base. */
static void base_of(const char *url, char *out, size_t len)
{
    snprintf(out, len, "%s", url && *url ? url : "http://169.254.169.254");
    for (size_t k = strlen(out); k > 0 && out[k - 1] == '/'; k--)
        out[k - 1] = '\0';
}

int sr_instance_type(const struct sr_notice_config *cfg, char *buf, size_t len)
{
    if (cfg->cloud == SR_CLOUD_NONE)
        return -ENOENT;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return -ENOMEM;
    const struct getter g = {easy_get, NULL};
    const char *urls[3] = {cfg->aws_url, cfg->gcp_url, cfg->azure_url};
    const enum sr_cloud clouds[3] = {SR_CLOUD_AWS, SR_CLOUD_GCP, SR_CLOUD_AZURE};
    const int given = (urls[0] && *urls[0]) || (urls[1] && *urls[1]) || (urls[2] && *urls[2]);
    for (int i = 0; i < 3; i++) {
        if (cfg->cloud == SR_CLOUD_AUTO ? given && !(urls[i] && *urls[i]) : cfg->cloud != clouds[i])
            continue;
        char base[2048];
        base_of(urls[i], base, sizeof(base));
        struct sr_placement p = {.cloud = ""};
        if (from[clouds[i]](&g, base, 0, &p) == 0 && p.instance_type[0] &&
            strlen(p.instance_type) < len) {
            snprintf(buf, len, "%s", p.instance_type);
            sr_debug("instance type %s (from the %s metadata service)", buf,
                     sr_cloud_name(clouds[i]));
            return 0;
        }
    }
    return -ENOENT;
}

int sr_placement_fetch(struct sr_nw *w, enum sr_cloud cloud, struct sr_placement *out)
{
    *out = (struct sr_placement){.cloud = ""};
    if (cloud != SR_CLOUD_AWS && cloud != SR_CLOUD_GCP && cloud != SR_CLOUD_AZURE)
        return -ENOENT;
    const char *base = cloud == SR_CLOUD_AWS   ? w->n->aws_url
                       : cloud == SR_CLOUD_GCP ? w->n->gcp_url
                                               : w->n->azure_url;
    const struct getter g = {nw_get, w};
    const int rc = from[cloud](&g, base, 1, out);
    if (rc == -ECANCELED)
        return rc;
    if (!known(out)) {
        *out = (struct sr_placement){.cloud = ""};
        return -ENOENT;
    }
    snprintf(out->cloud, sizeof(out->cloud), "%s", sr_cloud_name(cloud));
    return 0;
}
