/*
 * store_s3_put.c - uploads for the "s3" store backend: put_file and the
 * streaming writer (push), which are one upload path (docs/s3.md,
 * "Uploads").
 *
 * DESIGN: the producer (the packer's sink, or put_file reading its staged
 * file) fills a buffer; a full buffer becomes a part that an uploader
 * thread sends (SPOTRUN_S3_CONCURRENCY of them in flight on the part
 * driver, s3_parts.c, each with its Content-MD5) while more data is
 * produced. Memory
 * is bounded (CONCURRENCY parts). An object within the first buffer
 * (SPOTRUN_S3_SINGLE_MAX, default 64 MiB) is one PUT at commit. A failed
 * part is retried with backoff; a part that fails for good aborts the
 * upload (AbortMultipartUpload, where the server allows it). S3 makes an
 * object visible only once it is complete, so a reader never sees a torn
 * one; the catalog still writes the manifest last.
 *
 * Threads: one writer belongs to one producer thread, plus its uploader
 * thread; what they share is under the writer's lock.
 */
#include "log.h"
#include "s3.h"
#include "store.h"
#include "store_s3_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- multipart requests --------------------------------------------------- */

/* etags[i] is part i + 1's ETag. */
static int complete_upload(struct sr_s3 *s3, const char *key, const char *eid, size_t n,
                           const char *const *etags, uint64_t size, int create)
{
    size_t cap = 128 + n * 200, len = 0;
    char *xml = malloc(cap);
    if (!xml)
        return sr_errf(-ENOMEM, "out of memory");
    len += (size_t)snprintf(xml + len, cap - len, "<CompleteMultipartUpload>");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(xml + len, cap - len,
                                "<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag></Part>", i + 1,
                                etags[i]);
    len += (size_t)snprintf(xml + len, cap - len, "</CompleteMultipartUpload>");
    char query[3200];
    snprintf(query, sizeof(query), "uploadId=%s", eid);
    struct sr_s3_req r = req_new("POST", key);
    r.query = query;
    r.tx.body = xml;
    r.tx.body_len = len;
    r.rx.max = 1u << 20;
    r.if_none_match = create;
    int rc = sr_s3_do(s3, &r);
    rc = rc < 0 ? s3st_exists_error(s3, key, rc, r.rx.status) : 0;
    /* A 200 answer may still carry an <Error> (S3 reports late failures so). */
    char code[128], msg[512];
    if (rc == 0 && r.rx.resp &&
        sr_s3_parse_error(r.rx.resp, r.rx.resp_len, code, sizeof(code), msg, sizeof(msg)) == 0) {
        char name[2300];
        sr_s3_name(s3, key, name, sizeof(name));
        const char *hint = "";
        rc = sr_errf(sr_s3_errno(500, code, &hint), "completing the upload of %s: %s %s", name,
                     code, msg);
    }
    if (rc < 0) {
        /* An attempt whose answer was lost (reset, truncated, timed out)
         * may have completed the upload; its retries then fail (NoSuchUpload,
         * or 500 from s3rver). The key is new to this upload: an object
         * there of the uploaded size is ours. */
        char why[1024];
        snprintf(why, sizeof(why), "%s", sr_strerror(rc));
        struct sr_s3_req h = req_new("HEAD", key);
        const int hr = sr_s3_do(s3, &h);
        free(h.rx.resp);
        if (hr == 0 && h.rx.clen == size) {
            sr_debug("s3: %s was completed by an attempt whose answer was lost", key);
            rc = 0;
        } else {
            rc = sr_errf(rc, "%s", why);
        }
    }
    free(r.rx.resp);
    free(xml);
    return rc;
}

static void abort_upload(struct sr_s3 *s3, const char *key, const char *eid)
{
    char query[3200];
    snprintf(query, sizeof(query), "uploadId=%s", eid);
    struct sr_s3_req r = req_new("DELETE", key);
    r.query = query;
    /* The upload's failure, not the abort's, is what the caller reports. */
    char why[1024];
    const int why_code = sr_err_code();
    snprintf(why, sizeof(why), "%s", sr_strerror(why_code));
    const int rc = sr_s3_do(s3, &r);
    free(r.rx.resp);
    if (rc < 0) {
        sr_debug("s3: cannot abort the multipart upload of %s: %s", key, sr_strerror(rc));
        if (why_code)
            sr_errf(why_code, "%s", why);
        else
            sr_err_clear();
    }
}

