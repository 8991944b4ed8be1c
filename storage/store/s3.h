/*
 * s3.h - a small S3 client over libcurl: addressing, SigV4 signing (curl's
 * CURLOPT_AWS_SIGV4), retries, error messages. The store backend
 * (store_s3.c) builds its operations from these requests.
 *
 * A request is described by struct sr_s3_req; sr_s3_setup() turns it into
 * an easy handle (for the multi interface) and sr_s3_done() judges the
 * outcome; sr_s3_do() runs one with retries on a pooled handle.
 *
 * Threads: an sr_s3 may be used from several threads at once. Easy handles
 * come from a locked pool (each keeps its connection alive for the next
 * request); a request and its handle belong to one thread at a time.
 */
#ifndef SPOTRUN_S3_H
#define SPOTRUN_S3_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "s3_creds.h"

#define SR_S3_POOL 32

#define SR_S3_MIB (1024ull * 1024ull)
#define SR_S3_CONCURRENCY_DEFAULT 8
#define SR_S3_PART_SIZE_DEFAULT (16 * SR_S3_MIB)
#define SR_S3_RANGE_SIZE_DEFAULT (16 * SR_S3_MIB)
#define SR_S3_SINGLE_MAX_DEFAULT (64 * SR_S3_MIB)

enum sr_s3_addressing {
    SR_S3_ADDR_PROFILE, /* unset: the profile's s3.addressing_style, else auto */
    SR_S3_ADDR_AUTO,    /* path-style for a custom endpoint or a dotted bucket */
    SR_S3_ADDR_PATH,
    SR_S3_ADDR_VIRTUAL,
};

/* Every SPOTRUN_S3_* variable, read once when the client opens
 * (docs/s3.md, "Settings"); nothing else reads them. */
struct sr_s3_settings {
    int retries;             /* RETRIES: attempts after the first */
    long retry_base_ms;      /* RETRY_BASE_MS: the backoff's base */
    long connect_timeout_ms; /* CONNECT_TIMEOUT_MS; 0 = curl's default */
    long stall_s;            /* STALL_TIMEOUT_S: under 1 KiB/s this long is cut and retried */
    long buffer_size;        /* BUFFER_KB, in bytes: curl's buffers; 0 = curl's default */
    size_t concurrency;      /* CONCURRENCY: parts or ranges in flight */
    uint64_t part_size;      /* PART_SIZE, as asked (sr_s3_part_size applies S3's limits) */
    uint64_t single_max;     /* SINGLE_MAX: the largest object sent as one PUT */
    uint64_t range_size;     /* RANGE_SIZE, as asked */
    enum sr_s3_addressing addressing; /* ADDRESSING */
    char ca_bundle[4096];             /* CA_BUNDLE: curl's CAINFO; "" = the system's */
};

/* The defaults, then each variable that is set and not empty; a value out
 * of range or not a number is -EINVAL with a message naming the variable. */
int sr_s3_settings_read(struct sr_s3_settings *set);

struct sr_s3 {
    char *bucket;
    char *prefix; /* "" or "a/b" (no leading or trailing '/') */
    char *base;   /* "http://host:port/bucket" or "https://bucket.host" */
    char *region;
    char sigv4[160]; /* "aws:amz:REGION:s3" */
    struct sr_s3_settings set;
    struct sr_s3_cred_provider *creds;
    struct sr_http_pool *pool; /* SR_S3_POOL idle handles (http.h) */
    /* 1 once the server has refused an If-Match ETag in quotes and taken
     * it bare (Ceph RGW 16): later conditional writes send it bare. */
    int bare_if_match;
};

