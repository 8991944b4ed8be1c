/*
 * snapshot.c - the commit's snapshot of the checkpoint directory (see
 * snapshot.h for what each file gets and why).
 *
 * DESIGN: one walk of the directory (walk.h) that makes each directory,
 * symlink and file again under the snapshot's root. What is learnt of a
 * path (its inode, size and mtime when last snapshotted; whether it was
 * ever written in place) lives in a small hash table keyed by the path.
 */
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "dirmark.h"
#include "fsutil.h"
#include "log.h"
#include "walk.h"

#define BUCKETS 1024
#define COPY_BUF (1u << 20)
#define ZERO_BLOCK (64u << 10)

struct known {
    struct known *next;
    char *rel;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    int in_place; /* written in place once: copied from then on */
};

struct sr_snaps {
    struct known *b[BUCKETS];
    int no_reflink; /* FICLONE refused once: not tried again */
};

struct sr_snap_linked {
    char *rel;
    struct stat st; /* as linked */
};

static unsigned hash_of(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % BUCKETS;
}

static struct known *find(struct sr_snaps *k, const char *rel, int add)
{
    const unsigned h = hash_of(rel);
    for (struct known *e = k->b[h]; e; e = e->next)
        if (strcmp(e->rel, rel) == 0)
            return e;
    if (!add)
        return NULL;
    struct known *e = calloc(1, sizeof(*e));
    if (!e || !(e->rel = strdup(rel))) {
        free(e);
        return NULL;
    }
    e->next = k->b[h];
    k->b[h] = e;
    return e;
}

struct sr_snaps *sr_snaps_new(void)
{
    return calloc(1, sizeof(struct sr_snaps));
}

void sr_snaps_free(struct sr_snaps *k)
{
    if (!k)
        return;
    for (unsigned i = 0; i < BUCKETS; i++)
        for (struct known *e = k->b[i], *n; e; e = n) {
            n = e->next;
            free(e->rel);
            free(e);
        }
    free(k);
}

