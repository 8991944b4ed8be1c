/*
 * store_file.c - the "file" store backend: objects are files under a root
 * directory, keys are their relative paths (see store.h).
 *
 * DESIGN: put and the streaming writer write through fsutil's durable
 * writer (a temp file ".<name>.tmp.XXXXXX" beside the object, renamed in
 * after fsync; create-only objects are linked in), so readers see a whole
 * object or none; listings skip dot-names, hiding temp files of uploads in
 * progress. Deleting fsyncs the directory (gc relies on "manifest gone"
 * being durable before "data gone") and prunes parent directories that became
 * empty, up to but not including the root.
 *
 * Keys reaching this file were validated by store.c (relative, no "." or
 * ".." segments), so joining them to the root cannot escape it.
 *
 * Conditional writes (put_if) hold a lock file beside the object; every
 * wait for it is bounded: a holder stalled past SPOTRUN_STORE_LOCK_WAIT
 * (default 10 s) has its lock broken, and is fenced so that its late write
 * cannot land (see "the object lock" below).
 *
 * Threads: the handle is immutable after open; every operation works on its
 * own file descriptors, so concurrent use from several threads is safe. A
 * put racing with the pruning of its parent directory retries.
 */
#include "fsutil.h"
#include "log.h"
#include "store.h"
#include "units.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

struct file_store {
    char *root;
};

static const char *root_of(const struct sr_store *st)
{
    return ((const struct file_store *)st->impl)->root;
}

/* Path of key (or of the root itself for ""). */
static int key_path(const struct sr_store *st, const char *key, char *out, size_t len)
{
    int n = *key ? snprintf(out, len, "%s/%s", root_of(st), key)
                 : snprintf(out, len, "%s", root_of(st));
    if (n < 0 || (size_t)n >= len)
        return sr_errf(-ENAMETOOLONG, "store %s: key %s: path too long", st->url, key);
    return 0;
}

/* Refuses a key whose path below the root goes through a symlink (with
 * last, or is one): writes, deletes and listings never follow a link
 * planted in the store (a run directory linked to ~/victim would have
 * --fresh delete, and the lease write, there). Unlinking the last
 * component itself never follows it. */
static int check_no_links(const struct sr_store *st, const char *key, int last)
{
    char path[PATH_MAX];
    const size_t rootlen = strlen(root_of(st));
    const int rc = key_path(st, key, path, sizeof(path));
    if (rc < 0 || !*key)
        return rc;
    for (char *p = path + rootlen + 1;; p++) {
        const int end = *p == '\0';
        if ((*p != '/' && !end) || p[-1] == '/')
            continue;
        if (end && !last)
            return 0;
        const char saved = *p;
        *p = '\0';
        struct stat sb;
        if (lstat(path, &sb) != 0)
            return 0; /* missing from here on: nothing to follow */
        if (S_ISLNK(sb.st_mode))
            return sr_errf(-ELOOP,
                           "%s in store %s is a symlink: spotrun does not follow symlinks inside "
                           "a store (remove the link)",
                           path + rootlen + 1, st->url);
        if (end)
            return 0;
        *p = saved;
    }
}

/* key's path, for a write, delete or listing: check_no_links first. */
static int link_free_path(const struct sr_store *st, const char *key, int last, char *path,
                          size_t len)
{
    const int rc = key_path(st, key, path, len);
    return rc < 0 ? rc : check_no_links(st, key, last);
}

/* What a non-regular file is, for messages. */
static const char *kind_of(mode_t mode)
{
    return S_ISDIR(mode)                    ? "a directory"
           : S_ISFIFO(mode)                 ? "a FIFO"
           : S_ISSOCK(mode)                 ? "a socket"
           : S_ISLNK(mode)                  ? "a symlink"
           : S_ISCHR(mode) || S_ISBLK(mode) ? "a device"
                                            : "not a regular file";
}

/* Opens the object key for reading, trusting nothing below the root: no
 * component may be a symlink (O_NOFOLLOW at every level, so a planted link
 * to a secret is never read, let alone quoted in a parse error), and the
 * object must be a regular file, opened without blocking (a FIFO would
 * hang the reader forever). Returns the fd, -ENOENT when missing, -EBADMSG
 * for anything that is not a regular file (a bad object: callers fall
 * back as for a corrupt one). */
