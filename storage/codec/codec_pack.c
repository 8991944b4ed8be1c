/*
 * codec_pack.c - directory -> pax tar (libarchive) -> independent zstd frames
 * + seek table, into a sink.
 *
 * DESIGN: three roles. The caller's thread walks the directory in sorted
 * order, builds tar entries with libarchive and fills the current frame; it
 * also hands finished frames to the sink, strictly in order, and keeps the
 * running XXH3-128 of those bytes and the seek table. Worker threads (one
 * ZSTD_CCtx each) compress whole frames. Frames live in a ring of
 * (2 * threads + 2) slots; frame number s always uses slot s % nslots, so the
 * ring order is the archive order and memory is bounded by the ring.
 *
 * The ring is described by three counters under one mutex:
 *   next_sink <= next_job <= submitted,  submitted - next_sink <= nslots
 * frames [next_sink, submitted) are queued, being compressed or done; the
 * frame being filled is number `submitted` and is not visible to workers.
 *
 * Copies: libarchive writes with bytes_per_block 0, so every
 * archive_write_data() call reaches our callback with the caller's pointer.
 * File contents are read() straight into the free tail of the current frame
 * and written from there; the callback recognises that pointer and only
 * advances the frame (no memcpy). Only tar headers and padding are copied.
 * Each frame's XXH64 is not recomputed: zstd stores its low 32 bits as the
 * frame's content checksum (the last 4 bytes), which is what the seek table
 * wants.
 */
#include "codec.h"
#include "fsutil.h"
#include "log.h"
#include "seektable.h"
#include "walk.h"

#include <archive.h>
#include <archive_entry.h>
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

enum { SLOT_FREE, SLOT_FILLING, SLOT_QUEUED, SLOT_DONE };

struct pslot {
    uint8_t *src;
    uint8_t *dst;
    size_t len;               /* bytes of tar stream in src */
    size_t clen;              /* compressed bytes in dst */
    XXH128_hash_t hash;       /* of src, with list_frames or reuse */
    int reused;               /* 1: dst was copied from an earlier archive; 2: referenced */
    struct sr_frame_info ref; /* with reused 2: the earlier frame (not in dst) */
    int state;
    int err; /* 0 or -errno, with msg */
    char msg[160];
};

struct packer {
    pthread_mutex_t lock;
    pthread_cond_t work_cv; /* workers: a frame was submitted, or stop */
    pthread_cond_t done_cv; /* caller: a frame was compressed */
    struct pslot *slots;
    unsigned nslots;
    uint64_t submitted, next_job, next_sink;
    int stop;
    pthread_t *threads;
    int nthreads;
    int level;
    size_t frame_size;
    uint64_t align_min; /* regular files this large start their own frame */
    size_t dst_cap;
    struct pslot *cur; /* frame being filled, or NULL */
    struct archive *a;
    int err; /* first error raised inside a libarchive callback */
    sr_sink_fn sink;
    void *sink_ctx;
    XXH3_state_t *xxh;
    XXH3_state_t *fxxh;         /* the contents of the file being read (check_unchanged) */
    const char *const *exclude; /* opts->exclude */
    size_t nexclude;
    struct sr_seektable table;
    struct sr_pack_stats st;
    /* with opts->list_frames: every frame sunk so far */
    int list_frames;
    struct sr_frame_info *flist;
    size_t flist_cap;
    /* with opts->reuse: its frames sorted by (hash, size), and the earlier
     * archives they are in (an fd for each one a frame is in, else -1) */
    struct sr_frame_info *reuse;
    uint32_t nreuse, nreuse_fds;
    int *reuse_fds;
    int by_ref; /* reused frames become holes (sr_pack_dir_to_file) */
};

/* ---- workers ---------------------------------------------------------- */

static int cmp_frame(const void *a, const void *b)
{
    const struct sr_frame_info *x = a, *y = b;
    if (x->hash_hi != y->hash_hi)
        return x->hash_hi < y->hash_hi ? -1 : 1;
    if (x->hash_lo != y->hash_lo)
        return x->hash_lo < y->hash_lo ? -1 : 1;
    return x->dsize < y->dsize ? -1 : x->dsize > y->dsize;
}

