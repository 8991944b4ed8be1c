/*
 * store.c - the backend-independent half of the store (see store.h): URL
 * parsing and dispatch to a backend, key validation, string lists, the
 * default store location.
 *
 * DESIGN: every public sr_store_* call validates its key here, before any
 * backend sees it, so no backend can be tricked into touching anything
 * outside its root ("../x", "/abs", "a//b", "."). Backends may therefore
 * join keys to their root naively.
 *
 * Threads: the wrappers keep no state; thread safety is the backend's (the
 * file backend has no shared mutable state).
 */
#include "store.h"
#include "log.h"
#include "az.h"
#include "s3.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define KEY_MAX 1024

int sr_strlist_push(struct sr_strlist *l, const char *s)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return sr_errf(-ENOMEM, "cannot grow a list: %s", strerror(ENOMEM));
        l->v = v;
        if (l->sizes) {
            uint64_t *z = realloc(l->sizes, cap * sizeof(*z));
            if (!z)
                return sr_errf(-ENOMEM, "cannot grow a list: %s", strerror(ENOMEM));
            l->sizes = z;
        }
        if (l->etags) {
            char **e = realloc(l->etags, cap * sizeof(*e));
            if (!e)
                return sr_errf(-ENOMEM, "cannot grow a list: %s", strerror(ENOMEM));
            l->etags = e;
        }
        l->cap = cap;
    }
    char *d = strdup(s);
    if (!d)
        return sr_errf(-ENOMEM, "cannot grow a list: %s", strerror(ENOMEM));
    if (l->sizes)
        l->sizes[l->n] = SR_SIZE_UNKNOWN;
    if (l->etags)
        l->etags[l->n] = NULL;
    l->v[l->n++] = d;
    return 0;
}

int sr_strlist_push_sized(struct sr_strlist *l, const char *s, uint64_t size)
{
    if (!l->sizes) {
        l->sizes = malloc((l->cap ? l->cap : 1) * sizeof(*l->sizes));
        if (!l->sizes)
            return sr_errf(-ENOMEM, "cannot grow a list: %s", strerror(ENOMEM));
        for (size_t i = 0; i < l->n; i++)
            l->sizes[i] = SR_SIZE_UNKNOWN;
    }
    const int rc = sr_strlist_push(l, s);
    if (rc == 0)
        l->sizes[l->n - 1] = size;
    return rc;
}

int sr_strlist_push_tagged(struct sr_strlist *l, const char *s, uint64_t size, const char *etag)
{
    if (!l->etags) {
        l->etags = calloc(l->cap ? l->cap : 1, sizeof(*l->etags));
        if (!l->etags)
            return sr_errf(-ENOMEM, "cannot grow a list: %s", strerror(ENOMEM));
    }
    char *e = etag ? strdup(etag) : NULL;
    if (etag && !e)
        return sr_errf(-ENOMEM, "cannot grow a list: %s", strerror(ENOMEM));
    const int rc = sr_strlist_push_sized(l, s, size);
    if (rc == 0)
        l->etags[l->n - 1] = e;
    else
        free(e);
    return rc;
}

uint64_t sr_strlist_size(const struct sr_strlist *l, size_t i)
{
    return l->sizes && i < l->n ? l->sizes[i] : SR_SIZE_UNKNOWN;
}

const char *sr_strlist_etag(const struct sr_strlist *l, size_t i)
{
    return l->etags && i < l->n ? l->etags[i] : NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

struct sized {
    char *s;
    uint64_t size;
    char *etag;
};

static int cmp_sized(const void *a, const void *b)
{
    return strcmp(((const struct sized *)a)->s, ((const struct sized *)b)->s);
}

void sr_strlist_sort(struct sr_strlist *l)
{
    if (l->n < 2)
        return;
    struct sized *p = l->sizes || l->etags ? malloc(l->n * sizeof(*p)) : NULL;
    if (!p) { /* no sizes; or no memory for them: they are unknown then */
        free(l->sizes);
        l->sizes = NULL;
        for (size_t i = 0; l->etags && i < l->n; i++)
            free(l->etags[i]);
        free(l->etags);
        l->etags = NULL;
        qsort(l->v, l->n, sizeof(*l->v), cmp_str);
        return;
    }
    for (size_t i = 0; i < l->n; i++)
        p[i] = (struct sized){l->v[i], sr_strlist_size(l, i), l->etags ? l->etags[i] : NULL};
    qsort(p, l->n, sizeof(*p), cmp_sized);
    for (size_t i = 0; i < l->n; i++) {
        l->v[i] = p[i].s;
        if (l->sizes)
            l->sizes[i] = p[i].size;
        if (l->etags)
            l->etags[i] = p[i].etag;
    }
    free(p);
}

void sr_strlist_free(struct sr_strlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i]);
        if (l->etags)
            free(l->etags[i]);
    }
    free(l->v);
    free(l->sizes);
    free(l->etags);
    l->sizes = NULL;
    l->etags = NULL;
    l->v = NULL;
    l->n = l->cap = 0;
}

