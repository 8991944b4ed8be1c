/*
 * fsutil.c - filesystem helpers with spotrun's durability idiom (see fsutil.h).
 *
 * DESIGN: every file spotrun writes whole goes through one durable writer
 * (struct sr_durable): a temp file ".<name>.tmp.XXXXXX" in the target's
 * directory (same filesystem, so the rename is atomic; the leading dot hides
 * it from store listings), which is written fully, fsynced, renamed over the
 * target (or linked to it, for create-only objects), and then the directory
 * is fsynced so the rename itself survives a power cut. On any failure the
 * temp file is unlinked and the target is untouched. Its users: whole
 * buffers (sr_write_file_atomic), copies (sr_adopt_file across
 * filesystems), the codec's archive file and the file store's streaming
 * writer.
 *
 * Deletion works on directory file descriptors (openat/unlinkat with
 * O_NOFOLLOW), so a symlink inside a tree is removed, never followed, and a
 * concurrent rename of a parent cannot redirect us elsewhere.
 *
 * Threads: no shared state; every function is safe to call concurrently.
 * Errors: 0 or -errno, with a message naming the path (sr_errf()).
 */
#include "fsutil.h"
#include "log.h"
#include "walk.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_CHUNK (1u << 20)

void sr_dirname(const char *path, char *out, size_t outlen)
{
    if (outlen == 0)
        return;
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') /* trailing slashes */
        n--;
    while (n > 0 && path[n - 1] != '/') /* last component */
        n--;
    while (n > 1 && path[n - 1] == '/') /* separating slashes */
        n--;
    if (n == 0) {
        snprintf(out, outlen, ".");
        return;
    }
    snprintf(out, outlen, "%.*s", (int)n, path);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

int sr_mkdirs(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return sr_errf(-ENAMETOOLONG, "cannot create directory %s: %s", path,
                       strerror(ENAMETOOLONG));
    size_t n = strlen(buf);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST) {
            int e = errno;
            return sr_errf(-e, "cannot create directory %s: %s", buf, strerror(e));
        }
        buf[i] = saved;
    }
    struct stat sb;
    if (stat(path, &sb) != 0) {
        int e = errno;
        return sr_errf(-e, "cannot create directory %s: %s", path, strerror(e));
    }
    if (!S_ISDIR(sb.st_mode))
        return sr_errf(-ENOTDIR, "cannot create directory %s: %s", path, strerror(ENOTDIR));
    return 0;
}

struct rm_ctx {
    const char *path; /* the tree's root, for messages */
    const char *why;  /* NULL: quietly; else each file removed is logged */
};

/* Removes one entry of the walk: a directory once its contents are gone. */
static int rm_visit(void *ctx, const struct sr_walk_entry *e, int post)
{
    const struct rm_ctx *c = ctx;
    const int dir = S_ISDIR(e->st->st_mode);
    if (dir && !post)
        return 0; /* emptied first, removed at its post visit */
    if (unlinkat(e->dfd, e->name, dir ? AT_REMOVEDIR : 0) != 0) {
        if (errno == ENOENT)
            return 0;
        return sr_errf(-errno, "cannot remove %s/%s: %s", c->path, e->rel, strerror(errno));
    }
    if (c->why && !dir)
        sr_info("removed %s/%s (%s)", c->path, e->rel, c->why);
    return 0;
}

/* Removes the contents of the open directory dfd (named path, for messages),
 * iteratively at any depth (walk.h). Takes ownership of dfd. */
static int rm_contents(int dfd, const char *path, const char *why)
{
    const struct sr_walk_opts o = {.what = "remove"};
    struct rm_ctx c = {.path = path, .why = why};
    const int rc = sr_walk(dfd, path, &o, rm_visit, &c);
    close(dfd);
    return rc;
}

int sr_rmtree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) {
        if (errno == ENOENT)
            return 0;
        return sr_errf(-errno, "cannot remove %s: %s", path, strerror(errno));
    }
    if (!S_ISDIR(sb.st_mode)) {
        if (unlink(path) != 0 && errno != ENOENT)
            return sr_errf(-errno, "cannot remove %s: %s", path, strerror(errno));
        return 0;
    }
    int rc = sr_empty_dir(path);
    if (rc < 0)
        return rc;
    if (rmdir(path) != 0 && errno != ENOENT)
        return sr_errf(-errno, "cannot remove %s: %s", path, strerror(errno));
    return 0;
}