/* The earlier archives' frame of the same content: 2 when it is to be
 * referenced (by_ref: s->ref, nothing read), 1 when it was copied into
 * s->dst, 0 when there is none or the copy is not that frame. The frame
 * was made from content of this XXH3-128 and size; the copy must have the
 * XXH3-64 the frame had when it was made (a stale or damaged earlier
 * archive never reaches the new one) and zstd's content checksum of this
 * content. (A referenced frame is checked the same way when it is read,
 * staged.c.) */
static int reuse_slot(const struct packer *p, struct pslot *s)
{
    const struct sr_frame_info key = {
        .hash_hi = s->hash.high64, .hash_lo = s->hash.low64, .dsize = (uint32_t)s->len};
    const struct sr_frame_info *f =
        bsearch(&key, p->reuse, p->nreuse, sizeof(*p->reuse), cmp_frame);
    if (!f || !f->chash || f->csize < 4 || f->csize > p->dst_cap || !f->src ||
        f->src > p->nreuse_fds || p->reuse_fds[f->src - 1] < 0)
        return 0;
    if (p->by_ref) {
        s->ref = *f;
        s->clen = f->csize;
        return 2;
    }
    if (pread(p->reuse_fds[f->src - 1], s->dst, f->csize, (off_t)f->soff) != (ssize_t)f->csize)
        return 0;
    const uint8_t *const t = s->dst + f->csize - 4;
    const uint32_t tail =
        (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
    if (XXH3_64bits(s->dst, f->csize) != f->chash || tail != (uint32_t)XXH64(s->src, s->len, 0) ||
        ZSTD_getFrameContentSize(s->dst, f->csize) != s->len)
        return 0;
    s->clen = f->csize;
    return 1;
}

static void compress_slot(struct packer *p, ZSTD_CCtx *cc, struct pslot *s)
{
    s->err = 0;
    s->reused = 0;
    if (p->list_frames || p->nreuse)
        s->hash = XXH3_128bits(s->src, s->len);
    if (p->nreuse && (s->reused = reuse_slot(p, s)))
        return;
    if (!cc) {
        s->err = -ENOMEM;
        snprintf(s->msg, sizeof(s->msg), "cannot create a zstd compression context");
        return;
    }
    const size_t r = ZSTD_compress2(cc, s->dst, p->dst_cap, s->src, s->len);
    if (ZSTD_isError(r) || r < 4) {
        s->err = -EIO;
        snprintf(s->msg, sizeof(s->msg), "zstd compression failed: %s",
                 ZSTD_isError(r) ? ZSTD_getErrorName(r) : "short frame");
        return;
    }
    s->clen = r;
}

static ZSTD_CCtx *new_cctx(int level)
{
    ZSTD_CCtx *const cc = ZSTD_createCCtx();
    if (!cc)
        return NULL;
    if (ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 1))) {
        ZSTD_freeCCtx(cc);
        return NULL;
    }
    return cc;
}

static void *pack_worker(void *arg)
{
    struct packer *const p = arg;
    ZSTD_CCtx *const cc = new_cctx(p->level);
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->next_job == p->submitted)
            pthread_cond_wait(&p->work_cv, &p->lock);
        if (p->stop)
            break;
        struct pslot *const s = &p->slots[p->next_job++ % p->nslots];
        pthread_mutex_unlock(&p->lock);
        compress_slot(p, cc, s);
        pthread_mutex_lock(&p->lock);
        s->state = SLOT_DONE;
        pthread_cond_broadcast(&p->done_cv);
    }
    pthread_mutex_unlock(&p->lock);
    ZSTD_freeCCtx(cc);
    return NULL;
}

/* ---- in-order output -------------------------------------------------- */

/* buf NULL: a hole of len bytes (by_ref; the sink skips them). ctx: the
 * packer. */
static int sink_bytes(void *ctx, const void *buf, size_t len)
{
    struct packer *const p = ctx;
    const uint8_t *const b = buf;
    /* in pieces of SR_CODEC_WRITE_MAX: the sink write()s what it gets */
    for (size_t done = 0; done < len;) {
        const size_t n = len - done < SR_CODEC_WRITE_MAX ? len - done : SR_CODEC_WRITE_MAX;
        const int rc = p->sink(p->sink_ctx, b ? b + done : NULL, n);
        if (rc < 0)
            return rc;
        done += n;
    }
    if (buf)
        XXH3_128bits_update(p->xxh, buf, len);
    p->st.stored_bytes += len;
    return 0;
}