static int open_object(const struct sr_store *st, const char *key)
{
    char rest[PATH_MAX];
    if (snprintf(rest, sizeof(rest), "%s", key) >= (int)sizeof(rest))
        return sr_errf(-ENAMETOOLONG, "store %s: key %s: path too long", st->url, key);
    int dfd = open(root_of(st), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return sr_errf(-errno, "cannot open store %s: %s", st->url, strerror(errno));
    for (char *seg = rest;;) {
        char *const slash = strchr(seg, '/');
        if (slash)
            *slash = '\0';
        const int flags = slash ? O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
                                : O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC;
        const int fd = openat(dfd, seg, flags);
        const int e = errno;
        struct stat sb;
        const int there = fd < 0 && fstatat(dfd, seg, &sb, AT_SYMLINK_NOFOLLOW) == 0;
        const int link = there && S_ISLNK(sb.st_mode);
        close(dfd);
        if (there && !link && !slash && !S_ISREG(sb.st_mode)) /* a socket: ENXIO */
            return sr_errf(-EBADMSG, "%s in store %s is %s, not an object; not read", key, st->url,
                           kind_of(sb.st_mode));
        if (link && !slash)
            return sr_errf(-EBADMSG,
                           "%s in store %s is a symlink: spotrun does not follow symlinks "
                           "inside a store",
                           key, st->url);
        if (link) /* rest now ends at the link */
            return sr_errf(-EBADMSG,
                           "%s in store %s goes through the symlink %s: spotrun does not follow "
                           "symlinks inside a store",
                           key, st->url, rest);
        if (fd < 0 && (e == ENOENT || e == ENOTDIR))
            return sr_errf(-ENOENT, "%s not found in store %s", key, st->url);
        if (fd < 0)
            return sr_errf(-e, "cannot open %s in store %s: %s", key, st->url, strerror(e));
        if (slash) {
            *slash = '/';
            seg = slash + 1;
            dfd = fd;
            continue;
        }
        if (fstat(fd, &sb) != 0) {
            const int fe = errno;
            close(fd);
            return sr_errf(-fe, "cannot stat %s in store %s: %s", key, st->url, strerror(fe));
        }
        if (!S_ISREG(sb.st_mode)) {
            close(fd);
            return sr_errf(-EBADMSG, "%s in store %s is %s, not an object; not read", key, st->url,
                           kind_of(sb.st_mode));
        }
        return fd;
    }
}

/* key's path (for messages) and its object opened read-only (open_object). */
static int open_key(const struct sr_store *st, const char *key, char *path, size_t len)
{
    const int rc = key_path(st, key, path, len);
    return rc < 0 ? rc : open_object(st, key);
}

/* Ensures the directory of path exists, then runs the atomic write; retries
 * when a concurrent delete pruned the directory in between. */
static int put_common(struct sr_store *st, const char *key, const void *buf, size_t len,
                      const char *src, int create)
{
    char path[PATH_MAX], dir[PATH_MAX];
    int rc = link_free_path(st, key, 0, path, sizeof(path));
    if (rc < 0)
        return rc;
    sr_dirname(path, dir, sizeof(dir));
    /* A concurrent delete may prune the directory between mkdirs and the
     * write (or between two levels of mkdirs): that shows as ENOENT. */
    for (int tries = 0; tries < 50; tries++) {
        rc = sr_mkdirs(dir, 0755);
        if (rc == 0)
            rc = src ? sr_adopt_file(src, path, create) : sr_write_file_atomic(path, buf, len);
        if (rc != -ENOENT || (src && access(src, F_OK) != 0))
            return rc;
    }
    return rc;
}

static int fs_put(struct sr_store *st, const char *key, const void *buf, size_t len)
{
    return put_common(st, key, buf, len, NULL, 0);
}

static int fs_put_file(struct sr_store *st, const char *key, const char *path, int create)
{
    return put_common(st, key, NULL, 0, path, create);
}

static int fs_get(struct sr_store *st, const char *key, size_t max, char **buf, size_t *len)
{
    char path[PATH_MAX];
    const int fd = open_key(st, key, path, sizeof(path));
    if (fd < 0)
        return fd;
    const int rc = sr_read_fd(fd, path, max, buf, len);
    close(fd);
    return rc;
}

static int fs_size(struct sr_store *st, const char *key, uint64_t *size)
{
    char path[PATH_MAX];
    const int fd = open_key(st, key, path, sizeof(path));
    if (fd < 0)
        return fd;
    struct stat sb;
    const int rc =
        fstat(fd, &sb) == 0 ? 0 : sr_errf(-errno, "cannot stat %s: %s", path, strerror(errno));
    if (rc == 0)
        *size = (uint64_t)sb.st_size;
    close(fd);
    return rc;
}

/* Objects are local files: the codec's file source reads them. */
static int fs_source(struct sr_store *st, const char *key, struct sr_source *src)
{
    char path[PATH_MAX];
    const int fd = open_key(st, key, path, sizeof(path));
    return fd < 0 ? fd : sr_source_fd_open(fd, path, src);
}

static void fs_source_close(struct sr_store *st, struct sr_source *src)
{
    (void)st;
    sr_source_file_close(src);
}

/* A lock file of a conditional write (".<name>.tmp.lock"): it outlives
 * the object it guarded. */
static int is_lock_name(const char *name)
{
    const size_t n = strlen(name);
    return name[0] == '.' && n > 10 && strcmp(name + n - 9, ".tmp.lock") == 0;
}

static int fs_list(struct sr_store *st, const char *prefix, struct sr_strlist *out)
{
    char path[PATH_MAX];
    int rc = link_free_path(st, prefix, 1, path, sizeof(path));
    if (rc < 0)
        return rc;
    DIR *d = opendir(path);
    if (!d) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        return sr_errf(-errno, "cannot list %s: %s", path, strerror(errno));
    }
    struct dirent *de;
    while ((errno = 0, de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') /* ".", "..", temp files */
            continue;
        if ((rc = sr_strlist_push(out, de->d_name)) < 0)
            goto out;
    }
    if (errno != 0)
        rc = sr_errf(-errno, "cannot list %s: %s", path, strerror(errno));
    sr_strlist_sort(out);
out:
    closedir(d);
    if (rc < 0)
        sr_strlist_free(out);
    return rc;
}

/* When dir holds nothing but dot names, removes its lock files
 * (".<name>.tmp.lock") that nobody holds: each is taken first (flock), so
 * a holder's is left alone, and a waiter that gets one after it went
 * finds it unlinked and retries on a new one (lock_object). */
static void remove_idle_locks(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') { /* an object or a directory: it stays anyway */
            closedir(d);
            return;
        }
    rewinddir(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_lock_name(e->d_name))
            continue;
        const int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat a, b;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &a) == 0 &&
            fstatat(dirfd(d), e->d_name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino &&
            a.st_dev == b.st_dev)
            unlinkat(dirfd(d), e->d_name, 0);
        close(fd);
    }
    closedir(d);
}

