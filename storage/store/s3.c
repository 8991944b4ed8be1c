/*
 * s3.c - the S3 client core (see s3.h): endpoint and addressing, signing,
 * one request over libcurl, error classification and messages, XML bodies.
 *
 * DESIGN: curl signs every request itself (CURLOPT_AWS_SIGV4 with
 * "aws:amz:REGION:s3"). Two quirks of curl 7.88's signer shape the code:
 * it does not add x-amz-content-sha256, so every request sends
 * "UNSIGNED-PAYLOAD" (integrity of uploads comes from Content-MD5 instead),
 * and it signs the query string as given, so callers pass query parameters
 * already percent-encoded, sorted by name, with "name=" for valueless ones.
 *
 * Retries: transport failures (refused, reset, timed out, DNS) and 5xx,
 * 429, SlowDown, RequestTimeout are retried up to s3->set.retries times
 * (SPOTRUN_S3_RETRIES, default 5; base SPOTRUN_S3_RETRY_BASE_MS, 200 ms;
 * every setting is read once, s3_settings.c) with the HTTP core's one
 * backoff policy (storage/http/http.h); the loop, the handle pool and the
 * body and answer callbacks are the core's too. What is S3's is here:
 * which answers retry (sr_s3_classify), signing, URLs, error messages.
 * Everything else fails at once with a message naming the object, the HTTP
 * status, the S3 error code and the likely cause.
 * Stalls are caught by a low-speed limit (under 1 KiB/s for 30 s, or
 * SPOTRUN_S3_STALL_TIMEOUT_S), not a total timeout, so a large part on a
 * slow link is not cut short.
 *
 * XML (errors, listings, multipart answers) is read with the HTTP core's
 * libxml2 helpers (xml.h), by element local names so that namespaced and
 * bare documents both work.
 */
#include "s3.h"
#include "log.h"
#include "store.h"
#include "xml.h"

#include <errno.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MIB SR_S3_MIB

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    xmlInitParser();
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* ---- pure helpers -------------------------------------------------------- */

int sr_s3_classify(int curl_code, long status, const char *s3_code)
{
    switch ((CURLcode)curl_code) {
    case CURLE_OK:
        break;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return SR_S3_RETRY;
    default:
        return SR_S3_FAIL;
    }
    if (status >= 200 && status < 300)
        return SR_S3_OK;
    if (status >= 500 || status == 429)
        return SR_S3_RETRY;
    if (s3_code && (strcmp(s3_code, "SlowDown") == 0 || strcmp(s3_code, "RequestTimeout") == 0 ||
                    strcmp(s3_code, "InternalError") == 0))
        return SR_S3_RETRY;
    return SR_S3_FAIL;
}

int sr_s3_errno(long status, const char *code, const char **hint)
{
    static const struct {
        const char *code;
        int err;
        const char *hint;
    } known[] = {
        {"SignatureDoesNotMatch", EACCES,
         "check AWS_SECRET_ACCESS_KEY: the secret key does not match the access key id"},
        {"InvalidAccessKeyId", EACCES,
         "check AWS_ACCESS_KEY_ID: the server does not know this key"},
        {"RequestTimeTooSkewed", EACCES,
         "this machine's clock is off by more than 15 minutes: sync it (chrony, ntpdate)"},
        {"ExpiredToken", EACCES, "the session token has expired: refresh AWS_SESSION_TOKEN"},
        {"InvalidToken", EACCES, "check AWS_SESSION_TOKEN"},
        {"AccessDenied", EACCES,
         "the credentials are valid but not allowed here: check the bucket policy or IAM role"},
        {"AllAccessDisabled", EACCES, "access to this bucket is disabled"},
        /* ENXIO, not ENOENT: a missing bucket is no missing object (no
         * "no lease yet", no unusable checkpoint to fall back from). */
        {"NoSuchBucket", ENXIO,
         "the bucket does not exist: create it, or check the store URL and AWS_ENDPOINT_URL"},
        {"NoSuchKey", ENOENT, ""},
        {"NoSuchUpload", ENOENT, "the multipart upload was aborted or expired"},
        {"AuthorizationHeaderMalformed", EINVAL,
         "wrong region: set AWS_REGION to the bucket's region"},
        {"PermanentRedirect", EINVAL,
         "the bucket is in another region: set AWS_REGION or AWS_ENDPOINT_URL"},
        {"InvalidBucketName", EINVAL, "check the bucket name in the store URL"},
        {"BadDigest", EIO, "the data was corrupted in transit (Content-MD5 mismatch)"},
        {"InvalidDigest", EIO, "the data was corrupted in transit"},
        {"EntityTooSmall", EINVAL, "a multipart part is under 5 MiB (SPOTRUN_S3_PART_SIZE?)"},
        {"EntityTooLarge", EFBIG, ""},
        {"InvalidRange", EBADMSG, "the object is shorter than expected"},
        {"PreconditionFailed", EEXIST, ""},
        {"MethodNotAllowed", EOPNOTSUPP, "the server does not support this operation"},
        {"NotImplemented", EOPNOTSUPP, "the server does not support this operation"},
    };
    *hint = "";
    for (size_t i = 0; code && *code && i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(code, known[i].code) == 0) {
            *hint = known[i].hint;
            return -known[i].err;
        }
    switch (status) {
    case 301:
    case 307:
        *hint = "the bucket is in another region: set AWS_REGION or AWS_ENDPOINT_URL";
        return -EINVAL;
    case 400:
        return -EINVAL;
    case 401:
    case 403:
        *hint = "check the AWS credentials";
        return -EACCES;
    case 404:
        return -ENOENT;
    case 405:
    case 501:
        *hint = "the server does not support this operation";
        return -EOPNOTSUPP;
    case 412:
        return -EEXIST;
    case 416:
        return -EBADMSG;
    default:
        /* 5xx and 429 left after every retry: the store is unavailable. */
        return status >= 500 || status == 429 ? -ECONNRESET : -EIO;
    }
}

