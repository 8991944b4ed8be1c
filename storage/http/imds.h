/*
 * imds.h - one AWS IMDSv2 session token per process, shared by the spot
 * notice watcher (runtime/notice/notice_aws.c), the placement lookup
 * (runtime/notice/instance.c) and the S3 credential chain
 * (storage/store/s3_creds.c).
 *
 * A token is asked for with PUT {base}/latest/api/token and
 * SR_IMDS_TTL_HEADER (6 h), kept with the time to renew it (a minute
 * before it expires, on the monotonic clock) and handed to every caller
 * until then. A caller whose read was refused (401: expired, revoked)
 * drops it, and the next caller fetches a new one. The PUT itself is the
 * caller's (the watcher's is cancellable, the others' are plain curl): it
 * is passed in, and only a success is kept, so each caller still reports
 * its own failures (a hop limit, no metadata service).
 *
 * Threads: any; the cache is locked, but never while a token is fetched:
 * the notice watcher does not wait behind another thread's slow PUT (two
 * threads that find no token may both fetch one; both are valid).
 */
#ifndef SPOTRUN_IMDS_H
#define SPOTRUN_IMDS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define SR_IMDS_TTL_S 21600
#define SR_IMDS_TTL_HEADER "X-aws-ec2-metadata-token-ttl-seconds: 21600"
#define SR_IMDS_RENEW_MS 60000
#define SR_IMDS_TOKEN_MAX 512 /* a token and its NUL */

/* The PUT: fetches a token from url (…/latest/api/token) sending header,
 * into tok (len bytes, NUL-terminated, no line end); 0 or the caller's
 * negative errno. */
typedef int (*sr_imds_fetch_fn)(void *ctx, const char *url, const char *header, char *tok,
                                size_t len);

struct sr_imds_cache {
    pthread_mutex_t lock;
    char base[1024]; /* the service the token is from */
    char token[SR_IMDS_TOKEN_MAX];
    int64_t renew_at_ms; /* monotonic; the token is fetched again from then */
};
#define SR_IMDS_CACHE_INIT                                                                         \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, "", "", 0                                                       \
    }

/* The process's token for base (trailing '/' ignored) into tok: the kept
 * one while it is fresh, else a new one from fetch. */
int sr_imds_token(const char *base, sr_imds_fetch_fn fetch, void *ctx, char *tok, size_t len);
/* base refused tok (401): it is dropped (unless a newer one replaced it). */
void sr_imds_token_refused(const char *base, const char *tok);

/* The same on a given cache at time now_ms (the tests'). */
int sr_imds_cache_token(struct sr_imds_cache *c, int64_t now_ms, const char *base,
                        sr_imds_fetch_fn fetch, void *ctx, char *tok, size_t len);
void sr_imds_cache_refused(struct sr_imds_cache *c, const char *base, const char *tok);

#endif