/* Starts a multipart upload; eid gets the escaped UploadId. */
static int initiate_upload(struct sr_s3 *s3, const char *key, char *eid, size_t elen)
{
    char id[1024];
    struct sr_s3_req r = req_new("POST", key);
    r.query = "uploads="; /* curl 7.88 signs "?uploads" wrongly */
    r.tx.body = "";
    r.rx.max = 1u << 20;
    int rc = sr_s3_do(s3, &r);
    if (rc == 0 && sr_s3_parse_upload_id(r.rx.resp, r.rx.resp_len, id, sizeof(id)) < 0)
        rc = sr_errf(-EBADMSG, "initiating a multipart upload of %s: no UploadId in the answer",
                     key);
    free(r.rx.resp);
    if (rc == 0 && sr_url_escape(id, 0, eid, elen) < 0)
        rc = sr_errf(-EBADMSG, "UploadId too long");
    return rc;
}

/* ---- streaming writer ------------------------------------------------------
 *
 * The producer (the packer's sink, or put_file's reads) fills a buffer; a
 * full buffer becomes a part handed to an uploader thread, which runs up to
 * SPOTRUN_S3_CONCURRENCY parts on a multi handle while the producer goes
 * on. The producer blocks while CONCURRENCY part sizes of data are
 * buffered, so memory stays bounded. The first buffer holds up to the
 * single-PUT limit (SPOTRUN_S3_SINGLE_MAX): an object that ends within it
 * is one PUT at commit, no multipart at all. Part sizes grow (x2 every
 * 1000 parts, up to 512 MiB) so that an object of unknown size stays
 * within 10,000 parts; a known size (put_file) chooses its part size up
 * front instead. A finished part's buffer is kept for a later one
 * (s3st_big_alloc): no new mapping, no page faults, and never more
 * buffers than were once in use.
 */

#define WPART_MAX (512 * MIB)
#define WSPARE 16

struct wpart {
    struct s3st_part part; /* first: the driver hands this back */
    uint8_t *buf;
    size_t len, cap; /* bytes of data, and of buf */
    char md5[32];
    char *query;
    char etag[128];
};

struct s3_writer {
    struct sr_store_writer w;
    struct sr_s3 *s3;
    char *key;
    uint64_t size; /* the object's size when known up front (put_file), else 0 */
    uint64_t ps, single_max;
    uint8_t *cur;
    size_t cur_len, cur_cap;
    int mp;     /* multipart upload started */
    int create; /* only if the object does not exist (If-None-Match: *) */
    char eid[3100];
    /* shared with the uploader, under lock */
    pthread_mutex_t lock;
    pthread_cond_t space;
    struct wpart **parts;
    size_t nparts, parts_cap;
    uint64_t buffered;      /* bytes of parts not yet done */
    uint8_t *spare[WSPARE]; /* buffers of finished parts, for the next ones */
    size_t spare_cap[WSPARE], nspare;
    int finishing, stop, err;
    char errmsg[512];
    struct s3st_parts xfer; /* the uploader's; its multi exists once mp is set */
    pthread_t th;
    int started;
    int committed;
    struct s3st_progress pg;
    uint64_t done_bytes;
};

static void writer_fail(struct s3_writer *w, int rc)
{
    /* Caller holds the lock. Messages are thread-local: keep a copy. */
    if (!w->err) {
        w->err = rc;
        snprintf(w->errmsg, sizeof(w->errmsg), "%s", sr_strerror(rc));
    }
    pthread_cond_broadcast(&w->space);
}

static int wpart_start(struct s3_writer *w, struct wpart *p, size_t num)
{
    if (!p->query) {
        p->query = malloc(3200);
        if (!p->query)
            return sr_errf(-ENOMEM, "out of memory");
        snprintf(p->query, 3200, "partNumber=%zu&uploadId=%s", num, w->eid);
        int rc = s3st_md5_buf(p->buf, p->len, p->md5);
        if (rc < 0)
            return rc;
    }
    p->part.req = req_new("PUT", w->key);
    p->part.req.query = p->query;
    p->part.req.tx.body = p->buf;
    p->part.req.tx.body_len = p->len;
    p->part.req.content_md5 = p->md5;
    return s3st_part_start(&w->xfer, &p->part);
}

