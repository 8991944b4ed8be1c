/*
 * dirmark.c - which directories spotrun may replace (see dirmark.h).
 */
#include "dirmark.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "log.h"

int sr_dir_mark(const char *dir)
{
    return sr_dir_mark_run(dir, SR_DIR_MARK_ANY);
}

int sr_dir_mark_run(const char *dir, const char *run_id)
{
    if (setxattr(dir, SR_DIR_MARK_XATTR, run_id, strlen(run_id), 0) < 0)
        return -errno;
    return 0;
}

int sr_dir_marked(const char *dir)
{
    char v[8];
    return sr_dir_mark_get(dir, v, sizeof(v));
}

int sr_dir_mark_get(const char *dir, char *out, size_t len)
{
    char v[512];
    const ssize_t n = getxattr(dir, SR_DIR_MARK_XATTR, v, sizeof(v) - 1);
    if (n < 0)
        return errno == ERANGE; /* marked, by a value longer than any run id */
    v[n] = '\0';
    if (len) {
        const size_t k = (size_t)n < len - 1 ? (size_t)n : len - 1;
        memcpy(out, v, k);
        out[k] = '\0';
    }
    return 1;
}

int sr_dir_check_replace(const char *dir, int ours, const char *what)
{
    struct stat st;
    if (stat(dir, &st) < 0)
        return errno == ENOENT ? 0 : sr_errf(-errno, "%s: %s", what, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return sr_errf(-ENOTDIR, "%s is not a directory", what);
    if (ours || sr_dir_marked(dir))
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        return sr_errf(-errno, "%s: %s", what, strerror(errno));
    char names[200] = "";
    size_t n = 0, used = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n++ < 3) {
            const int w = snprintf(names + used, sizeof(names) - used, "%s%.60s", n > 1 ? ", " : "",
                                   e->d_name);
            used += w > 0 && (size_t)w < sizeof(names) - used ? (size_t)w : 0;
        }
    }
    closedir(d);
    if (n == 0)
        return 0;
    char more[48] = "";
    if (n > 3)
        snprintf(more, sizeof(more), " and %zu more", n - 3);
    return sr_errf(-EEXIST,
                   "%s holds files spotrun did not put there (%s%s); spotrun replaces what a "
                   "checkpoint directory holds: choose a new or empty directory",
                   what, names, more);
}

/* Appends the components of rest to out (a resolved absolute path),
 * lexically: "." is skipped, ".." drops the last component. */
static int append_lexical(char *out, size_t len, const char *rest)
{
    while (*rest) {
        while (*rest == '/')
            rest++;
        const char *end = strchr(rest, '/');
        const size_t n = end ? (size_t)(end - rest) : strlen(rest);
        if (n == 0)
            break;
        size_t cur = strlen(out);
        if (n == 1 && rest[0] == '.') {
            /* nothing */
        } else if (n == 2 && rest[0] == '.' && rest[1] == '.') {
            while (cur > 1 && out[cur - 1] != '/')
                cur--;
            out[cur > 1 ? cur - 1 : 1] = '\0';
        } else {
            const int w =
                snprintf(out + cur, len - cur, "%s%.*s", cur > 1 ? "/" : "", (int)n, rest);
            if (w < 0 || (size_t)w >= len - cur)
                return -ENAMETOOLONG;
        }
        rest += n;
    }
    return 0;
}

int sr_path_resolve(const char *path, char *out, size_t len)
{
    char abs[PATH_MAX], head[PATH_MAX], real[PATH_MAX];
    int n;
    if (path[0] == '/') {
        n = snprintf(abs, sizeof(abs), "%s", path);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof(cwd)))
            return sr_errf(-errno, "getcwd: %s", strerror(errno));
        n = snprintf(abs, sizeof(abs), "%s/%s", cwd, path);
    }
    if (n < 0 || (size_t)n >= sizeof(abs))
        return sr_errf(-ENAMETOOLONG, "path too long: %.64s...", path);
    /* The longest prefix that exists, resolved; the rest appended. */
    size_t end = strlen(abs);
    for (;;) {
        memcpy(head, abs, end);
        head[end] = '\0';
        if (realpath(end ? head : "/", real))
            break;
        if (errno != ENOENT && errno != ENOTDIR)
            return sr_errf(-errno, "cannot resolve %s: %s", path, strerror(errno));
        while (end > 0 && abs[end - 1] == '/')
            end--;
        while (end > 0 && abs[end - 1] != '/')
            end--;
        if (end <= 1) {
            end = 1;
            snprintf(real, sizeof(real), "/");
            break;
        }
        end--; /* the '/' before the dropped component */
    }
    if (snprintf(out, len, "%s", real) >= (int)len || append_lexical(out, len, abs + end) < 0)
        return sr_errf(-ENAMETOOLONG, "path too long: %.64s...", path);
    return 0;
}

