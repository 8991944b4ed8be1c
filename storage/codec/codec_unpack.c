/*
 * codec_unpack.c - archive -> checked frames -> libarchive -> a directory,
 * swapped in atomically.
 *
 * DESIGN: the seek table gives every frame's offset and sizes up front.
 * Worker threads (one ZSTD_DCtx each) fetch frames through src->read_at (a
 * pread, or a ranged GET), decompress them and check the decompressed size
 * and the XXH64 from the table. Frame i uses ring slot i % nslots and may be
 * fetched only once frame i - nslots has been released, so memory is bounded
 * by the ring whatever the archive size. The caller's thread is libarchive's
 * read callback: it returns frame after frame, in order, releasing the
 * previous one (libarchive's buffer contract). It reads the tar headers and
 * creates every entry (libarchive's write_disk, on this one thread); a
 * regular file of at least PARALLEL_MIN bytes is then opened and its data,
 * still in the decompressed frames, is handed to a small pool of writer
 * threads (unpack_write.c: pwrite at the tar's offsets, all-zero 4 KiB
 * blocks left as holes, at most SR_CODEC_WRITE_MAX per write). A frame's
 * slot is released only once libarchive moved past it and every write from
 * it is done (its refs). Smaller files are written by this thread. After
 * the tar end marker the remaining frames are still fetched and checked.
 *
 * Checksum: the whole-archive checksum (opts->checksum) is computed as the
 * frames stream through, in order, on the caller's thread: each frame's
 * compressed bytes as fetched, then the seek table read once more; it is
 * compared after the extraction, before the swap. A source with its own
 * checksum (a download hashing as it goes) is asked for it instead, after
 * being shown the frames (sr_source.consumed). Nothing re-reads the archive.
 *
 * Safety: every entry is checked before it is written (see check_entry());
 * libarchive's own SECURE_SYMLINKS and SECURE_NODOTDOT checks stay on as a
 * second line. Paths are prefixed with the temp directory, an absolute path
 * with no symlink in it (realpath of the target's parent), which is why
 * SECURE_NOABSOLUTEPATHS cannot be used: absolute entry names are rejected
 * by check_entry() instead. Nothing outside the temp directory is written
 * before the swap; any failure removes the temp directory.
 */
#include "codec.h"
#include "dirmark.h"
#include "fsutil.h"
#include "log.h"
#include "seektable.h"
#include "unpack_write.h"
#include "walk.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#define ZSTD_FRAME_MAGIC 0xFD2FB528u

/* Regular files of at least this size are written by the writer pool. */
#define PARALLEL_MIN (64u << 10)
/* Files the writer pool holds open at once, at most. */
#define WRITE_MAX_OPEN 64u
/* Writer threads, at most (pwrite is a copy into the page cache). */
#define WRITERS_MAX 4

/* A slot is FREE, being FETCHED, DONE (frame ready), then USED: lent to
 * libarchive and to the writes from it (refs), FREE again once refs is 0. */
enum { SLOT_FREE, SLOT_FETCHING, SLOT_DONE, SLOT_USED };

struct uslot {
    uint8_t *cbuf;
    uint8_t *dbuf;
    int state;
    unsigned refs;
    int err;
    char msg[200];
};

struct unpacker {
    pthread_mutex_t lock;
    pthread_cond_t work_cv; /* workers: a slot was released, or stop */
    pthread_cond_t done_cv; /* caller: a frame is ready */
    const struct sr_source *src;
    const struct sr_seektable *t;
    const struct sr_frame_info *want; /* expected frame hashes, or NULL */
    struct uslot *slots;
    unsigned nslots;
    uint32_t next_job, next_read;
    int stop;
    int err;            /* first error seen by the read callback */
    struct uslot *held; /* frame lent to libarchive */
    pthread_t *threads;
    int nthreads;
    struct sr_wpool *pool; /* writes the data of large files */
    /* the whole-archive checksum, as the frames stream through */
    XXH3_state_t *hash; /* computed here (a source without its own) */
    int show;           /* shown to src->consumed */
    int keep_c;         /* hash or show: compressed bytes kept in cbuf */
    /* entry checks */
    char **links; /* normalised paths of the symlinks extracted so far */
    size_t nlinks, links_cap;
    uint64_t entry_bytes, cap;
    const char *tmp;
    struct sr_unpack_stats st;
};

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- workers ---------------------------------------------------------- */

static int frame_error(struct uslot *s, uint32_t i, const char *why)
{
    snprintf(s->msg, sizeof(s->msg), "corrupt archive: frame %u: %s", i, why);
    return -EBADMSG;
}

