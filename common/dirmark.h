/*
 * dirmark.h - which directories spotrun may replace.
 *
 * spotrun replaces the contents of a checkpoint directory (run --ckpt-dir)
 * and of a pull target with a checkpoint. It must never do that to files it
 * did not put there. A directory spotrun made (or restored into) carries the
 * extended attribute user.spotrun on the directory itself: invisible to the
 * job, never part of an archive (only the directory's contents are packed),
 * and kept across restores (the restore marks its temporary directory before
 * swapping it in). On a filesystem without user xattrs the mark is silently
 * absent; callers then have other evidence (the run's work dir records its
 * checkpoint directory).
 *
 * Functions return 0 or a negative errno value with a message (sr_errf).
 */
#ifndef SPOTRUN_DIRMARK_H
#define SPOTRUN_DIRMARK_H

#include <stddef.h>

#define SR_DIR_MARK_XATTR "user.spotrun"

/* Marks dir as spotrun's; -ENOTSUP (or another errno) when the filesystem
 * cannot hold the mark (callers usually ignore that). */
int sr_dir_mark(const char *dir);
/* 1 when dir carries the mark, else 0. */
int sr_dir_marked(const char *dir);

/* Whether spotrun may replace dir's contents: 0 when dir is missing, empty,
 * marked, or ours says so; else -EEXIST with a message naming up to three of
 * its entries ("what" names the directory: "--ckpt-dir DIR"). */
int sr_dir_check_replace(const char *dir, int ours, const char *what);

/* The absolute, symlink-resolved form of path, which need not exist (the
 * existing part is resolved, the rest appended lexically). */
int sr_path_resolve(const char *path, char *out, size_t len);
/* 1 when a and b (resolved) are equal or one contains the other, else 0. */
int sr_paths_overlap(const char *a, const char *b);

#endif