/* Removes the now-empty directories above path, up to the root; a
 * directory that holds nothing but idle lock files is empty. */
static void prune_parents(struct sr_store *st, const char *path)
{
    char dir[PATH_MAX];
    size_t rootlen = strlen(root_of(st));
    sr_dirname(path, dir, sizeof(dir));
    while (strlen(dir) > rootlen) {
        int e = rmdir(dir) == 0 ? 0 : errno;
        if (e == ENOTEMPTY || e == EEXIST) {
            remove_idle_locks(dir);
            e = rmdir(dir) == 0 ? 0 : errno;
        }
        if (e != 0 && e != ENOENT)
            break; /* ENOTEMPTY: someone else's objects live here */
        char up[PATH_MAX];
        sr_dirname(dir, up, sizeof(up));
        memcpy(dir, up, sizeof(dir));
    }
}

/* Removes the temp files (".<name>.tmp.*") that writers killed mid-write
 * left in dir, so that the "directory" can go. */
static void sweep_temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] == '.' && strstr(e->d_name, ".tmp.") && e->d_type != DT_DIR)
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
}

static int fs_del(struct sr_store *st, const char *key)
{
    char path[PATH_MAX];
    int rc = link_free_path(st, key, 0, path, sizeof(path));
    if (rc < 0)
        return rc;
    if (unlink(path) != 0) {
        int e = errno;
        if (e == EISDIR || e == EPERM) {
            /* A "directory": it goes once empty (an upload killed mid-way
             * may have left only its temp files in it). */
            int r = rmdir(path);
            if (r != 0 && errno == ENOTEMPTY) {
                sweep_temp_files(path);
                r = rmdir(path);
            }
            e = r == 0 || errno == ENOENT ? 0 : errno;
            if (e == ENOTEMPTY)
                return sr_errf(-EISDIR,
                               "cannot delete %s from store %s: it is a non-empty "
                               "directory",
                               key, st->url);
        }
        if (e != 0 && e != ENOENT && e != ENOTDIR)
            return sr_errf(-e, "cannot delete %s from store %s: %s", key, st->url, strerror(e));
    }
    rc = sr_fsync_parent(path);
    if (rc == -ENOENT)
        rc = 0; /* the parent was already gone */
    prune_parents(st, path);
    return rc;
}

