/*
 * az.c - the Azure Blob request layer (az.h): Shared Key signing, the
 * easy-handle pool, one attempt's setup and verdict, retries with backoff,
 * and the pure helpers the tests pin (canonicalized resource, string to
 * sign, List Blobs parsing). Opening a client and its credentials:
 * az_creds.c.
 *
 * DESIGN: a request is signed per attempt (x-ms-date changes); with SAS
 * the token is appended to the query and nothing is signed; with a
 * managed identity the bearer token is read under the lock and refreshed
 * there when it is within 5 minutes of expiry. Secrets never reach a
 * message: errors name the az:// object, never the request URL (a SAS
 * would be in it).
 */
#include "az.h"
#include "log.h"
#include "store.h"
#include "units.h"
#include "xml.h"

#include <ctype.h>
#include <jansson.h>
#include <errno.h>
#include <libxml/tree.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- pure helpers ---------------------------------------------------------- */

static void unescape(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r == '%' && isxdigit((unsigned char)r[1]) && isxdigit((unsigned char)r[2])) {
            const char h[3] = {r[1], r[2], 0};
            *w++ = (char)strtol(h, NULL, 16);
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sr_az_canon_resource(const char *account, const char *path, const char *query, char *out,
                         size_t len)
{
    size_t o = (size_t)snprintf(out, len, "/%s%s", account, path);
    if (o >= len)
        return -ENAMETOOLONG;
    if (!query || !*query)
        return 0;
    /* "name:value" per parameter, decoded, names lowercased; sorted, so a
     * repeated name's entries are adjacent and their values in order. */
    char *q = strdup(query), *params[64];
    size_t n = 0;
    if (!q)
        return -ENOMEM;
    for (char *save = NULL, *t = strtok_r(q, "&", &save); t && n < 64;
         t = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(t, '=');
        if (eq)
            *eq = ':';
        unescape(t);
        for (char *c = t; *c && *c != ':'; c++)
            *c = (char)tolower((unsigned char)*c);
        params[n++] = t;
    }
    qsort(params, n, sizeof(*params), cmp_str);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *colon = strchr(params[i], ':');
        const size_t nl = colon ? (size_t)(colon - params[i]) : strlen(params[i]);
        const int same = i > 0 && strncmp(params[i - 1], params[i], nl) == 0 &&
                         (params[i - 1][nl] == ':' || params[i - 1][nl] == '\0');
        const char *val = colon ? colon + 1 : "";
        const int w = same ? snprintf(out + o, len - o, ",%s", val)
                           : snprintf(out + o, len - o, "\n%.*s:%s", (int)nl, params[i], val);
        if (w < 0 || (size_t)w >= len - o)
            rc = -ENAMETOOLONG;
        else
            o += (size_t)w;
    }
    free(q);
    return rc;
}

static int cmp_header(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    const size_t xl = strcspn(x, ":"), yl = strcspn(y, ":");
    const int c = strncasecmp(x, y, xl < yl ? xl : yl);
    return c ? c : (int)xl - (int)yl;
}

int sr_az_string_to_sign(const struct sr_az_sts *s, char *out, size_t len)
{
    /* VERB, Content-Encoding, -Language, -Length, -MD5, -Type, Date,
     * If-Modified-Since, If-Match, If-None-Match, If-Unmodified-Since,
     * Range, then the x-ms-* headers and the resource. */
    int w =
        snprintf(out, len, "%s\n\n\n%s\n%s\n%s\n\n\n%s\n%s\n\n%s\n", s->method, s->content_length,
                 s->content_md5, s->content_type, s->if_match, s->if_none_match, s->range);
    if (w < 0 || (size_t)w >= len || s->n_ms > 32)
        return -ENAMETOOLONG;
    size_t o = (size_t)w;
    const char *hs[32];
    memcpy(hs, s->ms_headers, s->n_ms * sizeof(*hs));
    qsort(hs, s->n_ms, sizeof(*hs), cmp_header);
    for (size_t i = 0; i < s->n_ms; i++) {
        const size_t nl = strcspn(hs[i], ":");
        const char *v = hs[i][nl] ? hs[i] + nl + 1 : "";
        while (*v == ' ')
            v++;
        if (o + nl + strlen(v) + 3 > len)
            return -ENAMETOOLONG;
        for (size_t k = 0; k < nl; k++)
            out[o++] = (char)tolower((unsigned char)hs[i][k]);
        o += (size_t)sprintf(out + o, ":%s\n", v);
    }
    w = snprintf(out + o, len - o, "%s", s->canon_resource);
    return w < 0 || (size_t)w >= len - o ? -ENAMETOOLONG : 0;
}

