/*
 * store_s3_int.h - what the S3 store backend's files share; internal to
 * storage/, not part of the store interface (store.h).
 *
 *   store_s3.c      simple operations (put, put_if, get, size, del, list),
 *                   open/close and the ops table, and the helpers below
 *   store_s3_put.c  uploads: the streaming writer, which put_file uses too
 *   store_s3_get.c  downloads: the ranged source and its memory ring
 *
 * Cross-file names carry the s3st_ prefix; everything else is static.
 */
#ifndef SPOTRUN_STORE_S3_INT_H
#define SPOTRUN_STORE_S3_INT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "s3.h"
#include "store.h"

#define MIB (1024ull * 1024ull)
/* Objects this large get a progress line and the download ring. */
#define RING_MIN (8 * MIB)

static inline struct sr_s3 *s3_of(struct sr_store *st)
{
    return st->impl;
}

static inline struct sr_s3_req req_new(const char *method, const char *key)
{
    struct sr_s3_req r;
    memset(&r, 0, sizeof(r));
    r.method = method;
    r.key = key;
    r.body_fd = -1;
    r.dst_fd = -1;
    return r;
}

/* A size or count from the environment ("16M", "512k"); def when unset,
 * empty or 0. */
static inline uint64_t env_u64(const char *name, uint64_t def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (*end == 'k' || *end == 'K')
        n <<= 10;
    else if (*end == 'm' || *end == 'M')
        n <<= 20;
    else if (*end == 'g' || *end == 'G')
        n <<= 30;
    return n ? (uint64_t)n : def;
}

static inline int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
void s3st_source_close(struct sr_store *st, struct sr_source *src);

#endif
