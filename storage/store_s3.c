/*
 * store_s3.c - the "s3" store backend: objects live under
 * s3://bucket/prefix/, keys are appended to the prefix (see store.h,
 * docs/s3.md).
 *
 * DESIGN:
 *   - put is one PUT with Content-MD5. put_file is one PUT for files up to
 *     SPOTRUN_S3_SINGLE_MAX (default 64 MiB) and a multipart upload above
 *     it: parts sized by sr_s3_part_size() (>= 5 MiB, <= 10,000 parts),
 *     SPOTRUN_S3_CONCURRENCY (default 8) of them in flight on one curl multi
 *     handle. Parts are read from the file by the read callback (pread), so
 *     memory does not grow with the object; a helper thread computes each
 *     part's Content-MD5 ahead of the transfers. A failed part is retried
 *     with backoff; a part that fails for good aborts the upload
 *     (AbortMultipartUpload, where the server allows it). S3 makes an
 *     object visible only once it is complete, so a reader never sees a
 *     torn one; the catalog still writes the manifest last.
 *   - the streaming writer (push): the producer fills buffers that an
 *     uploader thread sends as parts while compression goes on; bounded
 *     memory (CONCURRENCY parts); an object within the first buffer is one
 *     PUT. See the section below.
 *   - source: objects of RING_MIN or more are downloaded once, by a
 *     background thread (in-order ranged GETs on a multi handle), into a
 *     bounded ring of memory chunks; a chunk goes back to the ring once it
 *     is hashed and the codec has read it. The codec's frame reads wait
 *     only for their own bytes, so extraction overlaps the download (a
 *     reader waiting for a chunk lets it start even when the ring is full);
 *     the download hashes the contiguous prefix as it grows and offers
 *     that as the source's checksum, which the codec checks before
 *     swapping the extracted tree in. Smaller objects are read with a
 *     ranged GET per read_at, on pooled handles, safe from the codec's
 *     worker threads.
 *   - list is ListObjectsV2 with delimiter '/', following continuation
 *     tokens.
 *
 * Threads: the handle is shared; requests take easy handles from the s3
 * client's locked pool. Progress lines (push/pull at a terminal) go to
 * stderr only when it is a tty.
 */
#include "log.h"
#include "s3.h"
#include "seektable.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define MIB (1024ull * 1024ull)
#define RING_MIN (8 * MIB)
#define RANGE_DEFAULT (16 * MIB)
#define LIST_MAX (16u << 20)
#define SINGLE_MAX_DEFAULT (64 * MIB)

struct s3_src {
    struct sr_s3 *s3;
    char *key;
    uint64_t size;
    /* Background download into the memory ring (running), else one ranged
     * GET per read. */
    pthread_t th;
    int running;
    size_t n;          /* chunks: [coff[i], coff[i + 1]) */
    uint64_t *coff;    /* n + 1 offsets */
    size_t conc;       /* ranges in flight */
    uint64_t range;    /* bytes per range (after the first waves) and per ring buffer */
    XXH3_state_t *xxh; /* download thread only */
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

static struct sr_s3 *s3_of(struct sr_store *st)
{
    return st->impl;
}

static struct sr_s3_req req_new(const char *method, const char *key)
{
    struct sr_s3_req r;
    memset(&r, 0, sizeof(r));
    r.method = method;
    r.key = key;
    r.body_fd = -1;
    r.dst_fd = -1;
    return r;
}

static uint64_t env_u64(const char *name, uint64_t def)
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

/* A large transfer buffer (a part, a ring chunk): 2 MiB-aligned and
 * backed by huge pages where the kernel offers them. Faulting in fresh
 * memory 4 KiB at a time cost as much CPU as the copies into it (more on
 * a paravirtualised guest, where every fault traps), and these buffers are
 * reused, so the pages are faulted in once. Free with free(). */
static void *big_alloc(size_t len)
{
    void *p = NULL;
    if (posix_memalign(&p, 2 * MIB, len) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, len, MADV_HUGEPAGE);
#endif
    return p;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- progress ------------------------------------------------------------- */

struct progress {
    int on;
    const char *verb;
    uint64_t total;
    int64_t t0, last;
};

static void progress_init(struct progress *p, const char *verb, uint64_t total)
{
    const char *force = getenv("SPOTRUN_PROGRESS");
    p->on = force && *force ? strcmp(force, "0") != 0
                            : isatty(STDERR_FILENO) && sr_verbosity >= SR_INFO &&
                                  (total >= RING_MIN || total == 0); /* 0: unknown (streaming) */
    p->verb = verb;
    p->total = total;
    p->t0 = p->last = now_ms();
}

static void progress_show(struct progress *p, uint64_t done, int final)
{
    const int64_t now = now_ms();
    if (!p->on || (!final && now - p->last < 250))
        return;
    p->last = now;
    const double secs = (double)(now - p->t0) / 1000.0;
    const double rate = secs > 0 ? (double)done / secs : 0;
    if (p->total == 0) {
        fprintf(stderr, "\rspotrun: %s %7.1f MiB  %6.1f MiB/s%s", p->verb, (double)done / MIB,
                rate / MIB, final ? "\n" : "");
        return;
    }
    const double eta = rate > 0 ? (double)(p->total - done) / rate : 0;
    fprintf(stderr, "\rspotrun: %s %7.1f / %.1f MiB  %6.1f MiB/s  ETA %3.0fs%s", p->verb,
            (double)done / MIB, (double)p->total / MIB, rate / MIB, eta, final ? "\n" : "");
}

/* ---- integrity ------------------------------------------------------------ */

static void md5_b64(const unsigned char *digest, char out[32])
{
    EVP_EncodeBlock((unsigned char *)out, digest, 16);
}

static int md5_buf(const void *buf, size_t len, char out[32])
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dl = 0;
    if (!EVP_Digest(buf, len, d, &dl, EVP_md5(), NULL))
        return sr_errf(-EIO, "cannot compute MD5");
    md5_b64(d, out);
    return 0;
}

static int md5_file(int fd, uint64_t off, uint64_t len, char out[32])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char *buf = malloc(1u << 20);
    int rc = 0;
    if (!ctx || !buf || !EVP_DigestInit_ex(ctx, EVP_md5(), NULL)) {
        rc = sr_errf(-ENOMEM, "cannot compute MD5");
        goto out;
    }
    while (len > 0) {
        const size_t want = len < (1u << 20) ? (size_t)len : (1u << 20);
        const ssize_t n = pread(fd, buf, want, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = sr_errf(n < 0 ? -errno : -EIO, "cannot read the upload: %s",
                         n < 0 ? strerror(errno) : "file shrank");
            goto out;
        }
        EVP_DigestUpdate(ctx, buf, (size_t)n);
        off += (uint64_t)n;
        len -= (uint64_t)n;
    }
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dl = 0;
    EVP_DigestFinal_ex(ctx, d, &dl);
    md5_b64(d, out);
out:
    EVP_MD_CTX_free(ctx);
    free(buf);
    return rc;
}

