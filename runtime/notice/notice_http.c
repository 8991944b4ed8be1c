/*
 * notice_http.c - the watchers' HTTP client (see notice_int.h): one easy
 * handle driven through a multi handle, so that sr_notice_stop() can wake a
 * long poll or a sleep with curl_multi_wakeup(). Bodies are capped at
 * SR_NOTICE_MAX_BODY; proxies are never used (the metadata service is
 * link-local, and an http_proxy variable must not capture it).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "notice_int.h"
#include "units.h"

int sr_nw_init(struct sr_notice *n, struct sr_nw *w)
{
    memset(w, 0, sizeof(*w));
    w->n = n;
    w->multi = curl_multi_init();
    w->easy = curl_easy_init();
    if (!w->multi || !w->easy) {
        sr_nw_free(w);
        return -ENOMEM;
    }
    pthread_mutex_lock(&n->lock);
    int slot = -1;
    for (int i = 0; i < SR_NOTICE_MAX_THREADS && slot < 0; i++)
        if (!n->multis[i])
            slot = i;
    if (slot >= 0)
        n->multis[slot] = w->multi;
    pthread_mutex_unlock(&n->lock);
    if (slot < 0) {
        sr_nw_free(w);
        return -EBUSY;
    }
    return 0;
}

void sr_nw_free(struct sr_nw *w)
{
    if (w->n && w->multi) {
        pthread_mutex_lock(&w->n->lock);
        for (int i = 0; i < SR_NOTICE_MAX_THREADS; i++)
            if (w->n->multis[i] == w->multi)
                w->n->multis[i] = NULL;
        pthread_mutex_unlock(&w->n->lock);
    }
    if (w->easy)
        curl_easy_cleanup(w->easy);
    if (w->multi)
        curl_multi_cleanup(w->multi);
    w->easy = NULL;
    w->multi = NULL;
}

void sr_http_free(struct sr_http *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct sr_http *r = arg;
    const size_t n = size * nmemb;
    if (r->len + n > SR_NOTICE_MAX_BODY) {
        r->too_big = 1;
        return 0; /* aborts the transfer */
    }
    char *p = realloc(r->body, r->len + n + 1);
    if (!p)
        return 0;
    memcpy(p + r->len, data, n);
    r->len += n;
    p[r->len] = '\0';
    r->body = p;
    return n;
}

/* Copies a header's value (trimmed) when the line is "name: value". */
static void take_header(const char *line, size_t n, const char *name, char *dst, size_t len)
{
    const size_t k = strlen(name);
    if (n <= k + 1 || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && isspace((unsigned char)*v))
        v++;
    while (end > v && isspace((unsigned char)end[-1]))
        end--;
    const size_t vn = (size_t)(end - v) < len - 1 ? (size_t)(end - v) : len - 1;
    memcpy(dst, v, vn);
    dst[vn] = '\0';
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
    struct sr_http *r = arg;
    const size_t n = size * nmemb;
    take_header(data, n, "ETag", r->etag, sizeof(r->etag));
    take_header(data, n, "Metadata-Flavor", r->flavor, sizeof(r->flavor));
    return n;
}

/* Sets up w->easy for one request; *list must be freed by the caller. */
static void setup(CURL *e, const char *method, const char *url, const char *const *headers,
                  const char *body, long timeout_ms, struct sr_http *r, struct curl_slist **list)
{
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 1000 ? timeout_ms : 1000L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->error);
    *list = NULL;
    for (size_t i = 0; headers && headers[i]; i++)
        *list = curl_slist_append(*list, headers[i]);
    if (body) {
        *list = curl_slist_append(*list, "Content-Type: application/json");
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, *list);
    if (strcmp(method, "GET") != 0 && !(body && strcmp(method, "POST") == 0))
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
}

static int result_of(CURLcode c, struct sr_http *r)
{
    if (c == CURLE_OK)
        return 0;
    if (r->too_big)
        return -EMSGSIZE;
    if (!r->error[0])
        snprintf(r->error, sizeof(r->error), "%s", curl_easy_strerror(c));
    return c == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
}