int sr_az_hmac(const unsigned char *key, size_t klen, const char *sts, char *out, size_t len)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int ml = 0;
    if (len < 45 ||
        !HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)sts, strlen(sts), mac, &ml))
        return -EIO;
    EVP_EncodeBlock((unsigned char *)out, mac, (int)ml);
    return 0;
}

int sr_az_classify(int curl_code, long status)
{
    if (curl_code != CURLE_OK)
        return curl_code == CURLE_UNSUPPORTED_PROTOCOL || curl_code == CURLE_URL_MALFORMAT ? 2 : 1;
    if (status >= 200 && status < 300)
        return 0;
    return status == 408 || status == 429 || status >= 500 ? 1 : 2;
}

static int list_entry(xmlNode *e, const char *strip, int keys, struct sr_strlist *out)
{
    char name[2300], size[32];
    sr_xml_text(e, "Name", name, sizeof(name));
    const size_t sl = strlen(strip);
    if (strncmp(name, strip, sl) != 0)
        return 0;
    char *rel = name + sl;
    const size_t rl = strlen(rel);
    const int is_prefix = strcmp((const char *)e->name, "BlobPrefix") == 0;
    if (is_prefix && rl > 0 && rel[rl - 1] == '/')
        rel[rl - 1] = '\0';
    if (!*rel)
        return 0;
    if (!keys)
        return sr_strlist_push(out, rel);
    sr_xml_text(sr_xml_child(e, "Properties"), "Content-Length", size, sizeof(size));
    return sr_strlist_push_sized(out, rel, *size ? strtoull(size, NULL, 10) : SR_SIZE_UNKNOWN);
}

int sr_az_parse_list(const char *xml, size_t len, const char *strip, int keys,
                     struct sr_strlist *out, char *marker, size_t mlen)
{
    xmlDoc *doc = sr_xml_parse(xml, len);
    xmlNode *root = doc ? xmlDocGetRootElement(doc) : NULL;
    if (!root || strcmp(sr_xml_name(root), "EnumerationResults") != 0) {
        xmlFreeDoc(doc);
        return sr_errf(-EBADMSG, "azure: the blob listing is not an EnumerationResults document");
    }
    int rc = 0;
    xmlNode *blobs = sr_xml_child(root, "Blobs");
    for (xmlNode *c = blobs ? blobs->children : NULL; c && rc == 0; c = c->next)
        if (c->type == XML_ELEMENT_NODE &&
            (strcmp(sr_xml_name(c), "Blob") == 0 || strcmp(sr_xml_name(c), "BlobPrefix") == 0))
            rc = list_entry(c, strip, keys, out);
    sr_xml_text(root, "NextMarker", marker, mlen);
    xmlFreeDoc(doc);
    return rc < 0 ? sr_errf(-ENOMEM, "out of memory") : 0;
}

int sr_az_parse_token(const char *json, size_t len, char *tok, size_t tlen, int64_t *exp_s)
{
    json_error_t err;
    json_t *j = json_loadb(json, len, 0, &err);
    const char *t = json_string_value(json_object_get(j, "access_token"));
    json_t *e = json_object_get(j, "expires_on");
    int rc = 0;
    if (!t || !*t || strlen(t) >= tlen) {
        rc = -EBADMSG;
    } else {
        snprintf(tok, tlen, "%s", t);
        *exp_s = json_is_string(e)    ? strtoll(json_string_value(e), NULL, 10)
                 : json_is_integer(e) ? (int64_t)json_integer_value(e)
                                      : 0;
    }
    json_decref(j);
    return rc;
}