/* ---- simple operations --------------------------------------------------- */

/* A 412 answer to a create-only write: -EEXIST with a plain message. */
static int exists_error(struct sr_s3 *s3, const char *key, int rc, long status)
{
    if (status != 412)
        return rc;
    char name[2300];
    sr_s3_name(s3, key, name, sizeof(name));
    return sr_errf(-EEXIST, "%s already exists", name);
}

static int put_buf(struct sr_store *st, const char *key, const void *buf, size_t len, int create)
{
    char md5[32];
    int rc = md5_buf(buf, len, md5);
    if (rc < 0)
        return rc;
    struct sr_s3_req r = req_new("PUT", key);
    r.body = buf;
    r.body_len = len;
    r.content_md5 = md5;
    r.if_none_match = create;
    rc = sr_s3_do(s3_of(st), &r);
    free(r.resp);
    return rc < 0 ? exists_error(s3_of(st), key, rc, r.status) : 0;
}

static int s3_put(struct sr_store *st, const char *key, const void *buf, size_t len)
{
    return put_buf(st, key, buf, len, 0);
}

/* A conditional PUT (see sr_store_put_if). A server that ignores the
 * headers answers 200 as for a plain PUT: storage/lease.c probes for that. */
static int s3_put_if(struct sr_store *st, const char *key, const void *buf, size_t len,
                     const char *match, char *etag)
{
    char md5[32];
    int rc = md5_buf(buf, len, md5);
    if (rc < 0)
        return rc;
    struct sr_s3_req r = req_new("PUT", key);
    r.body = buf;
    r.body_len = len;
    r.content_md5 = md5;
    r.if_none_match = !match;
    r.if_match = match;
    rc = sr_s3_do(s3_of(st), &r);
    free(r.resp);
    if (rc == 0) {
        snprintf(etag, SR_ETAG_MAX, "%s", r.etag);
        return 0;
    }
    char name[2300];
    sr_s3_name(s3_of(st), key, name, sizeof(name));
    /* 412: the condition failed; 409 ConditionalRequestConflict: another
     * conditional write to the key was in flight (S3 says retry; for us it
     * means someone else is writing it). */
    if (r.status == 412 || r.status == 409) {
        if (!match)
            return sr_errf(-EEXIST, "%s already exists", name);
        return sr_errf(-ESTALE, "%s was changed by someone else", name);
    }
    return rc;
}

static int s3_get_etag(struct sr_store *st, const char *key, size_t max, char **buf, size_t *len,
                       char *etag);

static int s3_get(struct sr_store *st, const char *key, size_t max, char **buf, size_t *len)
{
    char etag[SR_ETAG_MAX];
    return s3_get_etag(st, key, max, buf, len, etag);
}

static int s3_get_etag(struct sr_store *st, const char *key, size_t max, char **buf, size_t *len,
                       char *etag)
{
    struct sr_s3_req r = req_new("GET", key);
    r.max = max;
    int rc = sr_s3_do(s3_of(st), &r);
    if (rc == -EFBIG) {
        char name[2300];
        sr_s3_name(s3_of(st), key, name, sizeof(name));
        rc = sr_errf(-EFBIG, "%s is over %zu bytes", name, max);
    }
    if (rc == 0 && !r.resp && !(r.resp = calloc(1, 1)))
        rc = sr_errf(-ENOMEM, "out of memory");
    if (rc < 0) {
        free(r.resp);
        return rc;
    }
    *buf = r.resp;
    *len = r.resp_len;
    snprintf(etag, SR_ETAG_MAX, "%s", r.etag);
    return 0;
}

static int s3_size(struct sr_store *st, const char *key, uint64_t *size)
{
    struct sr_s3_req r = req_new("HEAD", key);
    int rc = sr_s3_do(s3_of(st), &r);
    free(r.resp);
    if (rc == 0)
        *size = r.clen;
    return rc;
}

static int s3_del(struct sr_store *st, const char *key)
{
    struct sr_s3_req r = req_new("DELETE", key);
    int rc = sr_s3_do(s3_of(st), &r);
    free(r.resp);
    if (rc == -ENOENT && r.status == 404) {
        char code[64] = "", msg[8];
        if (r.resp_len == 0 ||
            (sr_s3_parse_error(r.resp, r.resp_len, code, sizeof(code), msg, sizeof(msg)) == 0 &&
             strcmp(code, "NoSuchKey") == 0))
            rc = 0; /* already gone */
    }
    return rc;
}

static int s3_list(struct sr_store *st, const char *prefix, struct sr_strlist *out)
{
    struct sr_s3 *s3 = s3_of(st);
    char full[2200], eprefix[6600], etoken[3100], token[1024] = "", query[10000];
    /* The listing prefix, relative to the bucket, with a trailing '/'. */
    snprintf(full, sizeof(full), "%s%s%s%s", s3->prefix, *s3->prefix && *prefix ? "/" : "", prefix,
             *s3->prefix || *prefix ? "/" : "");
    if (sr_s3_escape(full, 0, eprefix, sizeof(eprefix)) < 0)
        return sr_errf(-ENAMETOOLONG, "prefix %s is too long", full);
    int rc = 0, truncated = 1;
    for (int page = 0; truncated && rc == 0; page++) {
        etoken[0] = '\0';
        if (*token && sr_s3_escape(token, 0, etoken, sizeof(etoken)) < 0) {
            rc = sr_errf(-EBADMSG, "continuation token too long");
            break;
        }
        /* Parameters in sorted order: curl signs the query as written. */
        snprintf(query, sizeof(query), "%s%s%sdelimiter=%%2F&list-type=2%s%s",
                 *etoken ? "continuation-token=" : "", etoken, *etoken ? "&" : "",
                 *full ? "&prefix=" : "", eprefix);
        struct sr_s3_req r = req_new("GET", NULL);
        r.query = query;
        r.max = LIST_MAX;
        rc = sr_s3_do(s3, &r);
        if (rc == 0)
            rc = sr_s3_parse_list(r.resp, r.resp_len, full, out, &truncated, token, sizeof(token));
        free(r.resp);
        sr_debug("s3: list %s page %d: %zu names so far", full, page + 1, out->n);
    }
    if (rc < 0) {
        sr_strlist_free(out);
        return rc;
    }
    /* Hide dot-names, as the file backend does. */
    size_t w = 0;
    for (size_t i = 0; i < out->n; i++) {
        if (out->v[i][0] == '.')
            free(out->v[i]);
        else
            out->v[w++] = out->v[i];
    }
    out->n = w;
    sr_strlist_sort(out);
    return 0;
}

