/*
 * store_s3_get.c - downloads for the "s3" store backend: the ranged source
 * that restore and pull read through (docs/s3.md, "Downloads").
 *
 * DESIGN: objects of RING_MIN or more are downloaded once, by a background
 * thread (in-order ranged GETs on the part driver, s3_parts.c), into a bounded ring of
 * memory chunks; a chunk goes back to the ring once it is hashed and the
 * codec has read it. The codec's frame reads wait only for their own
 * bytes, so extraction overlaps the download (a reader waiting for a chunk
 * lets it start even when the ring is full); the download hashes the
 * contiguous prefix as it grows and offers that as the source's checksum,
 * which the codec checks before swapping the extracted tree in.
 *
 * An object opened with s3st_source_ranged (a delta checkpoint's frames in
 * an older object) with a plan of the reads to come, in ascending order,
 * gets the same ring over just those bytes: adjacent reads (consecutive
 * frames of unchanged files) coalesce into ranges of up to s->range bytes,
 * CONCURRENCY of them in flight, and the bytes between the planned ranges
 * are never requested. Nothing is hashed (no source checksum: the codec
 * checks each frame). Without a plan, or with one out of order, and for
 * small objects, every read_at is its own ranged GET, on pooled handles,
 * safe from the codec's worker threads.
 *
 * Threads: the source is read from the codec's threads; the download
 * thread and the readers share the ring under the source's lock.
 */
#include "log.h"
#include "s3.h"
#include "seektable.h"
#include "store.h"
#include "store_s3_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

struct s3_src {
    struct sr_s3 *s3;
    char *key;
    uint64_t size;
    /* Background download into the memory ring (running), else one ranged
     * GET per read. */
    pthread_t th;
    int running;       /* reads go through the ring */
    int th_state;      /* the download thread: 0 not started (a plan starts it
                        * on the first read), 1 running, -1 could not start */
    size_t n;          /* chunks: [coff[i], chunk_end(i)) */
    uint64_t *coff;    /* n + 1 offsets: where chunk i begins; coff[n] = the end */
    uint64_t *cend;    /* where chunk i ends (coff[i + 1] unless a plan skips bytes) */
    size_t conc;       /* ranges in flight */
    uint64_t range;    /* bytes per range (after the first waves) and per ring buffer */
    XXH3_state_t *xxh; /* download thread only; NULL for a planned download */
    pthread_mutex_t lock;
    pthread_cond_t cv;    /* a chunk arrived, or the download ended */
    uint8_t **buf;        /* chunk i's buffer (range bytes) while held, else NULL */
    uint64_t *have;       /* bytes of chunk i received, from its start */
    uint64_t *used;       /* bytes of chunk i copied out to readers */
    int *refs;            /* readers copying out of chunk i right now */
    size_t hashed;        /* chunks [0, hashed) are hashed */
    size_t started;       /* chunks [0, started) were requested (have a buffer) */
    size_t want;          /* a reader waits for a chunk below this: start it */
    uint64_t held, limit; /* bytes of chunk buffers in use, and the cap */
    uint8_t **pool;       /* spare chunk buffers */
    size_t npool, pool_cap;
    CURLM *multi; /* the download's, to wake it; NULL once it ended */
    int stop, drain, finished, err;
    char errmsg[512];
    char sum[SR_CHECKSUM_LEN];
};

static int range_get(struct sr_s3 *s3, const char *key, void *buf, size_t len, uint64_t off)
{
    char range[64];
    snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, off, off + len - 1);
    struct sr_s3_req r = req_new("GET", key);
    r.range = range;
    r.rx.dst = buf;
    r.rx.dst_len = len;
    int rc = sr_s3_do(s3, &r);
    free(r.rx.resp);
    if (rc == 0 && r.rx.got != len) {
        char name[2300];
        sr_s3_name(s3, key, name, sizeof(name));
        rc = sr_errf(-EBADMSG, "%s: short read at offset %" PRIu64 " (%" PRIu64 " of %zu bytes)",
                     name, off, r.rx.got, len);
    }
    return rc;
}

static uint64_t chunk_end(const struct s3_src *s, size_t i)
{
    return s->cend[i];
}