/* Part p is stored: its buffer is kept for a later part (its pages stay
 * mapped), and the producer may go on. */
static void wpart_done(struct s3_writer *w, struct wpart *p)
{
    free(p->query);
    p->query = NULL;
    pthread_mutex_lock(&w->lock);
    if (w->nspare < WSPARE) {
        w->spare[w->nspare] = p->buf;
        w->spare_cap[w->nspare++] = p->cap;
        p->buf = NULL;
    }
    w->buffered -= p->len;
    w->done_bytes += p->len;
    pthread_cond_broadcast(&w->space);
    pthread_mutex_unlock(&w->lock);
    free(p->buf); /* NULL unless the spares were full */
    p->buf = NULL;
}

static void uploader_fail(struct s3_writer *w, int rc)
{
    pthread_mutex_lock(&w->lock);
    writer_fail(w, rc);
    pthread_mutex_unlock(&w->lock);
}

/* Starts waiting parts (retries and new ones), in order, from first_open.
 * The part array only grows under the lock; entries below n are stable. */
static void start_due(struct s3_writer *w, size_t first_open, size_t n)
{
    const int64_t now = sr_now_ms();
    for (size_t i = first_open; i < n && s3st_parts_room(&w->xfer); i++) {
        pthread_mutex_lock(&w->lock);
        struct wpart *p = w->parts[i];
        pthread_mutex_unlock(&w->lock);
        if (!s3st_part_due(&p->part, now))
            continue;
        const int rc = wpart_start(w, p, i + 1);
        if (rc < 0) {
            uploader_fail(w, rc);
            break;
        }
    }
}

static void take_finished(struct s3_writer *w)
{
    struct s3st_part *sp;
    int r;
    while ((sp = s3st_parts_finished(&w->xfer, &r))) {
        struct wpart *p = (struct wpart *)sp;
        if (r == 0 && !sp->req.rx.etag[0])
            r = sr_errf(-EBADMSG, "a part of %s: no ETag in the answer", w->key);
        if (r == 0)
            snprintf(p->etag, sizeof(p->etag), "%s", sp->req.rx.etag);
        if ((r = s3st_part_settle(&w->xfer, sp, r)) == 0)
            wpart_done(w, p);
        else if (r < 0)
            uploader_fail(w, r);
    }
}

/* The uploader thread: runs the parts the producer hands over until every
 * one is stored (finishing), one failed, or the writer closes. */
static void *uploader(void *arg)
{
    struct s3_writer *w = arg;
    size_t first_open = 0;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        int quit = w->stop || w->err;
        const size_t n = w->nparts;
        while (first_open < n && w->parts[first_open]->part.state == S3ST_PART_DONE)
            first_open++;
        if (!quit && w->finishing && first_open == n)
            quit = 1;
        pthread_mutex_unlock(&w->lock);
        if (quit)
            break;
        start_due(w, first_open, n);
        s3st_parts_perform(&w->xfer);
        take_finished(w);
        s3st_progress_show(&w->pg, w->done_bytes, 0);
        s3st_parts_wait(&w->xfer);
    }
    /* Leave no transfer behind (failure or stop). */
    pthread_mutex_lock(&w->lock);
    for (size_t i = 0; i < w->nparts; i++)
        s3st_part_drop(&w->xfer, &w->parts[i]->part);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Hands the current buffer over as the next part (blocks while the
 * uploader is CONCURRENCY parts behind). */