/* ---- uploads ------------------------------------------------------------- */

struct part {
    struct sr_s3_req req;
    char md5[32];
    char query[3200];
    char etag[128];
    int attempts;
    int64_t retry_at;
    int state; /* 0 waiting, 1 in flight, 2 done */
    CURL *c;
};

struct mpu {
    struct sr_s3 *s3;
    const char *key;
    int fd;
    uint64_t size, ps;
    size_t n;
    struct part *parts;
    /* MD5 helper thread */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    size_t hashed; /* parts [0, hashed) have their md5 */
    size_t window; /* the hasher may run ahead to this part */
    int hash_err;
    int stop;
    CURLM *multi;
};

static void *hasher(void *arg)
{
    struct mpu *m = arg;
    for (size_t i = 0; i < m->n; i++) {
        pthread_mutex_lock(&m->lock);
        while (!m->stop && i >= m->window)
            pthread_cond_wait(&m->cond, &m->lock);
        const int stop = m->stop;
        pthread_mutex_unlock(&m->lock);
        if (stop)
            break;
        const uint64_t off = (uint64_t)i * m->ps;
        const uint64_t len = off + m->ps > m->size ? m->size - off : m->ps;
        char md5[32];
        const int rc = md5_file(m->fd, off, len, md5);
        pthread_mutex_lock(&m->lock);
        if (rc < 0)
            m->hash_err = rc;
        else
            memcpy(m->parts[i].md5, md5, sizeof(md5));
        m->hashed = i + 1;
        pthread_mutex_unlock(&m->lock);
        curl_multi_wakeup(m->multi);
        if (rc < 0)
            break;
    }
    return NULL;
}

static int start_part(struct mpu *m, size_t i, const char *eid)
{
    struct part *p = &m->parts[i];
    const uint64_t off = (uint64_t)i * m->ps;
    snprintf(p->query, sizeof(p->query), "partNumber=%zu&uploadId=%s", i + 1, eid);
    if (!p->c)
        p->c = sr_s3_handle(m->s3);
    if (!p->c)
        return sr_errf(-ENOMEM, "out of memory");
    p->req.method = "PUT";
    p->req.key = m->key;
    p->req.query = p->query;
    p->req.body_fd = m->fd;
    p->req.dst_fd = -1;
    p->req.body_off = off;
    p->req.body_len = off + m->ps > m->size ? m->size - off : m->ps;
    p->req.content_md5 = p->md5;
    int rc = sr_s3_setup(m->s3, p->c, &p->req);
    if (rc < 0)
        return rc;
    p->attempts++;
    p->state = 1;
    return curl_multi_add_handle(m->multi, p->c) == CURLM_OK ? 0 : sr_errf(-ENOMEM, "curl multi");
}

/* Runs every part; 0 when all are done. */
static int upload_parts(struct mpu *m, const char *eid)
{
    const size_t conc = (size_t)env_u64("SPOTRUN_S3_CONCURRENCY", 8);
    size_t active = 0, done = 0, next = 0;
    uint64_t bytes_done = 0;
    struct progress pg;
    progress_init(&pg, "upload", m->size);
    int rc = 0;
    while (done < m->n && rc == 0) {
        pthread_mutex_lock(&m->lock);
        const size_t hashed = m->hashed;
        if (m->hash_err)
            rc = m->hash_err;
        m->window = next + conc + 2; /* hash a little ahead, never far */
        pthread_cond_signal(&m->cond);
        pthread_mutex_unlock(&m->lock);
        if (rc < 0)
            break;
        const int64_t now = now_ms();
        /* Retries first, then new parts, up to conc in flight. */
        for (size_t i = 0; i < next && active < conc && rc == 0; i++)
            if (m->parts[i].state == 0 && m->parts[i].retry_at <= now) {
                rc = start_part(m, i, eid);
                active += rc == 0;
            }
        while (next < hashed && active < conc && rc == 0) {
            rc = start_part(m, next++, eid);
            active += rc == 0;
        }
        if (rc < 0)
            break;
        int running = 0;
        curl_multi_perform(m->multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m->multi, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            CURL *c = msg->easy_handle;
            const CURLcode cc = msg->data.result;
            struct sr_s3_req *req = NULL;
            curl_easy_getinfo(c, CURLINFO_PRIVATE, (char **)&req);
            struct part *p = (struct part *)req; /* req is the first member */
            curl_multi_remove_handle(m->multi, c);
            active--;
            const int r = sr_s3_done(m->s3, c, req, cc, p->attempts);
            sr_s3_cleanup(req);
            if (r == 0 && !req->etag[0])
                rc = sr_errf(-EBADMSG, "part %zu of %s: no ETag in the answer",
                             (size_t)(p - m->parts) + 1, m->key);
            if (r == 0 && rc == 0) {
                snprintf(p->etag, sizeof(p->etag), "%s", req->etag);
                p->state = 2;
                done++;
                bytes_done += req->body_len;
                sr_s3_release(m->s3, p->c);
                p->c = NULL;
            } else if (r == 1) {
                p->state = 0;
                p->retry_at = now_ms() + sr_s3_retry_delay_ms(p->attempts);
            } else if (r < 0) {
                rc = r;
            }
        }
        if (rc == 0 && done < m->n) {
            uint64_t inflight = 0;
            for (size_t i = 0; i < next; i++)
                if (m->parts[i].state == 1)
                    inflight += m->parts[i].req.sent;
            progress_show(&pg, bytes_done + inflight, 0);
            curl_multi_poll(m->multi, NULL, 0, 100, NULL);
        }
    }
    if (rc == 0)
        progress_show(&pg, m->size, 1);
    else if (pg.on)
        fputc('\n', stderr);
    return rc;
}

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
    r.body = xml;
    r.body_len = len;
    r.max = 1u << 20;
    r.if_none_match = create;
    int rc = sr_s3_do(s3, &r);
    rc = rc < 0 ? exists_error(s3, key, rc, r.status) : 0;
    /* A 200 answer may still carry an <Error> (S3 reports late failures so). */
    char code[128], msg[512];
    if (rc == 0 && r.resp &&
        sr_s3_parse_error(r.resp, r.resp_len, code, sizeof(code), msg, sizeof(msg)) == 0) {
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
        free(h.resp);
        if (hr == 0 && h.clen == size) {
            sr_debug("s3: %s was completed by an attempt whose answer was lost", key);
            rc = 0;
        } else {
            rc = sr_errf(rc, "%s", why);
        }
    }
    free(r.resp);
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
    snprintf(why, sizeof(why), "%s", sr_strerror(0));
    const int rc = sr_s3_do(s3, &r);
    free(r.resp);
    if (rc < 0) {
        sr_debug("s3: cannot abort the multipart upload of %s: %s", key, sr_strerror(rc));
        if (strcmp(why, strerror(0)) != 0)
            sr_errf(rc, "%s", why);
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
    r.body = "";
    r.max = 1u << 20;
    int rc = sr_s3_do(s3, &r);
    if (rc == 0 && sr_s3_parse_upload_id(r.resp, r.resp_len, id, sizeof(id)) < 0)
        rc = sr_errf(-EBADMSG, "initiating a multipart upload of %s: no UploadId in the answer",
                     key);
    free(r.resp);
    if (rc == 0 && sr_s3_escape(id, 0, eid, elen) < 0)
        rc = sr_errf(-EBADMSG, "UploadId too long");
    return rc;
}

