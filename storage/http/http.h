/*
 * http.h - the HTTP client core under the S3 and Azure Blob clients (and
 * the cloud metadata clients): one retry policy, EINTR-safe sleeps, the
 * retry loop, a pool of easy handles, the callbacks that move a request's
 * body and its answer. The IMDSv2 token cache is imds.h.
 *
 * What a backend keeps is its protocol: URLs, signing, headers, which
 * answers are worth another try (its judge) and the errno and message of
 * a failure. Everything here is protocol-free.
 *
 * Threads: a pool may be used from several threads at once (it is locked);
 * a request, its sr_http_tx and sr_http_rx belong to one thread at a time.
 * The delay functions use a per-thread generator: no lock, no shared state.
 */
#ifndef SPOTRUN_HTTP_H
#define SPOTRUN_HTTP_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the one retry policy --------------------------------------------------
 *
 * Full-jitter exponential backoff: before retry n (1-based) sleep a random
 * time in [0, min(SR_HTTP_BACKOFF_CAP_MS, base * 2^(n-1))]. The cap is 5 s
 * because a preemption notice gives 30 s (Azure, GCP) to 2 minutes (AWS)
 * to save the last checkpoint: a single wait of 20 s would spend most of
 * Azure's window asleep, while with the default five retries from 200 ms
 * the waits add up to at most ~11 s and jitter still spreads the parts of
 * one upload that a throttling server refused together. */
#define SR_HTTP_BACKOFF_CAP_MS 5000L

/* The bound of the random wait before retry attempt (1-based), capped. */
long sr_http_backoff_max_ms(int attempt, long base_ms);
/* The wait itself for a random value rnd: rnd mod (bound + 1). Pure. */
long sr_http_backoff_ms(int attempt, long base_ms, uint64_t rnd);
/* The wait before retry attempt, drawn from this thread's generator. */
long sr_http_retry_delay_ms(int attempt, long base_ms);
/* A 64-bit random value from this thread's generator (seeded once per
 * thread from the clock and the thread; not for secrets). */
uint64_t sr_http_rand(void);
/* Sleeps ms milliseconds on the monotonic clock; a signal does not cut it
 * short (the sleep resumes until the deadline). */
void sr_http_sleep_ms(long ms);
/* Whether a try that the backend judged retryable gets another one: tries
 * 1..retries+1, the same count for every backend. */
int sr_http_may_retry(int attempt, int retries);

/* ---- the handle pool ------------------------------------------------------ */

struct sr_http_pool;
/* A pool that keeps up to cap idle handles (each keeps its connections). */
struct sr_http_pool *sr_http_pool_new(int cap);
void sr_http_pool_free(struct sr_http_pool *p);
/* An idle handle, reset (curl_easy_reset keeps its connections), or a new
 * one; NULL when out of memory. */
CURL *sr_http_pool_get(struct sr_http_pool *p);
/* Back to the pool, or cleaned up when the pool is full. NULL is ignored. */
void sr_http_pool_put(struct sr_http_pool *p, CURL *c);

/* ---- the retry loop ------------------------------------------------------- */

#define SR_HTTP_AGAIN 1

/* One request as the loop sees it: setup prepares the handle for a try
 * (< 0 fails the request), judge takes the finished try's outcome and
 * answers 0 (done), SR_HTTP_AGAIN (retry: the backend's classifier said
 * so and sr_http_may_retry allowed it) or a negative errno with its
 * message recorded; cleanup (may be NULL) runs after every try. */
struct sr_http_call {
    int (*setup)(void *ctx, CURL *c);
    int (*judge)(void *ctx, CURL *c, CURLcode cc, int attempt);
    void (*cleanup)(void *ctx);
    void *ctx;
    long base_ms; /* the backoff's base */
};
/* Runs call on one pooled handle until judge says done or failed, sleeping
 * sr_http_retry_delay_ms between tries. */
int sr_http_run(struct sr_http_pool *pool, const struct sr_http_call *call);

/* ---- a request's body and its answer -------------------------------------- */

/* What a PUT or POST sends: memory (body) or a file range (body_fd >= 0
 * and body NULL), body_len bytes. curl may rewind it (a kept-alive
 * connection closed under it). */
struct sr_http_tx {
    const void *body;
    uint64_t body_len;
    int body_fd;
    uint64_t body_off;
    uint64_t sent; /* internal */
    int err;       /* a read of body_fd failed: its negative errno */
};
/* A request without a body. */
#define SR_HTTP_TX_NONE ((struct sr_http_tx){.body_fd = -1})
/* Upload options and the read/seek callbacks for tx on c. */
void sr_http_tx_opts(CURL *c, struct sr_http_tx *tx);

#define SR_HTTP_ERR_BODY_MAX (64u << 10)

/* Where an answer goes and what was learnt of it. A 2xx body goes to dst
 * (dst_len at most), else to a file (dst_fd >= 0: at dst_off + got,
 * dst_len at most), else to resp, grown up to max bytes and kept
 * NUL-terminated. A non-2xx body goes to resp, its first
 * SR_HTTP_ERR_BODY_MAX bytes kept (the status is the answer). */
struct sr_http_rx {
    void *dst;
    size_t dst_len;
    int dst_fd;
    uint64_t dst_off;
    size_t max;
    const char *code_header; /* "x-ms-error-code": its value goes to code */
    /* results */
    long status; /* of the last response (after 100 Continue, the final one) */
    char *resp;
    size_t resp_len;
    uint64_t got;  /* bytes written to dst or dst_fd */
    uint64_t clen; /* Content-Length */
    char etag[128];
    char code[96];
    int head_end; /* the header block ended (its blank line arrived) */
    /* Why a callback stopped the transfer: -EFBIG (a 2xx body past its
     * room), -EPROTO (a body where none was asked for: max 0), -EBADMSG
     * (past dst_len), -ENOMEM, or a write's errno. */
    int err;
};
/* An answer into resp, up to max bytes for a 2xx; code_header as above. */
#define SR_HTTP_RX_RESP(max_, code_header_)                                                        \
    ((struct sr_http_rx){.dst_fd = -1, .max = (max_), .code_header = (code_header_)})
/* Clears the results (frees resp) for a new try; the destination stays. */
void sr_http_rx_reset(struct sr_http_rx *rx);
/* The write and header callbacks for rx on c. */
void sr_http_rx_opts(CURL *c, struct sr_http_rx *rx);
/* Hands a finished request's body to the caller: rc 0, *buf gets rx->resp
 * (an empty body as an allocated "") and *len its length; rc < 0 (or out
 * of memory) frees it and returns the error. */
int sr_http_rx_take(struct sr_http_rx *rx, int rc, char **buf, size_t *len);

/* ---- one short request outside any pool ------------------------------------
 *
 * For metadata services and credential endpoints: method (a PUT sends an
 * empty body), the header lines in headers (NULL-terminated; NULL for
 * none), http or https only, no proxy, connect_ms to connect and total_ms in all, the answer
 * in rx (set its destination first: dst_fd -1, max). The curl code;
 * rx->status is 0 when no answer came. */
CURLcode sr_http_fetch(const char *method, const char *url, const char *const *headers,
                       long connect_ms, long total_ms, struct sr_http_rx *rx);

#endif