static int writer_flush(struct s3_writer *w)
{
    if (!w->mp) {
        int rc = initiate_upload(w->s3, w->key, w->eid, sizeof(w->eid));
        if (rc < 0)
            return rc;
        w->mp = 1;
        sr_debug("s3: streaming a multipart upload of %s", w->key);
        if ((rc = s3st_parts_init(&w->xfer, w->s3, w->s3->set.concurrency)) < 0)
            return rc;
        if (pthread_create(&w->th, NULL, uploader, w) != 0)
            return sr_errf(-EAGAIN, "cannot start a thread");
        w->started = 1;
    }
    /* nparts only grows here, on the producer's thread. */
    if (w->nparts >= 10000)
        return sr_errf(-EFBIG, "%s: over 10,000 parts", w->key);
    struct wpart *p = calloc(1, sizeof(*p));
    if (!p)
        return sr_errf(-ENOMEM, "out of memory");
    p->buf = w->cur;
    p->len = w->cur_len;
    p->cap = w->cur_cap;
    const uint64_t limit = (uint64_t)w->s3->set.concurrency * w->ps;
    pthread_mutex_lock(&w->lock);
    while (!w->err && w->buffered > 0 && w->buffered + p->len > limit)
        pthread_cond_wait(&w->space, &w->lock);
    int rc = w->err;
    if (rc == 0 && w->nparts == w->parts_cap) {
        size_t cap = w->parts_cap ? w->parts_cap * 2 : 64;
        struct wpart **v = realloc(w->parts, cap * sizeof(*v));
        if (!v)
            rc = -ENOMEM;
        else
            w->parts = v, w->parts_cap = cap;
    }
    if (rc == 0) {
        w->parts[w->nparts++] = p;
        w->buffered += p->len;
        w->cur = NULL;
        w->cur_len = w->cur_cap = 0;
    }
    const size_t nparts = w->nparts;
    pthread_mutex_unlock(&w->lock);
    if (rc < 0) {
        free(p);
        return rc == -ENOMEM ? sr_errf(rc, "out of memory") : sr_errf(rc, "%s", w->errmsg);
    }
    s3st_parts_wake(&w->xfer);
    /* Grow parts as an object of unknown size grows: 10,000 of them still
     * reach TBs. A known size chose its part size up front. */
    if (!w->size && nparts % 1000 == 0 && w->ps * 2 <= WPART_MAX)
        w->ps *= 2;
    return 0;
}

int s3st_writer_write(struct sr_store_writer *sw, const void *buf, size_t len)
{
    struct s3_writer *w = (struct s3_writer *)sw;
    const uint8_t *b = buf;
    while (len > 0) {
        /* A full buffer is handed over only once more bytes come, so an
         * object that ends exactly at the single-PUT limit is one PUT. */
        if (w->cur && w->cur_len == w->cur_cap) {
            int rc = writer_flush(w);
            if (rc < 0)
                return rc;
        }
        if (!w->cur) {
            w->cur_cap = (size_t)(w->mp ? w->ps : w->single_max);
            pthread_mutex_lock(&w->lock);
            while (!w->cur && w->nspare > 0) {
                uint8_t *sp = w->spare[--w->nspare];
                if (w->spare_cap[w->nspare] == w->cur_cap)
                    w->cur = sp;
                else
                    free(sp); /* the first buffer, or parts grew */
            }
            pthread_mutex_unlock(&w->lock);
            if (!w->cur && !(w->cur = s3st_big_alloc(w->cur_cap)))
                return sr_errf(-ENOMEM, "out of memory for a %zu-byte part", w->cur_cap);
            w->cur_len = 0;
        }
        const size_t n = len < w->cur_cap - w->cur_len ? len : w->cur_cap - w->cur_len;
        memcpy(w->cur + w->cur_len, b, n);
        w->cur_len += n;
        b += n;
        len -= n;
    }
    return 0;
}

int s3st_writer_commit(struct sr_store_writer *sw)
{
    struct s3_writer *w = (struct s3_writer *)sw;
    if (!w->mp) {
        /* Everything fit in the first buffer: one PUT. */
        int rc =
            s3st_put_buf(sw->st, w->key, w->cur ? (const void *)w->cur : "", w->cur_len, w->create);
        w->committed = rc == 0;
        return rc;
    }
    if (w->cur_len > 0) {
        int rc = writer_flush(w);
        if (rc < 0)
            return rc;
    }
    const int64_t t0 = sr_now_ms();
    pthread_mutex_lock(&w->lock);
    w->finishing = 1;
    pthread_mutex_unlock(&w->lock);
    s3st_parts_wake(&w->xfer);
    pthread_join(w->th, NULL);
    const int64_t t1 = sr_now_ms();
    w->started = 0;
    if (w->err)
        return sr_errf(w->err, "%s", w->errmsg);
    s3st_progress_show(&w->pg, w->done_bytes, 1);
    const char **etags = calloc(w->nparts, sizeof(*etags));
    if (!etags)
        return sr_errf(-ENOMEM, "out of memory");
    for (size_t i = 0; i < w->nparts; i++)
        etags[i] = w->parts[i]->etag;
    int rc = complete_upload(w->s3, w->key, w->eid, w->nparts, etags, w->done_bytes, w->create);
    free(etags);
    sr_debug("s3: multipart upload of %s: %zu parts (streamed; the last ones took %.2fs after "
             "the data ended, completing %.2fs)",
             w->key, w->nparts, (double)(t1 - t0) / 1000.0, (double)(sr_now_ms() - t1) / 1000.0);
    w->committed = rc == 0;
    return rc;
}