int sr_store_default_url(char *buf, size_t len)
{
    const char *env = getenv("SPOTRUN_STORE");
    int n;
    if (env && *env) {
        n = snprintf(buf, len, "%s", env);
    } else {
        const char *xdg = getenv("XDG_DATA_HOME");
        const char *home = getenv("HOME");
        if (xdg && xdg[0] == '/') /* the XDG spec says to ignore relative values */
            n = snprintf(buf, len, "%s/spotrun/store", xdg);
        else if (home && *home)
            n = snprintf(buf, len, "%s/.local/share/spotrun/store", home);
        else
            return sr_errf(-ENOENT, "no default store: neither SPOTRUN_STORE nor HOME is set "
                                    "(pass --store)");
    }
    if (n < 0 || (size_t)n >= len)
        return sr_errf(-ENAMETOOLONG, "default store path is too long");
    return 0;
}

/* 1 when url starts with "scheme://". */
static int has_scheme(const char *url)
{
    const char *p = url;
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
        return 0;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
           *p == '+' || *p == '.' || *p == '-')
        p++;
    return strncmp(p, "://", 3) == 0;
}

/* Absolute form of a local path (relative to the working directory). */
static int abs_path(const char *url, const char *path, char *out, size_t len)
{
    int n;
    if (path[0] == '/') {
        n = snprintf(out, len, "%s", path);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof(cwd)))
            return sr_errf(-errno, "cannot open store %s: cannot get the working directory: %s",
                           url, strerror(errno));
        n = snprintf(out, len, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, path);
    }
    if (n < 0 || (size_t)n >= len)
        return sr_errf(-ENAMETOOLONG, "cannot open store %s: path too long", url);
    size_t l = strlen(out);
    while (l > 1 && out[l - 1] == '/')
        out[--l] = '\0';
    return 0;
}

/* Length of a URL scheme at the start of url ("s3" in "s3:/x"): a letter,
 * then letters, digits, '+', '.', '-', up to a ':'. 0 when there is none. */
static size_t scheme_len(const char *url)
{
    const char *p = url;
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
        return 0;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
           *p == '+' || *p == '.' || *p == '-')
        p++;
    return *p == ':' ? (size_t)(p - url) : 0;
}

/* -EINVAL with a message naming the intended URL when url looks like a
 * mistyped one: "s3:/b", "s3:b", "S3://b", "s3//b", "file:/x", "File:///x",
 * or any other "scheme:" ("gs:b", "host:dir"). Such a string is also a
 * valid relative path, but a directory named like that is far less likely
 * than a typo that would put the checkpoints on a disk that dies with the
 * VM; "./s3:b" or "file:///abs/s3:b" still names one. */
static int check_typo(const char *url)
{
    if (strncmp(url, "s3://", 5) == 0 || strncmp(url, "file://", 7) == 0 ||
        strncmp(url, "az://", 5) == 0)
        return 0;
    size_t n = scheme_len(url);
    const char *rest = url + n + 1;
    if (n == 0) { /* "s3//bucket": the colon is missing */
        if (strncasecmp(url, "s3//", 4) == 0 || strncasecmp(url, "az//", 4) == 0)
            n = 2, rest = url + 2;
        else if (strncasecmp(url, "file//", 6) == 0)
            n = 4, rest = url + 4;
        else
            return 0;
    }
    while (*rest == ':' || *rest == '/')
        rest++;
    if (n == 2 && strncasecmp(url, "s3", 2) == 0)
        return sr_errf(-EINVAL,
                       "store URL %s looks like a mistyped s3://%s (for a local directory of "
                       "that name, write ./%s)",
                       url, rest, url);
    if (n == 2 && strncasecmp(url, "az", 2) == 0)
        return sr_errf(-EINVAL,
                       "store URL %s looks like a mistyped az://%s (for a local directory of "
                       "that name, write ./%s)",
                       url, rest, url);
    if (n == 4 && strncasecmp(url, "file", 4) == 0)
        return sr_errf(-EINVAL,
                       "store URL %s looks like a mistyped file:///%s (for a local directory of "
                       "that name, write ./%s)",
                       url, rest, url);
    if (has_scheme(url))
        return sr_errf(-EINVAL,
                       "unsupported store URL %s (use a path, file:///path, "
                       "s3://bucket/prefix or az://account/container/prefix)",
                       url);
    return sr_errf(-EINVAL,
                   "store URL %s starts with an unknown scheme \"%.*s:\" (use a path, "
                   "file:///path, s3://bucket/prefix or az://account/container/prefix; for a "
                   "local directory of that name, "
                   "write ./%s)",
                   url, (int)n, url, url);
}