struct sr_s3_req {
    const char *method;      /* GET PUT HEAD POST DELETE */
    const char *key;         /* below the prefix; NULL = the bucket itself */
    const char *query;       /* already encoded, parameters sorted; NULL for none */
    const char *range;       /* "FIRST-LAST" for a ranged GET */
    const char *content_md5; /* base64, or NULL */
    /* Conditional write: If-None-Match: * (create only) and/or
     * If-Match: <etag> (replace only that version); a mismatch is a 412. */
    int if_none_match;
    const char *if_match;
    /* Body of a PUT or POST: memory or a file range (http.h). */
    struct sr_http_tx tx;
    /* Where a 2xx body goes (dst, dst_fd or resp up to max) and the answer:
     * status, resp (error bodies always), got, clen, etag (http.h). */
    struct sr_http_rx rx;
    /* Internal. */
    struct curl_slist *hdrs;
};
int sr_s3_open(const char *bucket, const char *prefix, struct sr_s3 **out);
void sr_s3_close(struct sr_s3 *s3);

/* "s3://bucket/prefix/key" (or "s3://bucket/prefix" for key NULL), for messages. */
void sr_s3_name(const struct sr_s3 *s3, const char *key, char *buf, size_t len);

/* A pooled handle, and its return (http.h's pool). */
CURL *sr_s3_handle(struct sr_s3 *s3);
void sr_s3_release(struct sr_s3 *s3, CURL *c);

/* Resets req's results and prepares handle c for it (credentials are fetched,
 * and refreshed, here). */
int sr_s3_setup(struct sr_s3 *s3, CURL *c, struct sr_s3_req *req);
/* Frees what setup allocated except req->resp. */
void sr_s3_cleanup(struct sr_s3_req *req);
/* Outcome of a finished transfer: 0 (2xx), 1 (retry), or a negative errno
 * with the message recorded (names the object, the status, the S3 code and
 * the likely cause). */
int sr_s3_done(struct sr_s3 *s3, CURL *c, struct sr_s3_req *req, CURLcode cc, int attempt);
/* Runs req to completion with retries and backoff (sr_http_run). */
int sr_s3_do(struct sr_s3 *s3, struct sr_s3_req *req);
/* The wait before retry number attempt (1-based): http.h's one policy from
 * SPOTRUN_S3_RETRY_BASE_MS, for the part driver (s3_parts.c). */
long sr_s3_retry_delay_ms(const struct sr_s3 *s3, int attempt);

/* Pure helpers (unit-tested). */
enum sr_s3_verdict { SR_S3_OK = 0, SR_S3_RETRY = 1, SR_S3_FAIL = 2 };
int sr_s3_classify(int curl_code, long status, const char *s3_code);
/* <Error><Code>..</Code><Message>..</Message></Error>; 0 or -EBADMSG. */
int sr_s3_parse_error(const char *xml, size_t len, char *code, size_t clen, char *msg, size_t mlen);
/* errno for an HTTP status + S3 code, and the hint to print (may be ""). */
int sr_s3_errno(long status, const char *s3_code, const char **hint);
/* A curl failure's errno. */
int sr_s3_curl_errno(int curl_code);
/* One ListObjectsV2 page: appends names below prefix ("dir/") to out,
 * without the prefix and without a trailing '/'. */
struct sr_strlist;
int sr_s3_parse_list(const char *xml, size_t len, const char *prefix, struct sr_strlist *out,
                     int *truncated, char *token, size_t tlen);
/* The same; with keys, each object's whole key below root ("prefix/" of
 * the store) instead, with its Size (out->sizes), and no common prefixes
 * (a listing without a delimiter). */
int sr_s3_parse_list_as(const char *xml, size_t len, const char *root, int keys,
                        struct sr_strlist *out, int *truncated, char *token, size_t tlen);
/* UploadId of an InitiateMultipartUploadResult. */
int sr_s3_parse_upload_id(const char *xml, size_t len, char *id, size_t idlen);
/* Part size for an object of total bytes: at least want (at least 5 MiB),
 * and large enough for at most 10,000 parts; a multiple of 1 MiB. */
uint64_t sr_s3_part_size(uint64_t total, uint64_t want);

#endif
