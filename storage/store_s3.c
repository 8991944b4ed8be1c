/*
 * store_s3.c - the "s3" store backend: objects live under
 * s3://bucket/prefix/, keys are appended to the prefix (see store.h,
 * docs/s3.md).
 *
 * DESIGN:
 *   - put is one PUT with Content-MD5. put_file is one PUT for files up to
 *     the part size (SPOTRUN_S3_PART_SIZE, default 16 MiB) and a multipart
 *     upload above it: parts sized by sr_s3_part_size() (>= 5 MiB, <= 10,000
 *     parts), SPOTRUN_S3_CONCURRENCY (default 8) of them in flight on one
 *     curl multi handle. Parts are read from the file by the read callback
 *     (pread), so memory does not grow with the object; a helper thread
 *     computes each part's Content-MD5 ahead of the transfers. A failed
 *     part is retried with backoff; a part that fails for good aborts the
 *     upload (AbortMultipartUpload, where the server allows it). S3 makes
 *     an object visible only once it is complete, so a reader never sees a
 *     torn one; the catalog still writes the manifest last.
 *   - source: objects of SPOOL_MIN or more are fetched once, by concurrent
 *     ranged GETs on a multi handle, into an unlinked spool file, and the
 *     codec's checksum pass and parallel frame reads are served from it
 *     (the checksum must cover the whole object before extraction, so
 *     ranged reads straight into the decompressor would fetch it twice).
 *     Smaller objects are read with a ranged GET per read_at, on pooled
 *     handles, safe from the codec's worker threads.
 *   - list is ListObjectsV2 with delimiter '/', following continuation
 *     tokens.
 *
 * Threads: the handle is shared; requests take easy handles from the s3
 * client's locked pool. Progress lines (push/pull at a terminal) go to
 * stderr only when it is a tty.
 */
#include "log.h"
#include "s3.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024ull * 1024ull)
#define SPOOL_MIN (8 * MIB)
#define GET_CHUNK (8 * MIB)
#define LIST_MAX (16u << 20)

