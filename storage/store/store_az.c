/*
 * store_az.c - the "az" store backend: objects are block blobs under
 * az://account/container/prefix/, keys appended to the prefix (store.h,
 * docs/azure.md). This file holds the simple operations, the ranged
 * source, open/close and the ops table; uploads are in store_az_xfer.c,
 * the request layer in az.c.
 *
 * DESIGN:
 *   - put and put_if are one Put Blob (put_if conditional: If-None-Match: *
 *     or If-Match); larger puts go through the writer's blocks.
 *   - put_file and push stream through the writer (store_az_xfer.c), whose
 *     commit is Put Blob or Put Block List, both create-only.
 *   - source reads ranges on demand; a read larger than a block is split
 *     into block-sized ranges fetched side by side; so is the whole-blob
 *     checksum the codec checks before the swap.
 *   - list is List Blobs with delimiter '/', following NextMarker.
 *
 * Threads: the handle is shared; requests take easy handles from the
 * client's locked pool.
 */
#include "az.h"
#include "log.h"
#include "store.h"
#include "seektable.h"
#include "store_az_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#define LIST_MAX (16u << 20)

static struct sr_az *az_of(struct sr_store *st)
{
    return st->impl;
}

/* One Put Blob; *status gets the answer's status, etag its ETag. */
static int put_once(struct sr_store *st, const char *key, const void *buf, size_t len, int create,
                    const char *match, char *etag)
{
    struct sr_az_req r = azst_req("PUT", key);
    r.tx.body = buf;
    r.tx.body_len = len;
    r.block_blob = 1;
    r.if_none_match = create;
    r.if_match = match;
    int rc = sr_az_do(az_of(st), &r);
    free(r.rx.resp);
    if (etag)
        snprintf(etag, SR_ETAG_MAX, "%s", r.rx.etag);
    if (rc == 0 || !(create || match))
        return rc;
    char name[2400];
    sr_az_name(az_of(st), key, name, sizeof(name));
    /* 409 BlobAlreadyExists / 412 ConditionNotMet: the condition failed. A
     * retry after a lost answer meets its own write: the caller's
     * sr_store_holds() tells (storage/run/lease.c). */
    if (r.rx.status == 409 || r.rx.status == 412)
        return match ? sr_errf(-ESTALE, "%s was changed by someone else", name)
                     : sr_errf(-EEXIST, "%s already exists", name);
    if (r.rx.status == 404 && match)
        return sr_errf(-ENOENT, "%s is gone", name);
    return rc;
}

int azst_put_buf(struct sr_store *st, const char *key, const void *buf, size_t len, int create)
{
    if (len > az_of(st)->block_size) { /* over one block: blocks and a list */
        struct sr_store_writer *w = NULL;
        int rc = azst_writer_open(st, key, create, &w);
        if (rc == 0 && (rc = azst_writer_write(w, buf, len)) == 0)
            rc = azst_writer_commit(w);
        azst_writer_close(w);
        return rc;
    }
    return put_once(st, key, buf, len, create, NULL, NULL);
}

static int az_put(struct sr_store *st, const char *key, const void *buf, size_t len)
{
    return azst_put_buf(st, key, buf, len, 0);
}

static int az_put_if(struct sr_store *st, const char *key, const void *buf, size_t len,
                     const char *match, char *etag)
{
    return put_once(st, key, buf, len, !match, match, etag);
}

static int az_put_file(struct sr_store *st, const char *key, const char *path, int create)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sr_errf(-errno, "cannot open %s: %s", path, strerror(errno));
    struct sr_store_writer *w = NULL;
    int rc = azst_writer_open(st, key, create, &w);
    char *buf = rc == 0 ? malloc(1u << 20) : NULL;
    if (rc == 0 && !buf)
        rc = sr_errf(-ENOMEM, "out of memory");
    for (ssize_t n; rc == 0 && (n = read(fd, buf, 1u << 20)) != 0;)
        rc = n < 0 ? sr_errf(-errno, "cannot read %s: %s", path, strerror(errno))
                   : azst_writer_write(w, buf, (size_t)n);
    if (rc == 0)
        rc = azst_writer_commit(w);
    free(buf);
    azst_writer_close(w);
    close(fd);
    return rc;
}

