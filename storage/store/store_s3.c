/*
 * store_s3.c - the "s3" store backend: objects live under
 * s3://bucket/prefix/, keys are appended to the prefix (see store.h,
 * docs/s3.md). This file holds the simple operations, the ops table and
 * the helpers the backend's files share (store_s3_int.h); uploads are in
 * store_s3_put.c, downloads in store_s3_get.c.
 *
 * DESIGN:
 *   - put and put_if are one PUT with Content-MD5 (put_if conditional:
 *     If-None-Match: * or If-Match); get is one GET, size one HEAD.
 *   - put_file and the streaming writer (push): store_s3_put.c.
 *   - source (restore, pull): store_s3_get.c.
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
#include "store_s3_int.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define LIST_MAX (16u << 20)

/* ---- shared helpers (store_s3_int.h) -------------------------------------- */

/* A large transfer buffer (a part, a ring chunk): 2 MiB-aligned and
 * backed by huge pages where the kernel offers them. Faulting in fresh
 * memory 4 KiB at a time cost as much CPU as the copies into it (more on
 * a paravirtualised guest, where every fault traps), and these buffers are
 * reused, so the pages are faulted in once. Free with free(). */
void *s3st_big_alloc(size_t len)
{
    void *p = NULL;
    if (posix_memalign(&p, 2 * MIB, len) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, len, MADV_HUGEPAGE);
#endif
    return p;
}

void s3st_progress_init(struct s3st_progress *p, const char *verb, uint64_t total)
{
    const char *force = getenv("SPOTRUN_PROGRESS");
    p->on = force && *force ? strcmp(force, "0") != 0
                            : isatty(STDERR_FILENO) && sr_verbosity >= SR_INFO &&
                                  (total >= RING_MIN || total == 0); /* 0: unknown (streaming) */
    p->verb = verb;
    p->total = total;
    p->t0 = p->last = sr_now_ms();
}

void s3st_progress_show(struct s3st_progress *p, uint64_t done, int final)
{
    const int64_t now = sr_now_ms();
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

int s3st_md5_buf(const void *buf, size_t len, char out[32])
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dl = 0;
    if (!EVP_Digest(buf, len, d, &dl, EVP_md5(), NULL))
        return sr_errf(-EIO, "cannot compute MD5");
    EVP_EncodeBlock((unsigned char *)out, d, 16);
    return 0;
}

/* ---- simple operations --------------------------------------------------- */

/* A 412 answer to a create-only write: -EEXIST with a plain message. */
int s3st_exists_error(struct sr_s3 *s3, const char *key, int rc, long status)
{
    if (status != 412)
        return rc;
    char name[2300];
    sr_s3_name(s3, key, name, sizeof(name));
    return sr_errf(-EEXIST, "%s already exists", name);
}

/* One PUT of buf with Content-MD5 and the conditions create (If-None-Match:
 * *) and match (If-Match); *status and etag get the answer's status and
 * ETag. The caller maps a failed condition. */
static int put_once(struct sr_store *st, const char *key, const void *buf, size_t len, int create,
                    const char *match, long *status, char *etag)
{
    char md5[32];
    int rc = s3st_md5_buf(buf, len, md5);
    if (rc < 0)
        return rc;
    struct sr_s3_req r = req_new("PUT", key);
    r.tx.body = buf;
    r.tx.body_len = len;
    r.content_md5 = md5;
    r.if_none_match = create;
    r.if_match = match;
    rc = sr_s3_do(s3_of(st), &r);
    free(r.rx.resp);
    *status = r.rx.status;
    snprintf(etag, SR_ETAG_MAX, "%s", r.rx.etag);
    return rc;
}

int s3st_put_buf(struct sr_store *st, const char *key, const void *buf, size_t len, int create)
{
    long status = 0;
    char etag[SR_ETAG_MAX];
    const int rc = put_once(st, key, buf, len, create, NULL, &status, etag);
    return rc < 0 ? s3st_exists_error(s3_of(st), key, rc, status) : 0;
}