int sr_rmtree_at(int dfd, const char *name, const char *path)
{
    struct stat sb;
    if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : sr_errf(-errno, "cannot remove %s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) {
        const int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return sr_errf(-errno, "cannot open directory %s: %s", path, strerror(errno));
        const int rc = rm_contents(fd, path, NULL);
        if (rc < 0)
            return rc;
    }
    if (unlinkat(dfd, name, S_ISDIR(sb.st_mode) ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT)
        return sr_errf(-errno, "cannot remove %s: %s", path, strerror(errno));
    return 0;
}

int sr_empty_dir(const char *dir)
{
    return sr_empty_dir_log(dir, NULL);
}

int sr_empty_dir_log(const char *dir, const char *why)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return sr_errf(-errno, "cannot open directory %s: %s", dir, strerror(errno));
    return rm_contents(fd, dir, why);
}

static int list_visit(void *ctx, const struct sr_walk_entry *e, int post)
{
    struct sr_file_list *l = ctx;
    if (post || S_ISDIR(e->st->st_mode))
        return 0;
    if (l->n >= SR_FILE_LIST_MAX) {
        l->more++;
        return 0;
    }
    if (l->n == l->cap) {
        const size_t cap = l->cap ? 2 * l->cap : 64;
        char **v = realloc(l->rel, cap * sizeof(*v));
        if (!v)
            return sr_errf(-ENOMEM, "out of memory listing files");
        l->rel = v;
        l->cap = cap;
    }
    if (!(l->rel[l->n] = strdup(e->rel)))
        return sr_errf(-ENOMEM, "out of memory listing files");
    l->n++;
    return 0;
}

int sr_file_list_of(const char *dir, struct sr_file_list *l)
{
    *l = (struct sr_file_list){0};
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : sr_errf(-errno, "cannot open %s: %s", dir, strerror(errno));
    const struct sr_walk_opts o = {.sorted = 1, .what = "list"};
    const int rc = sr_walk(fd, dir, &o, list_visit, l);
    close(fd);
    if (rc < 0)
        sr_file_list_free(l);
    return rc;
}

void sr_file_list_log_gone(const char *dir, struct sr_file_list *l, const char *why)
{
    char path[PATH_MAX];
    size_t kept = 0;
    struct stat st;
    for (size_t i = 0; i < l->n; i++) {
        if (sr_pathf(path, sizeof(path), "%s/%s", dir, l->rel[i]) == 0 && lstat(path, &st) == 0)
            kept++;
        else
            sr_info("removed %s/%s (%s)", dir, l->rel[i], why);
    }
    if (kept)
        sr_info("replaced %zu file(s) %s held by the restored ones of the same name (%s)", kept,
                dir, why);
    if (l->more)
        sr_info("and %zu more file(s) of %s, not listed (%s)", l->more, dir, why);
    sr_file_list_free(l);
}

void sr_file_list_free(struct sr_file_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->rel[i]);
    free(l->rel);
    *l = (struct sr_file_list){0};
}

int sr_fsync_path(const char *path)
{
    /* O_NONBLOCK: a FIFO planted where a directory was expected must not
     * hang us (there is nothing to sync in one anyway). */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return sr_errf(-errno, "cannot open %s: %s", path, strerror(errno));
    int rc = 0;
    /* Some filesystems cannot fsync a directory (EINVAL); nothing to do then. */
    if (fsync(fd) != 0 && errno != EINVAL)
        rc = sr_errf(-errno, "cannot sync %s: %s", path, strerror(errno));
    close(fd);
    return rc;
}

int sr_fsync_parent(const char *path)
{
    char dir[PATH_MAX];
    sr_dirname(path, dir, sizeof(dir));
    return sr_fsync_path(dir);
}

static int write_all(int fd, const void *buf, size_t len, const char *path)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return sr_errf(-errno, "cannot write %s: %s", path, strerror(errno));
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Puts tmp in place as path: rename over it, or with noreplace, only if
 * path does not exist (-EEXIST): link() is an atomic create on every
 * filesystem with hard links (NFS too); renameat2(RENAME_NOREPLACE) where
 * there are none. tmp is gone on success. */
static int place(const char *tmp, const char *path, int noreplace)
{
    if (!noreplace)
        return rename(tmp, path) == 0 ? 0 : -errno;
    if (link(tmp, path) == 0) {
        unlink(tmp);
        return 0;
    }
    if (errno != EPERM && errno != EOPNOTSUPP && errno != EMLINK)
        return -errno;
    return renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0 ? 0 : -errno;
}

/* ---- the durable writer ------------------------------------------------ */