int sr_s3_curl_errno(int curl_code)
{
    switch ((CURLcode)curl_code) {
    case CURLE_COULDNT_CONNECT:
        return -ECONNREFUSED;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return -EHOSTUNREACH;
    case CURLE_OPERATION_TIMEDOUT:
        return -ETIMEDOUT;
    case CURLE_OUT_OF_MEMORY:
        return -ENOMEM;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
        return -EACCES;
    default:
        return -ECONNRESET;
    }
}

static void set_text(char *dst, size_t len, const char *src)
{
    if (len)
        snprintf(dst, len, "%s", src ? src : "");
}

int sr_s3_parse_error(const char *xml, size_t len, char *code, size_t clen, char *msg, size_t mlen)
{
    set_text(code, clen, "");
    set_text(msg, mlen, "");
    xmlDoc *doc = sr_xml_parse(xml, len);
    xmlNode *root = doc ? xmlDocGetRootElement(doc) : NULL;
    int rc = -EBADMSG;
    if (root && strcmp(sr_xml_name(root), "Error") == 0) {
        char *c = sr_xml_child_text(root, "Code"), *m = sr_xml_child_text(root, "Message");
        set_text(code, clen, c);
        set_text(msg, mlen, m);
        rc = c ? 0 : -EBADMSG;
        xmlFree(c);
        xmlFree(m);
    }
    xmlFreeDoc(doc);
    return rc;
}

/* Appends name (key or common prefix) without the listing prefix and a
 * trailing '/'. */
static int add_name(struct sr_strlist *out, const char *prefix, const char *name)
{
    size_t pl = strlen(prefix);
    if (!name || strncmp(name, prefix, pl) != 0)
        return 0;
    char buf[2048];
    snprintf(buf, sizeof(buf), "%s", name + pl);
    size_t n = strlen(buf);
    while (n > 0 && buf[n - 1] == '/')
        buf[--n] = '\0';
    if (n == 0 || strchr(buf, '/'))
        return 0;
    return sr_strlist_push(out, buf);
}

/* Appends a whole key below root (the store's prefix), slashes and all,
 * with its Size (SR_SIZE_UNKNOWN when the answer has none) and its ETag
 * without quotes (NULL when none). */
static int add_key(struct sr_strlist *out, const char *root, const char *key, const char *size,
                   const char *etag)
{
    const size_t rl = strlen(root);
    if (!key || strncmp(key, root, rl) != 0 || !key[rl] || strlen(key + rl) >= 2048)
        return 0;
    char *end = NULL;
    errno = 0;
    const unsigned long long n =
        size && *size >= '0' && *size <= '9' ? strtoull(size, &end, 10) : 0;
    const int known = size && end && !*end && !errno;
    char tag[SR_ETAG_MAX] = "";
    if (etag) {
        const size_t el = strlen(etag);
        const int quoted = el >= 2 && etag[0] == '"' && etag[el - 1] == '"';
        snprintf(tag, sizeof(tag), "%.*s", (int)(quoted ? el - 2 : el), etag + quoted);
    }
    return sr_strlist_push_tagged(out, key + rl, known ? (uint64_t)n : SR_SIZE_UNKNOWN,
                                  *tag ? tag : NULL);
}