enum open_mode { OPEN_CREATE, OPEN_EXISTING, OPEN_READER };

static int store_open(const char *url, enum open_mode mode, struct sr_store **out)
{
    *out = NULL;
    if (!url || !*url)
        return sr_errf(-EINVAL, "unsupported store URL \"\" (use a path, file:///path, "
                                "s3://bucket/prefix or az://account/container/prefix)");
    const int trc = check_typo(url);
    if (trc < 0)
        return trc;
    if (strncmp(url, "s3://", 5) == 0)
        return sr_store_s3_open(url, out);
    if (strncmp(url, "az://", 5) == 0)
        return sr_store_az_open(url, out);
    const char *path = url;
    if (strncmp(url, "file://", 7) == 0) {
        path = url + 7;
        if (path[0] != '/')
            return sr_errf(-EINVAL,
                           "unsupported store URL %s (file URLs need an absolute path: "
                           "file:///path)",
                           url);
    }
    char abs[PATH_MAX];
    int rc = abs_path(url, path, abs, sizeof(abs));
    if (rc < 0)
        return rc;
    return mode == OPEN_CREATE     ? sr_store_file_open(abs, out)
           : mode == OPEN_EXISTING ? sr_store_file_open_existing(abs, out)
                                   : sr_store_file_open_reader(abs, out);
}

int sr_store_open(const char *url, struct sr_store **out)
{
    return store_open(url, OPEN_CREATE, out);
}

int sr_store_open_existing(const char *url, struct sr_store **out)
{
    return store_open(url, OPEN_EXISTING, out);
}

int sr_store_open_reader(const char *url, struct sr_store **out)
{
    return store_open(url, OPEN_READER, out);
}

int sr_store_read_only(const struct sr_store *st)
{
    return st->read_only;
}

/* A write on a read-only handle: refused before the backend sees it. */
static int check_writable(const struct sr_store *st, const char *key)
{
    if (!st->read_only)
        return 0;
    return sr_errf(-EROFS, "store %s is read-only here: cannot write %s", st->url, key);
}

void sr_store_close(struct sr_store *st)
{
    if (st)
        st->ops->close(st);
}

const char *sr_store_url(const struct sr_store *st)
{
    return st->url;
}

void sr_store_describe(const struct sr_store *st, char *buf, size_t len)
{
    if (strncmp(st->url, "file://", 7) == 0) {
        snprintf(buf, len, "%s", st->url + 7);
    } else if (strncmp(st->url, "s3://", 5) == 0 && st->impl) {
        const struct sr_s3 *s3 = st->impl;
        snprintf(buf, len, "%s at %s (region %s)", st->url, s3->base, s3->region);
    } else if (strncmp(st->url, "az://", 5) == 0 && st->impl) {
        const struct sr_az *az = st->impl;
        snprintf(buf, len, "%s at %s", st->url, az->base);
    } else {
        snprintf(buf, len, "%s", st->url);
    }
}

