/*
 * store.h - where checkpoints live: a tiny object-store interface with one
 * implementation per backend ("file" here, "s3" later), in the style of
 * redis' rio: callers never know which backend they talk to.
 *
 * Keys are '/'-separated relative paths ("run/ckpt/0000000003/MANIFEST.json");
 * they never start with '/', never contain "..", "." or empty segments.
 *
 * Every put is atomic and durable: a reader sees the whole new object or
 * nothing (file backend: temp + fsync + rename + fsync dir). A store handle
 * may be used from several threads at once.
 *
 * URLs: "file:///abs/path", a plain path (relative ones are made absolute),
 * "s3://bucket/prefix" (store_s3.c), "az://account/container/prefix"
 * (store_az.c).
 */
#ifndef SPOTRUN_STORE_H
#define SPOTRUN_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"

struct sr_store;

/* A sorted, owned list of strings. A listing that says each object's
 * size (sr_store_list_keys on S3) also fills sizes (NULL otherwise):
 * sizes[i] is v[i]'s size in bytes, SR_SIZE_UNKNOWN where not said; one
 * that says each object's ETag fills etags likewise (NULL where not said). */
#define SR_SIZE_UNKNOWN UINT64_MAX
struct sr_strlist {
    char **v;
    size_t n, cap;
    uint64_t *sizes;
    char **etags;
};
int sr_strlist_push(struct sr_strlist *l, const char *s);
/* As push, with s's size (makes sizes when it is NULL). */
int sr_strlist_push_sized(struct sr_strlist *l, const char *s, uint64_t size);
/* As push_sized, with s's ETag too (NULL: unknown; makes etags when it is NULL). */
int sr_strlist_push_tagged(struct sr_strlist *l, const char *s, uint64_t size, const char *etag);
/* v[i]'s size, SR_SIZE_UNKNOWN when the listing did not say it. */
uint64_t sr_strlist_size(const struct sr_strlist *l, size_t i);
/* v[i]'s ETag, NULL when the listing did not say it. */
const char *sr_strlist_etag(const struct sr_strlist *l, size_t i);
void sr_strlist_sort(struct sr_strlist *l);
/* Drops the dot-names (a backend's hidden objects), sizes kept in step. */
void sr_strlist_drop_hidden(struct sr_strlist *l);
void sr_strlist_free(struct sr_strlist *l);

/* Default store URL: $SPOTRUN_STORE, else ${XDG_DATA_HOME:-$HOME/.local/share}/spotrun/store.
 * Writes into buf; returns 0 or -ENAMETOOLONG / -ENOENT (no HOME). */
int sr_store_default_url(char *buf, size_t len);

/* Opens the store at url, creating a missing file store's directory.
 * A URL that looks like a mistyped scheme ("s3:/b", "s3:b", "S3://b",
 * "s3//b", "file:/x", "gs:b") is -EINVAL with a message naming the likely
 * intended URL, never a relative directory: a local directory whose name
 * looks like that is written "./s3:b" or "file:///abs/s3:b". */
int sr_store_open(const char *url, struct sr_store **out);
/* As sr_store_open, for commands that only read (ls, show, pull...): a
 * missing file store is -ENOENT ("no store at /x: ...") and nothing is
 * created on disk. */
int sr_store_open_existing(const char *url, struct sr_store **out);
/* As sr_store_open_existing, for the commands that only read (ls, show,
 * stats, pull, sweep show...): a file store this process may not write (a
 * read-only mount, read permission only) opens read-only, with one debug
 * line, instead of failing. On a read-only handle every write (put,
 * put_if, put_file_new, delete, a writer) is -EROFS and touches nothing;
 * sr_store_read_only() says so, and the readers' snapshots are then not
 * written. An S3 or Azure store cannot tell before a write: there a write
 * refused by read-only credentials is -EACCES, as any refused write. */
int sr_store_open_reader(const char *url, struct sr_store **out);
/* 1 when the handle was opened read-only (sr_store_open_reader). */
int sr_store_read_only(const struct sr_store *st);
void sr_store_close(struct sr_store *st);
/* Canonical URL, for messages ("file:///var/lib/spotrun"). */
const char *sr_store_url(const struct sr_store *st);
/* Where the store is, for a person: a file store's absolute path, an S3
 * store's URL with its endpoint ("s3://b/p at https://b.s3.eu-west-1...."). */
void sr_store_describe(const struct sr_store *st, char *buf, size_t len);

int sr_store_put(struct sr_store *st, const char *key, const void *buf, size_t len);
/* Stores the file at path as an object that is never replaced (a
 * checkpoint's data): the write fails with -EEXIST when key exists by the
 * time it lands (file: link(); S3: If-None-Match: * on the PUT or on
 * CompleteMultipartUpload), so a stale writer cannot overwrite another's
 * object of the same seq. Servers that ignore the header replace it. The
 * backend may take the file over (the file backend hard-links it when on
 * the same filesystem): the caller must not modify it in place afterwards;
 * unlinking it is fine. */