int sr_s3_parse_list(const char *xml, size_t len, const char *prefix, struct sr_strlist *out,
                     int *truncated, char *token, size_t tlen)
{
    return sr_s3_parse_list_as(xml, len, prefix, 0, out, truncated, token, tlen);
}

int sr_s3_parse_list_as(const char *xml, size_t len, const char *prefix, int keys,
                        struct sr_strlist *out, int *truncated, char *token, size_t tlen)
{
    xmlDoc *doc = sr_xml_parse(xml, len);
    xmlNode *root = doc ? xmlDocGetRootElement(doc) : NULL;
    int rc = 0;
    *truncated = 0;
    set_text(token, tlen, "");
    if (!root || strcmp(sr_xml_name(root), "ListBucketResult") != 0) {
        xmlFreeDoc(doc);
        return sr_errf(-EPROTO, "the answer to a listing is not S3's (no ListBucketResult): is "
                                "AWS_ENDPOINT_URL an S3 endpoint?");
    }
    for (xmlNode *c = root->children; c && rc == 0; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        const char *n = sr_xml_name(c);
        char *t = NULL;
        if (strcmp(n, "Contents") == 0 && keys) {
            char *size = sr_xml_child_text(c, "Size"), *etag = sr_xml_child_text(c, "ETag");
            rc = add_key(out, prefix, t = sr_xml_child_text(c, "Key"), size, etag);
            xmlFree(size);
            xmlFree(etag);
        } else if (strcmp(n, "Contents") == 0)
            rc = add_name(out, prefix, t = sr_xml_child_text(c, "Key"));
        else if (strcmp(n, "CommonPrefixes") == 0)
            rc = add_name(out, prefix, t = sr_xml_child_text(c, "Prefix"));
        else if (strcmp(n, "IsTruncated") == 0)
            *truncated = (t = (char *)xmlNodeGetContent(c)) && strcmp(t, "true") == 0;
        else if (strcmp(n, "NextContinuationToken") == 0)
            set_text(token, tlen, t = (char *)xmlNodeGetContent(c));
        xmlFree(t);
    }
    xmlFreeDoc(doc);
    if (rc == 0 && *truncated && !token[0])
        rc = sr_errf(-EBADMSG, "truncated ListObjectsV2 answer without a continuation token");
    return rc;
}

int sr_s3_parse_upload_id(const char *xml, size_t len, char *id, size_t idlen)
{
    xmlDoc *doc = sr_xml_parse(xml, len);
    xmlNode *root = doc ? xmlDocGetRootElement(doc) : NULL;
    char *t = root ? sr_xml_child_text(root, "UploadId") : NULL;
    int rc = t && *t && strlen(t) < idlen ? 0 : -EBADMSG;
    if (rc == 0)
        set_text(id, idlen, t);
    xmlFree(t);
    xmlFreeDoc(doc);
    return rc;
}

uint64_t sr_s3_part_size(uint64_t total, uint64_t want)
{
    const uint64_t min = 5 * MIB;
    uint64_t ps = want < min ? min : want;
    const uint64_t need = (total + 9999) / 10000;
    if (ps < need)
        ps = need;
    return (ps + MIB - 1) / MIB * MIB;
}

/* ---- client -------------------------------------------------------------- */