static int sink_slot(struct packer *p, struct pslot *s)
{
    if (s->err < 0)
        return sr_errf(s->err, "%s", s->msg);
    const int hole = s->reused == 2;
    const uint8_t *const t = s->dst + s->clen - 4;
    const uint32_t checksum =
        hole ? s->ref.xxh64_lo
             : (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
    int rc = sr_seektable_add(&p->table, (uint32_t)s->clen, (uint32_t)s->len, checksum);
    if (rc == 0 && p->list_frames) {
        if (p->table.count > p->flist_cap) {
            const size_t cap = p->flist_cap ? 2 * p->flist_cap : 64;
            struct sr_frame_info *v = realloc(p->flist, cap * sizeof(*v));
            if (!v)
                return sr_errf(-ENOMEM, "pack: out of memory for the frame list");
            p->flist = v;
            p->flist_cap = cap;
        }
        p->flist[p->table.count - 1] =
            (struct sr_frame_info){.hash_hi = s->hash.high64,
                                   .hash_lo = s->hash.low64,
                                   .coff = p->st.stored_bytes,
                                   .csize = (uint32_t)s->clen,
                                   .dsize = (uint32_t)s->len,
                                   .xxh64_lo = checksum,
                                   .chash = hole ? s->ref.chash : XXH3_64bits(s->dst, s->clen),
                                   .src = hole ? s->ref.src : 0,
                                   .soff = hole ? s->ref.soff : 0};
    }
    p->st.reused += s->reused != 0;
    p->st.holes += hole;
    return rc < 0 ? rc : sink_bytes(p, hole ? NULL : s->dst, s->clen);
}

/* Hands compressed frames to the sink in order: every one that is already
 * done, then waits as needed until the ring has room for one more frame
 * (all == 0) or until every submitted frame has been sunk (all == 1). */
static int drain(struct packer *p, int all)
{
    for (;;) {
        pthread_mutex_lock(&p->lock);
        const uint64_t pending = p->submitted - p->next_sink;
        const int must = all ? pending > 0 : pending >= p->nslots;
        struct pslot *s = pending ? &p->slots[p->next_sink % p->nslots] : NULL;
        while (s && s->state != SLOT_DONE && must)
            pthread_cond_wait(&p->done_cv, &p->lock);
        if (s && s->state != SLOT_DONE)
            s = NULL;
        pthread_mutex_unlock(&p->lock);
        if (!s)
            return 0;
        const int rc = sink_slot(p, s);
        if (rc < 0)
            return rc;
        pthread_mutex_lock(&p->lock);
        s->state = SLOT_FREE;
        p->next_sink++;
        pthread_mutex_unlock(&p->lock);
    }
}

/* Submits the frame being filled (if any) and starts a new one. */
static int next_frame(struct packer *p)
{
    if (p->cur && p->cur->len > 0) {
        pthread_mutex_lock(&p->lock);
        p->cur->state = SLOT_QUEUED;
        p->submitted++;
        p->st.frames++;
        pthread_cond_signal(&p->work_cv);
        pthread_mutex_unlock(&p->lock);
        p->cur = NULL;
    }
    if (p->cur)
        return 0;
    const int rc = drain(p, 0);
    if (rc < 0)
        return rc;
    p->cur = &p->slots[p->submitted % p->nslots];
    p->cur->state = SLOT_FILLING;
    p->cur->len = 0;
    return 0;
}

/* Ends the frame being filled here (the next byte starts a new one). */
static int cut_frame(struct packer *p)
{
    return p->cur && p->cur->len > 0 ? next_frame(p) : 0;
}

/* libarchive's write callback: the tar stream, cut into frames. */
static la_ssize_t pack_write_cb(struct archive *a, void *ctx, const void *buf, size_t n)
{
    struct packer *const p = ctx;
    const uint8_t *b = buf;
    size_t left = n;
    (void)a;
    if (p->err < 0) /* failed already: archive_write_free() must not write */
        return -1;
    while (left > 0) {
        if (!p->cur || p->cur->len == p->frame_size) {
            const int rc = next_frame(p);
            if (rc < 0) {
                p->err = rc;
                return -1;
            }
        }
        struct pslot *const s = p->cur;
        const size_t room = p->frame_size - s->len;
        const size_t take = left < room ? left : room;
        if (b != s->src + s->len) /* else: read() already put it in place */
            memcpy(s->src + s->len, b, take);
        s->len += take;
        b += take;
        left -= take;
    }
    p->st.raw_bytes += n;
    return (la_ssize_t)n;
}

/* ---- the directory walk ----------------------------------------------- */

static int archive_fail(struct packer *p, const char *what)
{
    if (p->err < 0)
        return p->err;
    const int e = archive_errno(p->a);
    return sr_errf(e > 0 ? -e : -EIO, "cannot archive %s: %s", what,
                   archive_error_string(p->a) ? archive_error_string(p->a) : "libarchive error");
}

/* Writes the tar header of rel; only the fields that the restore needs, so
 * that the same tree gives the same bytes (no atime, ctime, inode, owner
 * names). */
static int write_header(struct packer *p, const char *rel, const struct stat *st, const char *link)
{
    struct archive_entry *const e = archive_entry_new();
    if (!e)
        return sr_errf(-ENOMEM, "cannot archive %s: out of memory", rel);
    archive_entry_set_pathname(e, rel);
    archive_entry_set_filetype(e, st->st_mode & S_IFMT);
    archive_entry_set_perm(e, st->st_mode & 07777);
    archive_entry_set_uid(e, st->st_uid);
    archive_entry_set_gid(e, st->st_gid);
    archive_entry_set_mtime(e, st->st_mtim.tv_sec, 0);
    archive_entry_set_size(e, S_ISREG(st->st_mode) ? st->st_size : 0);
    if (link)
        archive_entry_set_symlink(e, link);
    const int r = archive_write_header(p->a, e);
    archive_entry_free(e);
    /* A name that is not UTF-8 is stored as its raw bytes (pax
     * hdrcharset=BINARY) and restored exactly: nothing to warn about. */
    if (r == ARCHIVE_WARN && strncmp(archive_error_string(p->a), "Can't translate", 15) == 0)
        sr_debug("archiving %s: %s (kept as raw bytes)", rel, archive_error_string(p->a));
    else if (r == ARCHIVE_WARN)
        sr_warn("archiving %s: %s", rel, archive_error_string(p->a));
    else if (r != ARCHIVE_OK)
        return archive_fail(p, rel);
    return 0;
}

/* Streams a regular file's contents: read() into the frame, then hand the
 * same bytes to libarchive (see DESIGN). */
static int write_contents(struct packer *p, int fd, const char *rel, uint64_t size)
{
    while (size > 0) {
        if (!p->cur || p->cur->len == p->frame_size) {
            const int rc = next_frame(p);
            if (rc < 0)
                return rc;
        }
        uint8_t *const at = p->cur->src + p->cur->len;
        const size_t room = p->frame_size - p->cur->len;
        const size_t want = size < room ? (size_t)size : room;
        const ssize_t n = read(fd, at, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return sr_errf(-errno, "cannot read %s: %s", rel, strerror(errno));
        if (n == 0) /* shrank: the check after the read names it */
            return 0;
        XXH3_64bits_update(p->fxxh, at, (size_t)n);
        if (archive_write_data(p->a, at, (size_t)n) != n)
            return archive_fail(p, rel);
        size -= (uint64_t)n;
    }
    return 0;
}

/* Whether the first size bytes of the file still read as they did (their
 * XXH3-64 as read, h). */
static int prefix_stands(int fd, uint64_t size, XXH64_hash_t h, XXH3_state_t *x)
{
    uint8_t buf[64 << 10];
    XXH3_64bits_reset(x);
    for (uint64_t off = 0; off < size;) {
        const size_t want = size - off < sizeof(buf) ? (size_t)(size - off) : sizeof(buf);
        const ssize_t n = pread(fd, buf, want, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        XXH3_64bits_update(x, buf, (size_t)n);
        off += (uint64_t)n;
    }
    return XXH3_64bits_digest(x) == h;
}

/* A file written while it was read is archived half old, half new: a torn
 * checkpoint. As GNU tar does, compare what fstat said before the read
 * with what it says after (size, mtime and ctime to the nanosecond), and
 * check that the name still leads to the file read (not replaced by a
 * rename). Timestamps have the filesystem's granularity (a jiffy on most
 * Linux filesystems): a rewrite within one tick of the last one can pass.
 *
 * One change is not torn: a file that only grew (a log, a TensorBoard
 * events file appended to while the job trains). Its header records the
 * size it had when it was opened, exactly that many bytes were read, and
 * they are read again: when they are the same, the archive holds that
 * stable prefix, a state the file really had. A file that shrank, or whose
 * first bytes changed, is torn. */
static int check_unchanged(struct packer *p, int fd, int dfd, const char *name, const char *rel,
                           const struct stat *before)
{
    struct stat a, n;
    if (fstat(fd, &a) != 0)
        return sr_errf(-errno, "cannot stat %s: %s", rel, strerror(errno));
    const int same = a.st_size == before->st_size && a.st_mtim.tv_sec == before->st_mtim.tv_sec &&
                     a.st_mtim.tv_nsec == before->st_mtim.tv_nsec &&
                     a.st_ctim.tv_sec == before->st_ctim.tv_sec &&
                     a.st_ctim.tv_nsec == before->st_ctim.tv_nsec;
    const int there = fstatat(dfd, name, &n, AT_SYMLINK_NOFOLLOW) == 0 && n.st_ino == a.st_ino &&
                      n.st_dev == a.st_dev;
    if (same && there)
        return 0;
    if (there && a.st_size > before->st_size &&
        prefix_stands(fd, (uint64_t)before->st_size, XXH3_64bits_digest(p->fxxh), p->fxxh)) {
        sr_debug("%s grew while it was read: archived its first %lld bytes, as they were", rel,
                 (long long)before->st_size);
        p->st.grown++;
        return 0;
    }
    return sr_errf(SR_ECHANGED,
                   "%s %s while it was read; not archived (a torn checkpoint): the job must not "
                   "write the checkpoint directory until commit returns",
                   rel, same ? "was replaced" : "changed");
}

static int pack_file(struct packer *p, int dfd, const char *name, const char *rel)
{
    const int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return sr_errf(-errno, "cannot open %s: %s", rel, strerror(errno));
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) < 0) {
        rc = sr_errf(-errno, "cannot stat %s: %s", rel, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        sr_warn("skipping %s: no longer a regular file", rel);
        goto out;
    }
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    /* A large file's data (and its tar padding) gets frames of its own,
     * cut every frame_size from its first byte: an unchanged file gives
     * byte-identical frames whatever moved before it, and its header (whose
     * mtime changes on every rewrite) stays out of them. */
    const int own = (uint64_t)st.st_size >= p->align_min;
    rc = write_header(p, rel, &st, NULL);
    if (rc == 0 && own)
        rc = cut_frame(p);
    XXH3_64bits_reset(p->fxxh);
    if (rc == 0)
        rc = write_contents(p, fd, rel, (uint64_t)st.st_size);
    if (rc == 0)
        rc = check_unchanged(p, fd, dfd, name, rel, &st);
    if (rc == 0 && archive_write_finish_entry(p->a) != ARCHIVE_OK)
        rc = archive_fail(p, rel);
    if (rc == 0 && own)
        rc = cut_frame(p);
    if (rc == 0)
        p->st.files++;
out:
    close(fd);
    return rc;
}

/* Archives one entry of the walk (see walk.h); rel is its archive path. */
static int pack_visit(void *ctx, const struct sr_walk_entry *e, int post)
{
    struct packer *const p = ctx;
    const struct stat *const st = e->st;
    if (post)
        return 0;
    if (sr_pack_excluded(p->exclude, p->nexclude, e->rel, e->name)) {
        sr_debug("not archiving %s: --ckpt-exclude", e->rel);
        return S_ISDIR(st->st_mode) ? SR_WALK_SKIP : 0;
    }
    if (e->rlen >= PATH_MAX)
        return sr_errf(-ENAMETOOLONG, "cannot archive %.200s...: path too long", e->rel);
    if (S_ISREG(st->st_mode))
        return pack_file(p, e->dfd, e->name, e->rel);
    if (S_ISLNK(st->st_mode)) {
        char target[PATH_MAX];
        const ssize_t n = readlinkat(e->dfd, e->name, target, sizeof(target) - 1);
        if (n < 0)
            return sr_errf(-errno, "cannot read link %s: %s", e->rel, strerror(errno));
        target[n] = '\0';
        if (!sr_link_target_inside(e->rel, target))
            return sr_errf(-EPERM,
                           "symlink %s -> %s points outside the checkpoint directory; "
                           "only links inside it can be stored and restored",
                           e->rel, target);
        return write_header(p, e->rel, st, target);
    }
    if (!S_ISDIR(st->st_mode)) {
        sr_warn("skipping %s: not a regular file, directory or symlink", e->rel);
        return 0;
    }
    return write_header(p, e->rel, st, NULL);
}

/* Archives the tree under dfd in sorted order, iteratively (walk.h): a
 * tree deeper than SR_TREE_MAX_DEPTH is refused, as restore would. */
static int pack_tree(struct packer *p, int dfd, const char *dir)
{
    const struct sr_walk_opts o = {.sorted = 1, .max_depth = SR_TREE_MAX_DEPTH, .what = "archive"};
    return sr_walk(dfd, dir, &o, pack_visit, p);
}

/* ---- setup and teardown ----------------------------------------------- */

static int packer_init(struct packer *p, const struct sr_pack_opts *opts, int holes_ok)
{
    const int level = opts && opts->level ? opts->level : SR_CODEC_DEFAULT_LEVEL;
    const size_t fsize = opts && opts->frame_size ? opts->frame_size : SR_CODEC_DEFAULT_FRAME;
    if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
        return sr_errf(-EINVAL, "invalid zstd level %d (%d..%d)", level, ZSTD_minCLevel(),
                       ZSTD_maxCLevel());
    if (fsize < 64 || fsize > SR_SEEK_MAX_FRAME_SIZE)
        return sr_errf(-EINVAL, "invalid frame size %zu (64..%u bytes)", fsize,
                       SR_SEEK_MAX_FRAME_SIZE);
    p->level = level;
    p->frame_size = fsize;
    p->align_min = opts && opts->align_min ? opts->align_min : SR_CODEC_DEFAULT_ALIGN;
    p->dst_cap = ZSTD_compressBound(fsize);
    p->nthreads = sr_codec_threads(opts ? opts->threads : 0);
    p->nslots = 2u * (unsigned)p->nthreads + 2u;
    sr_seektable_init(&p->table);
    p->slots = calloc(p->nslots, sizeof(*p->slots));
    p->threads = calloc((size_t)p->nthreads, sizeof(*p->threads));
    p->xxh = XXH3_createState();
    p->fxxh = XXH3_createState();
    if (opts && opts->nexclude) {
        p->exclude = opts->exclude;
        p->nexclude = opts->nexclude;
    }
    if (!p->slots || !p->threads || !p->xxh || !p->fxxh)
        return sr_errf(-ENOMEM, "pack: out of memory");
    for (unsigned i = 0; i < p->nslots; i++) {
        p->slots[i].src = malloc(fsize);
        p->slots[i].dst = malloc(p->dst_cap);
        if (!p->slots[i].src || !p->slots[i].dst)
            return sr_errf(-ENOMEM, "pack: out of memory for %u frames", p->nslots);
    }
    XXH3_128bits_reset(p->xxh);
    p->list_frames = opts && opts->list_frames;
    const struct sr_pack_reuse *r = opts ? opts->reuse : NULL;
    if (!r || !r->n || !r->npaths)
        return 0;
    /* Without the earlier archives, or the memory, every frame is simply
     * compressed. */
    p->reuse = malloc(r->n * sizeof(*p->reuse));
    p->reuse_fds = malloc(r->npaths * sizeof(*p->reuse_fds));
    if (!p->reuse || !p->reuse_fds)
        return 0;
    p->nreuse_fds = r->npaths;
    for (uint32_t i = 0; i < r->npaths; i++)
        p->reuse_fds[i] = -1;
    for (uint32_t i = 0; i < r->n; i++) {
        const uint32_t k = r->v[i].src;
        if (k && k <= r->npaths && p->reuse_fds[k - 1] < 0 && r->paths[k - 1][0])
            p->reuse_fds[k - 1] = open(r->paths[k - 1], O_RDONLY | O_CLOEXEC);
    }
    memcpy(p->reuse, r->v, r->n * sizeof(*p->reuse));
    qsort(p->reuse, r->n, sizeof(*p->reuse), cmp_frame);
    p->nreuse = r->n;
    p->by_ref = r->by_ref && holes_ok && p->list_frames; /* a hole must be listed */
    return 0;
}

/* Starts the workers; *started tells packer_stop() how many to join. */
static int packer_start(struct packer *p, int *started)
{
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    for (*started = 0; *started < p->nthreads; (*started)++) {
        const int e = pthread_create(&p->threads[*started], NULL, pack_worker, p);
        if (e)
            return sr_errf(-e, "pack: cannot start a worker thread: %s", strerror(e));
    }
    return 0;
}

static void packer_stop(struct packer *p, int started)
{
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < started; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->done_cv);
    pthread_cond_destroy(&p->work_cv);
    pthread_mutex_destroy(&p->lock);
}

static void packer_free(struct packer *p)
{
    if (p->a)
        archive_write_free(p->a);
    for (unsigned i = 0; p->slots && i < p->nslots; i++) {
        free(p->slots[i].src);
        free(p->slots[i].dst);
    }
    free(p->slots);
    free(p->threads);
    XXH3_freeState(p->xxh);
    XXH3_freeState(p->fxxh);
    sr_seektable_free(&p->table);
    free(p->flist);
    free(p->reuse);
    for (uint32_t i = 0; i < p->nreuse_fds; i++)
        if (p->reuse_fds[i] >= 0)
            close(p->reuse_fds[i]);
    free(p->reuse_fds);
}

/* Everything after the last entry: end of tar, last frame, seek table. */
static int pack_finish(struct packer *p)
{
    if (archive_write_close(p->a) != ARCHIVE_OK)
        return archive_fail(p, "the end of the archive");
    int rc = next_frame(p);
    if (rc == 0)
        rc = drain(p, 1);
    if (rc < 0)
        return rc;
    p->cur = NULL;
    return sr_seektable_sink(&p->table, sink_bytes, p);
}

static int open_archive(struct packer *p)
{
    p->a = archive_write_new();
    if (!p->a)
        return sr_errf(-ENOMEM, "pack: out of memory");
    if (archive_write_set_format_pax_restricted(p->a) != ARCHIVE_OK ||
        archive_write_set_bytes_per_block(p->a, 0) != ARCHIVE_OK ||
        archive_write_open(p->a, p, NULL, pack_write_cb, NULL) != ARCHIVE_OK)
        return archive_fail(p, "the tar stream");
    return 0;
}

/* holes_ok: the sink takes holes (buf NULL), so by_ref may be honoured. */
static int pack_dir(const char *dir, sr_sink_fn sink, void *sink_ctx,
                    const struct sr_pack_opts *opts, struct sr_pack_stats *stats, int holes_ok)
{
    struct packer p = {.sink = sink, .sink_ctx = sink_ctx};
    int started = 0, running = 0;
    const int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = packer_init(&p, opts, holes_ok);
    if (rc == 0 && dfd < 0)
        rc = sr_errf(-errno, "cannot open directory %s: %s", dir, strerror(errno));
    if (rc == 0) {
        running = 1;
        rc = packer_start(&p, &started);
    }
    if (rc == 0)
        rc = open_archive(&p);
    if (rc == 0)
        rc = pack_tree(&p, dfd, dir);
    if (rc == 0)
        rc = pack_finish(&p);
    if (rc < 0)
        p.err = rc;
    if (running)
        packer_stop(&p, started);
    if (rc == 0 && stats) {
        const XXH128_hash_t h = XXH3_128bits_digest(p.xxh);
        *stats = p.st;
        if (!p.st.holes) /* else unknown until it is filled (staged.c) */
            sr_checksum_format(h.high64, h.low64, stats->checksum);
        else
            stats->checksum[0] = '\0';
        stats->frame_list = p.flist; /* the caller's now */
        p.flist = NULL;
    }
    if (dfd >= 0)
        close(dfd);
    packer_free(&p);
    return rc;
}

int sr_pack_dir(const char *dir, sr_sink_fn sink, void *sink_ctx, const struct sr_pack_opts *opts,
                struct sr_pack_stats *stats)
{
    return pack_dir(dir, sink, sink_ctx, opts, stats, 0);
}

/* ---- to a file -------------------------------------------------------- */

int sr_pack_dir_to_file(const char *dir, const char *path, const struct sr_pack_opts *opts,
                        struct sr_pack_stats *stats)
{
    struct sr_durable out;
    int rc = sr_durable_open(&out, path);
    out.scratch = opts && opts->scratch;
    if (rc == 0)
        rc = pack_dir(dir, sr_durable_sink, &out, opts, stats, 1);
    if (rc == 0)
        rc = sr_durable_commit(&out, 0);
    sr_durable_abort(&out);
    return rc;
}