/* Decompresses and checks frame i, compressed in c, into slot s. */
static int decode_frame(const struct unpacker *u, ZSTD_DCtx *dc, uint32_t i, const uint8_t *c,
                        struct uslot *s)
{
    const struct sr_seek_frame *const f = &u->t->frames[i];
    if (ZSTD_findFrameCompressedSize(c, f->csize) != f->csize)
        return frame_error(s, i, "not exactly one zstd frame");
    const size_t r = ZSTD_decompressDCtx(dc, s->dbuf, f->dsize, c, f->csize);
    if (ZSTD_isError(r))
        return frame_error(s, i, ZSTD_getErrorName(r));
    if (r != f->dsize)
        return frame_error(s, i, "decompressed size differs from the seek table");
    if (u->want) {
        const XXH128_hash_t h = XXH3_128bits(s->dbuf, r);
        if (h.high64 != u->want[i].hash_hi || h.low64 != u->want[i].hash_lo)
            return frame_error(s, i, "content hash differs from the manifest's");
    }
    if (!u->t->has_checksums)
        return 0;
    /* A frame with a content checksum was just verified by zstd against its
     * last 4 bytes, which are the low 32 bits of XXH64: compare those. */
    const int has_ck = rd32(c) == ZSTD_FRAME_MAGIC && (c[4] & 0x04);
    const uint32_t sum = has_ck ? rd32(c + f->csize - 4) : (uint32_t)XXH64(s->dbuf, r, 0);
    if (sum != f->checksum)
        return frame_error(s, i, "checksum mismatch");
    return 0;
}

/* Fetches frame i (borrowing the source's copy when it lends one, else
 * into the slot's buffer), then decodes it into slot s. */
static int fetch_frame(struct unpacker *u, ZSTD_DCtx *dc, uint32_t i, struct uslot *s)
{
    const struct sr_seek_frame *const f = &u->t->frames[i];
    const struct sr_source *const src = u->src;
    if (!dc) {
        snprintf(s->msg, sizeof(s->msg), "cannot create a zstd decompression context");
        return -ENOMEM;
    }
    const void *lent = NULL;
    int rc = src->borrow && !u->keep_c ? src->borrow(src->ctx, f->coff, f->csize, &lent) : 0;
    if (rc == 0)
        rc = src->read_at(src->ctx, s->cbuf, f->csize, f->coff);
    if (rc < 0) {
        snprintf(s->msg, sizeof(s->msg), "%s", sr_strerror(rc));
        return rc;
    }
    rc = decode_frame(u, dc, i, rc == 1 ? (const uint8_t *)lent : s->cbuf, s);
    if (lent)
        src->unborrow(src->ctx, f->coff, f->csize);
    return rc;
}

static void *unpack_worker(void *arg)
{
    struct unpacker *const u = arg;
    ZSTD_DCtx *const dc = ZSTD_createDCtx();
    pthread_mutex_lock(&u->lock);
    for (;;) {
        while (!u->stop &&
               (u->next_job == u->t->count || u->slots[u->next_job % u->nslots].state != SLOT_FREE))
            pthread_cond_wait(&u->work_cv, &u->lock);
        if (u->stop)
            break;
        const uint32_t i = u->next_job++;
        struct uslot *const s = &u->slots[i % u->nslots];
        s->state = SLOT_FETCHING;
        pthread_mutex_unlock(&u->lock);
        const int err = fetch_frame(u, dc, i, s);
        pthread_mutex_lock(&u->lock);
        s->err = err;
        s->state = SLOT_DONE;
        pthread_cond_broadcast(&u->done_cv);
    }
    pthread_mutex_unlock(&u->lock);
    ZSTD_freeDCtx(dc);
    return NULL;
}

/* ---- in-order consumption --------------------------------------------- */

/* Drops one reference to slot s (lock held): the last frees it. */
static void unref_locked(struct unpacker *u, struct uslot *s)
{
    if (--s->refs == 0) {
        s->state = SLOT_FREE;
        pthread_cond_broadcast(&u->work_cv);
    }
}

/* The writer pool is done with a write from slot tag. */
static void release_slot(void *ctx, void *tag)
{
    struct unpacker *const u = ctx;
    pthread_mutex_lock(&u->lock);
    unref_locked(u, tag);
    pthread_mutex_unlock(&u->lock);
}

/* Lends the slot libarchive holds to a write (the caller's thread). */
static void ref_held(struct unpacker *u)
{
    pthread_mutex_lock(&u->lock);
    u->held->refs++;
    pthread_mutex_unlock(&u->lock);
}

/* Frame i's compressed bytes, in order, into the archive's checksum. */
static void stream_frame(struct unpacker *u, uint32_t i, const struct uslot *s)
{
    const struct sr_seek_frame *const f = &u->t->frames[i];
    if (u->hash)
        XXH3_128bits_update(u->hash, s->cbuf, f->csize);
    if (u->show)
        u->src->consumed(u->src->ctx, f->coff, s->cbuf, f->csize);
}