void s3st_writer_close(struct sr_store_writer *sw)
{
    struct s3_writer *w = (struct s3_writer *)sw;
    if (w->started) {
        pthread_mutex_lock(&w->lock);
        w->stop = 1;
        pthread_mutex_unlock(&w->lock);
        s3st_parts_wake(&w->xfer);
        pthread_join(w->th, NULL);
    }
    if (w->mp && !w->committed)
        abort_upload(w->s3, w->key, w->eid);
    if (w->pg.on && !w->committed && w->mp)
        fputc('\n', stderr);
    for (size_t i = 0; i < w->nparts; i++) {
        free(w->parts[i]->buf);
        free(w->parts[i]->query);
        free(w->parts[i]);
    }
    free(w->parts);
    for (size_t i = 0; i < w->nspare; i++)
        free(w->spare[i]);
    free(w->cur);
    s3st_parts_free(&w->xfer);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->space);
    free(w->key);
    free(w);
}

/* size: the object's size when known up front (put_file), else 0. A known
 * size chooses the part size for at most 10,000 parts (sr_s3_part_size)
 * and gives the progress line its total. */
static int writer_open(struct sr_store *st, const char *key, int create, uint64_t size,
                       struct sr_store_writer **out)
{
    struct s3_writer *w = calloc(1, sizeof(*w));
    if (!w || !(w->key = strdup(key))) {
        free(w);
        return sr_errf(-ENOMEM, "out of memory");
    }
    w->w.st = st;
    w->create = create;
    w->size = size;
    w->s3 = s3_of(st);
    w->ps = sr_s3_part_size(size, w->s3->set.part_size);
    if (!size && w->ps > WPART_MAX)
        w->ps = WPART_MAX;
    w->single_max = w->s3->set.single_max;
    if (w->single_max < w->ps)
        w->single_max = w->ps;
    if (w->single_max > WPART_MAX)
        w->single_max = WPART_MAX;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->space, NULL);
    s3st_progress_init(&w->pg, "upload", size);
    *out = &w->w;
    return 0;
}

int s3st_writer_open(struct sr_store *st, const char *key, int create, struct sr_store_writer **out)
{
    return writer_open(st, key, create, 0, out);
}

#define PUT_READ (8 * MIB)

/* A staged file goes through the streaming writer: one PUT up to the
 * single-PUT limit, else a multipart upload, with the writer's
 * concurrency, Content-MD5, conditional create and abort. */
int s3st_put_file(struct sr_store *st, const char *key, const char *path, int create)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sr_errf(-errno, "cannot open %s: %s", path, strerror(errno));
    struct sr_store_writer *w = NULL;
    uint8_t *buf = NULL;
    struct stat sb;
    int rc = 0;
    if (fstat(fd, &sb) != 0) {
        rc = sr_errf(-errno, "cannot stat %s: %s", path, strerror(errno));
        goto out;
    }
    const uint64_t size = (uint64_t)sb.st_size;
    if ((rc = writer_open(st, key, create, size, &w)) < 0)
        goto out;
    if (size > 0 && !(buf = malloc(size < PUT_READ ? (size_t)size : PUT_READ))) {
        rc = sr_errf(-ENOMEM, "out of memory");
        goto out;
    }
    /* Exactly the size stat saw: the file is staged, nobody writes it. */
    for (uint64_t left = size; left > 0 && rc == 0;) {
        const ssize_t n = read(fd, buf, left < PUT_READ ? (size_t)left : PUT_READ);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            rc = sr_errf(n < 0 ? -errno : -EIO, "cannot read %s: %s", path,
                         n < 0 ? strerror(errno) : "file shrank");
        else if ((rc = s3st_writer_write(w, buf, (size_t)n)) == 0)
            left -= (uint64_t)n;
    }
    if (rc == 0)
        rc = s3st_writer_commit(w);
out:
    if (w)
        s3st_writer_close(w); /* aborts a multipart upload unless committed */
    free(buf);
    close(fd);
    return rc;
}