static int multipart(struct sr_s3 *s3, const char *key, int fd, uint64_t size, uint64_t ps,
                     int create)
{
    struct mpu m;
    memset(&m, 0, sizeof(m));
    m.s3 = s3;
    m.key = key;
    m.fd = fd;
    m.size = size;
    m.ps = ps;
    m.n = (size_t)((size + ps - 1) / ps);
    char eid[3100];
    int rc = initiate_upload(s3, key, eid, sizeof(eid));
    if (rc < 0)
        return rc;
    sr_debug("s3: multipart upload of %s: %zu parts of %" PRIu64 " bytes", key, m.n, ps);
    m.parts = calloc(m.n, sizeof(*m.parts));
    m.multi = curl_multi_init();
    pthread_t th;
    int started = 0;
    pthread_mutex_init(&m.lock, NULL);
    pthread_cond_init(&m.cond, NULL);
    if (!m.parts || !m.multi) {
        rc = sr_errf(-ENOMEM, "out of memory");
        goto out;
    }
    curl_multi_setopt(m.multi, CURLMOPT_MAXCONNECTS, 32L);
    if (pthread_create(&th, NULL, hasher, &m) != 0) {
        rc = sr_errf(-EAGAIN, "cannot start a thread");
        goto out;
    }
    started = 1;
    rc = upload_parts(&m, eid);
out:
    if (started) {
        pthread_mutex_lock(&m.lock);
        m.stop = 1;
        pthread_cond_broadcast(&m.cond);
        pthread_mutex_unlock(&m.lock);
        pthread_join(th, NULL);
    }
    for (size_t i = 0; m.parts && i < m.n; i++) {
        if (m.parts[i].c) {
            curl_multi_remove_handle(m.multi, m.parts[i].c);
            sr_s3_release(s3, m.parts[i].c);
        }
        sr_s3_cleanup(&m.parts[i].req);
        free(m.parts[i].req.resp);
    }
    if (rc == 0) {
        const char **etags = calloc(m.n ? m.n : 1, sizeof(*etags));
        for (size_t i = 0; etags && i < m.n; i++)
            etags[i] = m.parts[i].etag;
        rc = etags ? complete_upload(s3, key, eid, m.n, etags, m.size, create)
                   : sr_errf(-ENOMEM, "out of memory");
        free(etags);
    }
    if (rc < 0)
        abort_upload(s3, key, eid);
    if (m.multi)
        curl_multi_cleanup(m.multi);
    pthread_mutex_destroy(&m.lock);
    pthread_cond_destroy(&m.cond);
    free(m.parts);
    return rc;
}