/* ---- handles ---------------------------------------------------------------- */

CURL *sr_az_handle(struct sr_az *az)
{
    return sr_http_pool_get(az->pool);
}

void sr_az_release(struct sr_az *az, CURL *c)
{
    sr_http_pool_put(az->pool, c);
}

void sr_az_name(const struct sr_az *az, const char *key, char *buf, size_t len)
{
    snprintf(buf, len, "az://%s/%s%s%s%s%s", az->account, az->container, *az->prefix ? "/" : "",
             az->prefix, key ? "/" : "", key ? key : "");
}

/* ---- one attempt ------------------------------------------------------------ */

static int token_fresh(struct sr_az *az, char *hdr, size_t len);

/* Content-MD5 (base64) of an upload's body: the service checks it, so a
 * body damaged on the way is refused (400 Md5Mismatch), never stored. */
static void body_md5(const struct sr_az_req *r, char out[32])
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dl = 0;
    out[0] = '\0';
    if (strcmp(r->method, "PUT") == 0 && r->tx.body_len > 0 &&
        EVP_Digest(r->tx.body, (size_t)r->tx.body_len, d, &dl, EVP_md5(), NULL))
        EVP_EncodeBlock((unsigned char *)out, d, 16);
}

/* Authorization for a Shared Key request: signs what setup sends. */
static int shared_key(struct sr_az *az, struct sr_az_req *r, const char *path, const char *date,
                      const char *range, const char *md5, char *hdr, size_t hlen)
{
    char res[4096], clen[32] = "", sts[8192], sig[64];
    int rc = sr_az_canon_resource(az->account, path, r->query, res, sizeof(res));
    if (rc < 0)
        return sr_errf(rc, "request too long to sign");
    if (r->tx.body_len > 0)
        snprintf(clen, sizeof(clen), "%llu", (unsigned long long)r->tx.body_len);
    const char *ms[4];
    size_t n = 0;
    char d[80], v[64];
    snprintf(d, sizeof(d), "x-ms-date:%s", date);
    snprintf(v, sizeof(v), "x-ms-version:%s", SR_AZ_VERSION);
    ms[n++] = d;
    ms[n++] = v;
    if (r->block_blob)
        ms[n++] = "x-ms-blob-type:BlockBlob";
    if (*range)
        ms[n++] = range;
    const struct sr_az_sts s = {
        .method = r->method,
        .content_length = clen,
        .content_md5 = md5,
        .content_type = "",
        .if_match = r->if_match ? r->if_match : "",
        .if_none_match = r->if_none_match ? "*" : "",
        .range = "",
        .ms_headers = ms,
        .n_ms = n,
        .canon_resource = res,
    };
    if (sr_az_string_to_sign(&s, sts, sizeof(sts)) < 0 ||
        sr_az_hmac(az->key, az->key_len, sts, sig, sizeof(sig)) < 0)
        return sr_errf(-EIO, "cannot sign the request");
    snprintf(hdr, hlen, "Authorization: SharedKey %s:%s", az->account, sig);
    return 0;
}

/* The request's headers: date and version, the body's type, range and
 * conditions, and auth (the Authorization line, "" for SAS). */