/* Releases the frame lent to libarchive and waits for the next one.
 * Returns its size (0 at the end) or a negative errno. */
static int64_t next_block(struct unpacker *u, const void **buf)
{
    pthread_mutex_lock(&u->lock);
    if (u->held) {
        unref_locked(u, u->held);
        u->held = NULL;
    }
    if (u->next_read == u->t->count) {
        pthread_mutex_unlock(&u->lock);
        *buf = NULL;
        return 0;
    }
    const uint32_t i = u->next_read;
    struct uslot *const s = &u->slots[i % u->nslots];
    while (s->state != SLOT_DONE)
        pthread_cond_wait(&u->done_cv, &u->lock);
    s->state = SLOT_USED;
    s->refs = 1;
    pthread_mutex_unlock(&u->lock);
    u->held = s;
    if (s->err < 0)
        return sr_errf(s->err, "%s", s->msg);
    stream_frame(u, i, s);
    u->next_read++;
    u->st.frames++;
    u->st.raw_bytes += u->t->frames[i].dsize;
    *buf = s->dbuf;
    return u->t->frames[i].dsize;
}

static la_ssize_t unpack_read_cb(struct archive *a, void *ctx, const void **buf)
{
    struct unpacker *const u = ctx;
    if (u->err < 0)
        return -1;
    const int64_t n = next_block(u, buf);
    if (n < 0) {
        u->err = (int)n;
        archive_set_error(a, EBADMSG, "%s", sr_strerror((int)n));
        return -1;
    }
    return (la_ssize_t)n;
}

/* ---- entry checks ----------------------------------------------------- */

/* Normalises an entry name into out: drops "." and empty components;
 * rejects absolute names, ".." and over-long names. */
static int normalise(const char *name, char *out, size_t outlen)
{
    if (name[0] == '/')
        return sr_errf(-EPERM, "unsafe archive: absolute path \"%s\"", name);
    if (strlen(name) >= outlen)
        return sr_errf(-EPERM, "unsafe archive: name longer than PATH_MAX");
    size_t o = 0;
    for (const char *p = name; *p;) {
        const size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return sr_errf(-EPERM, "unsafe archive: \"..\" in path \"%s\"", name);
        if (n > 0 && !(n == 1 && p[0] == '.')) {
            if (o)
                out[o++] = '/';
            memcpy(out + o, p, n);
            o += n;
        }
        p += n;
        while (*p == '/')
            p++;
    }
    out[o] = '\0';
    return 0;
}

/* Refuses a tree deeper than spotrun archives (walk.h): what pack would
 * not write is a hostile archive, and a bound for whatever walks it later. */
static int check_depth(const char *norm)
{
    int depth = *norm ? 1 : 0;
    for (const char *p = norm; *p; p++)
        depth += *p == '/';
    if (depth > SR_TREE_MAX_DEPTH)
        return sr_errf(-EPERM, "unsafe archive: %.60s... is nested deeper than %d directory levels",
                       norm, SR_TREE_MAX_DEPTH);
    return 0;
}

static int check_link_target(const char *path, const char *target)
{
    if (!target || !*target)
        return sr_errf(-EPERM, "unsafe archive: symlink %s has no target", path);
    if (target[0] == '/')
        return sr_errf(-EPERM, "unsafe archive: symlink %s points to absolute path %s", path,
                       target);
    if (!sr_link_target_inside(path, target))
        return sr_errf(-EPERM, "unsafe archive: symlink %s points outside (%s)", path, target);
    return 0;
}

/* Rejects a path that goes through a symlink extracted earlier. */
static int check_through_links(const struct unpacker *u, const char *path)
{
    for (size_t i = 0; i < u->nlinks; i++) {
        const size_t n = strlen(u->links[i]);
        if (!strncmp(path, u->links[i], n) && path[n] == '/')
            return sr_errf(-EPERM, "unsafe archive: %s would be written through symlink %s", path,
                           u->links[i]);
    }
    return 0;
}

static int remember_link(struct unpacker *u, const char *path)
{
    if (u->nlinks == u->links_cap) {
        const size_t cap = u->links_cap ? u->links_cap * 2 : 16;
        char **const l = realloc(u->links, cap * sizeof(*l));
        if (!l)
            return sr_errf(-ENOMEM, "unpack: out of memory");
        u->links = l;
        u->links_cap = cap;
    }
    if (!(u->links[u->nlinks] = strdup(path)))
        return sr_errf(-ENOMEM, "unpack: out of memory");
    u->nlinks++;
    return 0;
}

/* Checks entry e (see the header) and rewrites it for extraction below the
 * temp directory. *skip is set for the archive's root entry ("./"). */