int sr_paths_overlap(const char *a, const char *b)
{
    const size_t la = strlen(a), lb = strlen(b);
    const char *s = la <= lb ? a : b, *l = la <= lb ? b : a;
    const size_t ls = la <= lb ? la : lb;
    if (strcmp(s, "/") == 0)
        return 1;
    return strncmp(l, s, ls) == 0 && (l[ls] == '/' || l[ls] == '\0');
}

/* ---- directories spotrun made for a run ---------------------------------- */

int sr_file_id(const char *path, int follow, struct sr_file_id *out)
{
    struct stat st;
    if ((follow ? stat(path, &st) : lstat(path, &st)) < 0)
        return -errno;
    *out = (struct sr_file_id){.dev = (unsigned long long)st.st_dev,
                               .ino = (unsigned long long)st.st_ino};
    return 0;
}

int sr_same_file(const char *a, int follow_a, const char *b, int follow_b)
{
    struct sr_file_id x = {0}, y = {0};
    return sr_file_id(a, follow_a, &x) == 0 && sr_file_id(b, follow_b, &y) == 0 && x.dev == y.dev &&
           x.ino == y.ino;
}

/* The value of "key " in the marker's text (one line), into out. */
static int mark_field(const char *text, const char *key, char *out, size_t len)
{
    const size_t k = strlen(key);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, key, k) == 0 && l[k] == ' ') {
            const char *v = l + k + 1, *e = strchr(v, '\n');
            const size_t n = e ? (size_t)(e - v) : strlen(v);
            if (n >= len)
                return -ENAMETOOLONG;
            memcpy(out, v, n);
            out[n] = '\0';
            return 0;
        }
    return -ENOENT;
}

/* Checks the open directory fd (root/name) against its marker: ours, for
 * run, made at nonce want (NULL: any); its nonce into got (may be NULL). */
static int owned_check(int fd, const char *root, const char *name, const char *run,
                       const char *want, char *got)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return sr_errf(-errno, "%s/%s: %s", root, name, strerror(errno));
    if (st.st_uid != geteuid())
        return sr_errf(-EPERM, "the work dir %s/%s belongs to another user (uid %u)", root, name,
                       (unsigned)st.st_uid);
    const int mfd = openat(fd, SR_OWNER_MARK, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat ms;
    if (mfd < 0 || fstat(mfd, &ms) < 0 || !S_ISREG(ms.st_mode) || ms.st_uid != geteuid()) {
        if (mfd >= 0)
            close(mfd);
        return sr_errf(-EEXIST,
                       "the work dir %s/%s exists and spotrun did not make it (it has no %s "
                       "marker)",
                       root, name, SR_OWNER_MARK);
    }
    char text[1024], who[300], nonce[SR_OWNER_NONCE_LEN + 8];
    const ssize_t n = read(mfd, text, sizeof(text) - 1);
    close(mfd);
    text[n > 0 ? n : 0] = '\0';
    if (mark_field(text, "run", who, sizeof(who)) < 0 ||
        mark_field(text, "nonce", nonce, sizeof(nonce)) < 0 || strlen(nonce) != SR_OWNER_NONCE_LEN)
        return sr_errf(-EEXIST, "the work dir %s/%s has an unreadable %s marker", root, name,
                       SR_OWNER_MARK);
    if (strcmp(who, run) != 0)
        return sr_errf(-EEXIST, "the work dir %s/%s was made for run %.200s, not %.200s", root,
                       name, who, run);
    if (want && strcmp(want, nonce) != 0)
        return sr_errf(-EEXIST, "the work dir %s/%s was made again since this run checked it", root,
                       name);
    if (got) {
        memcpy(got, nonce, SR_OWNER_NONCE_LEN);
        got[SR_OWNER_NONCE_LEN] = '\0';
    }
    if ((st.st_mode & 077) && fchmod(fd, 0700) < 0)
        sr_debug("cannot make %s/%s private: %s", root, name, strerror(errno));
    return 0;
}

/* Opens root/name without following a symlink there; -ELOOP/-ENOTDIR with
 * a message when it is not a directory. -ENOENT quietly. */