int sr_durable_open(struct sr_durable *d, const char *path)
{
    *d = (struct sr_durable){.path = path, .fd = -1};
    char dir[PATH_MAX];
    sr_dirname(path, dir, sizeof(dir));
    if (snprintf(d->tmp, sizeof(d->tmp), "%s/.%s.tmp.XXXXXX", dir, base_name(path)) >=
        (int)sizeof(d->tmp)) {
        d->tmp[0] = '\0';
        return sr_errf(-ENAMETOOLONG, "cannot write %s: %s", path, strerror(ENAMETOOLONG));
    }
    d->fd = mkostemp(d->tmp, O_CLOEXEC);
    if (d->fd < 0) {
        d->tmp[0] = '\0';
        return sr_errf(-errno, "cannot write %s: %s", path, strerror(errno));
    }
    /* mkstemp makes 0600; stored objects are ordinary readable files. */
    if (fchmod(d->fd, 0644) != 0) {
        const int e = errno;
        sr_durable_abort(d);
        return sr_errf(-e, "cannot write %s: %s", path, strerror(e));
    }
    return 0;
}

int sr_durable_write(struct sr_durable *d, const void *buf, size_t len)
{
    const int rc = write_all(d->fd, buf, len, d->path);
    if (rc < 0)
        return rc;
    d->off += len;
    if (!d->scratch && d->off - d->synced >= SR_DURABLE_SYNC_CHUNK) {
        (void)sync_file_range(d->fd, (off_t)d->synced, (off_t)(d->off - d->synced),
                              SYNC_FILE_RANGE_WRITE);
        d->synced = d->off;
    }
    return 0;
}

int sr_durable_skip(struct sr_durable *d, size_t len)
{
    if (lseek(d->fd, (off_t)len, SEEK_CUR) < 0)
        return sr_errf(-errno, "cannot write %s: %s", d->path, strerror(errno));
    d->off += len;
    return 0;
}

int sr_durable_sink(void *d, const void *buf, size_t len)
{
    return buf ? sr_durable_write(d, buf, len) : sr_durable_skip(d, len);
}

int sr_durable_commit(struct sr_durable *d, int noreplace)
{
    int rc = 0;
    if (!d->scratch && fsync(d->fd) != 0)
        rc = sr_errf(-errno, "cannot write %s: %s", d->path, strerror(errno));
    if (close(d->fd) != 0 && rc == 0)
        rc = sr_errf(-errno, "cannot write %s: %s", d->path, strerror(errno));
    d->fd = -1;
    if (rc == 0 && (rc = place(d->tmp, d->path, noreplace)) < 0)
        rc = rc == -EEXIST
                 ? sr_errf(rc, "%s already exists", d->path)
                 : sr_errf(rc, "cannot rename %s to %s: %s", d->tmp, d->path, strerror(-rc));
    if (rc < 0) {
        sr_durable_abort(d);
        return rc;
    }
    d->tmp[0] = '\0'; /* in place: nothing left to remove */
    return d->scratch ? 0 : sr_fsync_parent(d->path);
}

void sr_durable_abort(struct sr_durable *d)
{
    if (d->fd >= 0)
        close(d->fd);
    if (d->tmp[0])
        unlink(d->tmp);
    d->fd = -1;
    d->tmp[0] = '\0';
}

int sr_write_file_atomic(const char *path, const void *buf, size_t len)
{
    struct sr_durable d;
    int rc = sr_durable_open(&d, path);
    if (rc == 0)
        rc = sr_durable_write(&d, buf, len);
    if (rc == 0)
        rc = sr_durable_commit(&d, 0);
    sr_durable_abort(&d);
    return rc;
}

/* ---- adopting a file: a hard link, else a copy ------------------------- */