/* ---- conditional writes ------------------------------------------------ */

/* The ETag of a file object: a hash of its content, so that any two
 * writers agree on it without shared state. */
static void content_etag(const void *buf, size_t len, char *etag)
{
    snprintf(etag, SR_ETAG_MAX, "%016llx", (unsigned long long)XXH3_64bits(buf, len));
}

/* The content ETag of the open object fd, read in pieces: memory stays
 * small whatever the object's size (a planted LEASE of a gigabyte). */
static int fd_etag(int fd, const char *path, char *etag)
{
    XXH3_state_t *h = XXH3_createState();
    char *chunk = malloc(64u << 10);
    int rc = h && chunk ? 0 : sr_errf(-ENOMEM, "cannot read %s: %s", path, strerror(ENOMEM));
    if (rc == 0)
        XXH3_64bits_reset(h);
    for (ssize_t n; rc == 0 && (n = read(fd, chunk, 64u << 10)) != 0;) {
        if (n < 0 && errno != EINTR)
            rc = sr_errf(-errno, "cannot read %s: %s", path, strerror(errno));
        else if (n > 0)
            XXH3_64bits_update(h, chunk, (size_t)n);
    }
    if (rc == 0)
        snprintf(etag, SR_ETAG_MAX, "%016llx", (unsigned long long)XXH3_64bits_digest(h));
    XXH3_freeState(h);
    free(chunk);
    return rc;
}

static int fs_get_etag(struct sr_store *st, const char *key, size_t max, char **buf, size_t *len,
                       char *etag)
{
    const int rc = fs_get(st, key, max, buf, len);
    if (rc == 0)
        content_etag(*buf, *len, etag);
    if (rc == -EFBIG) { /* its ETag all the same (store.h), without holding it */
        char path[PATH_MAX];
        const int fd = open_key(st, key, path, sizeof(path));
        if (fd < 0 || fd_etag(fd, path, etag) < 0)
            etag[0] = '\0';
        if (fd >= 0)
            close(fd);
    }
    return rc;
}

/* ---- the object lock ---------------------------------------------------- */

/* The lock guards a read-compare-write of one small object: milliseconds,
 * seconds on a loaded disk. A holder still in it after SR_LOCK_WAIT_MS is
 * paused (SIGSTOP, a frozen VM) or hung (a dead NFS server): waiting on
 * would hang every other writer of the run past its own bounds, so the
 * waiter breaks the lock instead. Breaking is safe because it fences the
 * holder: the breaker renames a fresh, locked lock file over the old one
 * and then deletes the object's temp files; the holder checks, after
 * creating its temp file and before renaming it in, that the lock file is
 * still its own. A holder that wakes before that check fails it; one that
 * passed it had its temp file in place before the breaker's sweep, which
 * either finds it (the rename then fails) or comes after its rename (the
 * breaker then reads its write). Either way no write lands under the
 * breaker's lock: the holder's put_if fails with -EAGAIN and is retried. */
#define SR_LOCK_WAIT_MS 10000
#define SR_LOCK_SAY_MS 1000 /* after this long, say what we wait for */

struct obj_lock {
    int fd;
    char path[PATH_MAX + 32]; /* .<name>.tmp.lock beside the object */
};

/* How long to wait for a lock before breaking it: SPOTRUN_STORE_LOCK_WAIT
 * (a duration) or SR_LOCK_WAIT_MS. */
static int64_t lock_wait_ms(void)
{
    const char *s = getenv("SPOTRUN_STORE_LOCK_WAIT");
    int64_t ms = 0;
    if (s && *s && sr_parse_duration_ms(s, &ms) == 0 && ms >= 0)
        return ms;
    return SR_LOCK_WAIT_MS;
}

/* Stamps the lock file with its holder, for the messages of waiters. */
static void stamp_holder(int fd)
{
    char host[256] = "";
    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "unknown host");
    char buf[320];
    const int n = snprintf(buf, sizeof(buf), "pid %ld on %.255s\n", (long)getpid(), host);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
        /* informational only: a waiter then says "unknown holder" */
    }
}