static int open_below(int rootfd, const char *root, const char *name)
{
    const int fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 || errno == ENOENT)
        return fd >= 0 ? fd : -ENOENT;
    const int e = errno;
    struct stat st;
    if (fstatat(rootfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        return sr_errf(-ELOOP, "the work dir %s/%s is a symlink (spotrun never follows one)", root,
                       name);
    return sr_errf(e == ELOOP ? -ENOTDIR : -e, "the work dir %s/%s: %s", root, name,
                   e == ELOOP ? strerror(ENOTDIR) : strerror(e));
}

/* Writes the marker into the new directory fd: O_EXCL, 0600, synced. */
static int write_mark(int fd, const char *run, char *nonce)
{
    unsigned char r[SR_OWNER_NONCE_LEN / 2];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
        return -EIO;
    for (size_t i = 0; i < sizeof(r); i++)
        snprintf(nonce + 2 * i, 3, "%02x", r[i]);
    char text[1024];
    const int n = snprintf(text, sizeof(text),
                           "spotrun made this directory; it removes what it put here and "
                           "nothing else\nrun %s\nnonce %s\n",
                           run, nonce);
    if (n < 0 || (size_t)n >= sizeof(text))
        return -ENAMETOOLONG;
    const int mfd =
        openat(fd, SR_OWNER_MARK, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (mfd < 0)
        return -errno;
    const int ok = write(mfd, text, (size_t)n) == n && fsync(mfd) == 0;
    const int e = errno;
    close(mfd);
    return ok ? 0 : -(e ? e : EIO);
}

/* Makes root/name with its marker: under a temporary name first, renamed
 * into place only if nothing has that name (so that nobody ever sees it
 * without its marker). -EEXIST when something has. */
static int owned_make(int rootfd, const char *root, const char *name, const char *run, char *nonce)
{
    char tmp[400];
    unsigned r = 0;
    (void)getrandom(&r, sizeof(r), 0);
    if (snprintf(tmp, sizeof(tmp), ".%.300s.spotrun-new.%08x", name, r) >= (int)sizeof(tmp))
        return sr_errf(-ENAMETOOLONG, "the work dir name %.64s... is too long", name);
    if (mkdirat(rootfd, tmp, 0700) < 0)
        return sr_errf(-errno, "cannot create a directory in %s: %s", root, strerror(errno));
    int rc, fd = openat(rootfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    rc = fd < 0 ? -errno : write_mark(fd, run, nonce);
    if (rc == 0 && renameat2(rootfd, tmp, rootfd, name, RENAME_NOREPLACE) < 0)
        rc = -errno;
    if (rc == -EINVAL) { /* no RENAME_NOREPLACE here: mkdir is create-only too */
        rc = mkdirat(rootfd, name, 0700) < 0 ? -errno : 0;
        const int nfd = rc == 0 ? openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW) : -1;
        if (rc == 0)
            rc = nfd < 0 ? -errno : write_mark(nfd, run, nonce);
        if (nfd >= 0)
            close(nfd);
    }
    if (fd >= 0)
        close(fd);
    if (rc < 0) { /* the temporary one is ours: its marker, then itself */
        const int dfd = openat(rootfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd >= 0) {
            unlinkat(dfd, SR_OWNER_MARK, 0);
            close(dfd);
        }
        unlinkat(rootfd, tmp, AT_REMOVEDIR);
    }
    if (rc < 0 && rc != -EEXIST && rc != -ENOTEMPTY)
        return sr_errf(rc, "cannot create the work dir %s/%s: %s", root, name, strerror(-rc));
    return rc == -ENOTEMPTY ? -EEXIST : rc;
}

int sr_owned_dir_claim(const char *root, const char *name, const char *run, char *nonce, int *made)
{
    if (made)
        *made = 0;
    const int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return sr_errf(-errno, "cannot open the work root %s: %s", root, strerror(errno));
    int fd = open_below(rootfd, root, name), rc = 0;
    if (fd == -ENOENT) {
        rc = owned_make(rootfd, root, name, run, nonce);
        if (rc == 0 && made)
            *made = 1;
        if (rc == -EEXIST) /* another wrapper made it first */
            fd = open_below(rootfd, root, name);
    }
    if (fd >= 0)
        rc = owned_check(fd, root, name, run, NULL, nonce);
    else if (fd != -ENOENT || rc == -EEXIST)
        rc = fd;
    if (fd >= 0)
        close(fd);
    close(rootfd);
    return rc;
}

int sr_owned_dir_open(const char *root, const char *name, const char *run, const char *nonce,
                      int *rootfd)
{
    const int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rfd < 0)
        return sr_errf(-errno, "cannot open the work root %s: %s", root, strerror(errno));
    int fd = open_below(rfd, root, name);
    if (fd == -ENOENT)
        fd = sr_errf(-ENOENT, "the work dir %s/%s is gone", root, name);
    const int rc = fd < 0 ? fd : owned_check(fd, root, name, run, nonce, NULL);
    if (rc < 0) {
        if (fd >= 0)
            close(fd);
        close(rfd);
        return rc;
    }
    if (rootfd)
        *rootfd = rfd;
    else
        close(rfd);
    return fd;
}