static struct curl_slist *headers(const struct sr_az_req *r, const char *date, const char *range,
                                  const char *md5, const char *auth)
{
    struct curl_slist *h = NULL;
    char line[256];
    if (*md5) {
        snprintf(line, sizeof(line), "Content-MD5: %s", md5);
        h = curl_slist_append(h, line);
    }
    snprintf(line, sizeof(line), "x-ms-date: %s", date);
    h = curl_slist_append(h, line);
    h = curl_slist_append(h, "x-ms-version: " SR_AZ_VERSION);
    h = curl_slist_append(h, "Expect:");
    h = curl_slist_append(h, "Content-Type:");
    if (r->block_blob)
        h = curl_slist_append(h, "x-ms-blob-type: BlockBlob");
    if (*range) {
        snprintf(line, sizeof(line), "x-ms-range: %s", range + 11);
        h = curl_slist_append(h, line);
    }
    if (r->if_none_match)
        h = curl_slist_append(h, "If-None-Match: *");
    if (r->if_match) {
        snprintf(line, sizeof(line), "If-Match: %s", r->if_match);
        h = curl_slist_append(h, line);
    }
    if (*auth)
        h = curl_slist_append(h, auth);
    return h;
}

/* Callbacks, timeouts and the method on handle c. */
static void set_transfer(const struct sr_az *az, CURL *c, struct sr_az_req *r)
{
    sr_http_rx_opts(c, &r->rx);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, az->stall_s);
    curl_easy_setopt(c, CURLOPT_PRIVATE, r);
    if (strcmp(r->method, "PUT") == 0) {
        sr_http_tx_opts(c, &r->tx);
    } else if (strcmp(r->method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (strcmp(r->method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
    }
}

int sr_az_setup(struct sr_az *az, CURL *c, struct sr_az_req *r, struct curl_slist **hdrs)
{
    curl_easy_reset(c);
    sr_http_rx_reset(&r->rx);
    /* upath: the URL's path, which Shared Key signs (the emulator's
     * account segment included); the SAS, when used, goes on the query. */
    char full[2400], path[7400], upath[8000], url[12000];
    snprintf(full, sizeof(full), "%s%s%s", az->prefix, *az->prefix ? "/" : "",
             r->key ? r->key : "");
    if (sr_url_escape(full, 1, path, sizeof(path)) < 0)
        return sr_errf(-ENAMETOOLONG, "key %s is too long", full);
    snprintf(upath, sizeof(upath), "%s/%s%s%s", az->path0, az->container, r->key ? "/" : "",
             r->key ? path : "");
    const char *q = r->query ? r->query : "";
    const int sas = az->auth == SR_AZ_AUTH_SAS;
    snprintf(url, sizeof(url), "%.1024s%s%s%s%s%s", az->base, upath + strlen(az->path0),
             *q || sas ? "?" : "", q, *q && sas ? "&" : "", sas ? az->sas : "");
    char date[64], range[96] = "", auth[9000] = "", md5[32];
    body_md5(r, md5);
    const time_t now = time(NULL);
    struct tm tm;
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&now, &tm));
    if (r->range_len)
        snprintf(range, sizeof(range), "x-ms-range:bytes=%llu-%llu",
                 (unsigned long long)r->range_off,
                 (unsigned long long)(r->range_off + r->range_len - 1));
    int rc = 0;
    if (az->auth == SR_AZ_AUTH_KEY)
        rc = shared_key(az, r, upath, date, range, md5, auth, sizeof(auth));
    else if (az->auth == SR_AZ_AUTH_TOKEN)
        rc = token_fresh(az, auth, sizeof(auth));
    if (rc < 0)
        return rc;
    *hdrs = headers(r, date, range, md5, auth);
    OPENSSL_cleanse(auth, sizeof(auth));
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
    set_transfer(az, c, r);
    return 0;
}

static const char *hint_for(long status, const char *code)
{
    /* Azure says AuthenticationFailed for a bad signature, Azurite
     * AuthorizationFailure; a SAS without the permission is
     * AuthorizationPermissionMismatch. */
    if (status == 403 &&
        (strstr(code, "Authentication") || strcmp(code, "AuthorizationFailure") == 0))
        return " (check the account key or SAS token: docs/azure.md, \"Credentials\")";
    if (status == 403)
        return " (the credentials lack permission for this container)";
    return "";
}