int sr_store_put_file_new(struct sr_store *st, const char *key, const char *path);
/* Whole object into a NUL-terminated malloc'd buffer; -EFBIG over max. */
int sr_store_get(struct sr_store *st, const char *key, size_t max, char **buf, size_t *len);
/* -ENOENT when missing. */
int sr_store_size(struct sr_store *st, const char *key, uint64_t *size);
/* A ranged reader over an object (used by the codec); close with
 * sr_store_source_close(). */
int sr_store_source(struct sr_store *st, const char *key, struct sr_source *src);
/* One read of a planned sequence (sr_store_source_ranged). */
struct sr_range {
    uint64_t off, len;
};
/* As sr_store_source, for a reader that wants some ranges of the object,
 * not the whole of it (a delta checkpoint's frames in an older object),
 * and no source checksum. reads (nreads of them, may be NULL / 0) are the
 * reads to come, in order: a backend may fetch those bytes ahead (S3: the
 * download ring over just them, adjacent reads coalesced), never the
 * others. Reads outside the plan still work. Close with
 * sr_store_source_close(). */
int sr_store_source_ranged(struct sr_store *st, const char *key, const struct sr_range *reads,
                           size_t nreads, struct sr_source *src);
void sr_store_source_close(struct sr_store *st, struct sr_source *src);
/* Names directly under prefix (a "directory": "run/ckpt"), files and
 * sub-"directories" alike, without the prefix, sorted. A missing prefix
 * gives an empty list. */
int sr_store_list(struct sr_store *st, const char *prefix, struct sr_strlist *out);
/* Every object key that starts with prefix, a string prefix of keys
 * rather than a "directory" ("lr-search-" lists the objects of every run
 * of that name), sorted, in as few requests as the backend allows (S3:
 * ListObjectsV2 without a delimiter, 1000 keys per request), with each
 * object's size (out->sizes) and, where the answer says it, its ETag
 * (out->etags: the one sr_store_get_etag gives). -ENOTSUP when
 * the backend has no such listing (file: its directories are local, list
 * them level by level). */
int sr_store_list_keys(struct sr_store *st, const char *prefix, struct sr_strlist *out);
/* Missing key is fine. Empty parent "directories" are pruned (file backend). */
int sr_store_delete(struct sr_store *st, const char *key);

/* Streaming writer: an object written in pieces as they are produced (push
 * streams the archive straight from the compressor), never replaced (as
 * put_file_new: commit fails with -EEXIST when key exists by then).
 * Nothing is visible under key before commit succeeds; then the whole
 * object is (atomic, as put). abort (or a failed write/commit, which must
 * still be followed by abort) discards everything. Memory is bounded by
 * the backend, whatever the object size (s3: a few parts). One writer
 * belongs to one thread. */
struct sr_store_writer {
    struct sr_store *st;
    uint64_t bytes; /* written so far */
};
int sr_store_writer_open_new(struct sr_store *st, const char *key, struct sr_store_writer **out);
int sr_store_writer_write(struct sr_store_writer *w, const void *buf, size_t len);
int sr_store_writer_commit(struct sr_store_writer *w);
/* Frees the writer; discards the object unless commit succeeded. NULL is fine. */
void sr_store_writer_close(struct sr_store_writer *w);
/* An sr_sink_fn over a writer (ctx = the writer). */
int sr_store_writer_sink(void *ctx, const void *buf, size_t len);
/* 1 when streaming into the store beats staging a local file first: the
 * backend uploads while the object is still being written (s3). The file
 * backend writes a temp file beside the object either way (and adopts a
 * staged file by hard link), so it answers 0. */
int sr_store_streams(const struct sr_store *st);

/* Conditional writes (leases and fencing, storage/run/lease.c). An ETag names
 * one version of an object: the file backend's is a hash of the content,
 * S3's is the server's. With match NULL, put_if creates key only if it does
 * not exist (-EEXIST otherwise; S3 "If-None-Match: *"); with match, it
 * replaces key only if its current ETag is match (-ESTALE when it differs,
 * -ENOENT when key is gone; S3 "If-Match"). etag (may be NULL) receives the
 * new version's ETag. The file backend makes the check and the write one
 * atomic step for every writer on the machine (flock) and for other
 * machines sharing the directory where the filesystem's locks are
 * coherent (NFSv4). An S3 server that ignores the headers writes anyway:
 * storage/run/lease.c detects that (docs/store.md, "Single owner"). */
#define SR_ETAG_MAX 128
int sr_store_put_if(struct sr_store *st, const char *key, const void *buf, size_t len,
                    const char *match, char *etag);
/* 1 when key holds exactly the len bytes of buf (etag, may be NULL, gets
 * its ETag), else 0 (missing, different, unreadable). After a conditional
 * write failed its condition: were these bytes ours, landed by an earlier
 * try of the same request (a retry after a lost answer)? */
int sr_store_holds(struct sr_store *st, const char *key, const void *buf, size_t len, char *etag);
/* As sr_store_get, plus the object's ETag (etag may be NULL). Over max
 * (-EFBIG) etag still gets the object's ETag where the backend can say it
 * without holding the object (file: hashed in pieces; S3, Azure: the
 * answer's header), else "": a conditional write can replace an object
 * too large to read (an oversized LEASE, storage/run/lease.c). */