static int s3_put_file(struct sr_store *st, const char *key, const char *path, int create)
{
    struct sr_s3 *s3 = s3_of(st);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sr_errf(-errno, "cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    int rc = 0;
    if (fstat(fd, &sb) != 0) {
        rc = sr_errf(-errno, "cannot stat %s: %s", path, strerror(errno));
        goto out;
    }
    const uint64_t size = (uint64_t)sb.st_size;
    const uint64_t ps = sr_s3_part_size(size, env_u64("SPOTRUN_S3_PART_SIZE", 16 * MIB));
    /* One PUT up to the single-PUT limit: a multipart upload costs three
     * requests more and, on some servers, a second pass over the data at
     * completion (s3rver concatenates the parts). */
    uint64_t single_max = env_u64("SPOTRUN_S3_SINGLE_MAX", SINGLE_MAX_DEFAULT);
    if (single_max < ps)
        single_max = ps;
    if (size > single_max) {
        rc = multipart(s3, key, fd, size, ps, create);
        goto out;
    }
    char md5[32];
    if ((rc = md5_file(fd, 0, size, md5)) < 0)
        goto out;
    struct sr_s3_req r = req_new("PUT", key);
    r.body_fd = fd;
    r.body_len = size;
    r.content_md5 = md5;
    r.if_none_match = create;
    rc = sr_s3_do(s3, &r);
    free(r.resp);
    if (rc < 0)
        rc = exists_error(s3, key, rc, r.status);
out:
    close(fd);
    return rc;
}

/* ---- streaming writer ------------------------------------------------------
 *
 * The producer (the packer's sink) fills a buffer; a full buffer becomes a
 * part handed to an uploader thread, which runs up to SPOTRUN_S3_CONCURRENCY
 * parts on a multi handle while the producer goes on compressing. The
 * producer blocks while CONCURRENCY part sizes of data are buffered, so
 * memory stays bounded. The first buffer holds up to the single-PUT limit
 * (SPOTRUN_S3_SINGLE_MAX): an object that ends within it is one PUT at
 * commit, no multipart at all. Part sizes grow (x2 every 1000 parts, up to
 * 512 MiB) so that an object of unknown size stays within 10,000 parts.
 * A finished part's buffer is kept for a later one (big_alloc): no new
 * mapping, no page faults, and never more buffers than were once in use.
 */

#define WPART_MAX (512 * MIB)
#define WSPARE 16

struct wpart {
    struct sr_s3_req req; /* first: CURLINFO_PRIVATE points here */
    uint8_t *buf;
    size_t len, cap; /* bytes of data, and of buf */
    int state;       /* 0 waiting, 1 in flight, 2 done */
    int attempts;
    int64_t retry_at;
    char md5[32];
    char *query;
    CURL *c;
    char etag[128];
};

struct s3_writer {
    struct sr_store_writer w;
    struct sr_s3 *s3;
    char *key;
    uint64_t ps, single_max;
    size_t conc;
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
    CURLM *multi;
    pthread_t th;
    int started;
    int committed;
    struct progress pg;
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
        int rc = md5_buf(p->buf, p->len, p->md5);
        if (rc < 0)
            return rc;
    }
    if (!p->c && !(p->c = sr_s3_handle(w->s3)))
        return sr_errf(-ENOMEM, "out of memory");
    p->req = req_new("PUT", w->key);
    p->req.query = p->query;
    p->req.body = p->buf;
    p->req.body_len = p->len;
    p->req.content_md5 = p->md5;
    int rc = sr_s3_setup(w->s3, p->c, &p->req);
    if (rc < 0)
        return rc;
    p->attempts++;
    p->state = 1;
    return curl_multi_add_handle(w->multi, p->c) == CURLM_OK ? 0 : sr_errf(-ENOMEM, "curl multi");
}

static size_t conc_of(const struct s3_writer *w);