/* 0 when key is a valid relative key (or, with allow_empty, ""). */
static int check_key(const struct sr_store *st, const char *key, int allow_empty)
{
    if (!key)
        return sr_errf(-EINVAL, "store %s: missing key", st->url);
    size_t n = strlen(key);
    if (n == 0 && allow_empty)
        return 0;
    if (n == 0 || n > KEY_MAX)
        return sr_errf(-EINVAL, "store %s: invalid key \"%.64s\" (empty or over %d bytes)", st->url,
                       key, KEY_MAX);
    const char *seg = key;
    for (;;) {
        const char *end = strchr(seg, '/');
        size_t sl = end ? (size_t)(end - seg) : strlen(seg);
        if (sl == 0 || (sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.'))
            return sr_errf(-EINVAL,
                           "store %s: invalid key \"%s\" (absolute, empty, \".\" or \"..\" "
                           "segment)",
                           st->url, key);
        if (!end)
            return 0;
        seg = end + 1;
    }
}

int sr_store_put(struct sr_store *st, const char *key, const void *buf, size_t len)
{
    int rc = check_key(st, key, 0);
    if (rc == 0)
        rc = check_writable(st, key);
    return rc < 0 ? rc : st->ops->put(st, key, buf, len);
}

int sr_store_put_file_new(struct sr_store *st, const char *key, const char *path)
{
    int rc = check_key(st, key, 0);
    if (rc == 0)
        rc = check_writable(st, key);
    return rc < 0 ? rc : st->ops->put_file(st, key, path, 1);
}

int sr_store_get(struct sr_store *st, const char *key, size_t max, char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    int rc = check_key(st, key, 0);
    return rc < 0 ? rc : st->ops->get(st, key, max, buf, len);
}

int sr_store_get_etag(struct sr_store *st, const char *key, size_t max, char **buf, size_t *len,
                      char *etag)
{
    *buf = NULL;
    *len = 0;
    char scratch[SR_ETAG_MAX];
    int rc = check_key(st, key, 0);
    return rc < 0 ? rc : st->ops->get_etag(st, key, max, buf, len, etag ? etag : scratch);
}

int sr_store_holds(struct sr_store *st, const char *key, const void *buf, size_t len, char *etag)
{
    char *back = NULL;
    size_t blen = 0;
    const int same = sr_store_get_etag(st, key, len + 1, &back, &blen, etag) == 0 && blen == len &&
                     memcmp(back, buf, len) == 0;
    free(back);
    return same;
}

int sr_store_put_if(struct sr_store *st, const char *key, const void *buf, size_t len,
                    const char *match, char *etag)
{
    char scratch[SR_ETAG_MAX];
    int rc = check_key(st, key, 0);
    if (rc == 0)
        rc = check_writable(st, key);
    return rc < 0 ? rc : st->ops->put_if(st, key, buf, len, match, etag ? etag : scratch);
}

int sr_store_size(struct sr_store *st, const char *key, uint64_t *size)
{
    int rc = check_key(st, key, 0);
    return rc < 0 ? rc : st->ops->size(st, key, size);
}

int sr_store_source(struct sr_store *st, const char *key, struct sr_source *src)
{
    memset(src, 0, sizeof(*src));
    int rc = check_key(st, key, 0);
    return rc < 0 ? rc : st->ops->source(st, key, src);
}

int sr_store_source_ranged(struct sr_store *st, const char *key, const struct sr_range *reads,
                           size_t nreads, struct sr_source *src)
{
    if (!st->ops->source_ranged)
        return sr_store_source(st, key, src);
    memset(src, 0, sizeof(*src));
    int rc = check_key(st, key, 0);
    return rc < 0 ? rc : st->ops->source_ranged(st, key, reads, nreads, src);
}

void sr_store_source_close(struct sr_store *st, struct sr_source *src)
{
    if (src && src->ctx)
        st->ops->source_close(st, src);
}

int sr_store_list(struct sr_store *st, const char *prefix, struct sr_strlist *out)
{
    memset(out, 0, sizeof(*out));
    int rc = check_key(st, prefix, 1);
    return rc < 0 ? rc : st->ops->list(st, prefix, out);
}

int sr_store_list_keys(struct sr_store *st, const char *prefix, struct sr_strlist *out)
{
    memset(out, 0, sizeof(*out));
    if (!st->ops->list_keys)
        return -ENOTSUP;
    if (strstr(prefix, "..") || prefix[0] == '/')
        return sr_errf(-EINVAL, "invalid key prefix \"%s\"", prefix);
    return st->ops->list_keys(st, prefix, out);
}

int sr_store_delete(struct sr_store *st, const char *key)
{
    int rc = check_key(st, key, 0);
    if (rc == 0)
        rc = check_writable(st, key);
    return rc < 0 ? rc : st->ops->del(st, key);
}

int sr_store_writer_open_new(struct sr_store *st, const char *key, struct sr_store_writer **out)
{
    *out = NULL;
    int rc = check_key(st, key, 0);
    if (rc == 0)
        rc = check_writable(st, key);
    if (rc < 0)
        return rc;
    if (!st->ops->writer_open)
        return sr_errf(-EOPNOTSUPP, "store %s cannot stream uploads", st->url);
    rc = st->ops->writer_open(st, key, 1, out);
    if (rc == 0) {
        (*out)->st = st;
        (*out)->bytes = 0;
    }
    return rc;
}

int sr_store_writer_write(struct sr_store_writer *w, const void *buf, size_t len)
{
    if (len == 0)
        return 0;
    const int rc = w->st->ops->writer_write(w, buf, len);
    if (rc == 0)
        w->bytes += len;
    return rc;
}

int sr_store_writer_commit(struct sr_store_writer *w)
{
    return w->st->ops->writer_commit(w);
}

void sr_store_writer_close(struct sr_store_writer *w)
{
    if (w)
        w->st->ops->writer_close(w);
}

int sr_store_writer_sink(void *ctx, const void *buf, size_t len)
{
    return sr_store_writer_write(ctx, buf, len);
}

int sr_store_streams(const struct sr_store *st)
{
    return st->ops->writer_open != NULL && st->ops->streams;
}

int sr_url_escape(const char *s, int keep_slash, char *out, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const int plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                          (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' ||
                          *p == '~' || (keep_slash && *p == '/');
        if (o + 4 > len)
            return -ENAMETOOLONG;
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    if (o >= len)
        return -ENAMETOOLONG;
    out[o] = '\0';
    return 0;
}

void sr_strlist_drop_hidden(struct sr_strlist *l)
{
    size_t w = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i][0] == '.') {
            free(l->v[i]);
            if (l->etags)
                free(l->etags[i]);
            continue;
        }
        if (l->sizes)
            l->sizes[w] = l->sizes[i];
        if (l->etags)
            l->etags[w] = l->etags[i];
        l->v[w++] = l->v[i];
    }
    l->n = w;
}