static int check_entry(struct unpacker *u, struct archive_entry *e, int *skip)
{
    char norm[PATH_MAX], full[PATH_MAX];
    const char *const name = archive_entry_pathname(e);
    if (!name)
        return sr_errf(-EPERM, "unsafe archive: entry without a usable name");
    int rc = normalise(name, norm, sizeof(norm));
    if (rc < 0)
        return rc;
    if ((rc = check_depth(norm)) < 0)
        return rc;
    if (archive_entry_hardlink(e))
        return sr_errf(-EPERM, "unsafe archive: hardlink %s", norm);
    const mode_t type = archive_entry_filetype(e);
    if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
        return sr_errf(-EPERM, "unsafe archive: %s is a device node, fifo or socket", norm);
    if (archive_entry_sparse_count(e) > 0)
        return sr_errf(-EPERM, "unsafe archive: sparse file %s", norm);
    if ((rc = check_through_links(u, norm)) < 0)
        return rc;
    if (type == AE_IFLNK && (rc = check_link_target(norm, archive_entry_symlink(e))) < 0)
        return rc;
    *skip = norm[0] == '\0';
    if (*skip)
        return 0;
    if (type == AE_IFREG) {
        u->entry_bytes += (uint64_t)archive_entry_size(e);
        if (u->cap && u->entry_bytes > u->cap)
            return sr_errf(-EFBIG, "archive expands past the cap of %llu bytes",
                           (unsigned long long)u->cap);
    }
    if (snprintf(full, sizeof(full), "%s/%s", u->tmp, norm) >= (int)sizeof(full))
        return sr_errf(-EPERM, "unsafe archive: name longer than PATH_MAX");
    archive_entry_copy_pathname(e, full);
    /* No setuid/setgid/sticky bits; directories stay ours to fill and remove. */
    const mode_t perm = archive_entry_perm(e) & 0777;
    archive_entry_set_perm(e, type == AE_IFDIR ? perm | 0700 : perm);
    return type == AE_IFLNK ? remember_link(u, norm) : 0;
}

/* ---- extraction ------------------------------------------------------- */

static int read_fail(const struct unpacker *u, struct archive *ar, const char *what)
{
    if (u->err < 0)
        return u->err; /* the frame error, message already recorded */
    return sr_errf(-EBADMSG, "corrupt archive: %s: %s", what,
                   archive_error_string(ar) ? archive_error_string(ar) : "tar stream error");
}

static int write_fail(struct archive *aw, const char *what)
{
    const int e = archive_errno(aw);
    const char *const msg =
        archive_error_string(aw) ? archive_error_string(aw) : "libarchive error";
    /* libarchive's text ("Write failed") often omits the cause: add it. */
    if (e > 0 && !strstr(msg, strerror(e)))
        return sr_errf(-e, "cannot extract %s: %s: %s", what, msg, strerror(e));
    return sr_errf(e > 0 ? -e : -EIO, "cannot extract %s: %s", what, msg);
}

/* libarchive's write_disk as an sr_put_fn. It always writes a file afresh
 * (it unlinks whatever was at the name first), where a range not written
 * reads as zeros, and finish_entry extends the file to its size: so the
 * holes sr_write_sparse() leaves are safe. */
static int put_archive(void *ctx, const uint8_t *buf, size_t len, int64_t off)
{
    return archive_write_data_block(ctx, buf, len, off) < ARCHIVE_OK ? -EIO : 0;
}

/* One block of the current file's data: 1, 0 at its end, or -errno
 * (read_fail's). */
struct data_block {
    const void *buf;
    size_t size;
    la_int64_t off;
};

static int next_data(const struct unpacker *u, struct archive *ar, const char *what,
                     struct data_block *b)
{
    const int r = archive_read_data_block(ar, &b->buf, &b->size, &b->off);
    if (r == ARCHIVE_EOF)
        return 0;
    return r < ARCHIVE_OK ? read_fail(u, ar, what) : 1;
}

/* Copies one file's data on this thread; the blocks point into the
 * decompressed frames. */
static int copy_data(const struct unpacker *u, struct archive *ar, struct archive *aw,
                     const char *what)
{
    struct data_block b;
    int r;
    while ((r = next_data(u, ar, what, &b)) > 0)
        if (sr_write_sparse(put_archive, aw, b.buf, b.size, b.off) < 0)
            return write_fail(aw, what);
    return r;
}

/* Whether buf lies in the frame libarchive holds (else libarchive copied
 * it into its own buffer, valid only until its next call). */
static int in_held(const struct unpacker *u, const void *buf, size_t size)
{
    const uint8_t *const p = buf, *const d = u->held ? u->held->dbuf : NULL;
    const uint32_t i = u->next_read - 1;
    return d && p >= d && size <= u->t->frames[i].dsize &&
           (size_t)(p - d) <= u->t->frames[i].dsize - size;
}