int sr_store_get_etag(struct sr_store *st, const char *key, size_t max, char **buf, size_t *len,
                      char *etag);

/* Backend vtable (store_*.c). */
struct sr_store_ops {
    const char *scheme;
    int (*put)(struct sr_store *, const char *key, const void *buf, size_t len);
    int (*put_file)(struct sr_store *, const char *key, const char *path, int create);
    int (*get)(struct sr_store *, const char *key, size_t max, char **buf, size_t *len);
    int (*size)(struct sr_store *, const char *key, uint64_t *size);
    int (*source)(struct sr_store *, const char *key, struct sr_source *src);
    void (*source_close)(struct sr_store *, struct sr_source *src);
    /* NULL: source already reads only what is asked for */
    int (*source_ranged)(struct sr_store *, const char *key, const struct sr_range *reads,
                         size_t nreads, struct sr_source *src);
    int (*list)(struct sr_store *, const char *prefix, struct sr_strlist *out);
    int (*del)(struct sr_store *, const char *key);
    void (*close)(struct sr_store *);
    /* put_file and the streaming writer take create (only if key does not
     * exist: -EEXIST); the public calls always ask for it. The backend's
     * writer embeds struct sr_store_writer first. close frees it (and
     * discards an uncommitted object). */
    int (*writer_open)(struct sr_store *, const char *key, int create,
                       struct sr_store_writer **out);
    int (*writer_write)(struct sr_store_writer *, const void *buf, size_t len);
    int (*writer_commit)(struct sr_store_writer *);
    void (*writer_close)(struct sr_store_writer *);
    int (*put_if)(struct sr_store *, const char *key, const void *buf, size_t len,
                  const char *match, char *etag);
    int (*get_etag)(struct sr_store *, const char *key, size_t max, char **buf, size_t *len,
                    char *etag);
    /* NULL: sr_store_list_keys() answers -ENOTSUP */
    int (*list_keys)(struct sr_store *, const char *prefix, struct sr_strlist *out);
    /* A paged backend's one listing page, for sr_store_paged_list (NULL
     * otherwise): lists below full (the listing's prefix relative to the
     * bucket or container; for list with a trailing '/') the names one
     * level below it when root is NULL, else every key below it named from
     * root (the store's base and '/'), continuing from token ("" for the
     * first page); next gets the next page's token ("" after the last). */
    int (*page)(void *impl, const char *full, const char *root, const char *token, char *next,
                size_t nlen, struct sr_strlist *out);
    int streams; /* see sr_store_streams() */
};

struct sr_store {
    const struct sr_store_ops *ops;
    char *url;
    void *impl;
    int read_only;    /* sr_store_open_reader found it not writable: writes are -EROFS */
    const char *base; /* a remote backend's prefix in its bucket ("" or "a/b"), in impl */
};

int sr_store_file_open(const char *path, struct sr_store **out);
/* As sr_store_file_open, without creating a missing root (-ENOENT). */
int sr_store_file_open_existing(const char *path, struct sr_store **out);
/* As sr_store_file_open_existing; a root this process may not write opens
 * read-only (sr_store_open_reader). */
int sr_store_file_open_reader(const char *path, struct sr_store **out);
/* url is "s3://bucket[/prefix]"; see store_s3.c and docs/s3.md. */
int sr_store_s3_open(const char *url, struct sr_store **out);
/* url is "az://account/container[/prefix]"; see store_az.c and docs/azure.md. */
int sr_store_az_open(const char *url, struct sr_store **out);

/* Percent-encodes s for a URL path or query (RFC 3986: the unreserved
 * characters kept, '/' too when keep_slash), as the S3 and Azure backends
 * sign and send it; -ENAMETOOLONG when out is too small. */
int sr_url_escape(const char *s, int keep_slash, char *out, size_t len);

/* ---- for backends (store_s3.c, store_az.c; storage/store/README.md) ---- */

/* The prefix of a remote store URL from p (what follows the bucket or
 * container) into prefix: no leading or trailing '/'; -EINVAL with a
 * message naming url for an empty, "." or ".." segment. */
int sr_store_url_prefix(const char *url, const char *p, char *prefix, size_t len);
/* The store handle of a backend's opened client: ops, the canonical URL
 * (copied), impl and its base (the prefix in the bucket). rc < 0 (the client did not open) is
 * returned as "cannot open URL: why"; out of memory closes impl with close_impl. */
int sr_store_adopt(const struct sr_store_ops *ops, const char *canon, void *impl, const char *base,
                   int rc, void (*close_impl)(void *), struct sr_store **out);
/* Frees the handle sr_store_adopt made (not its impl). */
void sr_store_unadopt(struct sr_store *st);

/* list and list_keys of a backend whose listing comes in pages (S3's
 * ListObjectsV2, Azure's List Blobs): every page from ops->page, below
 * the store's base; list drops hidden names (as the file backend does);
 * both sort. */
int sr_store_paged_list(struct sr_store *st, const char *prefix, struct sr_strlist *out);
int sr_store_paged_list_keys(struct sr_store *st, const char *prefix, struct sr_strlist *out);

#endif