/* "pid 42 on node-a", read from the lock file at path. */
static void read_holder(const char *path, char *out, size_t len)
{
    snprintf(out, len, "an unknown holder");
    const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[320];
    const ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    if (n <= 4 || strncmp(buf, "pid ", 4) != 0)
        return;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    snprintf(out, len, "%s", buf);
}

/* 1 when fd is the lock file now at path (not one unlinked or replaced). */
static int lock_current(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino &&
           a.st_dev == b.st_dev;
}

/* Removes the temp files of the object whose lock file is lk->path (all
 * ".<name>.tmp.*" but the lock itself): a fenced holder's rename fails. */
static void sweep_object_temps(const struct obj_lock *lk)
{
    char dir[PATH_MAX];
    sr_dirname(lk->path, dir, sizeof(dir));
    const char *lockname = strrchr(lk->path, '/') + 1;
    const size_t plen = strlen(lockname) - strlen("lock");
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, lockname, plen) == 0 && strcmp(e->d_name, lockname) != 0)
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
}

/* Breaks the lock at lk->path held by a stalled holder: a fresh lock file,
 * locked before anyone can see it, renamed over the old one; then the
 * sweep. Returns the new fd, or -errno (-ENOENT: the directory went; the
 * caller retries). */
static int break_lock(const struct obj_lock *lk)
{
    char tmp[PATH_MAX + 48];
    snprintf(tmp, sizeof(tmp), "%s.XXXXXX", lk->path);
    const int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fchmod(fd, 0644) != 0 || flock(fd, LOCK_EX | LOCK_NB) != 0 || rename(tmp, lk->path) != 0) {
        const int e = errno;
        unlink(tmp);
        close(fd);
        return -e;
    }
    sweep_object_temps(lk);
    return fd;
}

/* Takes the exclusive lock of the object at path (key in st, for
 * messages): flock on ".<name>.tmp.lock" beside it (deleting the
 * "directory" sweeps it), polled, so the wait is bounded: a holder still
 * there after lock_wait_ms() is stalled, and its lock is broken (see
 * above). A lock file unlinked or replaced while we waited is not a lock:
 * retry on the new one. Fills lk (lk->fd to close), or returns -errno. */
static int lock_object(struct sr_store *st, const char *key, const char *path, struct obj_lock *lk)
{
    char dir[PATH_MAX];
    const char *base = strrchr(path, '/');
    sr_dirname(path, dir, sizeof(dir));
    if (snprintf(lk->path, sizeof(lk->path), "%s/.%s.tmp.lock", dir, base ? base + 1 : path) >=
        (int)sizeof(lk->path))
        return sr_errf(-ENAMETOOLONG, "cannot lock %s: %s", path, strerror(ENAMETOOLONG));
    const int64_t bound = lock_wait_ms();
    for (int tries = 0; tries < 50; tries++) {
        const int64_t start = sr_now_ms(); /* each lock file's holder gets the whole bound */
        int said = 0;
        int rc = sr_mkdirs(dir, 0755);
        if (rc < 0)
            return rc;
        int fd = open(lk->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
            if (errno == ENOENT)
                continue; /* the directory was pruned in between */
            return sr_errf(-errno, "cannot lock %s: %s", path, strerror(errno));
        }
        for (useconds_t nap = 1000;; nap = nap < 50000 ? nap * 2 : nap) {
            if (flock(fd, LOCK_EX | LOCK_NB) == 0)
                break;
            if (errno != EWOULDBLOCK && errno != EINTR) {
                const int e = errno;
                close(fd);
                return sr_errf(-e, "cannot lock %s: %s", path, strerror(e));
            }
            if (!lock_current(fd, lk->path))
                break; /* replaced or unlinked meanwhile: take the new one */
            const int64_t waited = sr_now_ms() - start;
            char holder[320], w[32];
            if (waited >= bound) {
                read_holder(lk->path, holder, sizeof(holder));
                sr_format_duration_ms(waited, w, sizeof(w));
                sr_warn("%s in store %s has been locked by %s for %s, far longer than a write "
                        "takes (paused or hung?): breaking its lock; the holder's write will "
                        "fail and be retried",
                        key, st->url, holder, w);
                close(fd);
                fd = break_lock(lk);
                if (fd == -ENOENT)
                    break;
                if (fd < 0)
                    return sr_errf(fd, "cannot break the lock of %s in store %s: %s", key, st->url,
                                   strerror(-fd));
                stamp_holder(fd);
                lk->fd = fd;
                return 0;
            }
            if (!said && waited >= SR_LOCK_SAY_MS) {
                read_holder(lk->path, holder, sizeof(holder));
                sr_format_duration_ms(bound, w, sizeof(w));
                sr_info("waiting for the lock of %s in store %s, held by %s (up to %s, then it "
                        "is broken)",
                        key, st->url, holder, w);
                said = 1;
            }
            usleep(nap);
        }
        if (fd >= 0 && lock_current(fd, lk->path)) {
            stamp_holder(fd);
            lk->fd = fd;
            return 0;
        }
        if (fd >= 0)
            close(fd);
    }
    return sr_errf(-EAGAIN, "cannot lock %s: its directory keeps changing", path);
}