int sr_nw_request(struct sr_nw *w, const char *method, const char *url, const char *const *headers,
                  const char *body, long timeout_ms, struct sr_http *r)
{
    memset(r, 0, sizeof(*r));
    if (sr_nw_stopping(w))
        return -ECANCELED;
    struct curl_slist *list;
    setup(w->easy, method, url, headers, body, timeout_ms, r, &list);
    curl_multi_add_handle(w->multi, w->easy);
    int rc = -EIO, running = 1;
    CURLcode done = CURLE_OK;
    for (;;) {
        if (curl_multi_perform(w->multi, &running) != CURLM_OK)
            break;
        int left;
        CURLMsg *m = curl_multi_info_read(w->multi, &left);
        if (m && m->msg == CURLMSG_DONE) {
            done = m->data.result;
            rc = 0;
            break;
        }
        if (sr_nw_stopping(w)) {
            rc = -ECANCELED;
            break;
        }
        curl_multi_poll(w->multi, NULL, 0, 1000, NULL);
    }
    curl_multi_remove_handle(w->multi, w->easy);
    curl_slist_free_all(list);
    if (rc == 0)
        rc = result_of(done, r);
    if (rc == 0)
        curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &r->status);
    if (rc < 0)
        sr_http_free(r);
    return rc;
}

int sr_nw_sleep(struct sr_nw *w, int64_t ms)
{
    const int64_t until = sr_now_ms() + ms;
    for (;;) {
        if (sr_nw_stopping(w))
            return -ECANCELED;
        const int64_t left = until - sr_now_ms();
        if (left <= 0)
            return 0;
        curl_multi_poll(w->multi, NULL, 0, (int)(left > 60000 ? 60000 : left), NULL);
    }
}

/* Equal but for the numbers in them: curl's messages carry timings
 * ("timed out after 2003 milliseconds"), which must not defeat the
 * one-warning-per-streak rule. */
static int same_but_numbers(const char *a, const char *b)
{
    while (*a && *b) {
        const int da = *a >= '0' && *a <= '9', db = *b >= '0' && *b <= '9';
        if (da && db) {
            while (*a >= '0' && *a <= '9')
                a++;
            while (*b >= '0' && *b <= '9')
                b++;
            continue;
        }
        if (*a != *b)
            return 0;
        a++;
        b++;
    }
    return *a == *b;
}

void sr_nw_warn(struct sr_nw *w, const char *fmt, ...)
{
    char msg[sizeof(w->last_warning)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    w->warned = 1;
    if (same_but_numbers(msg, w->last_warning)) {
        sr_debug("%s", msg);
        return;
    }
    memcpy(w->last_warning, msg, sizeof(msg));
    sr_warn("%s", msg);
}

void sr_nw_round_end(struct sr_nw *w)
{
    if (!w->warned)
        w->last_warning[0] = '\0';
    w->warned = 0;
}

/* The authority of url ("host:port" after "scheme://") ends with ':'. */
static int empty_port(const char *url)
{
    const char *a = strstr(url, "://");
    if (!a)
        return 0;
    a += 3;
    const size_t n = strcspn(a, "/?#");
    return n > 0 && a[n - 1] == ':';
}

int sr_notice_url_check(const char *url, char *why, size_t len)
{
    CURLU *u = curl_url();
    if (!u)
        return -ENOMEM;
    char *scheme = NULL, *host = NULL, *port = NULL;
    const CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, 0);
    if (uc != CURLUE_OK) {
        snprintf(why, len, "%s", curl_url_strerror(uc));
        why[0] = (char)tolower((unsigned char)why[0]); /* curl's words start upper case */
    } else if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
               (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0))
        snprintf(why, len, "not an http:// or https:// URL");
    else if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host)
        snprintf(why, len, "no host");
    else if (empty_port(url))
        snprintf(why, len, "an empty port (write the port, or leave out the ':')");
    else if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK &&
             (atol(port) < 1 || atol(port) > 65535))
        snprintf(why, len, "port %s is not 1..65535", port);
    else
        why[0] = '\0';
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return why[0] ? -EINVAL : 0;
}
