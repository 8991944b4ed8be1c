/*
 * walk.c - iterative directory tree walk (see walk.h).
 *
 * DESIGN: frames[0 .. top] are the directories from the root down to the
 * one being read; each holds its names (read in full when entered, so a
 * visit may delete entries without disturbing a readdir), a cursor, and
 * its descriptor, or -1 once the descriptor was closed to stay within
 * SR_WALK_OPEN_FDS. Only frames deeper than top - SR_WALK_OPEN_FDS keep
 * theirs; the top frame's is always open, so when a frame is left its
 * parent can be reopened as "..", and its (st_dev, st_ino) must match.
 * rel is one growing buffer: frame f's path is its first frames[f].rlen
 * bytes.
 */
#include "walk.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct frame {
    int fd;
    dev_t dev;
    ino_t ino;
    char **names;
    size_t n, next;
    size_t rlen;
};

struct walker {
    const struct sr_walk_opts *o;
    const char *root;
    struct frame *f;
    int top, cap;
    char *rel;
    size_t relcap;
};

static const char *verb(const struct walker *w)
{
    return w->o && w->o->what ? w->o->what : "walk";
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The path of the current entry for messages: "root/rel", its middle cut
 * out when long (a deep tree's paths are thousands of bytes). */
static const char *shown(const struct walker *w, char *buf, size_t len)
{
    const char *const rel = w->rel ? w->rel : "";
    const size_t n = strlen(rel);
    if (!*rel)
        snprintf(buf, len, "%s", w->root);
    else if (n <= 160)
        snprintf(buf, len, "%s/%s", w->root, rel);
    else
        snprintf(buf, len, "%s/%.60s...%s", w->root, rel, rel + n - 60);
    return buf;
}

/* Reads the names of the open directory fd (not consumed) into fr. */
static int read_names(struct walker *w, int fd, struct frame *fr)
{
    char where[512];
    const int dup_fd = dup(fd);
    DIR *const d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        const int e = errno;
        if (dup_fd >= 0)
            close(dup_fd);
        return sr_errf(-e, "cannot %s %s: cannot read the directory: %s", verb(w),
                       shown(w, where, sizeof(where)), strerror(e));
    }
    rewinddir(d); /* the dup shares the offset with fd */
    int rc = 0;
    size_t cap = 0;
    const struct dirent *de;
    while ((errno = 0, de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (fr->n == cap) {
            cap = cap ? cap * 2 : 16;
            char **const nn = realloc(fr->names, cap * sizeof(*nn));
            if (!nn)
                goto nomem;
            fr->names = nn;
        }
        if (!(fr->names[fr->n] = strdup(de->d_name)))
            goto nomem;
        fr->n++;
    }
    if (errno != 0)
        rc = sr_errf(-errno, "cannot %s %s: cannot read the directory: %s", verb(w),
                     shown(w, where, sizeof(where)), strerror(errno));
    else if (fr->n > 1 && w->o && w->o->sorted)
        qsort(fr->names, fr->n, sizeof(*fr->names), cmp_names);
    closedir(d);
    return rc;
nomem:
    closedir(d);
    return sr_errf(-ENOMEM, "cannot %s %s: out of memory", verb(w), shown(w, where, sizeof(where)));
}

/* Enters the directory open as fd (consumed), whose path is rel[0..rlen). */
static int push(struct walker *w, int fd, size_t rlen)
{
    if (w->top + 1 == w->cap) {
        const int cap = w->cap ? w->cap * 2 : 16;
        struct frame *const nf = realloc(w->f, (size_t)cap * sizeof(*nf));
        if (!nf) {
            close(fd);
            return sr_errf(-ENOMEM, "cannot %s %s: out of memory", verb(w), w->root);
        }
        w->f = nf;
        w->cap = cap;
    }
    struct frame *const fr = &w->f[w->top + 1];
    memset(fr, 0, sizeof(*fr));
    fr->fd = fd;
    fr->rlen = rlen;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return sr_errf(-errno, "cannot %s %s: %s", verb(w), w->root, strerror(errno));
    }
    fr->dev = sb.st_dev;
    fr->ino = sb.st_ino;
    w->top++; /* owned by the walker from here: freed by pop or cleanup */
    const int rc = read_names(w, fd, fr);
    if (rc < 0)
        return rc;
    /* Keep the number of open descriptors bounded. */
    const int old = w->top - SR_WALK_OPEN_FDS;
    if (old >= 0 && w->f[old].fd >= 0) {
        close(w->f[old].fd);
        w->f[old].fd = -1;
    }
    return 0;
}

/* Leaves the top frame; reopens its parent through ".." if needed. */
static int pop(struct walker *w)
{
    struct frame *const fr = &w->f[w->top];
    int rc = 0;
    if (w->top > 0) {
        struct frame *const up = &w->f[w->top - 1];
        if (up->fd < 0) {
            up->fd = openat(fr->fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            struct stat sb;
            if (up->fd < 0 || fstat(up->fd, &sb) != 0 || sb.st_dev != up->dev ||
                sb.st_ino != up->ino) {
                char where[512];
                w->rel[up->rlen] = '\0';
                rc = sr_errf(-ESTALE, "cannot %s %s: it was moved while being walked", verb(w),
                             shown(w, where, sizeof(where)));
            }
        }
    }
    close(fr->fd);
    free_names(fr->names, fr->n);
    w->top--;
    return rc;
}

/* Sets rel to the path of name inside the top frame; returns its length. */
static int set_rel(struct walker *w, const char *name, size_t *len)
{
    const size_t base = w->f[w->top].rlen;
    const size_t nlen = strlen(name);
    const size_t need = base + (base ? 1 : 0) + nlen + 1;
    if (need > w->relcap) {
        size_t cap = w->relcap ? w->relcap : 256;
        while (cap < need)
            cap *= 2;
        char *const nr = realloc(w->rel, cap);
        if (!nr)
            return sr_errf(-ENOMEM, "cannot %s %s: out of memory", verb(w), w->root);
        w->rel = nr;
        w->relcap = cap;
    }
    if (base)
        w->rel[base] = '/';
    memcpy(w->rel + base + (base ? 1 : 0), name, nlen + 1);
    *len = need - 1;
    return 0;
}

/* Visits the next entry of the top frame (descending into a directory). */
static int step(struct walker *w, sr_walk_fn fn, void *ctx)
{
    struct frame *const fr = &w->f[w->top];
    const char *const name = fr->names[fr->next++];
    size_t rlen = 0;
    char where[512];
    int rc = set_rel(w, name, &rlen);
    if (rc < 0)
        return rc;
    struct stat sb;
    if (fstatat(fr->fd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT)
            return 0; /* vanished since the listing */
        return sr_errf(-errno, "cannot %s %s: %s", verb(w), shown(w, where, sizeof(where)),
                       strerror(errno));
    }
    if (w->o && w->o->max_depth && w->top + 1 > w->o->max_depth)
        return sr_errf(-EPERM, "cannot %s %s: nested deeper than %d directory levels", verb(w),
                       shown(w, where, sizeof(where)), w->o->max_depth);
    const struct sr_walk_entry e = {
        .dfd = fr->fd, .name = name, .rel = w->rel, .rlen = rlen, .st = &sb, .depth = w->top + 1};
    rc = fn(ctx, &e, 0);
    if (rc < 0 || rc == SR_WALK_SKIP || !S_ISDIR(sb.st_mode))
        return rc < 0 ? rc : 0;
    /* O_NOFOLLOW: a directory swapped for a symlink meanwhile fails, never followed. */
    const int sub = openat(fr->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) {
        if (errno == ENOENT)
            return 0;
        return sr_errf(-errno, "cannot %s %s: cannot open the directory: %s", verb(w),
                       shown(w, where, sizeof(where)), strerror(errno));
    }
    return push(w, sub, rlen);
}

int sr_walk(int rootfd, const char *root, const struct sr_walk_opts *opts, sr_walk_fn fn, void *ctx)
{
    struct walker w = {.o = opts, .root = root, .top = -1};
    const int fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return sr_errf(-errno, "cannot %s %s: %s", verb(&w), root, strerror(errno));
    int rc = push(&w, fd, 0);
    while (rc == 0 && w.top >= 0) {
        struct frame *const fr = &w.f[w.top];
        if (fr->next < fr->n) {
            rc = step(&w, fn, ctx);
            continue;
        }
        const int depth = w.top;
        const size_t rlen = fr->rlen;
        rc = pop(&w);
        if (rc < 0 || depth == 0)
            break;
        /* The directory just left, visited again after its contents. */
        struct frame *const up = &w.f[w.top];
        w.rel[rlen] = '\0';
        struct stat sb;
        if (fstatat(up->fd, up->names[up->next - 1], &sb, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* gone meanwhile */
        const struct sr_walk_entry e = {.dfd = up->fd,
                                        .name = up->names[up->next - 1],
                                        .rel = w.rel,
                                        .rlen = rlen,
                                        .st = &sb,
                                        .depth = w.top + 1};
        rc = fn(ctx, &e, 1);
        if (rc > 0)
            rc = 0;
    }
    while (w.top >= 0) {
        struct frame *const fr = &w.f[w.top--];
        if (fr->fd >= 0)
            close(fr->fd);
        free_names(fr->names, fr->n);
    }
    free(w.f);
    free(w.rel);
    return rc;
}