static int s3_put(struct sr_store *st, const char *key, const void *buf, size_t len)
{
    return s3st_put_buf(st, key, buf, len, 0);
}

/* The ETag tag without its quotes into out; 0 when tag is not quoted. */
static int unquote(const char *tag, char *out, size_t cap)
{
    const size_t n = strlen(tag);
    if (n < 2 || tag[0] != '"' || tag[n - 1] != '"' || n - 2 >= cap)
        return 0;
    memcpy(out, tag + 1, n - 2);
    out[n - 2] = '\0';
    return 1;
}

/* put_once with If-Match: match, as the server takes it. S3 compares
 * If-Match with or without the quotes; Ceph RGW 16 compares the header's
 * bytes with the ETag without quotes, so it answers 412 to the quoted form
 * even when the ETag matches. A 412 to a quoted ETag is therefore retried
 * once with the bare ETag: the retry is itself conditional (a server that
 * compares properly refuses it too, when someone else wrote the key), and
 * a bare ETag that succeeds switches this handle to bare ETags. */
static int put_match(struct sr_store *st, const char *key, const void *buf, size_t len,
                     const char *match, long *status, char *etag)
{
    struct sr_s3 *s3 = s3_of(st);
    char bare[SR_ETAG_MAX];
    const int quoted = unquote(match, bare, sizeof(bare));
    if (quoted && __atomic_load_n(&s3->bare_if_match, __ATOMIC_RELAXED))
        return put_once(st, key, buf, len, 0, bare, status, etag);
    int rc = put_once(st, key, buf, len, 0, match, status, etag);
    if (rc == 0 || *status != 412 || !quoted)
        return rc;
    rc = put_once(st, key, buf, len, 0, bare, status, etag);
    if (rc == 0 && !__atomic_exchange_n(&s3->bare_if_match, 1, __ATOMIC_RELAXED))
        sr_debug("store %s takes If-Match ETags without quotes only (Ceph RGW): sending them bare",
                 sr_store_url(st));
    return rc;
}

/* A conditional PUT (see sr_store_put_if). A server that ignores the
 * headers answers 200 as for a plain PUT: storage/run/lease.c probes for that. */