int sr_s3_open(const char *bucket, const char *prefix, struct sr_s3 **out)
{
    pthread_once(&once, global_init);
    *out = NULL;
    struct sr_s3 *s3 = calloc(1, sizeof(*s3));
    char region[128];
    int rc = 0;
    if (!s3 || !(s3->pool = sr_http_pool_new(SR_S3_POOL))) {
        free(s3);
        return sr_errf(-ENOMEM, "out of memory");
    }
    s3->bucket = strdup(bucket);
    s3->prefix = strdup(prefix);
    if ((rc = sr_s3_settings_read(&s3->set)) < 0)
        goto fail;
    if ((rc = sr_s3_creds_open(&s3->creds, region, sizeof(region))) < 0)
        goto fail;
    s3->region = strdup(region);
    snprintf(s3->sigv4, sizeof(s3->sigv4), "aws:amz:%s:s3", region);

    /* Endpoint and addressing: custom endpoints get path-style (what
     * S3-compatible servers expect), AWS gets virtual-hosted unless the
     * bucket name has dots (TLS wildcard certificates do not cover them). */
    const char *ep =
        env("AWS_ENDPOINT_URL_S3") ? env("AWS_ENDPOINT_URL_S3") : env("AWS_ENDPOINT_URL");
    char endpoint[1024];
    if (ep)
        snprintf(endpoint, sizeof(endpoint), "%s", ep);
    else
        snprintf(endpoint, sizeof(endpoint), "https://s3.%s.amazonaws.com", region);
    size_t el = strlen(endpoint);
    while (el > 0 && endpoint[el - 1] == '/')
        endpoint[--el] = '\0';
    const char *sep = strstr(endpoint, "://");
    if (!sep || strchr(sep + 3, '/')) {
        rc = sr_errf(-EINVAL, "invalid S3 endpoint \"%s\" (want scheme://host[:port])", endpoint);
        goto fail;
    }
    int path_style = ep != NULL || strchr(bucket, '.') != NULL;
    /* SPOTRUN_S3_ADDRESSING, else the profile's s3.addressing_style (what
     * awscli users already set), else auto. */
    enum sr_s3_addressing style = s3->set.addressing;
    char conf[32] = "";
    if (style == SR_S3_ADDR_PROFILE &&
        sr_s3_profile_s3_setting("addressing_style", conf, sizeof(conf)) == 0)
        style = strcmp(conf, "path") == 0      ? SR_S3_ADDR_PATH
                : strcmp(conf, "virtual") == 0 ? SR_S3_ADDR_VIRTUAL
                                               : SR_S3_ADDR_AUTO;
    if (style == SR_S3_ADDR_PATH)
        path_style = 1;
    else if (style == SR_S3_ADDR_VIRTUAL)
        path_style = 0;
    char base[2048];
    if (path_style)
        snprintf(base, sizeof(base), "%s/%s", endpoint, bucket);
    else
        snprintf(base, sizeof(base), "%.*s%s.%s", (int)(sep + 3 - endpoint), endpoint, bucket,
                 sep + 3);
    s3->base = strdup(base);
    if (!s3->bucket || !s3->prefix || !s3->region || !s3->base) {
        rc = sr_errf(-ENOMEM, "out of memory");
        goto fail;
    }
    sr_debug("s3: %s, region %s, %s-style", base, region, path_style ? "path" : "virtual-hosted");
    *out = s3;
    return 0;
fail:
    sr_s3_close(s3);
    return rc;
}

void sr_s3_close(struct sr_s3 *s3)
{
    if (!s3)
        return;
    sr_http_pool_free(s3->pool);
    sr_s3_creds_close(s3->creds);
    free(s3->bucket);
    free(s3->prefix);
    free(s3->base);
    free(s3->region);
    free(s3);
}

void sr_s3_name(const struct sr_s3 *s3, const char *key, char *buf, size_t len)
{
    snprintf(buf, len, "s3://%s%s%s%s%s", s3->bucket, *s3->prefix ? "/" : "", s3->prefix,
             key && *key ? "/" : "", key ? key : "");
}

CURL *sr_s3_handle(struct sr_s3 *s3)
{
    return sr_http_pool_get(s3->pool);
}

void sr_s3_release(struct sr_s3 *s3, CURL *c)
{
    sr_http_pool_put(s3->pool, c);
}

void sr_s3_cleanup(struct sr_s3_req *req)
{
    curl_slist_free_all(req->hdrs);
    req->hdrs = NULL;
}

/* A request's answer fields, cleared for a new try. */
static void req_reset(struct sr_s3_req *req)
{
    sr_s3_cleanup(req);
    sr_http_rx_reset(&req->rx);
    req->tx.sent = 0;
    req->tx.err = 0;
}