/* Hands one file's data to the writer pool (f), block by block. */
static int queue_data(struct unpacker *u, struct archive *ar, struct sr_wfile *f, const char *what)
{
    struct data_block b;
    int r;
    while ((r = next_data(u, ar, what, &b)) > 0) {
        if (sr_wpool_failed(u->pool))
            return 0; /* sr_wpool_drain says why */
        if (!in_held(u, b.buf, b.size)) {
            const int rc = sr_wpool_write_now(f, b.buf, b.size, b.off);
            if (rc < 0)
                return rc;
            continue;
        }
        ref_held(u);
        sr_wpool_write(u->pool, f, b.buf, b.size, b.off, u->held);
    }
    return r;
}

/* Extracts regular file e (checked) through the writer pool: libarchive
 * creates it (its path checks), empty, at its size and writable by us;
 * the pool writes its data through the descriptor opened here, before
 * anything else changes the tree, then gives it its mode and times. */
static int extract_parallel(struct unpacker *u, struct archive *ar, struct archive *aw,
                            struct archive_entry *e, const char *what)
{
    const mode_t perm = archive_entry_perm(e);
    struct timespec times[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_OMIT}};
    if (archive_entry_atime_is_set(e))
        times[0] = (struct timespec){archive_entry_atime(e), archive_entry_atime_nsec(e)};
    if (archive_entry_mtime_is_set(e))
        times[1] = (struct timespec){archive_entry_mtime(e), archive_entry_mtime_nsec(e)};
    archive_entry_set_perm(e, perm | 0600);
    if (archive_write_header(aw, e) < ARCHIVE_WARN || archive_write_finish_entry(aw) < ARCHIVE_WARN)
        return write_fail(aw, what);
    const int fd = open(archive_entry_pathname(e), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return sr_errf(-errno, "cannot extract %s: %s", what, strerror(errno));
    struct sr_wfile *const f = sr_wpool_file(u->pool, fd, perm, times, what);
    if (!f)
        return sr_errf(-ENOMEM, "unpack: out of memory");
    int rc = queue_data(u, ar, f, what);
    sr_wpool_done(u->pool, f);
    if (rc == 0 && sr_wpool_failed(u->pool))
        rc = sr_wpool_drain(u->pool);
    return rc;
}

static int extract_entry(struct unpacker *u, struct archive *ar, struct archive *aw,
                         struct archive_entry *e)
{
    int skip = 0;
    int rc = check_entry(u, e, &skip);
    if (rc < 0 || skip)
        return rc;
    const char *const what = archive_entry_pathname(e) + strlen(u->tmp) + 1;
    const int is_reg = archive_entry_filetype(e) == AE_IFREG;
    u->st.files += is_reg;
    if (is_reg && u->pool && archive_entry_size(e) >= (la_int64_t)PARALLEL_MIN) {
        u->st.pooled_files++;
        return extract_parallel(u, ar, aw, e, what);
    }
    if (archive_write_header(aw, e) < ARCHIVE_WARN)
        return write_fail(aw, what);
    if (is_reg && archive_entry_size(e) > 0 && (rc = copy_data(u, ar, aw, what)) < 0)
        return rc;
    if (archive_write_finish_entry(aw) < ARCHIVE_WARN)
        return write_fail(aw, what);
    return 0;
}

static int extract_all(struct unpacker *u, struct archive *ar, struct archive *aw)
{
    for (;;) {
        struct archive_entry *e;
        const int r = archive_read_next_header(ar, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r == ARCHIVE_WARN)
            sr_warn("reading archive: %s", archive_error_string(ar));
        else if (r != ARCHIVE_OK)
            return read_fail(u, ar, "entry header");
        const int rc = extract_entry(u, ar, aw, e);
        if (rc < 0)
            return rc;
    }
    /* every file written, its mode and times set, before directories get
     * theirs */
    const int wrc = u->pool ? sr_wpool_drain(u->pool) : 0;
    if (wrc < 0)
        return wrc;
    if (archive_write_close(aw) != ARCHIVE_OK)
        return write_fail(aw, "directory attributes");
    /* Check the frames after the tar end marker too. */
    for (;;) {
        const void *buf;
        const int64_t n = next_block(u, &buf);
        if (n <= 0)
            return (int)n;
    }
}

