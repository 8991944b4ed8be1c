/*
 * dirmark.c - which directories spotrun may replace (see dirmark.h).
 */
#include "dirmark.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "log.h"

int sr_dir_mark(const char *dir)
{
    if (setxattr(dir, SR_DIR_MARK_XATTR, "1", 1, 0) < 0)
        return -errno;
    return 0;
}

int sr_dir_marked(const char *dir)
{
    char v[8];
    return getxattr(dir, SR_DIR_MARK_XATTR, v, sizeof(v)) >= 0;
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