static int az_get_etag(struct sr_store *st, const char *key, size_t max, char **buf, size_t *len,
                       char *etag)
{
    struct sr_az_req r = azst_req("GET", key);
    r.rx.max = max;
    int rc = sr_az_do(az_of(st), &r);
    if (rc == -EFBIG) {
        char name[2400];
        sr_az_name(az_of(st), key, name, sizeof(name));
        rc = sr_errf(-EFBIG, "%s is over %zu bytes", name, max);
        if (etag) /* its ETag all the same (store.h) */
            snprintf(etag, SR_ETAG_MAX, "%s", r.rx.etag);
    }
    if ((rc = sr_http_rx_take(&r.rx, rc, buf, len)) == 0 && etag)
        snprintf(etag, SR_ETAG_MAX, "%s", r.rx.etag);
    return rc;
}

static int az_get(struct sr_store *st, const char *key, size_t max, char **buf, size_t *len)
{
    return az_get_etag(st, key, max, buf, len, NULL);
}

int azst_size(struct sr_store *st, const char *key, uint64_t *size)
{
    struct sr_az_req r = azst_req("HEAD", key);
    const int rc = sr_az_do(az_of(st), &r);
    free(r.rx.resp);
    if (rc == 0)
        *size = r.rx.clen;
    return rc;
}

static int az_del(struct sr_store *st, const char *key)
{
    struct sr_az_req r = azst_req("DELETE", key);
    int rc = sr_az_do(az_of(st), &r);
    free(r.rx.resp);
    if (rc == -ENOENT && strcmp(r.rx.code, "ContainerNotFound") != 0) {
        rc = 0; /* already gone */
    }
    return rc;
}

/* One List Blobs page (sr_store_ops.page). */
static int az_page(void *ctx, const char *full, const char *root, const char *token, char *next,
                   size_t nlen, struct sr_strlist *out)
{
    struct sr_az *az = ctx;
    char eprefix[6600], emarker[3100] = "", query[10000];
    const int keys = root != NULL;
    if (sr_url_escape(full, 0, eprefix, sizeof(eprefix)) < 0)
        return sr_errf(-ENAMETOOLONG, "prefix %s is too long", full);
    if (*token && sr_url_escape(token, 0, emarker, sizeof(emarker)) < 0)
        return sr_errf(-EBADMSG, "listing marker too long");
    snprintf(query, sizeof(query), "comp=list%s%s%s%s%s&restype=container",
             keys ? "" : "&delimiter=%2F", *emarker ? "&marker=" : "", emarker,
             *full ? "&prefix=" : "", eprefix);
    struct sr_az_req r = azst_req("GET", NULL);
    r.query = query;
    r.rx.max = LIST_MAX;
    int rc = sr_az_do(az, &r);
    if (rc == 0)
        rc = sr_az_parse_list(r.rx.resp ? r.rx.resp : "", r.rx.resp_len, keys ? root : full, keys,
                              out, next, nlen);
    free(r.rx.resp);
    return rc;
}

/* ---- ranged source ---------------------------------------------------------- */

struct az_src {
    struct sr_store *st;
    char *key;
    uint64_t size;
};

static int src_read_at(void *ctx, void *buf, size_t len, uint64_t off)
{
    struct az_src *s = ctx;
    struct sr_az *az = az_of(s->st);
    const size_t bs = az->block_size, n = len == 0 ? 0 : (len + bs - 1) / bs;
    struct sr_az_req one, *r = n > 1 ? calloc(n, sizeof(*r)) : &one;
    if (!r)
        return sr_errf(-ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        r[i] = azst_req("GET", s->key);
        r[i].range_off = off + i * bs;
        r[i].range_len = i + 1 == n ? len - i * bs : bs;
        r[i].rx.dst = (char *)buf + i * bs;
        r[i].rx.dst_len = r[i].range_len;
    }
    int rc = n == 0 ? 0 : n == 1 ? sr_az_do(az, r) : azst_batch(az, r, n);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0 && r[i].rx.got != r[i].range_len) {
            char name[2400];
            sr_az_name(az, s->key, name, sizeof(name));
            rc = sr_errf(-EIO, "%s: short read at %llu (%llu of %llu bytes)", name,
                         (unsigned long long)r[i].range_off, (unsigned long long)r[i].rx.got,
                         (unsigned long long)r[i].range_len);
        }
        free(r[i].rx.resp);
    }
    if (r != &one)
        free(r);
    return rc;
}

/* The whole blob's checksum, read in windows of CONCURRENCY blocks whose
 * ranges are fetched side by side (the codec's own loop reads 4 MiB at a
 * time, one after another: one round trip each). */
