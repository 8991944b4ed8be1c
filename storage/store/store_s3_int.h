/*
 * store_s3_int.h - what the S3 store backend's files share; internal to
 * storage/, not part of the store interface (store.h).
 *
 *   store_s3.c      simple operations (put, put_if, get, size, del, list),
 *                   open/close and the ops table, and the helpers below
 *   store_s3_put.c  uploads: the streaming writer, which put_file uses too
 *   store_s3_get.c  downloads: the ranged source and its memory ring
 *   s3_parts.c      the part driver both of those run their transfers on
 *
 * Cross-file names carry the s3st_ prefix; everything else is static.
 */
#ifndef SPOTRUN_STORE_S3_INT_H
#define SPOTRUN_STORE_S3_INT_H

#include <stdint.h>
#include <string.h>

#include "s3.h"
#include "store.h"
#include "units.h"

#define MIB SR_S3_MIB
/* Objects this large get a progress line and the download ring. */
#define RING_MIN (8 * MIB)

static inline struct sr_s3 *s3_of(struct sr_store *st)
{
    return st->impl;
}

static inline struct sr_s3_req req_new(const char *method, const char *key)
{
    return (struct sr_s3_req){
        .method = method, .key = key, .tx = SR_HTTP_TX_NONE, .rx = SR_HTTP_RX_RESP(0, NULL)};
}

/* The push / pull progress line (docs/s3.md, "Progress"). */
struct s3st_progress {
    int on;
    const char *verb;
    uint64_t total;
    int64_t t0, last;
};
/* total 0: unknown (a streamed upload): bytes and rate, no ETA. */
void s3st_progress_init(struct s3st_progress *p, const char *verb, uint64_t total);
/* At most every 250 ms unless final (which ends the line). */
void s3st_progress_show(struct s3st_progress *p, uint64_t done, int final);

/* A large transfer buffer (a part, a ring chunk), 2 MiB-aligned, advised
 * for huge pages. Free with free(). */
void *s3st_big_alloc(size_t len);

/* Content-MD5 (base64) of buf. */
int s3st_md5_buf(const void *buf, size_t len, char out[32]);
/* rc, or -EEXIST with a plain message when status is 412 (a create-only
 * write found key). */
int s3st_exists_error(struct sr_s3 *s3, const char *key, int rc, long status);
/* One PUT with Content-MD5; create: If-None-Match: *. */
int s3st_put_buf(struct sr_store *st, const char *key, const void *buf, size_t len, int create);
/* HEAD: the object's size. */
int s3st_size(struct sr_store *st, const char *key, uint64_t *size);

/* store_s3_put.c: the ops' put_file and streaming writer. */
int s3st_put_file(struct sr_store *st, const char *key, const char *path, int create);
int s3st_writer_open(struct sr_store *st, const char *key, int create,
                     struct sr_store_writer **out);
int s3st_writer_write(struct sr_store_writer *sw, const void *buf, size_t len);
int s3st_writer_commit(struct sr_store_writer *sw);
void s3st_writer_close(struct sr_store_writer *sw);

/* store_s3_get.c: the ops' source. */
int s3st_source(struct sr_store *st, const char *key, struct sr_source *src);
int s3st_source_ranged(struct sr_store *st, const char *key, const struct sr_range *reads,
                       size_t nreads, struct sr_source *src);
void s3st_source_close(struct sr_store *st, struct sr_source *src);

/* ---- s3_parts.c: the part driver ------------------------------------------
 *
 * The transfers of a multipart upload (parts) and of a ranged download
 * (ranges) run on one curl multi handle, each retried on its own. The
 * caller owns the order and the memory (which part starts next, where its
 * bytes live) and fills in a part's request; the driver owns the rest of a
 * part's life:
 *
 *     WAITING --start--> IN_FLIGHT --finished: 2xx, checked--> DONE
 *        ^                   |
 *        +---- retryable, ---+--- failed for good: the caller's error
 *              retry_at set
 *
 * A loop round is: start the parts that are due (s3st_part_due) while
 * there is room, s3st_parts_perform, then take every finished part with
 * s3st_parts_finished, check what only the caller can (a short range, a
 * missing ETag), and s3st_part_settle it; then s3st_parts_wait. One
 * thread drives a driver; s3st_parts_wake may be called from any.
 */
enum s3st_part_state { S3ST_PART_WAITING, S3ST_PART_IN_FLIGHT, S3ST_PART_DONE };

struct s3st_part {
    struct sr_s3_req req; /* first: CURLINFO_PRIVATE points here */
    CURL *c;              /* from the pool while the part is not DONE */
    int attempts;
    int64_t retry_at; /* sr_now_ms() when WAITING for a retry */
    enum s3st_part_state state;
};

struct s3st_parts {
    struct sr_s3 *s3;
    CURLM *multi;
    size_t conc;   /* parts in flight at most */
    size_t active; /* parts in flight now */
};

int s3st_parts_init(struct s3st_parts *d, struct sr_s3 *s3, size_t conc);
void s3st_parts_free(struct s3st_parts *d);
/* Room for one more part in flight. */
static inline int s3st_parts_room(const struct s3st_parts *d)
{
    return d->active < d->conc;
}
/* A part waiting to start: new, or a retry whose backoff ended by now. */
static inline int s3st_part_due(const struct s3st_part *p, int64_t now)
{
    return p->state == S3ST_PART_WAITING && p->retry_at <= now;
}
/* Starts p's request (p->req described by the caller; its handle is taken
 * from the pool unless a retry keeps one). */
int s3st_part_start(struct s3st_parts *d, struct s3st_part *p);
void s3st_parts_perform(struct s3st_parts *d);
/* The next finished part, NULL when none is left: its handle is off the
 * multi, its request judged (*verdict: 0 a 2xx, 1 retry, or the negative
 * error with its message), its error body freed. */
struct s3st_part *s3st_parts_finished(struct s3st_parts *d, int *verdict);
/* Applies the (checked) verdict: 0 DONE (the handle back in the pool), 1
 * WAITING until the backoff ends; returns verdict. */
int s3st_part_settle(struct s3st_parts *d, struct s3st_part *p, int verdict);
/* Up to 100 ms for a transfer to progress or s3st_parts_wake. */
void s3st_parts_wait(struct s3st_parts *d);
void s3st_parts_wake(struct s3st_parts *d);
/* Takes p off the multi (a failure or a stop) and frees its request. */
void s3st_part_drop(struct s3st_parts *d, struct s3st_part *p);

#endif
