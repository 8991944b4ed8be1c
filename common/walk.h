/*
 * walk.h - an iterative walk of a directory tree over file descriptors,
 * for every place that visits a whole tree (packing a checkpoint, rm -rf).
 *
 * The depth of a tree is not bounded by anything spotrun controls (a job,
 * or a hostile store, can nest thousands of directories with paths under
 * PATH_MAX), so the walk keeps its state on the heap: one frame per level
 * (the directory's names and a cursor), never a C stack frame per level,
 * and at most SR_WALK_OPEN_FDS directory descriptors open whatever the
 * depth. A directory whose descriptor was closed is reopened through its
 * child's "..", checked against the device and inode it had, so a tree
 * moved while walked fails (-ESTALE) instead of walking somewhere else.
 * Symlinks are never followed (every open is O_NOFOLLOW, every stat is
 * lstat-like).
 *
 * Threads: no shared state; one walk belongs to one thread.
 */
#ifndef SPOTRUN_WALK_H
#define SPOTRUN_WALK_H

#include <stddef.h>
#include <sys/stat.h>

#define SR_WALK_OPEN_FDS 16

/* Most path components of an entry spotrun archives or restores (a
 * checkpoint's tree); deletion walks any depth. */
#define SR_TREE_MAX_DEPTH 512

struct sr_walk_entry {
    int dfd;               /* the directory holding the entry */
    const char *name;      /* its name in dfd */
    const char *rel;       /* its path relative to the root, for messages */
    size_t rlen;           /* strlen(rel) */
    const struct stat *st; /* the entry itself (not followed) */
    int depth;             /* 1 for the root's own entries */
};

/* Return values of a visit besides 0 and -errno (which stops the walk). */
#define SR_WALK_SKIP 1 /* PRE of a directory: do not descend into it */

/* Called for every entry, in directory order (sorted bytewise when asked),
 * with post 0; for a directory that was descended into, called again with
 * post 1 once its contents were visited. An entry that vanished between
 * listing and visiting is skipped. */
typedef int (*sr_walk_fn)(void *ctx, const struct sr_walk_entry *e, int post);

struct sr_walk_opts {
    int sorted;       /* visit names in bytewise order (deterministic archives) */
    int max_depth;    /* 0: any; else an entry of more path components is -EPERM */
    const char *what; /* "archive", "remove"...: the verb of error messages */
};

/* Walks the tree under the open directory rootfd (not consumed; the root
 * itself is not visited). root names it in messages. Returns 0, the first
 * negative value a visit returned, or -errno with a message (sr_errf()). */
int sr_walk(int rootfd, const char *root, const struct sr_walk_opts *opts, sr_walk_fn fn,
            void *ctx);

#endif
