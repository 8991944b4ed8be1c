/*
 * instance.c - this instance's type from the metadata service (see
 * instance.h).
 */
#include "instance.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

#define ANSWER_MAX 256

struct answer {
    char buf[ANSWER_MAX];
    size_t len;
    int too_big;
};

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
    struct answer *a = ctx;
    const size_t k = size * n;
    if (a->len + k >= sizeof(a->buf)) {
        a->too_big = 1;
        return 0;
    }
    memcpy(a->buf + a->len, p, k);
    a->len += k;
    a->buf[a->len] = '\0';
    return k;
}

/* One request; 0 and the body in a when the answer is 200. */
static int request(const char *method, const char *url, const char *header, struct answer *a)
{
    CURL *c = curl_easy_init();
    if (!c)
        return -ENOMEM;
    struct curl_slist *h = header ? curl_slist_append(NULL, header) : NULL;
    *a = (struct answer){.len = 0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 500L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 1500L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
    long status = 0;
    const CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return rc == CURLE_OK && status == 200 && !a->too_big ? 0 : -ENOENT;
}

/* An instance type's word: the answer trimmed, its last path component. */
static int word_of(const struct answer *a, char *buf, size_t len)
{
    size_t n = a->len;
    while (n > 0 && (a->buf[n - 1] == '\n' || a->buf[n - 1] == '\r' || a->buf[n - 1] == ' '))
        n--;
    const char *w = a->buf;
    for (size_t i = 0; i < n; i++)
        if (a->buf[i] == '/')
            w = a->buf + i + 1;
    const size_t k = n - (size_t)(w - a->buf);
    if (k == 0 || k > 63 || k >= len ||
        strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:+-") < k)
        return -ENOENT;
    memcpy(buf, w, k);
    buf[k] = '\0';
    return 0;
}

static int from_aws(const char *base, char *buf, size_t len)
{
    char url[2100], hdr[600];
    struct answer a;
    snprintf(url, sizeof(url), "%s/latest/api/token", base);
    int rc = request("PUT", url, "X-aws-ec2-metadata-token-ttl-seconds: 60", &a);
    if (rc == 0 && a.len < 512)
        snprintf(hdr, sizeof(hdr), "X-aws-ec2-metadata-token: %.*s", (int)strcspn(a.buf, "\r\n"),
                 a.buf);
    else
        hdr[0] = '\0'; /* IMDSv1, where the instance still allows it */
    snprintf(url, sizeof(url), "%s/latest/meta-data/instance-type", base);
    rc = request("GET", url, hdr[0] ? hdr : NULL, &a);
    return rc == 0 ? word_of(&a, buf, len) : rc;
}

static int from_gcp(const char *base, char *buf, size_t len)
{
    char url[2100];
    struct answer a;
    snprintf(url, sizeof(url), "%s/computeMetadata/v1/instance/machine-type", base);
    const int rc = request("GET", url, "Metadata-Flavor: Google", &a);
    return rc == 0 ? word_of(&a, buf, len) : rc;
}

static int from_azure(const char *base, char *buf, size_t len)
{
    char url[2100];
    struct answer a;
    snprintf(url, sizeof(url),
             "%s/metadata/instance/compute/vmSize?api-version=2021-02-01&format=text", base);
    const int rc = request("GET", url, "Metadata: true", &a);
    return rc == 0 ? word_of(&a, buf, len) : rc;
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
    const char *urls[3] = {cfg->aws_url, cfg->gcp_url, cfg->azure_url};
    int (*const from[3])(const char *, char *, size_t) = {from_aws, from_gcp, from_azure};
    const enum sr_cloud clouds[3] = {SR_CLOUD_AWS, SR_CLOUD_GCP, SR_CLOUD_AZURE};
    const int given = (urls[0] && *urls[0]) || (urls[1] && *urls[1]) || (urls[2] && *urls[2]);
    for (int i = 0; i < 3; i++) {
        if (cfg->cloud == SR_CLOUD_AUTO ? given && !(urls[i] && *urls[i]) : cfg->cloud != clouds[i])
            continue;
        char base[2048];
        base_of(urls[i], base, sizeof(base));
        if (from[i](base, buf, len) == 0) {
            sr_debug("instance type %s (from the %s metadata service)", buf,
                     sr_cloud_name(clouds[i]));
            return 0;
        }
    }
    return -ENOENT;
}