static int fs_put_if(struct sr_store *st, const char *key, const void *buf, size_t len,
                     const char *match, char *etag)
{
    char path[PATH_MAX];
    int rc = link_free_path(st, key, 0, path, sizeof(path));
    if (rc < 0)
        return rc;
    struct obj_lock lk;
    rc = lock_object(st, key, path, &lk);
    if (rc < 0)
        return rc;
    char cur_etag[SR_ETAG_MAX];
    const int cfd = open_object(st, key);
    rc = cfd < 0 ? cfd : fd_etag(cfd, path, cur_etag);
    if (cfd >= 0)
        close(cfd);
    if (rc == 0) {
        if (!match)
            rc = sr_errf(-EEXIST, "%s already exists in store %s", key, st->url);
        else if (strcmp(match, cur_etag) != 0)
            rc = sr_errf(-ESTALE, "%s in store %s was changed by someone else", key, st->url);
    } else if (rc == -ENOENT) {
        rc = match ? sr_errf(-ENOENT, "%s not found in store %s", key, st->url) : 0;
    }
    if (rc == 0) {
        /* The fence of a broken lock (above lock_object): the temp file
         * first, then the check, then the rename. */
        struct sr_durable d;
        rc = sr_durable_open(&d, path);
        if (rc == 0)
            rc = sr_durable_write(&d, buf, len);
        if (rc == 0 && !lock_current(lk.fd, lk.path))
            rc = -ENOENT;
        if (rc == 0)
            rc = sr_durable_commit(&d, 0);
        sr_durable_abort(&d);
        if (rc == -ENOENT) /* the lock was broken (or the directory deleted) under us */
            rc = sr_errf(-EAGAIN,
                         "%s in store %s was not written: its lock was broken while this "
                         "process held it (it was paused or hung past SPOTRUN_STORE_LOCK_WAIT); "
                         "try again",
                         key, st->url);
    }
    if (rc == 0)
        content_etag(buf, len, etag);
    close(lk.fd); /* releases the lock, after the rename is durable */
    return rc;
}

/* ---- streaming writer: fsutil's durable writer beside the object ------- */

struct fs_writer {
    struct sr_store_writer w;
    int create; /* commit only if the object does not exist */
    struct sr_durable file;
    char path[PATH_MAX];
};

static int fs_writer_open(struct sr_store *st, const char *key, int create,
                          struct sr_store_writer **out)
{
    struct fs_writer *fw = calloc(1, sizeof(*fw));
    if (!fw)
        return sr_errf(-ENOMEM, "out of memory");
    fw->create = create;
    char dir[PATH_MAX];
    int rc = link_free_path(st, key, 0, fw->path, sizeof(fw->path));
    if (rc == 0) {
        sr_dirname(fw->path, dir, sizeof(dir));
        rc = sr_mkdirs(dir, 0755);
    }
    if (rc == 0)
        rc = sr_durable_open(&fw->file, fw->path);
    if (rc < 0) {
        free(fw);
        return rc;
    }
    *out = &fw->w;
    return 0;
}

static int fs_writer_write(struct sr_store_writer *w, const void *buf, size_t len)
{
    return sr_durable_write(&((struct fs_writer *)w)->file, buf, len);
}

static int fs_writer_commit(struct sr_store_writer *w)
{
    struct fs_writer *fw = (struct fs_writer *)w;
    return sr_durable_commit(&fw->file, fw->create);
}