static int src_checksum(void *ctx, char out[SR_CHECKSUM_LEN])
{
    struct az_src *s = ctx;
    const struct sr_az *az = az_of(s->st);
    const size_t win = az->concurrency * az->block_size;
    const size_t cap = s->size < win ? (size_t)s->size : win;
    uint8_t *buf = malloc(cap ? cap : 1);
    XXH3_state_t *h = XXH3_createState();
    int rc = buf && h ? 0 : sr_errf(-ENOMEM, "out of memory");
    if (rc == 0)
        XXH3_128bits_reset(h);
    for (uint64_t off = 0; rc == 0 && off < s->size; off += cap) {
        const size_t n = s->size - off < cap ? (size_t)(s->size - off) : cap;
        if ((rc = src_read_at(s, buf, n, off)) == 0)
            XXH3_128bits_update(h, buf, n);
    }
    if (rc == 0) {
        const XXH128_hash_t d = XXH3_128bits_digest(h);
        sr_checksum_format(d.high64, d.low64, out);
    }
    XXH3_freeState(h);
    free(buf);
    return rc;
}

static int az_source(struct sr_store *st, const char *key, struct sr_source *src)
{
    memset(src, 0, sizeof(*src));
    struct az_src *s = calloc(1, sizeof(*s));
    if (!s || !(s->key = strdup(key))) {
        free(s);
        return sr_errf(-ENOMEM, "out of memory");
    }
    s->st = st;
    const int rc = azst_size(st, key, &src->size);
    if (rc < 0) {
        free(s->key);
        free(s);
        return rc;
    }
    s->size = src->size;
    src->ctx = s;
    src->read_at = src_read_at;
    src->checksum = src_checksum;
    return 0;
}

static void az_source_close(struct sr_store *st, struct sr_source *src)
{
    (void)st;
    struct az_src *s = src->ctx;
    if (s)
        free(s->key);
    free(s);
    src->ctx = NULL;
}

static void az_close(struct sr_store *st)
{
    sr_az_close(st->impl);
    sr_store_unadopt(st);
}

static void az_close_impl(void *impl)
{
    sr_az_close(impl);
}

static const struct sr_store_ops az_ops = {
    .scheme = "az",
    .put = az_put,
    .put_file = az_put_file,
    .put_if = az_put_if,
    .get_etag = az_get_etag,
    .get = az_get,
    .size = azst_size,
    .source = az_source,
    .source_close = az_source_close,
    .list = sr_store_paged_list,
    .list_keys = sr_store_paged_list_keys,
    .page = az_page,
    .del = az_del,
    .close = az_close,
    .writer_open = azst_writer_open,
    .writer_write = azst_writer_write,
    .writer_commit = azst_writer_commit,
    .writer_close = azst_writer_close,
    .streams = 1,
};

static int valid_name(const char *s, size_t min, size_t max, int hyphen)
{
    const size_t n = strlen(s);
    if (n < min || n > max)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || (hyphen && *p == '-')))
            return 0;
    return 1;
}

int sr_store_az_open(const char *url, struct sr_store **out)
{
    *out = NULL;
    char account[64] = "", container[64] = "", prefix[1024];
    const char *a = url + 5; /* after "az://" */
    const size_t al = strcspn(a, "/");
    const char *c = a + al + (a[al] == '/');
    const size_t cl = strcspn(c, "/");
    if (al < sizeof(account) && cl < sizeof(container)) {
        memcpy(account, a, al);
        memcpy(container, c, cl);
    }
    if (!valid_name(account, 3, 24, 0) || !valid_name(container, 3, 63, 1))
        return sr_errf(-EINVAL,
                       "invalid store URL %s (want az://account/container/prefix: an "
                       "account of 3-24 lowercase letters and digits, a container of "
                       "3-63 lowercase letters, digits and hyphens)",
                       url);
    char canon[1200];
    int rc = sr_store_url_prefix(url, c + cl, prefix, sizeof(prefix));
    if (rc < 0)
        return rc;
    snprintf(canon, sizeof(canon), "az://%s/%s%s%s", account, container, *prefix ? "/" : "",
             prefix);
    struct sr_az *az = NULL;
    rc = sr_az_open(account, container, prefix, &az);
    return sr_store_adopt(&az_ops, canon, az, az ? az->prefix : NULL, rc, az_close_impl, out);
}