int sr_az_judge(struct sr_az *az, struct sr_az_req *r, CURLcode cc, int attempt)
{
    const long status = r->rx.status;
    const char *code = r->rx.code;
    if (r->rx.err && cc != CURLE_OK && status >= 200 && status < 300) {
        char name[2400];
        sr_az_name(az, r->key, name, sizeof(name));
        if (r->rx.err == -ENOMEM)
            return sr_errf(-ENOMEM, "%s: out of memory", name);
        return sr_errf(-EFBIG, "%s: the answer is larger than expected", name);
    }
    /* Md5Mismatch: the body was damaged on the way; send it again. */
    const int v =
        status == 400 && strcmp(code, "Md5Mismatch") == 0 ? 1 : sr_az_classify(cc, status);
    if (v == 0 || (v == 1 && sr_http_may_retry(attempt, az->retries))) {
        if (v == 1)
            sr_debug("azure: %s %s: %s %ld %s, retrying", r->method, r->key ? r->key : "",
                     cc != CURLE_OK ? curl_easy_strerror(cc) : "status", status, code);
        return v;
    }
    char name[2400];
    sr_az_name(az, r->key, name, sizeof(name));
    if (cc != CURLE_OK)
        return sr_errf(-EIO, "cannot reach %s at %s: %s (after %d attempts)", name, az->base,
                       curl_easy_strerror(cc), attempt);
    /* ENXIO, not ENOENT: a missing container is no missing object (no "no
     * lease yet", no unusable checkpoint to fall back from), as S3's
     * NoSuchBucket (s3.c) */
    if (status == 404 && strcmp(code, "ContainerNotFound") == 0)
        return sr_errf(-ENXIO,
                       "%s: %s 404 ContainerNotFound (the container %s does not exist: create it "
                       "with `az storage container create --account-name %s --name %s`, or check "
                       "the store URL)",
                       name, r->method, az->container, az->account, az->container);
    const int err = status == 404                    ? -ENOENT
                    : status == 401 || status == 403 ? -EACCES
                    : status == 409 || status == 412 ? -EEXIST
                    : status >= 500                  ? -EIO
                                                     : -EINVAL;
    return sr_errf(err, "%s: %s %ld %s%s", name, r->method, status,
                   *code ? code : "(no error code)", hint_for(status, code));
}

long sr_az_retry_delay_ms(const struct sr_az *az, int attempt)
{
    return sr_http_retry_delay_ms(attempt, az->retry_base_ms);
}

struct az_call {
    struct sr_az *az;
    struct sr_az_req *r;
    struct curl_slist *h;
};

static int call_setup(void *ctx, CURL *c)
{
    struct az_call *k = ctx;
    return sr_az_setup(k->az, c, k->r, &k->h);
}

static int call_judge(void *ctx, CURL *c, CURLcode cc, int attempt)
{
    struct az_call *k = ctx;
    (void)c;
    k->r->attempts = attempt;
    return sr_az_judge(k->az, k->r, cc, attempt);
}

static void call_cleanup(void *ctx)
{
    struct az_call *k = ctx;
    curl_slist_free_all(k->h);
    k->h = NULL;
}

int sr_az_do(struct sr_az *az, struct sr_az_req *r)
{
    struct az_call k = {az, r, NULL};
    const struct sr_http_call call = {.setup = call_setup,
                                      .judge = call_judge,
                                      .cleanup = call_cleanup,
                                      .ctx = &k,
                                      .base_ms = az->retry_base_ms};
    r->attempts = 0;
    return sr_http_run(az->pool, &call);
}

/* ---- managed identity ------------------------------------------------------- */

/* The bearer header, refreshing the token first when it expires within
 * 5 minutes (under the lock: one refresh for every thread). */
static int token_fresh(struct sr_az *az, char *hdr, size_t len)
{
    pthread_mutex_lock(az->lock);
    int rc = 0;
    if (az->token_exp_ms - sr_now_ms() < 5 * 60 * 1000)
        rc = sr_az_fetch_token(az);
    if (rc == 0)
        snprintf(hdr, len, "Authorization: Bearer %s", az->token);
    pthread_mutex_unlock(az->lock);
    return rc;
}