static void fs_writer_close(struct sr_store_writer *w)
{
    struct fs_writer *fw = (struct fs_writer *)w;
    sr_durable_abort(&fw->file);
    free(fw);
}

static void fs_close(struct sr_store *st)
{
    struct file_store *fs = st->impl;
    free(fs->root);
    free(fs);
    free(st->url);
    free(st);
}

static const struct sr_store_ops file_ops = {
    .scheme = "file",
    .put = fs_put,
    .put_file = fs_put_file,
    .get = fs_get,
    .size = fs_size,
    .source = fs_source,
    .source_close = fs_source_close,
    .list = fs_list,
    .del = fs_del,
    .close = fs_close,
    .writer_open = fs_writer_open,
    .writer_write = fs_writer_write,
    .writer_commit = fs_writer_commit,
    .writer_close = fs_writer_close,
    .put_if = fs_put_if,
    .get_etag = fs_get_etag,
};

enum root_mode { ROOT_CREATE, ROOT_EXISTING, ROOT_READER };

/* Creates the root if missing (ROOT_CREATE; else a missing root is -ENOENT
 * and nothing is made); it must be a directory this process may write,
 * except for a reader: one it may only read sets *ro. */
static int check_root(const char *path, enum root_mode mode, int *ro)
{
    struct stat sb;
    *ro = 0;
    if (mode != ROOT_CREATE && stat(path, &sb) != 0)
        return errno == ENOENT ? sr_errf(-ENOENT,
                                         "no store at %s: the directory does not exist (check "
                                         "--store or SPOTRUN_STORE; `spotrun run` or `push` "
                                         "creates a store)",
                                         path)
                               : sr_errf(-errno, "cannot open store %s: %s", path, strerror(errno));
    if (mode == ROOT_READER) {
        if (!S_ISDIR(sb.st_mode))
            return sr_errf(-ENOTDIR, "store %s is not a directory", path);
        if (access(path, R_OK | X_OK) != 0)
            return sr_errf(-errno, "store %s is not readable: %s", path, strerror(errno));
        if (access(path, W_OK) != 0) {
            sr_debug("store %s is not writable (%s): reading it read-only, the readers' snapshots "
                     "are not written",
                     path, strerror(errno));
            *ro = 1;
        }
        return 0;
    }
    int rc = sr_mkdirs(path, 0755);
    if (rc == -ENOTDIR)
        return sr_errf(-ENOTDIR, "store %s is not a directory", path);
    if (rc < 0) /* EPERM (e.g. under /sys) is a permission problem, not a hostile store */
        return sr_errf(rc == -EPERM ? -EACCES : rc, "cannot create store %s: %s", path,
                       strerror(-rc));
    if (access(path, W_OK | X_OK) != 0)
        return sr_errf(-errno, "store %s is not writable: %s", path, strerror(errno));
    return 0;
}

static int file_open(const char *path, enum root_mode mode, struct sr_store **out)
{
    *out = NULL;
    if (path[0] != '/')
        return sr_errf(-EINVAL, "file store path %s is not absolute", path);
    /* Leave room for the longest key plus a temp suffix under PATH_MAX. */
    if (strlen(path) > PATH_MAX - 1024 - 64)
        return sr_errf(-ENAMETOOLONG, "store path %s is too long", path);
    int ro;
    int rc = check_root(path, mode, &ro);
    if (rc < 0)
        return rc;
    struct sr_store *st = calloc(1, sizeof(*st));
    struct file_store *fs = calloc(1, sizeof(*fs));
    size_t ulen = strlen(path) + sizeof("file://");
    char *url = malloc(ulen);
    char *root = strdup(path);
    if (!st || !fs || !url || !root) {
        free(st);
        free(fs);
        free(url);
        free(root);
        return sr_errf(-ENOMEM, "cannot open store %s: %s", path, strerror(ENOMEM));
    }
    snprintf(url, ulen, "file://%s", path);
    fs->root = root;
    st->ops = &file_ops;
    st->url = url;
    st->impl = fs;
    st->read_only = ro;
    *out = st;
    return 0;
}

int sr_store_file_open(const char *path, struct sr_store **out)
{
    return file_open(path, ROOT_CREATE, out);
}

int sr_store_file_open_existing(const char *path, struct sr_store **out)
{
    return file_open(path, ROOT_EXISTING, out);
}

int sr_store_file_open_reader(const char *path, struct sr_store **out)
{
    return file_open(path, ROOT_READER, out);
}
