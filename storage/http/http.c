/*
 * http.c - the easy-handle pool and the callbacks that move a request's
 * body and its answer (http.h).
 *
 * DESIGN: a pooled handle keeps its connection cache, so the next request
 * to the same host reuses a kept-alive connection (one TLS handshake per
 * connection, not per request). The header callback sees every response
 * of a transfer (a 100 Continue, then the real one): a status line starts
 * a new answer, so the write callback always knows whether the bytes are a
 * 2xx body (to the caller's destination) or an error body (to resp).
 */
#include "http.h"
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- the pool ----------------------------------------------------------- */

struct sr_http_pool {
    pthread_mutex_t lock;
    int n, cap;
    CURL *idle[];
};

struct sr_http_pool *sr_http_pool_new(int cap)
{
    struct sr_http_pool *p = calloc(1, sizeof(*p) + (size_t)cap * sizeof(CURL *));
    if (!p)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    p->cap = cap;
    return p;
}

void sr_http_pool_free(struct sr_http_pool *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n; i++)
        curl_easy_cleanup(p->idle[i]);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

CURL *sr_http_pool_get(struct sr_http_pool *p)
{
    CURL *c = NULL;
    pthread_mutex_lock(&p->lock);
    if (p->n > 0)
        c = p->idle[--p->n];
    pthread_mutex_unlock(&p->lock);
    if (c)
        curl_easy_reset(c);
    return c ? c : curl_easy_init();
}

void sr_http_pool_put(struct sr_http_pool *p, CURL *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&p->lock);
    if (p->n < p->cap) {
        p->idle[p->n++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&p->lock);
    if (c)
        curl_easy_cleanup(c);
}

/* ---- the body sent ------------------------------------------------------ */

static size_t on_read(char *buf, size_t size, size_t nmemb, void *ctx)
{
    struct sr_http_tx *t = ctx;
    size_t want = size * nmemb;
    const uint64_t left = t->body_len - t->sent;
    if (want > left)
        want = (size_t)left;
    if (want == 0)
        return 0;
    if (!t->body && t->body_fd >= 0) {
        const ssize_t n = pread(t->body_fd, buf, want, (off_t)(t->body_off + t->sent));
        if (n <= 0) {
            t->err = n < 0 ? -errno : -EIO;
            return CURL_READFUNC_ABORT;
        }
        want = (size_t)n;
    } else {
        memcpy(buf, (const char *)t->body + t->sent, want);
    }
    t->sent += want;
    return want;
}

/* curl rewinds the body to send it again (a kept-alive connection that
 * the server closed meanwhile, an auth retry). */
static int on_seek(void *ctx, curl_off_t off, int origin)
{
    struct sr_http_tx *t = ctx;
    if (origin != SEEK_SET || off < 0 || (uint64_t)off > t->body_len)
        return CURL_SEEKFUNC_CANTSEEK;
    t->sent = (uint64_t)off;
    return CURL_SEEKFUNC_OK;
}

void sr_http_tx_opts(CURL *c, struct sr_http_tx *tx)
{
    tx->sent = 0;
    tx->err = 0;
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)tx->body_len);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(c, CURLOPT_READDATA, tx);
    curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
    curl_easy_setopt(c, CURLOPT_SEEKDATA, tx);
}

/* ---- the answer --------------------------------------------------------- */

static int ok(const struct sr_http_rx *r)
{
    return r->status >= 200 && r->status < 300;
}