static int same_time(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

struct walk_ctx {
    struct sr_snaps *k;
    struct sr_snap *sn;
    int snapfd;
    int copy_all; /* no hard links possible */
    const char *const *exclude;
    size_t nexclude;
    char *buf;
};

/* Whether the copy's source changed while it was read: as the codec's
 * check (codec_pack.c), a file that only grew keeps the prefix copied when
 * that prefix still reads the same. */
static int copy_changed(int in, int out, const struct stat *b, const char *rel, char *buf)
{
    struct stat a;
    if (fstat(in, &a) != 0)
        return sr_errf(-errno, "cannot stat %s: %s", rel, strerror(errno));
    if (a.st_size == b->st_size && same_time(&a.st_mtim, &b->st_mtim) &&
        same_time(&a.st_ctim, &b->st_ctim))
        return 0;
    int same = a.st_size > b->st_size;
    char *const other = buf + COPY_BUF / 2;
    for (off_t off = 0; same && off < b->st_size;) {
        const size_t want =
            (size_t)(b->st_size - off < COPY_BUF / 2 ? b->st_size - off : COPY_BUF / 2);
        const ssize_t x = pread(in, buf, want, off), y = pread(out, other, want, off);
        same = x > 0 && x == y && memcmp(buf, other, (size_t)x) == 0;
        off += x > 0 ? x : 0;
    }
    if (same)
        return 0;
    return sr_errf(SR_ECHANGED,
                   "%s changed while it was read; not archived (a torn checkpoint): the job must "
                   "not write the checkpoint directory until commit returns",
                   rel);
}

/* Writes n bytes of buf at off, leaving a hole for each 64 KiB block of
 * zeros (a sparse file stays sparse in the snapshot; ftruncate sets the
 * size at the end). */
static int put_sparse(int out, const char *buf, size_t n, off_t off)
{
    static const char zeros[ZERO_BLOCK];
    for (size_t i = 0; i < n;) {
        const size_t k = n - i < ZERO_BLOCK ? n - i : ZERO_BLOCK;
        if (k == ZERO_BLOCK && memcmp(buf + i, zeros, k) == 0) {
            i += k;
            continue;
        }
        if (lseek(out, off + (off_t)i, SEEK_SET) < 0)
            return -errno;
        const ssize_t m = write(out, buf + i, k);
        if (m < 0 && errno != EINTR)
            return -errno;
        i += m > 0 ? (size_t)m : 0;
    }
    return 0;
}

/* Copies what in holds (its first b->st_size bytes) into a new file rel. */
static int copy_file(struct walk_ctx *c, int in, const struct stat *b, const char *rel)
{
    const int out = openat(c->snapfd, rel, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out < 0)
        return sr_errf(-errno, "cannot create the snapshot of %s: %s", rel, strerror(errno));
    int rc = 0;
    off_t off = 0;
    while (rc == 0 && off < b->st_size) {
        const size_t want = (size_t)(b->st_size - off < COPY_BUF ? b->st_size - off : COPY_BUF);
        const ssize_t n = read(in, c->buf, want); /* read(): as the codec reads */
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* shrank: the check below tells */
        if ((rc = put_sparse(out, c->buf, (size_t)n, off)) < 0)
            rc = sr_errf(rc, "cannot write the snapshot of %s: %s", rel, strerror(-rc));
        off += n;
    }
    if (rc == 0 && ftruncate(out, off) != 0)
        rc = sr_errf(-errno, "cannot write the snapshot of %s: %s", rel, strerror(errno));
    if (rc == 0)
        rc = copy_changed(in, out, b, rel, c->buf);
    const struct timespec ts[2] = {b->st_atim, b->st_mtim};
    if (rc == 0 && (fchmod(out, b->st_mode & 07777) != 0 || futimens(out, ts) != 0))
        rc = sr_errf(-errno, "cannot set the snapshot of %s: %s", rel, strerror(errno));
    close(out);
    c->sn->copied_n++;
    c->sn->copied_bytes += (uint64_t)b->st_size;
    return rc;
}

/* A copy-on-write clone; 1 when made, 0 when the file system has none. */
static int reflink(struct walk_ctx *c, int in, const struct stat *b, const char *rel)
{
    if (c->k->no_reflink || c->copy_all)
        return 0;
    const int out = openat(c->snapfd, rel, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out < 0)
        return 0;
    const struct timespec ts[2] = {b->st_atim, b->st_mtim};
    const int ok = ioctl(out, FICLONE, in) == 0;
    if (!ok)
        c->k->no_reflink = errno == EOPNOTSUPP || errno == EXDEV || errno == EINVAL ||
                           errno == ENOTTY || errno == ENOSYS;
    if (ok && (fchmod(out, b->st_mode & 07777) != 0 || futimens(out, ts) != 0)) {
        close(out);
        return sr_errf(-errno, "cannot set the snapshot of %s: %s", rel, strerror(errno));
    }
    close(out);
    if (!ok)
        unlinkat(c->snapfd, rel, 0);
    c->sn->reflinked_n += (unsigned)ok;
    return ok;
}

static int add_linked(struct sr_snap *sn, const char *rel, const struct stat *st)
{
    if (sn->nlinked == sn->caplinked) {
        const size_t cap = sn->caplinked ? 2 * sn->caplinked : 64;
        struct sr_snap_linked *v = realloc(sn->linked, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        sn->linked = v;
        sn->caplinked = cap;
    }
    if (!(sn->linked[sn->nlinked].rel = strdup(rel)))
        return -ENOMEM;
    sn->linked[sn->nlinked++].st = *st;
    return 0;
}

/* Whether a file may be hard-linked: seen before, never written in place,
 * and replaced (a new inode) or untouched since. Learns from b. */
static int may_link(struct walk_ctx *c, const char *rel, const struct stat *b)
{
    struct known *e = find(c->k, rel, 1);
    if (!e)
        return 0;
    const int seen = e->ino != 0;
    const int replaced = seen && (e->ino != b->st_ino || e->dev != b->st_dev);
    const int untouched =
        seen && !replaced && e->size == b->st_size && same_time(&e->mtime, &b->st_mtim);
    if (seen && !replaced && !untouched && !e->in_place) {
        e->in_place = 1;
        sr_debug("%s was written in place since the last commit: copied from now on", rel);
    }
    e->dev = b->st_dev;
    e->ino = b->st_ino;
    e->size = b->st_size;
    e->mtime = b->st_mtim;
    return !c->copy_all && !e->in_place && (replaced || untouched);
}

static int snap_file(struct walk_ctx *c, const struct sr_walk_entry *e)
{
    const int in =
        openat(e->dfd, e->name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (in < 0)
        return errno == ENOENT ? 0 : sr_errf(-errno, "cannot open %s: %s", e->rel, strerror(errno));
    struct stat b;
    int rc =
        fstat(in, &b) == 0 ? 0 : sr_errf(-errno, "cannot stat %s: %s", e->rel, strerror(errno));
    c->sn->files++;
    if (rc == 0 && !S_ISREG(b.st_mode))
        goto out;
    const int link_ok = rc == 0 ? may_link(c, e->rel, &b) : 0;
    if (rc == 0 && (rc = reflink(c, in, &b, e->rel)) != 0)
        goto out; /* made (1), or failed */
    struct stat l;
    if (link_ok && linkat(e->dfd, e->name, c->snapfd, e->rel, 0) == 0 &&
        fstatat(c->snapfd, e->rel, &l, AT_SYMLINK_NOFOLLOW) == 0 && l.st_ino == b.st_ino &&
        l.st_size == b.st_size && same_time(&l.st_mtim, &b.st_mtim)) {
        c->sn->linked_n++;
        rc = add_linked(c->sn, e->rel, &l);
        goto out;
    }
    if (link_ok)
        unlinkat(c->snapfd, e->rel, 0);
    if (rc == 0)
        rc = copy_file(c, in, &b, e->rel);
out:
    close(in);
    return rc < 0 ? rc : 0;
}

static int snap_visit(void *ctx, const struct sr_walk_entry *e, int post)
{
    struct walk_ctx *c = ctx;
    const struct stat *st = e->st;
    if (!post && sr_pack_excluded(c->exclude, c->nexclude, e->rel, e->name))
        return S_ISDIR(st->st_mode) ? SR_WALK_SKIP : 0;
    if (S_ISDIR(st->st_mode)) {
        if (!post && mkdirat(c->snapfd, e->rel, 0700) != 0)
            return sr_errf(-errno, "cannot make the snapshot of %s: %s", e->rel, strerror(errno));
        const struct timespec ts[2] = {st->st_atim, st->st_mtim};
        if (post && (fchmodat(c->snapfd, e->rel, (st->st_mode & 07777) | 0700, 0) != 0 ||
                     utimensat(c->snapfd, e->rel, ts, AT_SYMLINK_NOFOLLOW) != 0))
            return sr_errf(-errno, "cannot set the snapshot of %s: %s", e->rel, strerror(errno));
        return 0;
    }
    if (post)
        return 0;
    if (S_ISLNK(st->st_mode)) {
        char target[4096];
        const ssize_t n = readlinkat(e->dfd, e->name, target, sizeof(target) - 1);
        if (n < 0)
            return errno == ENOENT
                       ? 0
                       : sr_errf(-errno, "cannot read link %s: %s", e->rel, strerror(errno));
        target[n] = '\0';
        const struct timespec ts[2] = {st->st_atim, st->st_mtim};
        if (symlinkat(target, c->snapfd, e->rel) != 0)
            return sr_errf(-errno, "cannot make the snapshot of %s: %s", e->rel, strerror(errno));
        (void)utimensat(c->snapfd, e->rel, ts, AT_SYMLINK_NOFOLLOW);
        return 0;
    }
    return S_ISREG(st->st_mode) ? snap_file(c, e) : 0; /* others: the codec skips them too */
}

/* The snapshot's directory: see snapshot.h. *copy_all when it cannot hold
 * links to dir's files. */
static int make_root(const char *dir, const char *spool, uint64_t n, struct sr_snap *sn,
                     int *copy_all)
{
    struct stat d, sp;
    if (stat(dir, &d) != 0)
        return sr_errf(-errno, "cannot stat %s: %s", dir, strerror(errno));
    const int spool_ok = stat(spool, &sp) == 0 && sp.st_dev == d.st_dev;
    *copy_all = 0;
    if (!spool_ok) {
        snprintf(sn->root, sizeof(sn->root), "%s.spotrun-tmp.snap-XXXXXX", dir);
        struct stat b;
        if (mkdtemp(sn->root)) {
            if (sr_dir_mark(sn->root) == 0 && stat(sn->root, &b) == 0 && b.st_dev == d.st_dev) {
                sn->beside = 1;
                return 0;
            }
            rmdir(sn->root); /* unmarked, or elsewhere: no use */
        }
        *copy_all = 1;
    }
    if (sr_pathf(sn->root, sizeof(sn->root), "%s/snap-%" PRIu64, spool, n) < 0)
        return -ENAMETOOLONG;
    (void)sr_rmtree(sn->root);
    if (mkdir(sn->root, 0700) != 0)
        return sr_errf(-errno, "cannot make %s: %s", sn->root, strerror(errno));
    return 0;
}

static int later(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

/* Until the file system's clock (the coarse one) has passed every
 * timestamp of a linked file: a write by the job after the snapshot then
 * moves its mtime, which sr_snap_verify sees, even one within the same
 * clock tick as the job's last write before the commit. At most a tick
 * or two; 100 ms at most (a timestamp in the future: another clock). */
static void wait_past(const struct sr_snap *sn)
{
    struct timespec newest = {0, 0};
    for (size_t i = 0; i < sn->nlinked; i++) {
        if (later(&sn->linked[i].st.st_mtim, &newest))
            newest = sn->linked[i].st.st_mtim;
        if (later(&sn->linked[i].st.st_ctim, &newest))
            newest = sn->linked[i].st.st_ctim;
    }
    for (int i = 0; i < 100; i++) {
        struct timespec now;
        if (clock_gettime(CLOCK_REALTIME_COARSE, &now) != 0 || later(&now, &newest))
            return;
        const struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

int sr_snap_take(struct sr_snaps *k, const char *dir, const char *spool, uint64_t n,
                 const char *const *exclude, size_t nexclude, struct sr_snap *out)
{
    memset(out, 0, sizeof(*out));
    struct walk_ctx c = {.k = k, .sn = out, .exclude = exclude, .nexclude = nexclude};
    int rc = make_root(dir, spool, n, out, &c.copy_all);
    if (rc < 0)
        return rc;
    const int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    c.snapfd = open(out->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    c.buf = malloc(COPY_BUF);
    if (dfd < 0 || c.snapfd < 0 || !c.buf)
        rc = sr_errf(dfd < 0 ? -errno : -ENOMEM, "cannot snapshot %s: %s", dir,
                     strerror(dfd < 0 ? errno : ENOMEM));
    if (rc == 0) {
        const struct sr_walk_opts o = {.max_depth = SR_TREE_MAX_DEPTH, .what = "snapshot"};
        rc = sr_walk(dfd, dir, &o, snap_visit, &c);
    }
    if (rc == 0)
        wait_past(out);
    free(c.buf);
    if (dfd >= 0)
        close(dfd);
    if (c.snapfd >= 0)
        close(c.snapfd);
    if (rc < 0)
        sr_snap_remove(out);
    return rc;
}

int sr_snap_verify(struct sr_snaps *k, const struct sr_snap *sn)
{
    for (size_t i = 0; i < sn->nlinked; i++) {
        const struct sr_snap_linked *l = &sn->linked[i];
        char path[8400];
        struct stat a;
        if (sr_pathf(path, sizeof(path), "%s/%s", sn->root, l->rel) < 0)
            return -ENAMETOOLONG;
        /* ctime moves with the link count too: the job's rename over
         * the file (or its unlink) is no write to its bytes. */
        if (lstat(path, &a) == 0 && a.st_ino == l->st.st_ino && a.st_size == l->st.st_size &&
            same_time(&a.st_mtim, &l->st.st_mtim) &&
            (same_time(&a.st_ctim, &l->st.st_ctim) || a.st_nlink < l->st.st_nlink))
            continue;
        struct known *e = find(k, l->rel, 0);
        if (e)
            e->in_place = 1;
        return sr_errf(SR_ECHANGED,
                       "%s was rewritten in place while the commit packed it (spotrun had "
                       "linked it, expecting the job to replace it by a rename, as "
                       "spotrun.saving() does): this commit fails, the previous checkpoint "
                       "stands; %s is copied at commits from now on",
                       l->rel, l->rel);
    }
    return 0;
}

void sr_snap_remove(struct sr_snap *sn)
{
    if (sn->root[0])
        (void)sr_rmtree(sn->root);
    sn->root[0] = '\0';
    for (size_t i = 0; i < sn->nlinked; i++)
        free(sn->linked[i].rel);
    free(sn->linked);
    sn->linked = NULL;
    sn->nlinked = sn->caplinked = 0;
}