/* Appends chunk [off, end) to the plan being built (cap entries room). */
static int plan_add(struct s3_src *s, size_t *cap, uint64_t off, uint64_t end)
{
    if (s->n + 2 > *cap) {
        const size_t ncap = *cap ? 2 * *cap : 64;
        uint64_t *a = realloc(s->coff, ncap * sizeof(*a));
        if (a)
            s->coff = a;
        uint64_t *b = a ? realloc(s->cend, ncap * sizeof(*b)) : NULL;
        if (b)
            s->cend = b;
        if (!a || !b)
            return sr_errf(-ENOMEM, "out of memory");
        *cap = ncap;
    }
    s->coff[s->n] = off;
    s->cend[s->n++] = end;
    s->coff[s->n] = end;
    return 0;
}

/* The ranges of the download: the reads (a whole object: one read of all
 * of it), merged where one ends where the next begins, cut into chunks.
 * The first wave is small (4 MiB per range), so that the start - what the
 * decompressor wants first - completes early although CONCURRENCY ranges
 * share the link; then s->range bytes (default 16 MiB: each request has a
 * cost - s3rver spends ~18 ms of CPU on one - and partly received ranges
 * are readable anyway). Every range fits one ring buffer. 0 with no chunks
 * when the reads are not in ascending order (or overlap, or leave the
 * object): then every read is its own GET, as without a plan. */
static int chunk_plan(struct s3_src *s, const struct sr_range *reads, size_t nreads)
{
    for (size_t k = 0; k < nreads; k++)
        if (reads[k].off > s->size || reads[k].len > s->size - reads[k].off ||
            (k > 0 && reads[k].off < reads[k - 1].off + reads[k - 1].len))
            return 0;
    size_t cap = 0;
    int rc = 0;
    for (size_t k = 0; k < nreads && rc == 0;) {
        uint64_t off = reads[k].off, end = off + reads[k].len;
        for (k++; k < nreads && reads[k].off == end; k++)
            end += reads[k].len;
        while (off < end && rc == 0) {
            const uint64_t most = s->n < s->conc && 4 * MIB < s->range ? 4 * MIB : s->range;
            const uint64_t len = end - off < most ? end - off : most;
            rc = plan_add(s, &cap, off, off + len);
            off += len;
        }
    }
    return rc;
}