static int extract(struct unpacker *u)
{
    const int flags = ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM |
                      ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT;
    struct archive *const ar = archive_read_new();
    struct archive *const aw = archive_write_disk_new();
    int rc = 0;
    if (!ar || !aw) {
        rc = sr_errf(-ENOMEM, "unpack: out of memory");
        goto out;
    }
    if (archive_read_support_format_tar(ar) != ARCHIVE_OK ||
        archive_write_disk_set_options(aw, flags) != ARCHIVE_OK) {
        rc = sr_errf(-EIO, "unpack: cannot set up libarchive");
        goto out;
    }
    if (archive_read_open(ar, u, NULL, unpack_read_cb, NULL) != ARCHIVE_OK) {
        rc = read_fail(u, ar, "tar stream");
        goto out;
    }
    rc = extract_all(u, ar, aw);
out:
    if (ar)
        archive_read_free(ar);
    if (aw)
        archive_write_free(aw);
    return rc;
}

/* ---- setup, swap, entry point ----------------------------------------- */

static int unpacker_start(struct unpacker *u, int threads, int *started)
{
    u->nthreads = sr_codec_threads(threads);
    u->nslots = 2u * (unsigned)u->nthreads + 2u;
    u->slots = calloc(u->nslots, sizeof(*u->slots));
    u->threads = calloc((size_t)u->nthreads, sizeof(*u->threads));
    if (!u->slots || !u->threads)
        return sr_errf(-ENOMEM, "unpack: out of memory");
    for (unsigned i = 0; i < u->nslots; i++) {
        u->slots[i].cbuf = malloc(u->t->max_csize);
        u->slots[i].dbuf = malloc(u->t->max_dsize);
        if (!u->slots[i].cbuf || !u->slots[i].dbuf)
            return sr_errf(-ENOMEM, "unpack: out of memory for %u frames", u->nslots);
    }
    for (*started = 0; *started < u->nthreads; (*started)++) {
        const int e = pthread_create(&u->threads[*started], NULL, unpack_worker, u);
        if (e)
            return sr_errf(-e, "unpack: cannot start a worker thread: %s", strerror(e));
    }
    const int writers = u->nthreads < WRITERS_MAX ? u->nthreads : WRITERS_MAX;
    return sr_wpool_new(writers, WRITE_MAX_OPEN, release_slot, u, &u->pool);
}

static void unpacker_stop(struct unpacker *u, int started)
{
    sr_wpool_free(u->pool); /* first: it releases slots */
    pthread_mutex_lock(&u->lock);
    u->stop = 1;
    pthread_cond_broadcast(&u->work_cv);
    pthread_mutex_unlock(&u->lock);
    for (int i = 0; i < started; i++)
        pthread_join(u->threads[i], NULL);
    for (unsigned i = 0; u->slots && i < u->nslots; i++) {
        free(u->slots[i].cbuf);
        free(u->slots[i].dbuf);
    }
    free(u->slots);
    free(u->threads);
    for (size_t i = 0; i < u->nlinks; i++)
        free(u->links[i]);
    free(u->links);
}

/* The real path of dir (created parent if needed), whether it exists, and
 * the mode its replacement gets. */
static int resolve_target(const char *dir, char *target, int *exists, mode_t *mode)
{
    struct stat st;
    char parent[PATH_MAX], real[PATH_MAX];
    *exists = stat(dir, &st) == 0;
    if (*exists) {
        if (!S_ISDIR(st.st_mode))
            return sr_errf(-ENOTDIR, "cannot restore into %s: not a directory", dir);
        if (!realpath(dir, target))
            return sr_errf(-errno, "cannot resolve %s: %s", dir, strerror(errno));
        *mode = st.st_mode & 07777;
        return 0;
    }
    if (errno != ENOENT)
        return sr_errf(-errno, "cannot stat %s: %s", dir, strerror(errno));
    sr_dirname(dir, parent, sizeof(parent));
    int rc = sr_mkdirs(parent, 0755);
    if (rc < 0)
        return rc;
    if (!realpath(parent, real))
        return sr_errf(-errno, "cannot resolve %s: %s", parent, strerror(errno));
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/')
        b--;
    if (snprintf(target, PATH_MAX, "%s/%.*s", strcmp(real, "/") ? real : "", (int)(n - b),
                 dir + b) >= PATH_MAX)
        return sr_errf(-ENAMETOOLONG, "cannot restore into %s: path too long", dir);
    *mode = 0755;
    return 0;
}

static int swap_in(const char *tmp, const char *target, int exists)
{
    if (!exists && rename(tmp, target) < 0)
        return sr_errf(-errno, "cannot rename %s to %s: %s", tmp, target, strerror(errno));
    if (exists) {
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, target, RENAME_EXCHANGE) < 0)
            return sr_errf(-errno, "cannot swap %s into %s: %s", tmp, target, strerror(errno));
        const int rc = sr_rmtree(tmp); /* now the previous contents */
        if (rc < 0)
            sr_warn("cannot remove the previous contents in %s: %s", tmp, sr_strerror(rc));
    }
    return sr_fsync_parent(target);
}