struct s3_src {
    struct sr_s3 *s3;
    char *key;
    int fd; /* spool file, or -1: ranged GETs */
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
    p->on = force && *force
                ? strcmp(force, "0") != 0
                : isatty(STDERR_FILENO) && sr_verbosity >= SR_INFO && total >= SPOOL_MIN;
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

static int s3_put(struct sr_store *st, const char *key, const void *buf, size_t len)
{
    char md5[32];
    int rc = md5_buf(buf, len, md5);
    if (rc < 0)
        return rc;
    struct sr_s3_req r = req_new("PUT", key);
    r.body = buf;
    r.body_len = len;
    r.content_md5 = md5;
    rc = sr_s3_do(s3_of(st), &r);
    free(r.resp);
    return rc;
}

static int s3_get(struct sr_store *st, const char *key, size_t max, char **buf, size_t *len)
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
                static __thread unsigned seed;
                if (!seed)
                    seed = (unsigned)now_ms();
                p->retry_at =
                    now_ms() + sr_s3_backoff_ms(p->attempts, 200, 5000, (unsigned)rand_r(&seed));
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

static int complete_upload(struct mpu *m, const char *eid)
{
    size_t cap = 128 + m->n * 200, len = 0;
    char *xml = malloc(cap);
    if (!xml)
        return sr_errf(-ENOMEM, "out of memory");
    len += (size_t)snprintf(xml + len, cap - len, "<CompleteMultipartUpload>");
    for (size_t i = 0; i < m->n; i++)
        len += (size_t)snprintf(xml + len, cap - len,
                                "<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag></Part>", i + 1,
                                m->parts[i].etag);
    len += (size_t)snprintf(xml + len, cap - len, "</CompleteMultipartUpload>");
    char query[3200];
    snprintf(query, sizeof(query), "uploadId=%s", eid);
    struct sr_s3_req r = req_new("POST", m->key);
    r.query = query;
    r.body = xml;
    r.body_len = len;
    r.max = 1u << 20;
    int rc = sr_s3_do(m->s3, &r);
    /* A 200 answer may still carry an <Error> (S3 reports late failures so). */
    char code[128], msg[512];
    if (rc == 0 && r.resp &&
        sr_s3_parse_error(r.resp, r.resp_len, code, sizeof(code), msg, sizeof(msg)) == 0) {
        char name[2300];
        sr_s3_name(m->s3, m->key, name, sizeof(name));
        const char *hint = "";
        rc = sr_errf(sr_s3_errno(500, code, &hint), "completing the upload of %s: %s %s", name,
                     code, msg);
    }
    free(r.resp);
    free(xml);
    return rc;
}

static void abort_upload(struct mpu *m, const char *eid)
{
    char query[3200];
    snprintf(query, sizeof(query), "uploadId=%s", eid);
    struct sr_s3_req r = req_new("DELETE", m->key);
    r.query = query;
    const int saved_retries = m->s3->retries;
    const int rc = sr_s3_do(m->s3, &r);
    (void)saved_retries;
    free(r.resp);
    if (rc < 0)
        sr_debug("s3: cannot abort the multipart upload of %s: %s", m->key, sr_strerror(rc));
}

static int multipart(struct sr_s3 *s3, const char *key, int fd, uint64_t size, uint64_t ps)
{
    struct mpu m;
    memset(&m, 0, sizeof(m));
    m.s3 = s3;
    m.key = key;
    m.fd = fd;
    m.size = size;
    m.ps = ps;
    m.n = (size_t)((size + ps - 1) / ps);
    char id[1024], eid[3100];
    struct sr_s3_req r = req_new("POST", key);
    r.query = "uploads="; /* curl 7.88 signs "?uploads" wrongly */
    r.body = "";
    r.max = 1u << 20;
    int rc = sr_s3_do(s3, &r);
    if (rc == 0 && sr_s3_parse_upload_id(r.resp, r.resp_len, id, sizeof(id)) < 0)
        rc = sr_errf(-EBADMSG, "initiating a multipart upload of %s: no UploadId in the answer",
                     key);
    free(r.resp);
    if (rc < 0)
        return rc;
    if (sr_s3_escape(id, 0, eid, sizeof(eid)) < 0)
        return sr_errf(-EBADMSG, "UploadId too long");
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
    if (rc == 0)
        rc = complete_upload(&m, eid);
    if (rc < 0)
        abort_upload(&m, eid);
    if (m.multi)
        curl_multi_cleanup(m.multi);
    pthread_mutex_destroy(&m.lock);
    pthread_cond_destroy(&m.cond);
    free(m.parts);
    return rc;
}

static int s3_put_file(struct sr_store *st, const char *key, const char *path)
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
    if (size > ps) {
        rc = multipart(s3, key, fd, size, ps);
        goto out;
    }
    char md5[32];
    if ((rc = md5_file(fd, 0, size, md5)) < 0)
        goto out;
    struct sr_s3_req r = req_new("PUT", key);
    r.body_fd = fd;
    r.body_len = size;
    r.content_md5 = md5;
    rc = sr_s3_do(s3, &r);
    free(r.resp);
out:
    close(fd);
    return rc;
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

static int src_read_at(void *ctx, void *buf, size_t len, uint64_t off)
{
    struct s3_src *s = ctx;
    if (len == 0)
        return 0;
    if (s->fd < 0)
        return range_get(s->s3, s->key, buf, len, off);
    char *p = buf;
    while (len > 0) {
        const ssize_t n = pread(s->fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return sr_errf(n < 0 ? -errno : -EBADMSG, "cannot read the spooled %s: %s", s->key,
                           n < 0 ? strerror(errno) : "unexpected end");
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

/* An unlinked file for the download: in the work dir (not tmpfs as a
 * rule), else TMPDIR. */
static int spool_open(void)
{
    char dir[4096];
    const char *w = getenv("SPOTRUN_WORK_DIR"), *c = getenv("XDG_CACHE_HOME"), *h = getenv("HOME"),
               *t = getenv("TMPDIR");
    const char *cands[4] = {NULL, NULL, NULL, NULL};
    char d1[4096] = "", d2[4096] = "";
    if (w && *w)
        cands[0] = w;
    if (c && *c == '/')
        snprintf(d1, sizeof(d1), "%s/spotrun", c), cands[1] = d1;
    else if (h && *h)
        snprintf(d1, sizeof(d1), "%s/.cache/spotrun", h), cands[1] = d1;
    snprintf(d2, sizeof(d2), "%s", t && *t ? t : "/tmp");
    cands[2] = d2;
    for (int i = 0; i < 3; i++) {
        if (!cands[i])
            continue;
        snprintf(dir, sizeof(dir), "%s", cands[i]);
        int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0)
            return fd;
        char tmpl[4200];
        snprintf(tmpl, sizeof(tmpl), "%s/.spotrun-s3.XXXXXX", dir);
        fd = mkstemp(tmpl);
        if (fd >= 0) {
            unlink(tmpl);
            return fd;
        }
    }
    return -1;
}

/* Fetches the whole object into fd with concurrent ranged GETs. */
static int download(struct sr_s3 *s3, const char *key, int fd, uint64_t size)
{
    const size_t conc = (size_t)env_u64("SPOTRUN_S3_CONCURRENCY", 8);
    const size_t n = (size_t)((size + GET_CHUNK - 1) / GET_CHUNK);
    struct part *parts = calloc(n, sizeof(*parts));
    CURLM *multi = curl_multi_init();
    char(*ranges)[64] = calloc(n, 64);
    int rc = 0;
    if (!parts || !multi || !ranges) {
        rc = sr_errf(-ENOMEM, "out of memory");
        goto out;
    }
    struct progress pg;
    progress_init(&pg, "download", size);
    size_t next = 0, active = 0, done = 0;
    uint64_t bytes_done = 0;
    while (done < n && rc == 0) {
        const int64_t now = now_ms();
        for (size_t i = 0; i < next + 0 && active < conc && rc == 0; i++) {
            struct part *p = &parts[i];
            if (p->state != 0 || p->retry_at > now)
                continue;
            if ((rc = sr_s3_setup(s3, p->c, &p->req)) == 0 &&
                curl_multi_add_handle(multi, p->c) == CURLM_OK) {
                p->state = 1;
                p->attempts++;
                active++;
            }
        }
        while (next < n && active < conc && rc == 0) {
            struct part *p = &parts[next];
            const uint64_t off = (uint64_t)next * GET_CHUNK;
            const uint64_t len = off + GET_CHUNK > size ? size - off : GET_CHUNK;
            snprintf(ranges[next], 64, "%" PRIu64 "-%" PRIu64, off, off + len - 1);
            p->req = req_new("GET", key);
            p->req.range = ranges[next];
            p->req.dst_fd = fd;
            p->req.dst_off = off;
            p->req.dst_len = (size_t)len;
            p->c = sr_s3_handle(s3);
            if (!p->c) {
                rc = sr_errf(-ENOMEM, "out of memory");
                break;
            }
            next++;
            if ((rc = sr_s3_setup(s3, p->c, &p->req)) == 0 &&
                curl_multi_add_handle(multi, p->c) == CURLM_OK) {
                p->state = 1;
                p->attempts++;
                active++;
            }
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
            struct part *p = (struct part *)req;
            curl_multi_remove_handle(multi, c);
            active--;
            int r = sr_s3_done(s3, c, req, cc, p->attempts);
            sr_s3_cleanup(req);
            if (r == 0 && req->got != req->dst_len)
                r = sr_errf(-EBADMSG, "%s: short ranged read (%" PRIu64 " of %zu bytes)", key,
                            req->got, req->dst_len);
            if (r == 0) {
                p->state = 2;
                done++;
                bytes_done += req->got;
                sr_s3_release(s3, p->c);
                p->c = NULL;
            } else if (r == 1) {
                p->state = 0;
                static __thread unsigned seed;
                if (!seed)
                    seed = (unsigned)now_ms();
                p->retry_at =
                    now_ms() + sr_s3_backoff_ms(p->attempts, 200, 5000, (unsigned)rand_r(&seed));
            } else {
                rc = r;
            }
        }
        if (rc == 0 && done < n) {
            uint64_t inflight = 0;
            for (size_t i = 0; i < next; i++)
                if (parts[i].state == 1)
                    inflight += parts[i].req.got;
            progress_show(&pg, bytes_done + inflight, 0);
            curl_multi_poll(multi, NULL, 0, 100, NULL);
        }
    }
    if (rc == 0)
        progress_show(&pg, size, 1);
    else if (pg.on)
        fputc('\n', stderr);
out:
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
    free(ranges);
    return rc;
}

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
    s->fd = -1;
    if (size >= SPOOL_MIN && (s->fd = spool_open()) >= 0) {
        rc = download(s3, key, s->fd, size);
        if (rc < 0) {
            close(s->fd);
            free(s->key);
            free(s);
            return rc;
        }
    }
    src->ctx = s;
    src->size = size;
    src->read_at = src_read_at;
    return 0;
}

static void s3_source_close(struct sr_store *st, struct sr_source *src)
{
    (void)st;
    struct s3_src *s = src->ctx;
    if (s->fd >= 0)
        close(s->fd);
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
    .get = s3_get,
    .size = s3_size,
    .source = s3_source,
    .source_close = s3_source_close,
    .list = s3_list,
    .del = s3_del,
    .close = s3_close,
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