/* Index of the chunk holding byte off (< size). */
static size_t chunk_of(const struct s3_src *s, uint64_t off)
{
    size_t lo = 0, hi = s->n; /* coff[lo] <= off < coff[hi] */
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if (s->coff[mid] <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Gives chunk i's buffer back to the ring once it is hashed and every one
 * of its bytes was copied out to a reader (or, once a caller waits for the
 * checksum alone, as soon as it is hashed), and wakes the download, which
 * may be waiting for room. Caller holds the lock. */
static void chunk_release(struct s3_src *s, size_t i)
{
    const uint64_t len = chunk_end(s, i) - s->coff[i];
    if (!s->buf[i] || i >= s->hashed || s->refs[i] > 0 || (s->used[i] < len && !s->drain))
        return;
    /* Kept for reuse only while chunks remain to be started: the buffers of
     * an object read to its end go (a delta's restore keeps its older
     * objects open until the end). */
    if (s->npool < s->pool_cap && s->started < s->n)
        s->pool[s->npool++] = s->buf[i];
    else
        free(s->buf[i]);
    s->buf[i] = NULL;
    s->held -= s->range;
    if (s->multi)
        curl_multi_wakeup(s->multi);
}

struct dpart {
    struct s3st_part part; /* first: the driver hands this back */
    char range[64];
    uint64_t base; /* bytes of the chunk received by earlier attempts */
};

/* The download thread's state: chunks [0, hashed) are hashed, [0, next)
 * were started, done of them completed. */
struct download {
    struct s3_src *s;
    struct dpart *parts;
    struct s3st_parts xfer;
    size_t next, done, hashed;
    uint64_t bytes_done;
    struct s3st_progress pg;
};

/* Starts (or resumes, after the bytes already received) the GET of chunk
 * i into its ring buffer. */
static int dpart_start(struct download *dl, size_t i)
{
    struct s3_src *s = dl->s;
    struct dpart *p = &dl->parts[i];
    const uint64_t off = s->coff[i] + p->base, end = chunk_end(s, i);
    snprintf(p->range, sizeof(p->range), "%" PRIu64 "-%" PRIu64, off, end - 1);
    p->part.req = req_new("GET", s->key);
    p->part.req.range = p->range;
    p->part.req.rx.dst = s->buf[i] + p->base;
    p->part.req.rx.dst_len = (size_t)(end - off);
    return s3st_part_start(&dl->xfer, &p->part);
}

/* Chunk next's buffer from the ring, when the ring has room or a reader
 * waits for it: 1, 0 (no room) or an error. */
static int ring_take(struct s3_src *s, size_t next)
{
    uint8_t *b = NULL;
    pthread_mutex_lock(&s->lock);
    const int room = s->held + s->range <= s->limit || next < s->want;
    if (room) {
        if (s->npool > 0)
            b = s->pool[--s->npool];
        s->held += s->range;
    }
    pthread_mutex_unlock(&s->lock);
    if (!room)
        return 0;
    if (!b && !(b = s3st_big_alloc((size_t)s->range)))
        return sr_errf(-ENOMEM, "out of memory for the download buffers");
    pthread_mutex_lock(&s->lock);
    s->buf[next] = b;
    s->started = next + 1;
    if (s->started == s->n) /* the last chunk: no buffer will be reused */
        while (s->npool > 0)
            free(s->pool[--s->npool]);
    pthread_mutex_unlock(&s->lock);
    return 1;
}

/* Retries whose backoff ended, then new ranges, in order, while the ring
 * has room or a reader waits. */
static int start_due(struct download *dl)
{
    const int64_t now = sr_now_ms();
    int rc = 0;
    for (size_t i = dl->hashed; i < dl->next && s3st_parts_room(&dl->xfer) && rc == 0; i++)
        if (s3st_part_due(&dl->parts[i].part, now))
            rc = dpart_start(dl, i);
    while (rc == 0 && dl->next < dl->s->n && s3st_parts_room(&dl->xfer)) {
        if ((rc = ring_take(dl->s, dl->next)) <= 0)
            break;
        rc = dpart_start(dl, dl->next++);
    }
    return rc;
}

/* Settles every finished range; what arrived stays, a retry resumes after
 * it. Returns the last error, else 0. */
static int take_finished(struct download *dl)
{
    struct s3st_part *sp;
    int r, rc = 0;
    while ((sp = s3st_parts_finished(&dl->xfer, &r))) {
        struct dpart *p = (struct dpart *)sp;
        const struct sr_s3_req *req = &sp->req;
        if (r == 0 && req->rx.got != req->rx.dst_len)
            r = sr_errf(-EBADMSG, "%s: short ranged read (%" PRIu64 " of %zu bytes)", dl->s->key,
                        req->rx.got, req->rx.dst_len);
        p->base += req->rx.got;
        if ((r = s3st_part_settle(&dl->xfer, sp, r)) == 0) {
            dl->done++;
            dl->bytes_done += p->base;
        } else if (r < 0) {
            rc = r;
        }
    }
    return rc;
}

/* Bytes arrive in order within each range: publish partial ranges too, so
 * that the reader of the first frames need not wait for the whole first
 * wave. Then hash the newly contiguous chunks (straight from the ring) and
 * publish them. */
static void publish(struct download *dl)
{
    struct s3_src *s = dl->s;
    const size_t hashed0 = dl->hashed;
    while (dl->hashed < s->n && dl->parts[dl->hashed].part.state == S3ST_PART_DONE) {
        if (s->xxh)
            XXH3_128bits_update(s->xxh, s->buf[dl->hashed], (size_t)dl->parts[dl->hashed].base);
        dl->hashed++;
    }
    int progressed = dl->hashed > hashed0;
    pthread_mutex_lock(&s->lock);
    for (size_t i = hashed0; i < dl->next; i++) {
        const struct dpart *p = &dl->parts[i];
        const uint64_t h =
            p->base + (p->part.state == S3ST_PART_IN_FLIGHT ? p->part.req.rx.got : 0);
        if (h > s->have[i]) {
            s->have[i] = h;
            progressed = 1;
        }
    }
    s->hashed = dl->hashed;
    for (size_t i = hashed0; i < dl->hashed; i++)
        chunk_release(s, i);
    if (progressed)
        pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->lock);
}

static void show_progress(struct download *dl)
{
    uint64_t inflight = 0;
    for (size_t i = dl->hashed; i < dl->next; i++)
        if (dl->parts[i].part.state == S3ST_PART_IN_FLIGHT)
            inflight += dl->parts[i].base + dl->parts[i].part.req.rx.got;
    s3st_progress_show(&dl->pg, dl->bytes_done + inflight, 0);
}

static int stopped(struct s3_src *s)
{
    pthread_mutex_lock(&s->lock);
    const int stop = s->stop;
    pthread_mutex_unlock(&s->lock);
    return stop;
}

/* Background download of the whole object into the memory ring, with
 * concurrent ranged GETs issued in order, never more than s->limit bytes
 * of chunks held (unless a reader waits for a chunk not started yet). As
 * the contiguous prefix grows it is hashed (the codec's XXH3-128) and
 * readers waiting for a range are woken: the codec decompresses and
 * extracts frames already downloaded while later ones are in flight. */
static int download_run(struct s3_src *s)
{
    struct download dl = {.s = s};
    int rc = 0;
    if (!(dl.parts = calloc(s->n, sizeof(*dl.parts))))
        return sr_errf(-ENOMEM, "out of memory");
    if ((rc = s3st_parts_init(&dl.xfer, s->s3, s->conc)) < 0) {
        free(dl.parts);
        return rc;
    }
    pthread_mutex_lock(&s->lock);
    s->multi = dl.xfer.multi;
    pthread_mutex_unlock(&s->lock);
    s3st_progress_init(&dl.pg, "download", s->coff[s->n] - s->coff[0]);
    while (dl.done < s->n && rc == 0) {
        if (stopped(s)) {
            rc = -ECANCELED;
            break;
        }
        if ((rc = start_due(&dl)) < 0)
            break;
        s3st_parts_perform(&dl.xfer);
        rc = take_finished(&dl);
        publish(&dl);
        if (rc == 0 && dl.done < s->n) {
            show_progress(&dl);
            s3st_parts_wait(&dl.xfer);
        }
    }
    if (rc == 0)
        s3st_progress_show(&dl.pg, s->coff[s->n] - s->coff[0], 1);
    else if (dl.pg.on)
        fputc('\n', stderr);
    pthread_mutex_lock(&s->lock);
    s->multi = NULL;
    pthread_mutex_unlock(&s->lock);
    for (size_t i = 0; i < s->n; i++)
        s3st_part_drop(&dl.xfer, &dl.parts[i].part);
    s3st_parts_free(&dl.xfer);
    free(dl.parts);
    return rc;
}

static void *download_main(void *arg)
{
    struct s3_src *s = arg;
    const int64_t t0 = sr_now_ms();
    const int rc = download_run(s);
    sr_debug("s3: downloaded %s (%" PRIu64 " bytes) in %.2fs: %s", s->key, s->size,
             (double)(sr_now_ms() - t0) / 1000.0, rc < 0 ? sr_strerror(rc) : "ok");
    pthread_mutex_lock(&s->lock);
    s->finished = 1;
    if (rc < 0) {
        s->err = rc;
        snprintf(s->errmsg, sizeof(s->errmsg), "%s", sr_strerror(rc));
    } else if (s->xxh) {
        const XXH128_hash_t h = XXH3_128bits_digest(s->xxh);
        sr_checksum_format(h.high64, h.low64, s->sum);
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Waits until bytes [in, end) of chunk i are received, or the chunk was
 * given back already (buf[i] NULL), or the download failed (returns 0).
 * Caller holds the lock. */
static int ring_wait(struct s3_src *s, size_t i, uint64_t end)
{
    int avail;
    while (!(avail = i < s->started && (!s->buf[i] || s->have[i] >= end)) && !s->err) {
        if (i >= s->want) {
            s->want = i + 1; /* start it even if the ring is full */
            if (s->multi)
                curl_multi_wakeup(s->multi);
        }
        pthread_cond_wait(&s->cv, &s->lock);
    }
    return avail;
}

/* Copies [off, off + len) out of the ring, waiting for bytes not received
 * yet. A chunk already given back (its bytes were all read once) is
 * fetched again with its own ranged GET. */
static int ring_read(struct s3_src *s, uint8_t *dst, size_t len, uint64_t off)
{
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    while (len > 0 && rc == 0) {
        const size_t i = chunk_of(s, off);
        if (off < s->coff[i] || off >= chunk_end(s, i)) {
            /* not planned: its own GET, up to where the next chunk begins */
            const uint64_t next = off < s->coff[i] ? s->coff[i] : s->coff[i + 1];
            const size_t take = (size_t)(next > off && next - off < len ? next - off : len);
            pthread_mutex_unlock(&s->lock);
            rc = range_get(s->s3, s->key, dst, take, off);
            pthread_mutex_lock(&s->lock);
            dst += take;
            off += take;
            len -= take;
            continue;
        }
        const uint64_t in = off - s->coff[i];
        const uint64_t cend = chunk_end(s, i);
        const size_t take = (size_t)(cend - off < len ? cend - off : len);
        const int avail = ring_wait(s, i, in + take);
        if (!avail) {
            rc = sr_errf(s->err, "%s", s->errmsg);
        } else if (!s->buf[i]) {
            pthread_mutex_unlock(&s->lock);
            rc = range_get(s->s3, s->key, dst, take, off);
            pthread_mutex_lock(&s->lock);
        } else {
            const uint8_t *from = s->buf[i] + in;
            s->refs[i]++;
            pthread_mutex_unlock(&s->lock);
            memcpy(dst, from, take);
            pthread_mutex_lock(&s->lock);
            s->refs[i]--;
            s->used[i] += take;
            chunk_release(s, i);
        }
        dst += take;
        off += take;
        len -= take;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Starts the download thread unless it was (1) or could not be (0: then
 * reads go on without it). Caller holds the lock. */
static int start_download(struct s3_src *s)
{
    if (s->th_state == 0)
        s->th_state = pthread_create(&s->th, NULL, download_main, s) == 0 ? 1 : -1;
    return s->th_state > 0;
}

static int src_read_at(void *ctx, void *buf, size_t len, uint64_t off)
{
    struct s3_src *s = ctx;
    if (len == 0)
        return 0;
    if (!s->running)
        return range_get(s->s3, s->key, buf, len, off);
    /* A planned download starts with the first read: the objects of a
     * delta are opened together, but read one after another. */
    pthread_mutex_lock(&s->lock);
    const int ring = start_download(s);
    pthread_mutex_unlock(&s->lock);
    if (!ring)
        return range_get(s->s3, s->key, buf, len, off);
    if (off > s->size || len > s->size - off)
        return sr_errf(-EBADMSG, "%s: read past the end (%zu bytes at %" PRIu64 ")", s->key, len,
                       off);
    /* The seek table (the object's tail) is read first, long before the
     * in-order download gets there: fetch such a range directly. */
    pthread_mutex_lock(&s->lock);
    const int far = chunk_of(s, off) > s->started + s->conc;
    pthread_mutex_unlock(&s->lock);
    if (far)
        return range_get(s->s3, s->key, buf, len, off);
    return ring_read(s, buf, len, off);
}

/* Lends the ring's bytes of a frame that lies within one chunk (most do):
 * no copy into the codec's buffer. */
static int src_borrow(void *ctx, uint64_t off, size_t len, const void **p)
{
    struct s3_src *s = ctx;
    if (len == 0 || off > s->size || len > s->size - off)
        return 0;
    pthread_mutex_lock(&s->lock);
    const size_t i = chunk_of(s, off);
    int lent = 0;
    if (i <= s->started + s->conc && off >= s->coff[i] && off + len <= chunk_end(s, i) &&
        ring_wait(s, i, off + len - s->coff[i]) && s->buf[i]) {
        s->refs[i]++;
        *p = s->buf[i] + (off - s->coff[i]);
        lent = 1;
    }
    pthread_mutex_unlock(&s->lock);
    return lent;
}

static void src_unborrow(void *ctx, uint64_t off, size_t len)
{
    struct s3_src *s = ctx;
    pthread_mutex_lock(&s->lock);
    const size_t i = chunk_of(s, off);
    s->refs[i]--;
    s->used[i] += len;
    chunk_release(s, i);
    pthread_mutex_unlock(&s->lock);
}

static int src_checksum(void *ctx, char out[SR_CHECKSUM_LEN])
{
    struct s3_src *s = ctx;
    pthread_mutex_lock(&s->lock);
    /* The caller reads no more: chunks need not wait for readers now. */
    s->drain = 1;
    for (size_t i = 0; i < s->hashed; i++)
        chunk_release(s, i);
    while (!s->finished)
        pthread_cond_wait(&s->cv, &s->lock);
    const int err = s->err;
    memcpy(out, s->sum, SR_CHECKSUM_LEN);
    pthread_mutex_unlock(&s->lock);
    return err < 0 ? sr_errf(err, "%s", s->errmsg) : 0;
}

/* whole: download objects of RING_MIN or more into the ring; else reads
 * (nreads of them) may plan a download of just those bytes. */
static int source_open(struct sr_store *st, const char *key, struct sr_source *src, int whole,
                       const struct sr_range *reads, size_t nreads)
{
    struct sr_s3 *s3 = s3_of(st);
    uint64_t size = 0;
    int rc = s3st_size(st, key, &size);
    if (rc < 0)
        return rc;
    struct s3_src *s = calloc(1, sizeof(*s));
    if (!s || !(s->key = strdup(key))) {
        free(s);
        return sr_errf(-ENOMEM, "out of memory");
    }
    s->s3 = s3;
    s->size = size;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cv, NULL);
    src->ctx = s;
    src->size = size;
    src->read_at = src_read_at;
    src->checksum = NULL;
    src->borrow = NULL;
    src->unborrow = NULL;
    if ((whole && size < RING_MIN) || (!whole && nreads < 2))
        return 0; /* one ranged GET per read */
    s->conc = s3->set.concurrency;
    s->range = sr_s3_part_size(0, s3->set.range_size);
    /* The ring: the ranges in flight and two more received ahead of the
     * codec. */
    s->limit = ((uint64_t)s->conc + 2) * s->range;
    s->pool_cap = (size_t)(s->limit / s->range);
    const struct sr_range all = {0, size};
    if ((rc = chunk_plan(s, whole ? &all : reads, whole ? 1 : nreads)) < 0) {
        s3st_source_close(st, src);
        return rc;
    }
    if (s->n == 0)
        return 0; /* a plan out of order: one ranged GET per read */
    s->buf = calloc(s->n, sizeof(*s->buf));
    s->have = calloc(s->n, sizeof(*s->have));
    s->used = calloc(s->n, sizeof(*s->used));
    s->refs = calloc(s->n, sizeof(*s->refs));
    s->pool = calloc(s->pool_cap, sizeof(*s->pool));
    if (whole && (s->xxh = XXH3_createState()))
        XXH3_128bits_reset(s->xxh);
    if (!s->buf || !s->have || !s->used || !s->refs || !s->pool || (whole && !s->xxh)) {
        s3st_source_close(st, src);
        return sr_errf(-ENOMEM, "out of memory");
    }
    if (whole && !start_download(s)) {
        s3st_source_close(st, src);
        return sr_errf(-EAGAIN, "cannot start a download thread");
    }
    s->running = 1;
    if (whole) { /* a plan's reader (the delta's virtual source) copies */
        src->checksum = src_checksum;
        src->borrow = src_borrow;
        src->unborrow = src_unborrow;
    }
    return 0;
}

int s3st_source(struct sr_store *st, const char *key, struct sr_source *src)
{
    return source_open(st, key, src, 1, NULL, 0);
}

int s3st_source_ranged(struct sr_store *st, const char *key, const struct sr_range *reads,
                       size_t nreads, struct sr_source *src)
{
    return source_open(st, key, src, 0, reads, nreads);
}

void s3st_source_close(struct sr_store *st, struct sr_source *src)
{
    (void)st;
    struct s3_src *s = src->ctx;
    if (s->th_state > 0) {
        pthread_mutex_lock(&s->lock);
        s->stop = 1;
        if (s->multi)
            curl_multi_wakeup(s->multi);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->th, NULL);
    }
    for (size_t i = 0; s->buf && i < s->n; i++)
        free(s->buf[i]);
    for (size_t i = 0; i < s->npool; i++)
        free(s->pool[i]);
    XXH3_freeState(s->xxh);
    free(s->buf);
    free(s->have);
    free(s->used);
    free(s->refs);
    free(s->pool);
    free(s->coff);
    free(s->cend);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cv);
    free(s->key);
    free(s);
    memset(src, 0, sizeof(*src));
}