/* Whether target cannot be swapped as a whole: a mount point (a local NVMe,
 * a Kubernetes volume) cannot be renamed. */
static int is_mount_point(const char *target)
{
    struct statx sx;
    if (statx(AT_FDCWD, target, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) == 0 &&
        (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
        return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
    char parent[PATH_MAX];
    struct stat a, b;
    sr_dirname(target, parent, sizeof(parent));
    return stat(target, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

/* The names in dir but skip (or NULL): a malloc'd NULL-terminated array. */
static char **dir_names(int dfd, const char *skip1, const char *skip2)
{
    const int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    size_t n = 0, cap = 16;
    char **v = malloc(cap * sizeof(*v));
    for (struct dirent *e; v && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            strcmp(e->d_name, skip1) == 0 || (skip2 && strcmp(e->d_name, skip2) == 0))
            continue;
        char **nv = n + 1 >= cap ? realloc(v, (cap *= 2) * sizeof(*v)) : v;
        if (!nv || !(nv[n] = strdup(e->d_name))) {
            for (size_t i = 0; i < n; i++)
                free((nv ? nv : v)[i]);
            free(nv ? nv : v);
            v = NULL;
            break;
        }
        v = nv;
        n++;
    }
    closedir(d);
    if (v)
        v[n] = NULL;
    return v;
}

static void free_names(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* Moves every entry of from (but skip1, skip2) into to. */
static int move_entries(const char *from, const char *to, const char *skip1, const char *skip2)
{
    const int ffd = open(from, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int tfd = open(to, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    char **names = ffd >= 0 && tfd >= 0 ? dir_names(ffd, skip1, skip2) : NULL;
    int rc = names ? 0
                   : sr_errf(-errno ? -errno : -ENOMEM, "cannot list %s: %s", from,
                             strerror(errno ? errno : ENOMEM));
    for (size_t i = 0; rc == 0 && names[i]; i++)
        if (renameat(ffd, names[i], tfd, names[i]) < 0)
            rc = sr_errf(-errno, "cannot move %s/%s into %s: %s", from, names[i], to,
                         strerror(errno));
    if (rc == 0 && fsync(tfd) < 0 && errno != EINVAL)
        rc = sr_errf(-errno, "cannot sync %s: %s", to, strerror(errno));
    free_names(names);
    if (ffd >= 0)
        close(ffd);
    if (tfd >= 0)
        close(tfd);
    return rc;
}

/* The swap for a target that cannot be renamed (a mount point) or whose
 * parent spotrun may not write: tmp was extracted inside target; the
 * previous contents move into a second directory inside it, the new ones
 * up, then the previous ones go. Not atomic like swap_in, but nothing
 * moves before the extraction fully verified, and a wrapper killed in
 * between leaves only the two hidden directories, which the next restore
 * moves aside and removes with the rest. */
static int swap_contents(const char *tmp, const char *target)
{
    char old[PATH_MAX + 32];
    snprintf(old, sizeof(old), "%s/.spotrun-old.XXXXXX", target);
    if (!mkdtemp(old))
        return sr_errf(-errno, "cannot create a directory in %s: %s", target, strerror(errno));
    const char *tbase = strrchr(tmp, '/') + 1, *obase = strrchr(old, '/') + 1;
    int rc = move_entries(target, old, tbase, obase);
    if (rc == 0)
        rc = move_entries(tmp, target, ".", NULL);
    if (rc == 0 && rmdir(tmp) < 0)
        rc = sr_errf(-errno, "cannot remove %s: %s", tmp, strerror(errno));
    const int r2 = rc == 0 ? sr_rmtree(old) : 0;
    if (r2 < 0)
        sr_warn("cannot remove the previous contents in %s: %s", old, sr_strerror(r2));
    if (rc == 0)
        (void)sr_dir_mark(target); /* it now holds what spotrun put there */
    return rc;
}

/* Compares the archive's checksum with want: the source's own (it hashed
 * what it downloaded), or the one computed as the frames streamed through,
 * completed with the seek table after them. */
static int check_checksum(const struct unpacker *u, const char *want)
{
    char got[SR_CHECKSUM_LEN];
    const struct sr_source *const src = u->src;
    int rc = 0;
    if (src->checksum) {
        rc = src->checksum(src->ctx, got);
    } else {
        const uint64_t off = u->t->csize_total, len = src->size - off;
        uint8_t *const tail = malloc(len ? len : 1);
        rc = tail ? src->read_at(src->ctx, tail, len, off)
                  : sr_errf(-ENOMEM, "unpack: out of memory");
        if (rc == 0) {
            XXH3_128bits_update(u->hash, tail, len);
            const XXH128_hash_t h = XXH3_128bits_digest(u->hash);
            sr_checksum_format(h.high64, h.low64, got);
        }
        free(tail);
    }
    if (rc < 0)
        return rc;
    if (strcmp(got, want) != 0)
        return sr_errf(-EBADMSG,
                       "checksum mismatch: archive has %s, expected %s (every frame matched its "
                       "own checksum: the seek table or the expected checksum is wrong)",
                       got, want);
    return 0;
}

static int check_source(const struct sr_source *src, const struct sr_unpack_opts *opts,
                        struct sr_seektable *t)
{
    const int rc = sr_seektable_read(src, t);
    if (rc < 0)
        return rc;
    if (t->count == 0)
        return sr_errf(-EBADMSG, "corrupt archive: no data frames");
    for (uint32_t i = 0; opts && opts->frames && i < t->count; i++)
        if (opts->nframes != t->count || opts->frames[i].dsize != t->frames[i].dsize ||
            opts->frames[i].csize != t->frames[i].csize)
            return sr_errf(-EBADMSG, "corrupt archive: frame %u is not the one the manifest lists",
                           i);
    const uint64_t cap = opts ? opts->max_raw_bytes : 0;
    if (cap && t->dsize_total > cap)
        return sr_errf(-EFBIG, "archive expands to %llu bytes, over the cap of %llu",
                       (unsigned long long)t->dsize_total, (unsigned long long)cap);
    return 0;
}

int sr_unpack_to_dir(const struct sr_source *src, const char *dir,
                     const struct sr_unpack_opts *opts, struct sr_unpack_stats *stats)
{
    struct sr_seektable t;
    struct unpacker u = {.src = src,
                         .t = &t,
                         .cap = opts ? opts->max_raw_bytes : 0,
                         .want = opts ? opts->frames : NULL};
    char target[PATH_MAX], tmp[PATH_MAX + 32];
    int exists = 0, started = 0, have_tmp = 0, running = 0, inside = 0;
    mode_t mode = 0755;
    sr_seektable_init(&t);
    int rc = check_source(src, opts, &t);
    if (rc == 0)
        rc = resolve_target(dir, target, &exists, &mode);
    if (rc == 0) {
        /* Beside the target, to swap it in whole; inside it when it is a
         * mount point or its parent is closed to us (then swap_contents). */
        inside = exists && is_mount_point(target);
        snprintf(tmp, sizeof(tmp), "%s.spotrun-tmp.XXXXXX", target);
        have_tmp = !inside && mkdtemp(tmp) != NULL;
        if (!have_tmp && exists &&
            (inside || errno == EACCES || errno == EPERM || errno == EROFS)) {
            inside = 1;
            snprintf(tmp, sizeof(tmp), "%s/.spotrun-tmp.XXXXXX", target);
            have_tmp = mkdtemp(tmp) != NULL;
        }
        if (!have_tmp)
            rc = sr_errf(-errno, "cannot create a directory %s %s: %s", inside ? "in" : "beside",
                         target, strerror(errno));
        else
            (void)sr_dir_mark(tmp); /* spotrun's: a later restore may replace it */
    }
    if (rc == 0 && opts && opts->checksum) {
        u.show = src->checksum && src->consumed;
        if (!src->checksum && !(u.hash = XXH3_createState()))
            rc = sr_errf(-ENOMEM, "unpack: out of memory");
        else if (u.hash)
            XXH3_128bits_reset(u.hash);
        u.keep_c = u.show || u.hash;
    }
    if (rc == 0) {
        u.tmp = tmp;
        pthread_mutex_init(&u.lock, NULL);
        pthread_cond_init(&u.work_cv, NULL);
        pthread_cond_init(&u.done_cv, NULL);
        running = 1;
        rc = unpacker_start(&u, opts ? opts->threads : 0, &started);
    }
    if (rc == 0)
        rc = extract(&u);
    if (running) {
        unpacker_stop(&u, started);
        pthread_cond_destroy(&u.done_cv);
        pthread_cond_destroy(&u.work_cv);
        pthread_mutex_destroy(&u.lock);
    }
    /* Extraction went into the temp dir only; nothing is swapped in unless
     * the whole object matches. */
    if (rc == 0 && opts && opts->checksum)
        rc = check_checksum(&u, opts->checksum);
    if (rc == 0 && !inside && chmod(tmp, mode) < 0)
        rc = sr_errf(-errno, "cannot chmod %s: %s", tmp, strerror(errno));
    if (rc == 0)
        rc = inside ? swap_contents(tmp, target) : swap_in(tmp, target, exists);
    if (rc < 0 && have_tmp)
        (void)sr_rmtree(tmp); /* a missing path is fine */
    if (rc == 0 && stats)
        *stats = u.st;
    XXH3_freeState(u.hash);
    sr_seektable_free(&t);
    return rc;
}