/* ---- paged listings (remote backends) ------------------------------------ */

static int pages(struct sr_store *st, const char *full, const char *root, struct sr_strlist *out)
{
    char token[1024] = "", next[1024];
    int rc = 0;
    for (int page = 1;; page++) {
        next[0] = '\0';
        rc = st->ops->page(st->impl, full, root, token, next, sizeof(next), out);
        sr_debug("%s: list %s page %d: %zu names so far", st->ops->scheme, full, page, out->n);
        if (rc < 0 || !next[0])
            break;
        snprintf(token, sizeof(token), "%s", next);
    }
    if (rc < 0)
        sr_strlist_free(out);
    return rc;
}

int sr_store_paged_list(struct sr_store *st, const char *prefix, struct sr_strlist *out)
{
    char full[2200];
    const char *base = st->base;
    /* The listing prefix, relative to the bucket, with a trailing '/'. */
    snprintf(full, sizeof(full), "%s%s%s%s", base, *base && *prefix ? "/" : "", prefix,
             *base || *prefix ? "/" : "");
    const int rc = pages(st, full, NULL, out);
    if (rc < 0)
        return rc;
    sr_strlist_drop_hidden(out); /* as the file backend does */
    sr_strlist_sort(out);
    return 0;
}

int sr_store_paged_list_keys(struct sr_store *st, const char *prefix, struct sr_strlist *out)
{
    char root[1100], full[2200];
    snprintf(root, sizeof(root), "%s%s", st->base, *st->base ? "/" : "");
    snprintf(full, sizeof(full), "%s%s", root, prefix);
    const int rc = pages(st, full, root, out);
    if (rc == 0)
        sr_strlist_sort(out);
    return rc;
}

/* ---- backend handles ------------------------------------------------------ */

int sr_store_url_prefix(const char *url, const char *p, char *prefix, size_t len)
{
    while (*p == '/')
        p++;
    snprintf(prefix, len, "%s", p);
    size_t pl = strlen(prefix);
    while (pl > 0 && prefix[pl - 1] == '/')
        prefix[--pl] = '\0';
    if (strstr(prefix, "//") || strstr(prefix, "..") || prefix[0] == '.')
        return sr_errf(-EINVAL, "invalid store URL %s (empty, \".\" or \"..\" prefix segment)",
                       url);
    return 0;
}

int sr_store_adopt(const struct sr_store_ops *ops, const char *canon, void *impl, const char *base,
                   int rc, void (*close_impl)(void *), struct sr_store **out)
{
    *out = NULL;
    if (rc < 0) {
        char why[4600];
        snprintf(why, sizeof(why), "%s", sr_strerror(rc));
        return sr_errf(rc, "cannot open %s: %s", canon, why);
    }
    struct sr_store *st = calloc(1, sizeof(*st));
    char *url = strdup(canon);
    if (!st || !url) {
        free(st);
        free(url);
        close_impl(impl);
        return sr_errf(-ENOMEM, "out of memory");
    }
    *st = (struct sr_store){.ops = ops, .url = url, .impl = impl, .base = base};
    *out = st;
    return 0;
}

void sr_store_unadopt(struct sr_store *st)
{
    free(st->url);
    free(st);
}