static void *uploader(void *arg)
{
    struct s3_writer *w = arg;
    size_t active = 0, first_open = 0;
    for (;;) {
        const int64_t now = now_ms();
        pthread_mutex_lock(&w->lock);
        int quit = w->stop || w->err;
        size_t n = w->nparts;
        while (first_open < n && w->parts[first_open]->state == 2)
            first_open++;
        if (!quit && w->finishing && first_open == n)
            quit = 1;
        pthread_mutex_unlock(&w->lock);
        if (quit)
            break;
        /* Start waiting parts (retries and new ones), in order. The part
         * array only grows under the lock; entries below n are stable. */
        for (size_t i = first_open; i < n && active < conc_of(w); i++) {
            struct wpart *p;
            pthread_mutex_lock(&w->lock);
            p = w->parts[i];
            pthread_mutex_unlock(&w->lock);
            if (p->state != 0 || p->retry_at > now)
                continue;
            const int rc = wpart_start(w, p, i + 1);
            if (rc < 0) {
                pthread_mutex_lock(&w->lock);
                writer_fail(w, rc);
                pthread_mutex_unlock(&w->lock);
                break;
            }
            active++;
        }
        int running = 0;
        curl_multi_perform(w->multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(w->multi, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            CURL *c = msg->easy_handle;
            const CURLcode cc = msg->data.result;
            struct sr_s3_req *req = NULL;
            curl_easy_getinfo(c, CURLINFO_PRIVATE, (char **)&req);
            struct wpart *p = (struct wpart *)req;
            curl_multi_remove_handle(w->multi, c);
            active--;
            int r = sr_s3_done(w->s3, c, req, cc, p->attempts);
            sr_s3_cleanup(req);
            free(req->resp);
            req->resp = NULL;
            if (r == 0 && !req->etag[0])
                r = sr_errf(-EBADMSG, "a part of %s: no ETag in the answer", w->key);
            if (r == 0) {
                snprintf(p->etag, sizeof(p->etag), "%s", req->etag);
                sr_s3_release(w->s3, p->c);
                p->c = NULL;
                free(p->query);
                p->query = NULL;
                pthread_mutex_lock(&w->lock);
                /* Keep the buffer for a later part: its pages stay mapped. */
                if (w->nspare < WSPARE) {
                    w->spare[w->nspare] = p->buf;
                    w->spare_cap[w->nspare++] = p->cap;
                    p->buf = NULL;
                }
                p->state = 2;
                w->buffered -= p->len;
                w->done_bytes += p->len;
                pthread_cond_broadcast(&w->space);
                pthread_mutex_unlock(&w->lock);
                free(p->buf); /* NULL unless the spares were full */
                p->buf = NULL;
            } else if (r == 1) {
                p->state = 0;
                p->retry_at = now_ms() + sr_s3_retry_delay_ms(p->attempts);
            } else {
                pthread_mutex_lock(&w->lock);
                writer_fail(w, r);
                pthread_mutex_unlock(&w->lock);
            }
        }
        progress_show(&w->pg, w->done_bytes, 0);
        curl_multi_poll(w->multi, NULL, 0, 100, NULL);
    }
    /* Leave no transfer behind (failure or stop). */
    pthread_mutex_lock(&w->lock);
    for (size_t i = 0; i < w->nparts; i++) {
        struct wpart *p = w->parts[i];
        if (p->c) {
            curl_multi_remove_handle(w->multi, p->c);
            sr_s3_cleanup(&p->req);
            free(p->req.resp);
            p->req.resp = NULL;
            sr_s3_release(w->s3, p->c);
            p->c = NULL;
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static size_t conc_of(const struct s3_writer *w)
{
    return w->conc;
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
        if (!(w->multi = curl_multi_init()))
            return sr_errf(-ENOMEM, "out of memory");
        curl_multi_setopt(w->multi, CURLMOPT_MAXCONNECTS, 32L);
        if (pthread_create(&w->th, NULL, uploader, w) != 0)
            return sr_errf(-EAGAIN, "cannot start a thread");
        w->started = 1;
    }
    struct wpart *p = calloc(1, sizeof(*p));
    if (!p)
        return sr_errf(-ENOMEM, "out of memory");
    p->buf = w->cur;
    p->len = w->cur_len;
    p->cap = w->cur_cap;
    const uint64_t limit = (uint64_t)w->conc * w->ps;
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
    curl_multi_wakeup(w->multi);
    if (nparts >= 10000)
        return sr_errf(-EFBIG, "%s: over 10,000 parts", w->key);
    /* Grow parts as the object grows: 10,000 of them still reach TBs. */
    if (nparts % 1000 == 0 && w->ps * 2 <= WPART_MAX)
        w->ps *= 2;
    return 0;
}

static int s3_writer_write(struct sr_store_writer *sw, const void *buf, size_t len)
{
    struct s3_writer *w = (struct s3_writer *)sw;
    const uint8_t *b = buf;
    while (len > 0) {
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
            if (!w->cur && !(w->cur = big_alloc(w->cur_cap)))
                return sr_errf(-ENOMEM, "out of memory for a %zu-byte part", w->cur_cap);
            w->cur_len = 0;
        }
        const size_t n = len < w->cur_cap - w->cur_len ? len : w->cur_cap - w->cur_len;
        memcpy(w->cur + w->cur_len, b, n);
        w->cur_len += n;
        b += n;
        len -= n;
        if (w->cur_len == w->cur_cap) {
            int rc = writer_flush(w);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

static int s3_writer_commit(struct sr_store_writer *sw)
{
    struct s3_writer *w = (struct s3_writer *)sw;
    if (!w->mp) {
        /* Everything fit in the first buffer: one PUT. */
        int rc = put_buf(sw->st, w->key, w->cur ? (const void *)w->cur : "", w->cur_len,
                         w->create);
        w->committed = rc == 0;
        return rc;
    }
    if (w->cur_len > 0) {
        int rc = writer_flush(w);
        if (rc < 0)
            return rc;
    }
    const int64_t t0 = now_ms();
    pthread_mutex_lock(&w->lock);
    w->finishing = 1;
    pthread_mutex_unlock(&w->lock);
    curl_multi_wakeup(w->multi);
    pthread_join(w->th, NULL);
    const int64_t t1 = now_ms();
    w->started = 0;
    if (w->err)
        return sr_errf(w->err, "%s", w->errmsg);
    progress_show(&w->pg, w->done_bytes, 1);
    const char **etags = calloc(w->nparts, sizeof(*etags));
    if (!etags)
        return sr_errf(-ENOMEM, "out of memory");
    for (size_t i = 0; i < w->nparts; i++)
        etags[i] = w->parts[i]->etag;
    int rc = complete_upload(w->s3, w->key, w->eid, w->nparts, etags, w->done_bytes, w->create);
    free(etags);
    sr_debug("s3: multipart upload of %s: %zu parts (streamed; the last ones took %.2fs after "
             "the data ended, completing %.2fs)",
             w->key, w->nparts, (double)(t1 - t0) / 1000.0, (double)(now_ms() - t1) / 1000.0);
    w->committed = rc == 0;
    return rc;
}

static void s3_writer_close(struct sr_store_writer *sw)
{
    struct s3_writer *w = (struct s3_writer *)sw;
    if (w->started) {
        pthread_mutex_lock(&w->lock);
        w->stop = 1;
        pthread_mutex_unlock(&w->lock);
        curl_multi_wakeup(w->multi);
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
    if (w->multi)
        curl_multi_cleanup(w->multi);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->space);
    free(w->key);
    free(w);
}

static int s3_writer_open(struct sr_store *st, const char *key, int create,
                          struct sr_store_writer **out)
{
    struct s3_writer *w = calloc(1, sizeof(*w));
    if (!w || !(w->key = strdup(key))) {
        free(w);
        return sr_errf(-ENOMEM, "out of memory");
    }
    w->create = create;
    w->s3 = s3_of(st);
    w->ps = sr_s3_part_size(0, env_u64("SPOTRUN_S3_PART_SIZE", 16 * MIB));
    if (w->ps > WPART_MAX)
        w->ps = WPART_MAX;
    w->single_max = env_u64("SPOTRUN_S3_SINGLE_MAX", SINGLE_MAX_DEFAULT);
    if (w->single_max < w->ps)
        w->single_max = w->ps;
    if (w->single_max > WPART_MAX)
        w->single_max = WPART_MAX;
    w->conc = (size_t)env_u64("SPOTRUN_S3_CONCURRENCY", 8);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->space, NULL);
    progress_init(&w->pg, "upload", 0);
    *out = &w->w;
    return 0;
}

/* ---- downloads ----------------------------------------------------------- */

static int range_get(struct sr_s3 *s3, const char *key, void *buf, size_t len, uint64_t off)
{
    char range[64];
    snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, off, off + len - 1);
    struct sr_s3_req r = req_new("GET", key);
    r.range = range;
    r.dst = buf;
    r.dst_len = len;
    int rc = sr_s3_do(s3, &r);
    free(r.resp);
    if (rc == 0 && r.got != len) {
        char name[2300];
        sr_s3_name(s3, key, name, sizeof(name));
        rc = sr_errf(-EBADMSG, "%s: short read at offset %" PRIu64 " (%" PRIu64 " of %zu bytes)",
                     name, off, r.got, len);
    }
    return rc;
}

/* The ranges of the download: the first wave is small (4 MiB per range),
 * so that the start of the object - what the decompressor wants first -
 * completes early although CONCURRENCY ranges share the link; then
 * s->range bytes (default 16 MiB: each request has a cost - s3rver spends
 * ~18 ms of CPU on one - and partly received ranges are readable anyway).
 * Every range fits one ring buffer. */
static int chunk_plan(struct s3_src *s)
{
    const size_t conc = s->conc;
    size_t cap = 64, n = 0;
    uint64_t *v = malloc(cap * sizeof(*v)), off = 0;
    while (v && off < s->size) {
        if (n + 2 > cap) {
            uint64_t *nv = realloc(v, (cap *= 2) * sizeof(*v));
            if (!nv) {
                free(v);
                v = NULL;
                break;
            }
            v = nv;
        }
        uint64_t len = n < conc && 4 * MIB < s->range ? 4 * MIB : s->range;
        if (len > s->size - off)
            len = s->size - off;
        v[n++] = off;
        off += len;
    }
    if (!v)
        return sr_errf(-ENOMEM, "out of memory");
    v[n] = s->size;
    s->coff = v;
    s->n = n;
    return 0;
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
    const uint64_t len = s->coff[i + 1] - s->coff[i];
    if (!s->buf[i] || i >= s->hashed || s->refs[i] > 0 || (s->used[i] < len && !s->drain))
        return;
    if (s->npool < s->pool_cap)
        s->pool[s->npool++] = s->buf[i];
    else
        free(s->buf[i]);
    s->buf[i] = NULL;
    s->held -= s->range;
    if (s->multi)
        curl_multi_wakeup(s->multi);
}

struct dpart {
    struct sr_s3_req req; /* first: CURLINFO_PRIVATE points here */
    char range[64];
    uint64_t base; /* bytes of the chunk received by earlier attempts */
    int attempts;
    int64_t retry_at;
    int state; /* 0 waiting, 1 in flight, 2 done */
    CURL *c;
};

/* Starts (or resumes, after the bytes already received) the GET of chunk
 * i into its ring buffer. */
static int dpart_start(struct s3_src *s, CURLM *multi, struct dpart *p, size_t i)
{
    const uint64_t off = s->coff[i] + p->base, end = s->coff[i + 1];
    snprintf(p->range, sizeof(p->range), "%" PRIu64 "-%" PRIu64, off, end - 1);
    if (!p->c && !(p->c = sr_s3_handle(s->s3)))
        return sr_errf(-ENOMEM, "out of memory");
    free(p->req.resp);
    p->req = req_new("GET", s->key);
    p->req.range = p->range;
    p->req.dst = s->buf[i] + p->base;
    p->req.dst_len = (size_t)(end - off);
    const int rc = sr_s3_setup(s->s3, p->c, &p->req);
    if (rc < 0)
        return rc;
    if (curl_multi_add_handle(multi, p->c) != CURLM_OK)
        return sr_errf(-ENOMEM, "curl multi");
    p->attempts++;
    p->state = 1;
    return 0;
}

/* Background download of the whole object into the memory ring, with
 * concurrent ranged GETs issued in order, never more than s->limit bytes
 * of chunks held (unless a reader waits for a chunk not started yet). As
 * the contiguous prefix grows it is hashed (the codec's XXH3-128) and
 * readers waiting for a range are woken: the codec decompresses and
 * extracts frames already downloaded while later ones are in flight. */
static int download_run(struct s3_src *s)
{
    struct sr_s3 *s3 = s->s3;
    const char *key = s->key;
    const size_t conc = s->conc;
    const size_t n = s->n;
    struct dpart *parts = calloc(n, sizeof(*parts));
    CURLM *multi = curl_multi_init();
    int rc = 0;
    if (!parts || !multi) {
        rc = sr_errf(-ENOMEM, "out of memory");
        goto out;
    }
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, 32L);
    pthread_mutex_lock(&s->lock);
    s->multi = multi;
    pthread_mutex_unlock(&s->lock);
    struct progress pg;
    progress_init(&pg, "download", s->size);
    size_t next = 0, active = 0, done = 0, hashed = 0;
    uint64_t bytes_done = 0;
    while (done < n && rc == 0) {
        pthread_mutex_lock(&s->lock);
        const int stop = s->stop;
        pthread_mutex_unlock(&s->lock);
        if (stop) {
            rc = -ECANCELED;
            break;
        }
        const int64_t now = now_ms();
        for (size_t i = hashed; i < next && active < conc && rc == 0; i++) {
            struct dpart *p = &parts[i];
            if (p->state == 0 && p->retry_at <= now && (rc = dpart_start(s, multi, p, i)) == 0)
                active++;
        }
        /* New ranges, in order, while the ring has room or a reader waits. */
        while (rc == 0 && next < n && active < conc) {
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
                break;
            if (!b && !(b = big_alloc((size_t)s->range))) {
                rc = sr_errf(-ENOMEM, "out of memory for the download buffers");
                break;
            }
            pthread_mutex_lock(&s->lock);
            s->buf[next] = b;
            s->started = next + 1;
            pthread_mutex_unlock(&s->lock);
            if ((rc = dpart_start(s, multi, &parts[next], next)) == 0)
                active++;
            next++;
        }
        if (rc < 0)
            break;
        int running = 0;
        curl_multi_perform(multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(multi, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            CURL *c = msg->easy_handle;
            const CURLcode cc = msg->data.result;
            struct sr_s3_req *req = NULL;
            curl_easy_getinfo(c, CURLINFO_PRIVATE, (char **)&req);
            struct dpart *p = (struct dpart *)req;
            curl_multi_remove_handle(multi, c);
            active--;
            int r = sr_s3_done(s3, c, req, cc, p->attempts);
            sr_s3_cleanup(req);
            if (r == 0 && req->got != req->dst_len)
                r = sr_errf(-EBADMSG, "%s: short ranged read (%" PRIu64 " of %zu bytes)", key,
                            req->got, req->dst_len);
            p->base += req->got; /* in order: what arrived stays, a retry resumes */
            if (r == 0) {
                p->state = 2;
                done++;
                bytes_done += p->base;
                sr_s3_release(s3, p->c);
                p->c = NULL;
            } else if (r == 1) {
                p->state = 0;
                p->retry_at = now_ms() + sr_s3_retry_delay_ms(p->attempts);
            } else {
                rc = r;
            }
        }
        /* Bytes arrive in order within each range: publish partial ranges
         * too, so that the reader of the first frames need not wait for
         * the whole first wave. Then hash the newly contiguous chunks
         * (straight from the ring) and publish them. */
        const size_t hashed0 = hashed;
        while (hashed < n && parts[hashed].state == 2) {
            XXH3_128bits_update(s->xxh, s->buf[hashed], (size_t)parts[hashed].base);
            hashed++;
        }
        int progressed = hashed > hashed0;
        pthread_mutex_lock(&s->lock);
        for (size_t i = hashed0; i < next; i++) {
            const uint64_t h = parts[i].base + (parts[i].state == 1 ? parts[i].req.got : 0);
            if (h > s->have[i]) {
                s->have[i] = h;
                progressed = 1;
            }
        }
        s->hashed = hashed;
        for (size_t i = hashed0; i < hashed; i++)
            chunk_release(s, i);
        if (progressed)
            pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->lock);
        if (rc == 0 && done < n) {
            uint64_t inflight = 0;
            for (size_t i = hashed; i < next; i++)
                if (parts[i].state == 1)
                    inflight += parts[i].base + parts[i].req.got;
            progress_show(&pg, bytes_done + inflight, 0);
            curl_multi_poll(multi, NULL, 0, 100, NULL);
        }
    }
    if (rc == 0)
        progress_show(&pg, s->size, 1);
    else if (pg.on)
        fputc('\n', stderr);
out:
    pthread_mutex_lock(&s->lock);
    s->multi = NULL;
    pthread_mutex_unlock(&s->lock);
    for (size_t i = 0; parts && i < n; i++) {
        if (parts[i].c) {
            curl_multi_remove_handle(multi, parts[i].c);
            sr_s3_release(s3, parts[i].c);
        }
        sr_s3_cleanup(&parts[i].req);
        free(parts[i].req.resp);
    }
    if (multi)
        curl_multi_cleanup(multi);
    free(parts);
    return rc;
}

static void *download_main(void *arg)
{
    struct s3_src *s = arg;
    const int64_t t0 = now_ms();
    const int rc = download_run(s);
    sr_debug("s3: downloaded %s (%" PRIu64 " bytes) in %.2fs: %s", s->key, s->size,
             (double)(now_ms() - t0) / 1000.0, rc < 0 ? sr_strerror(rc) : "ok");
    pthread_mutex_lock(&s->lock);
    s->finished = 1;
    if (rc < 0) {
        s->err = rc;
        snprintf(s->errmsg, sizeof(s->errmsg), "%s", sr_strerror(rc));
    } else {
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
        const uint64_t in = off - s->coff[i];
        const size_t take = (size_t)(s->coff[i + 1] - off < len ? s->coff[i + 1] - off : len);
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

static int src_read_at(void *ctx, void *buf, size_t len, uint64_t off)
{
    struct s3_src *s = ctx;
    if (len == 0)
        return 0;
    if (!s->running)
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
    if (i <= s->started + s->conc && off + len <= s->coff[i + 1] &&
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

static void s3_source_close(struct sr_store *st, struct sr_source *src);

static int s3_source(struct sr_store *st, const char *key, struct sr_source *src)
{
    struct sr_s3 *s3 = s3_of(st);
    uint64_t size = 0;
    int rc = s3_size(st, key, &size);
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
    if (size < RING_MIN)
        return 0; /* one ranged GET per read */
    s->conc = (size_t)env_u64("SPOTRUN_S3_CONCURRENCY", 8);
    s->range = sr_s3_part_size(0, env_u64("SPOTRUN_S3_RANGE_SIZE", RANGE_DEFAULT));
    /* The ring: the ranges in flight and two more received ahead of the
     * codec. */
    s->limit = ((uint64_t)s->conc + 2) * s->range;
    s->pool_cap = (size_t)(s->limit / s->range);
    if ((rc = chunk_plan(s)) < 0) {
        s3_source_close(st, src);
        return rc;
    }
    s->buf = calloc(s->n, sizeof(*s->buf));
    s->have = calloc(s->n, sizeof(*s->have));
    s->used = calloc(s->n, sizeof(*s->used));
    s->refs = calloc(s->n, sizeof(*s->refs));
    s->pool = calloc(s->pool_cap, sizeof(*s->pool));
    s->xxh = XXH3_createState();
    if (!s->buf || !s->have || !s->used || !s->refs || !s->pool || !s->xxh) {
        s3_source_close(st, src);
        return sr_errf(-ENOMEM, "out of memory");
    }
    XXH3_128bits_reset(s->xxh);
    if (pthread_create(&s->th, NULL, download_main, s) != 0) {
        s3_source_close(st, src);
        return sr_errf(-EAGAIN, "cannot start a download thread");
    }
    s->running = 1;
    src->checksum = src_checksum;
    src->borrow = src_borrow;
    src->unborrow = src_unborrow;
    return 0;
}

static void s3_source_close(struct sr_store *st, struct sr_source *src)
{
    (void)st;
    struct s3_src *s = src->ctx;
    if (s->running) {
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
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cv);
    free(s->key);
    free(s);
    memset(src, 0, sizeof(*src));
}

static void s3_close(struct sr_store *st)
{
    sr_s3_close(st->impl);
    free(st->url);
    free(st);
}

static const struct sr_store_ops s3_ops = {
    .scheme = "s3",
    .put = s3_put,
    .put_file = s3_put_file,
    .put_if = s3_put_if,
    .get_etag = s3_get_etag,
    .get = s3_get,
    .size = s3_size,
    .source = s3_source,
    .source_close = s3_source_close,
    .list = s3_list,
    .del = s3_del,
    .close = s3_close,
    .writer_open = s3_writer_open,
    .writer_write = s3_writer_write,
    .writer_commit = s3_writer_commit,
    .writer_close = s3_writer_close,
    .streams = 1,
};

int sr_store_s3_open(const char *url, struct sr_store **out)
{
    *out = NULL;
    const char *b = url + 5; /* after "s3://" */
    const size_t bl = strcspn(b, "/");
    if (bl == 0 || bl > 63)
        return sr_errf(-EINVAL, "invalid store URL %s (want s3://bucket/prefix)", url);
    char bucket[64], prefix[1024];
    memcpy(bucket, b, bl);
    bucket[bl] = '\0';
    const char *p = b + bl;
    while (*p == '/')
        p++;
    snprintf(prefix, sizeof(prefix), "%s", p);
    size_t pl = strlen(prefix);
    while (pl > 0 && prefix[pl - 1] == '/')
        prefix[--pl] = '\0';
    if (strstr(prefix, "//") || strcmp(prefix, ".") == 0 || strstr(prefix, "..") ||
        prefix[0] == '.')
        return sr_errf(-EINVAL, "invalid store URL %s (empty, \".\" or \"..\" prefix segment)",
                       url);
    struct sr_store *st = calloc(1, sizeof(*st));
    char *canon = malloc(strlen(bucket) + strlen(prefix) + 8);
    if (!st || !canon) {
        free(st);
        free(canon);
        return sr_errf(-ENOMEM, "out of memory");
    }
    sprintf(canon, "s3://%s%s%s", bucket, pl ? "/" : "", prefix);
    struct sr_s3 *s3;
    int rc = sr_s3_open(bucket, prefix, &s3);
    if (rc < 0) {
        char why[1024];
        snprintf(why, sizeof(why), "%s", sr_strerror(rc));
        rc = sr_errf(rc, "cannot open %s: %s", canon, why);
        free(st);
        free(canon);
        return rc;
    }
    st->ops = &s3_ops;
    st->url = canon;
    st->impl = s3;
    *out = st;
    return 0;
}