/* read/write copy from the current offsets of in and out to EOF. */
static int copy_rw(int in, int out, const char *src, const char *dst)
{
    int rc = 0;
    char *buf = malloc(COPY_CHUNK);
    if (!buf)
        return sr_errf(-ENOMEM, "cannot copy %s: %s", src, strerror(ENOMEM));
    for (;;) {
        ssize_t n = read(in, buf, COPY_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = sr_errf(-errno, "cannot read %s: %s", src, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        rc = write_all(out, buf, (size_t)n, dst);
        if (rc < 0)
            goto out;
    }
out:
    free(buf);
    return rc;
}

/* Copies in to out with copy_file_range (in-kernel, reflinks where the
 * filesystem can), falling back to read/write where it is not supported. */
static int copy_fd(int in, int out, const char *src, const char *dst)
{
    for (;;) {
        ssize_t n = copy_file_range(in, NULL, out, NULL, COPY_CHUNK * 64, 0);
        if (n == 0)
            return 0;
        if (n > 0)
            continue;
        if (errno == EINTR)
            continue;
        if (errno == ENOSYS || errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP ||
            errno == EBADF || errno == ETXTBSY)
            return copy_rw(in, out, src, dst); /* offsets have advanced consistently */
        if (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)
            return sr_errf(-errno, "cannot write %s: %s", dst, strerror(errno));
        return sr_errf(-errno, "cannot copy %s to %s: %s", src, dst, strerror(errno));
    }
}

/* A durable writer filled by copy_fd (in-kernel: no writeback steps). */
static int copy_file(const char *src, const char *dst, int noreplace)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return sr_errf(-errno, "cannot open %s: %s", src, strerror(errno));
    struct sr_durable out;
    int rc = sr_durable_open(&out, dst);
    if (rc == 0)
        rc = copy_fd(in, out.fd, src, dst);
    if (rc == 0)
        rc = sr_durable_commit(&out, noreplace);
    sr_durable_abort(&out);
    close(in);
    return rc;
}

/* Same filesystem: the (fsynced) source gets a second name in dst's
 * directory, then that name is put in place as dst. No byte is copied. */
static int link_atomic(const char *src, const char *dst, int noreplace)
{
    const int fd = open(src, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) == 0 && fchmod(fd, 0644) == 0 ? 0 : -errno;
    close(fd);
    if (rc < 0)
        return rc;
    char dir[PATH_MAX], tmp[PATH_MAX];
    sr_dirname(dst, dir, sizeof(dir));
    static _Atomic unsigned counter;
    for (int tries = 0; tries < 16; tries++) {
        if (snprintf(tmp, sizeof(tmp), "%s/.%s.tmp.%d.%u", dir, base_name(dst), (int)getpid(),
                     counter++) >= (int)sizeof(tmp))
            return -ENAMETOOLONG;
        if (link(src, tmp) == 0)
            break;
        if (errno != EEXIST)
            return -errno;
    }
    if ((rc = place(tmp, dst, noreplace)) < 0) {
        unlink(tmp);
        return rc;
    }
    return sr_fsync_parent(dst);
}

int sr_adopt_file(const char *src, const char *dst, int noreplace)
{
    const int rc = link_atomic(src, dst, noreplace);
    if (rc == 0)
        return 0;
    if (rc == -EEXIST)
        return sr_errf(rc, "%s already exists", dst);
    /* EXDEV (another filesystem), EPERM (no hard links here), ...: copy. */
    return copy_file(src, dst, noreplace);
}

/* Reads fd to EOF into a malloc'd, NUL-terminated buffer; fails over max
 * (it reads up to max + 1 so a file that grew since fstat is still caught). */
static int read_fd(int fd, const char *path, size_t hint, size_t max, char **buf, size_t *len)
{
    int rc = 0;
    size_t cap = hint + 1, n = 0;
    char *b = malloc(cap + 1);
    if (!b)
        return sr_errf(-ENOMEM, "cannot read %s: %s", path, strerror(ENOMEM));
    for (;;) {
        if (n > max) {
            rc = sr_errf(-EFBIG, "%s is too large (more than %zu bytes)", path, max);
            goto out;
        }
        if (n == cap) {
            char *nb = realloc(b, cap * 2 + 1);
            if (!nb) {
                rc = sr_errf(-ENOMEM, "cannot read %s: %s", path, strerror(ENOMEM));
                goto out;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, b + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = sr_errf(-errno, "cannot read %s: %s", path, strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    b = NULL;
out:
    free(b);
    return rc;
}

int sr_read_file(const char *path, size_t max, char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sr_errf(-errno, "cannot open %s: %s", path, strerror(errno));
    const int rc = sr_read_fd(fd, path, max, buf, len);
    close(fd);
    return rc;
}

int sr_read_fd(int fd, const char *path, size_t max, char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return sr_errf(-errno, "cannot read %s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return sr_errf(-EISDIR, "cannot read %s: %s", path, strerror(EISDIR));
    if ((uint64_t)sb.st_size > max)
        return sr_errf(-EFBIG, "%s is too large (%lld bytes, at most %zu expected)", path,
                       (long long)sb.st_size, max);
    return read_fd(fd, path, (size_t)sb.st_size, max, buf, len);
}

int sr_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
    const uint8_t *p = buf;
    while (len > 0) {
        const ssize_t n = pwrite(fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

ssize_t sr_read_small(const char *path, char *buf, size_t cap)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t n = 0;
    while (n + 1 < cap) {
        const ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            const int e = errno;
            close(fd);
            return -e;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    return (ssize_t)n;
}

int sr_pathf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len)
        return sr_errf(-ENAMETOOLONG, "path too long: %.64s...", buf);
    return 0;
}