static size_t to_fd(struct sr_http_rx *r, const char *ptr, size_t n)
{
    for (size_t done = 0; done < n;) {
        const ssize_t w =
            pwrite(r->dst_fd, ptr + done, n - done, (off_t)(r->dst_off + r->got + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            r->err = w < 0 ? -errno : -EIO;
            return 0;
        }
        done += (size_t)w;
    }
    r->got += n;
    return n;
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ctx)
{
    struct sr_http_rx *r = ctx;
    const size_t n = size * nmemb;
    if ((r->dst || r->dst_fd >= 0) && ok(r)) {
        if (r->got + n > r->dst_len) {
            r->err = -EBADMSG;
            return 0;
        }
        if (r->dst_fd >= 0)
            return to_fd(r, ptr, n);
        memcpy((char *)r->dst + r->got, ptr, n);
        r->got += n;
        return n;
    }
    const size_t cap = ok(r) ? r->max : SR_HTTP_ERR_BODY_MAX;
    if (r->resp_len + n > cap) {
        if (!ok(r))
            return n; /* an error body: its start is kept */
        /* A body where the protocol sends none (a PUT's 200) is not the
         * server the caller thinks it talks to. */
        r->err = cap == 0 ? -EPROTO : -EFBIG;
        return 0;
    }
    char *p = realloc(r->resp, r->resp_len + n + 1);
    if (!p) {
        r->err = -ENOMEM;
        return 0;
    }
    memcpy(p + r->resp_len, ptr, n);
    r->resp = p;
    r->resp_len += n;
    r->resp[r->resp_len] = '\0';
    return n;
}

/* The value of header line buf (n bytes) if its name is name, trimmed, in
 * out; 0 when the line is another header. */
static int header_value(const char *buf, size_t n, const char *name, char *out, size_t len)
{
    const size_t nl = strlen(name);
    if (n <= nl || buf[nl] != ':' || strncasecmp(buf, name, nl) != 0)
        return 0;
    size_t i = nl + 1, e = n;
    while (i < n && (buf[i] == ' ' || buf[i] == '\t'))
        i++;
    while (e > i && (buf[e - 1] == '\r' || buf[e - 1] == '\n' || buf[e - 1] == ' '))
        e--;
    if (e - i < len)
        snprintf(out, len, "%.*s", (int)(e - i), buf + i);
    return 1;
}

static size_t on_header(char *buf, size_t size, size_t nmemb, void *ctx)
{
    struct sr_http_rx *r = ctx;
    const size_t n = size * nmemb;
    char num[32];
    if (n > 9 && strncmp(buf, "HTTP/", 5) == 0) {
        /* A new response (after 100 Continue or a retry of auth): status
         * first, so the body callback knows where the bytes go. */
        const char *sp = memchr(buf, ' ', n);
        r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        r->head_end = 0;
    } else if (n <= 2 && (buf[0] == '\r' || buf[0] == '\n')) {
        r->head_end = 1;
    } else if (header_value(buf, n, "Content-Length", num, sizeof(num))) {
        r->clen = strtoull(num, NULL, 10);
    } else if (!header_value(buf, n, "ETag", r->etag, sizeof(r->etag)) && r->code_header) {
        header_value(buf, n, r->code_header, r->code, sizeof(r->code));
    }
    return n;
}

void sr_http_rx_reset(struct sr_http_rx *rx)
{
    free(rx->resp);
    rx->resp = NULL;
    rx->resp_len = 0;
    rx->got = 0;
    rx->status = 0;
    rx->clen = 0;
    rx->etag[0] = '\0';
    rx->code[0] = '\0';
    rx->head_end = 0;
    rx->err = 0;
}

void sr_http_rx_opts(CURL *c, struct sr_http_rx *rx)
{
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, rx);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, rx);
}

int sr_http_rx_take(struct sr_http_rx *rx, int rc, char **buf, size_t *len)
{
    if (rc == 0 && !rx->resp && !(rx->resp = calloc(1, 1)))
        rc = sr_errf(-ENOMEM, "out of memory");
    if (rc < 0) {
        free(rx->resp);
        rx->resp = NULL;
        return rc;
    }
    *buf = rx->resp;
    *len = rx->resp_len;
    rx->resp = NULL;
    rx->resp_len = 0;
    return 0;
}

CURLcode sr_http_fetch(const char *method, const char *url, const char *const *headers,
                       long connect_ms, long total_ms, struct sr_http_rx *rx)
{
    sr_http_rx_reset(rx);
    CURL *c = curl_easy_init();
    if (!c)
        return CURLE_OUT_OF_MEMORY;
    struct curl_slist *h = NULL;
    for (size_t i = 0; headers && headers[i]; i++)
        h = curl_slist_append(h, headers[i]);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "PUT") == 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    sr_http_rx_opts(c, rx);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, total_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    const CURLcode cc = curl_easy_perform(c);
    if (cc != CURLE_OK)
        rx->status = 0;
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return cc;
}
