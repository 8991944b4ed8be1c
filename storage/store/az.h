/*
 * az.h - a small Azure Blob Storage client over libcurl: addressing,
 * authorization (Shared Key, SAS, a managed identity's bearer token),
 * retries, error messages. The "az" store backend (store_az.c) builds its
 * operations from these requests; docs/azure.md describes the whole.
 *
 * Threads: an sr_az may be used from several threads at once. Easy handles
 * come from the HTTP core's locked pool (storage/http/http.h), which also
 * runs the retries; the managed identity's token is refreshed under the
 * client's lock. A request belongs to one thread.
 */
#ifndef SPOTRUN_AZ_H
#define SPOTRUN_AZ_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"

#define SR_AZ_POOL 16
#define SR_AZ_MIB (1024ull * 1024ull)
#define SR_AZ_VERSION "2021-08-06"

enum sr_az_auth { SR_AZ_AUTH_KEY, SR_AZ_AUTH_SAS, SR_AZ_AUTH_TOKEN };

struct sr_az {
    char account[64];
    char container[64];
    char *prefix;      /* "" or "a/b" */
    char base[1024];   /* "https://acct.blob.core.windows.net",
                          "http://127.0.0.1:10000/devstoreaccount1" */
    const char *path0; /* base's path ("" or "/devstoreaccount1"), inside base */
    enum sr_az_auth auth;
    char source[96]; /* where the credentials came from, for messages */
    unsigned char key[96];
    size_t key_len;
    char sas[2048];       /* without the leading '?' */
    char imds[1024];      /* the token endpoint (managed identity) */
    char token[8192];     /* bearer token (managed identity) */
    int64_t token_exp_ms; /* when it expires, sr_now_ms() clock */
    /* SPOTRUN_AZ_* settings (docs/azure.md, "Settings") */
    int retries;
    long retry_base_ms;
    long stall_s; /* a transfer under 1 KiB/s this long is cut and retried */
    size_t concurrency;
    uint64_t block_size;       /* Put Block's size; an object within one is one Put Blob */
    void *lock;                /* pthread_mutex_t: the token */
    struct sr_http_pool *pool; /* SR_AZ_POOL idle handles (http.h) */
};

struct sr_az_req {
    const char *method;            /* GET PUT HEAD DELETE */
    const char *key;               /* below the prefix; NULL = the container */
    const char *query;             /* already encoded ("comp=block&blockid=..."), or NULL */
    uint64_t range_off, range_len; /* range_len > 0: x-ms-range */
    int if_none_match;             /* If-None-Match: * */
    const char *if_match;          /* If-Match: ETAG */
    int block_blob;                /* x-ms-blob-type: BlockBlob (Put Blob) */
    struct sr_http_tx tx;          /* a PUT's body (memory only; tx.body_fd -1) */
    /* The answer (http.h): a 2xx body into rx.dst (rx.dst_len at most),
     * else into rx.resp up to rx.max; error bodies are capped at 64 KiB;
     * rx.code is x-ms-error-code. */
    struct sr_http_rx rx;
    int attempts; /* sr_az_do's tries */
};

/* Opens the client for az://account/container/prefix: the endpoint and
 * the credentials (docs/azure.md, "Credentials"). */
int sr_az_open(const char *account, const char *container, const char *prefix, struct sr_az **out);
void sr_az_close(struct sr_az *az);
/* "az://account/container/prefix/key", for messages. */
void sr_az_name(const struct sr_az *az, const char *key, char *buf, size_t len);
/* Runs req with retries (the HTTP core's backoff, on transport failures,
 * 408, 429, 5xx); 0 for a 2xx, else a negative errno with a message
 * naming the object, the status and Azure's error code. The caller frees
 * req->rx.resp. */
int sr_az_do(struct sr_az *az, struct sr_az_req *req);
/* One attempt on handle c, no retries (the block driver's). */
CURL *sr_az_handle(struct sr_az *az);
void sr_az_release(struct sr_az *az, CURL *c);
int sr_az_setup(struct sr_az *az, CURL *c, struct sr_az_req *req, struct curl_slist **hdrs);
/* 0 (2xx), 1 (retry), or the negative errno with its message; attempt is
 * 1-based. */
int sr_az_judge(struct sr_az *az, struct sr_az_req *req, CURLcode cc, int attempt);
/* The wait before retry attempt (1-based): http.h's one policy from
 * SPOTRUN_AZ_RETRY_BASE_MS. */
long sr_az_retry_delay_ms(const struct sr_az *az, int attempt);
/* Fetches (refreshes) the managed identity's token from az->imds. */
int sr_az_fetch_token(struct sr_az *az);

/* ---- pure helpers (unit-tested) ---- */

/* The Shared Key CanonicalizedResource: "/account" + path, then each query
 * parameter as "\nname:value" (names lowercased and sorted, values
 * decoded, a repeated name's values sorted and joined by ','). */
int sr_az_canon_resource(const char *account, const char *path, const char *query, char *out,
                         size_t len);
/* The Shared Key string-to-sign (Blob service, version 2009-09-19 and
 * later) of a request with these standard headers ("" when absent;
 * content_length "" for 0) and the "name:value" x-ms-* headers (any case,
 * any order). */
struct sr_az_sts {
    const char *method, *content_length, *content_md5, *content_type;
    const char *if_match, *if_none_match, *range;
    const char *const *ms_headers;
    size_t n_ms;
    const char *canon_resource;
};
int sr_az_string_to_sign(const struct sr_az_sts *s, char *out, size_t len);
/* base64(HMAC-SHA256(key, sts)) into out (45 bytes at least). */
int sr_az_hmac(const unsigned char *key, size_t klen, const char *sts, char *out, size_t len);
/* 0 OK, 1 retry, 2 fail. */
int sr_az_classify(int curl_code, long status);
/* A connection string's fields ("" when absent). */
struct sr_az_conn {
    char account[64], key[128], sas[2048], endpoint[1024], protocol[16], suffix[128];
    int dev; /* UseDevelopmentStorage=true */
};
int sr_az_parse_conn(const char *s, struct sr_az_conn *out);
/* One List Blobs page: names below strip ("dir/" of the listing, or the
 * store's root for keys) appended to out (with sizes when keys); BlobPrefix
 * entries without their trailing '/' unless keys; marker gets NextMarker
 * ("" at the end). */
struct sr_strlist;
int sr_az_parse_list(const char *xml, size_t len, const char *strip, int keys,
                     struct sr_strlist *out, char *marker, size_t mlen);
/* An IMDS token answer: access_token and expires_on (seconds since the
 * epoch, a string or a number). */
int sr_az_parse_token(const char *json, size_t len, char *tok, size_t tlen, int64_t *exp_s);

#endif