/* The request's URL: the key under the prefix, escaped, and the query. */
static int req_url(const struct sr_s3 *s3, const struct sr_s3_req *req, char *url, size_t len)
{
    char path[3072];
    path[0] = '\0';
    if (req->key || *s3->prefix) {
        char full[2200];
        snprintf(full, sizeof(full), "%s%s%s", s3->prefix, *s3->prefix && req->key ? "/" : "",
                 req->key ? req->key : "");
        if (sr_url_escape(full, 1, path, sizeof(path)) < 0)
            return sr_errf(-ENAMETOOLONG, "key %s is too long", full);
    }
    /* Bucket-level requests: path-style "/bucket?q" (no trailing slash,
     * which s3rver's signature check dislikes); virtual-hosted "/?q". */
    const int bucket_req = req->key == NULL;
    const int is_path = strncmp(s3->base + strlen(s3->base) - strlen(s3->bucket), s3->bucket,
                                strlen(s3->bucket)) == 0;
    if (snprintf(url, len, "%s%s%s%s%s", s3->base, bucket_req ? (is_path ? "" : "/") : "/",
                 bucket_req ? "" : path, req->query ? "?" : "",
                 req->query ? req->query : "") >= (int)len)
        return sr_errf(-ENAMETOOLONG, "request URL too long");
    return 0;
}

/* The options every request has: URL, signing, timeouts, callbacks. */
static void req_common_opts(const struct sr_s3 *s3, CURL *c, struct sr_s3_req *req, const char *url,
                            const struct sr_s3_creds *cr)
{
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, s3->sigv4);
    curl_easy_setopt(c, CURLOPT_USERNAME, cr->key_id);
    curl_easy_setopt(c, CURLOPT_PASSWORD, cr->secret);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, s3->set.connect_timeout_ms);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, s3->set.stall_s);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    /* Bigger buffers than curl's 16 KiB / 64 KiB defaults: fewer callbacks
     * and syscalls per MiB on fast links (SPOTRUN_S3_BUFFER_KB, 0 = curl's). */
    if (s3->set.buffer_size > 0) {
        curl_easy_setopt(c, CURLOPT_BUFFERSIZE, s3->set.buffer_size);
        curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, s3->set.buffer_size);
    }
    sr_http_rx_opts(c, &req->rx);
    curl_easy_setopt(c, CURLOPT_PRIVATE, req);
    if (s3->set.ca_bundle[0])
        curl_easy_setopt(c, CURLOPT_CAINFO, s3->set.ca_bundle);
}

