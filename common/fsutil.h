/*
 * fsutil.h - small filesystem helpers with the durability idiom used
 * everywhere in spotrun: write a temp file in the same directory, fsync it,
 * rename it over the target, fsync the directory. A reader therefore sees
 * the old file or the new one, never a torn one, even after a power cut.
 *
 * All functions return 0 or a negative errno value with a message recorded
 * through sr_errf(). None of them follow symlinks when deleting.
 */
#ifndef SPOTRUN_FSUTIL_H
#define SPOTRUN_FSUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* mkdir -p; existing directories are fine. */
int sr_mkdirs(const char *path, mode_t mode);

/* rm -rf without following symlinks; a missing path is fine. */
int sr_rmtree(const char *path);

/* Removes everything inside dir, keeping dir itself. */
int sr_empty_dir(const char *dir);

int sr_fsync_path(const char *path);
/* fsync of the directory that contains path. */
int sr_fsync_parent(const char *path);

/* Durable atomic replace of path with buf (temp + fsync + rename + fsync dir). */
int sr_write_file_atomic(const char *path, const void *buf, size_t len);

/* Durable atomic copy of src to dst (copy_file_range, falls back to read/write). */
int sr_copy_file_atomic(const char *src, const char *dst);

/* Like sr_copy_file_atomic, but on the same filesystem dst becomes a hard
 * link to src (made durable, mode 0644) instead of a copy: the caller hands
 * src over and must not modify it in place afterwards (unlinking is fine). */
int sr_adopt_file_atomic(const char *src, const char *dst);
/* The same, but only if dst does not exist yet (-EEXIST): for objects that
 * are never replaced. */
int sr_adopt_file_new(const char *src, const char *dst);
/* Renames tmp (written and fsynced) to path, with noreplace only if path
 * does not exist (-EEXIST); then fsyncs the directory. */
int sr_place_file(const char *tmp, const char *path, int noreplace);

/* Reads a whole file of at most max bytes into a NUL-terminated malloc'd
 * buffer. -EFBIG when larger than max. */
int sr_read_file(const char *path, size_t max, char **buf, size_t *len);
/* The same from an open regular file (not consumed); path names it. */
int sr_read_fd(int fd, const char *path, size_t max, char **buf, size_t *len);

/* Parent directory of path into out (like dirname, no mutation). */
void sr_dirname(const char *path, char *out, size_t outlen);

/* snprintf for paths: -ENAMETOOLONG (with a message) instead of truncating. */
int sr_pathf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