static int s3_put_if(struct sr_store *st, const char *key, const void *buf, size_t len,
                     const char *match, char *etag)
{
    long status = 0;
    const int rc = match ? put_match(st, key, buf, len, match, &status, etag)
                         : put_once(st, key, buf, len, 1, NULL, &status, etag);
    if (rc == 0)
        return 0;
    char name[2300];
    sr_s3_name(s3_of(st), key, name, sizeof(name));
    /* 412: the condition failed; 409 ConditionalRequestConflict: another
     * conditional write to the key was in flight (S3 says retry; for us it
     * means someone else is writing it). */
    if (status == 412 || status == 409) {
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
    r.rx.max = max;
    int rc = sr_s3_do(s3_of(st), &r);
    if (rc == -EFBIG) {
        char name[2300];
        sr_s3_name(s3_of(st), key, name, sizeof(name));
        rc = sr_errf(-EFBIG, "%s is over %zu bytes", name, max);
        snprintf(etag, SR_ETAG_MAX, "%s", r.rx.etag); /* its ETag all the same (store.h) */
    }
    if ((rc = sr_http_rx_take(&r.rx, rc, buf, len)) == 0)
        snprintf(etag, SR_ETAG_MAX, "%s", r.rx.etag);
    return rc;
}

int s3st_size(struct sr_store *st, const char *key, uint64_t *size)
{
    struct sr_s3_req r = req_new("HEAD", key);
    int rc = sr_s3_do(s3_of(st), &r);
    free(r.rx.resp);
    if (rc == 0)
        *size = r.rx.clen;
    return rc;
}

static int s3_del(struct sr_store *st, const char *key)
{
    struct sr_s3_req r = req_new("DELETE", key);
    int rc = sr_s3_do(s3_of(st), &r);
    free(r.rx.resp);
    if (rc == -ENOENT && r.rx.status == 404) {
        char code[64] = "", msg[8];
        if (r.rx.resp_len == 0 || (sr_s3_parse_error(r.rx.resp, r.rx.resp_len, code, sizeof(code),
                                                     msg, sizeof(msg)) == 0 &&
                                   strcmp(code, "NoSuchKey") == 0))
            rc = 0; /* already gone */
    }
    return rc;
}

/* One ListObjectsV2 page (sr_store_ops.page). */
static int s3_page(void *ctx, const char *full, const char *root, const char *token, char *next,
                   size_t nlen, struct sr_strlist *out)
{
    struct sr_s3 *s3 = ctx;
    char eprefix[6600], etoken[3100] = "", query[10000];
    const int keys = root != NULL;
    if (sr_url_escape(full, 0, eprefix, sizeof(eprefix)) < 0)
        return sr_errf(-ENAMETOOLONG, "prefix %s is too long", full);
    if (*token && sr_url_escape(token, 0, etoken, sizeof(etoken)) < 0)
        return sr_errf(-EBADMSG, "continuation token too long");
    /* Parameters in sorted order: curl signs the query as written.
     * max-keys=1000 is S3's default, named so that a server whose cap
     * is lower applies it (Ceph RGW bounds only a given max-keys by its
     * "rgw max listing results"; the RGW tests page at 50 so). */
    snprintf(query, sizeof(query), "%s%s%s%slist-type=2&max-keys=1000%s%s",
             *etoken ? "continuation-token=" : "", etoken, *etoken ? "&" : "",
             keys ? "" : "delimiter=%2F&", *full ? "&prefix=" : "", eprefix);
    struct sr_s3_req r = req_new("GET", NULL);
    r.query = query;
    r.rx.max = LIST_MAX;
    int truncated = 0;
    int rc = sr_s3_do(s3, &r);
    if (rc == 0)
        rc = sr_s3_parse_list_as(r.rx.resp, r.rx.resp_len, keys ? root : full, keys, out,
                                 &truncated, next, nlen);
    free(r.rx.resp);
    if (!truncated)
        next[0] = '\0';
    return rc;
}

static void s3_close(struct sr_store *st)
{
    sr_s3_close(st->impl);
    sr_store_unadopt(st);
}

static void s3_close_impl(void *impl)
{
    sr_s3_close(impl);
}

static const struct sr_store_ops s3_ops = {
    .scheme = "s3",
    .put = s3_put,
    .put_file = s3st_put_file,
    .put_if = s3_put_if,
    .get_etag = s3_get_etag,
    .get = s3_get,
    .size = s3st_size,
    .source = s3st_source,
    .source_close = s3st_source_close,
    .source_ranged = s3st_source_ranged,
    .list = sr_store_paged_list,
    .list_keys = sr_store_paged_list_keys,
    .page = s3_page,
    .del = s3_del,
    .close = s3_close,
    .writer_open = s3st_writer_open,
    .writer_write = s3st_writer_write,
    .writer_commit = s3st_writer_commit,
    .writer_close = s3st_writer_close,
    .streams = 1,
};

int sr_store_s3_open(const char *url, struct sr_store **out)
{
    *out = NULL;
    const char *b = url + 5; /* after "s3://" */
    const size_t bl = strcspn(b, "/");
    if (bl == 0 || bl > 63)
        return sr_errf(-EINVAL, "invalid store URL %s (want s3://bucket/prefix)", url);
    char bucket[64], prefix[1024], canon[1200];
    memcpy(bucket, b, bl);
    bucket[bl] = '\0';
    int rc = sr_store_url_prefix(url, b + bl, prefix, sizeof(prefix));
    if (rc < 0)
        return rc;
    snprintf(canon, sizeof(canon), "s3://%s%s%s", bucket, *prefix ? "/" : "", prefix);
    struct sr_s3 *s3 = NULL;
    rc = sr_s3_open(bucket, prefix, &s3);
    return sr_store_adopt(&s3_ops, canon, s3, s3 ? s3->prefix : NULL, rc, s3_close_impl, out);
}