/* The request's headers (NULL when out of memory). */
static struct curl_slist *req_headers(const struct sr_s3_req *req, const struct sr_s3_creds *cr,
                                      int has_body)
{
    char hdr[4200];
    struct curl_slist *h = NULL;
    h = curl_slist_append(h, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    /* No "Expect:" override: curl 7.88 would sign the removed header. */
    if (cr->token[0]) {
        snprintf(hdr, sizeof(hdr), "x-amz-security-token: %s", cr->token);
        h = curl_slist_append(h, hdr);
    }
    if (req->content_md5) {
        snprintf(hdr, sizeof(hdr), "Content-MD5: %s", req->content_md5);
        h = curl_slist_append(h, hdr);
    }
    if (req->range) {
        snprintf(hdr, sizeof(hdr), "Range: bytes=%s", req->range);
        h = curl_slist_append(h, hdr);
    }
    if (req->if_none_match)
        h = curl_slist_append(h, "If-None-Match: *");
    if (req->if_match) {
        snprintf(hdr, sizeof(hdr), "If-Match: %s", req->if_match);
        h = curl_slist_append(h, hdr);
    }
    if (has_body)
        h = curl_slist_append(h, "Content-Type: application/octet-stream");
    return h;
}

/* The method, and the body's callbacks for a PUT or POST. */
static void req_method_opts(CURL *c, struct sr_s3_req *req, int has_body)
{
    if (strcmp(req->method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (has_body) {
        sr_http_tx_opts(c, &req->tx);
        if (strcmp(req->method, "POST") == 0)
            curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "POST");
    } else if (strcmp(req->method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
    }
}

int sr_s3_setup(struct sr_s3 *s3, CURL *c, struct sr_s3_req *req)
{
    char url[4096];
    struct sr_s3_creds cr;
    req_reset(req);
    int rc = sr_s3_creds_get(s3->creds, &cr);
    if (rc < 0)
        return rc;
    rc = req_url(s3, req, url, sizeof(url));
    if (rc < 0)
        return rc;
    req_common_opts(s3, c, req, url, &cr);
    const int has_body = strcmp(req->method, "PUT") == 0 || strcmp(req->method, "POST") == 0;
    struct curl_slist *h = req_headers(req, &cr, has_body);
    req->hdrs = h;
    memset(&cr, 0, sizeof(cr));
    if (!h)
        return sr_errf(-ENOMEM, "out of memory");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    req_method_opts(c, req, has_body);
    return 0;
}

int sr_s3_done(struct sr_s3 *s3, CURL *c, struct sr_s3_req *req, CURLcode cc, int attempt)
{
    char name[2300];
    sr_s3_name(s3, req->key, name, sizeof(name));
    const int local_err = req->rx.err ? req->rx.err : req->tx.err;
    if (local_err &&
        (cc == CURLE_WRITE_ERROR || cc == CURLE_ABORTED_BY_CALLBACK || cc == CURLE_READ_ERROR))
        return sr_errf(local_err, "%s %s: %s", req->method, name,
                       local_err == -EFBIG    ? "answer too large"
                       : local_err == -EPROTO ? "an answer with a body where S3 sends none: "
                                                "is AWS_ENDPOINT_URL an S3 endpoint?"
                                              : strerror(-local_err));
    long status = 0;
    /* curl 7.88 takes an answer cut inside its header block (the
     * connection closed) for a complete one without a body: a HEAD would
     * read as size 0, a GET as empty. Retry it as the partial answer it is. */
    if (cc == CURLE_OK && !req->rx.head_end)
        cc = CURLE_PARTIAL_FILE;
    if (cc == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        req->rx.status = status;
        curl_off_t cl = -1;
        curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
        req->rx.clen = cl > 0 ? (uint64_t)cl : 0;
    }
    char code[128] = "", msg[512] = "";
    if (cc == CURLE_OK && (status < 200 || status >= 300) && req->rx.resp)
        sr_s3_parse_error(req->rx.resp, req->rx.resp_len, code, sizeof(code), msg, sizeof(msg));
    const int v = sr_s3_classify(cc, status, code);
    if (v == SR_S3_OK)
        return 0;
    if (v == SR_S3_RETRY && sr_http_may_retry(attempt, s3->set.retries)) {
        sr_debug("s3: %s %s: %s %ld %s (attempt %d, retrying)", req->method, name,
                 cc ? curl_easy_strerror(cc) : "HTTP", status, code, attempt);
        return 1;
    }
    const char *tries = v == SR_S3_RETRY ? " after retries" : "";
    if (cc != CURLE_OK)
        return sr_errf(sr_s3_curl_errno(cc), "cannot reach %s: %s%s", name, curl_easy_strerror(cc),
                       tries);
    const char *hint = "";
    const int err = sr_s3_errno(status, code, &hint);
    if (err == -ENOENT && (!*code || strcmp(code, "NoSuchKey") == 0))
        return sr_errf(-ENOENT, "%s not found", name);
    if (err == -ENXIO && strcmp(code, "NoSuchBucket") == 0)
        return sr_errf(err,
                       "%s %s: %ld NoSuchBucket (the bucket does not exist: create it with `aws "
                       "s3 mb s3://%s`, or check the store URL and AWS_ENDPOINT_URL)",
                       req->method, name, status, s3->bucket);
    return sr_errf(err, "%s %s: %ld %s%s%s%s%s", req->method, name, status, *code ? code : "error",
                   *hint ? " (" : "", hint, *hint ? ")" : "", tries);
}

long sr_s3_retry_delay_ms(const struct sr_s3 *s3, int attempt)
{
    return sr_http_retry_delay_ms(attempt, s3->set.retry_base_ms);
}

struct s3_call {
    struct sr_s3 *s3;
    struct sr_s3_req *req;
};

static int call_setup(void *ctx, CURL *c)
{
    const struct s3_call *k = ctx;
    return sr_s3_setup(k->s3, c, k->req);
}

static int call_judge(void *ctx, CURL *c, CURLcode cc, int attempt)
{
    const struct s3_call *k = ctx;
    return sr_s3_done(k->s3, c, k->req, cc, attempt);
}

int sr_s3_do(struct sr_s3 *s3, struct sr_s3_req *req)
{
    struct s3_call k = {s3, req};
    const struct sr_http_call call = {
        .setup = call_setup, .judge = call_judge, .ctx = &k, .base_ms = s3->set.retry_base_ms};
    const int rc = sr_http_run(s3->pool, &call);
    sr_s3_cleanup(req);
    return rc;
}
