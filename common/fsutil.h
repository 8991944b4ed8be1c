/*
 * fsutil.h - small filesystem helpers with the durability idiom used
 * everywhere in spotrun (struct sr_durable): write a temp file in the same
 * directory, fsync it, rename it over the target, fsync the directory. A
 * reader therefore sees the old file or the new one, never a torn one, even
 * after a power cut.
 *
 * All functions return 0 or a negative errno value with a message recorded
 * through sr_errf(). None of them follow symlinks when deleting.
 */
#ifndef SPOTRUN_FSUTIL_H
#define SPOTRUN_FSUTIL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* mkdir -p; existing directories are fine. */
int sr_mkdirs(const char *path, mode_t mode);

/* rm -rf without following symlinks; a missing path is fine. */
int sr_rmtree(const char *path);

/* The same for the entry name of the open directory dfd, never through a
 * symlink at name (a symlink there is removed, not followed); path names it
 * in messages. */
int sr_rmtree_at(int dfd, const char *name, const char *path);

/* Removes everything inside dir, keeping dir itself (dir itself is not
 * followed when it is a symlink: an error). */
int sr_empty_dir(const char *dir);
/* The same, logging each file removed ("removed DIR/REL (why)", info):
 * for a directory the user named. why NULL: quietly. */
int sr_empty_dir_log(const char *dir, const char *why);

/* The files under a directory the user named (paths relative to it), so
 * that those a restore removed can be named afterwards. At most
 * SR_FILE_LIST_MAX are listed (more: `more` counts them). */
#define SR_FILE_LIST_MAX 100000
struct sr_file_list {
    char **rel;
    size_t n, cap, more;
};
/* Lists dir's files (not directories); a missing dir lists none. */
int sr_file_list_of(const char *dir, struct sr_file_list *l);
/* Logs "removed DIR/REL (why)" for each listed file dir no longer holds,
 * and how many it still holds under the same name (replaced); frees l. */
void sr_file_list_log_gone(const char *dir, struct sr_file_list *l, const char *why);
void sr_file_list_free(struct sr_file_list *l);

int sr_fsync_path(const char *path);
/* fsync of the directory that contains path. */
int sr_fsync_parent(const char *path);

/* The durable writer, the one way spotrun writes a file whole or not at
 * all. open creates the temp file ".<name>.tmp.XXXXXX" (mode 0644) in
 * path's directory (the same filesystem, so the rename is atomic; the dot
 * hides it from store listings); write appends to it and starts writeback
 * of every SR_DURABLE_SYNC_CHUNK written (sync_file_range, asynchronous),
 * so that the fsync at commit finds little left; commit fsyncs and closes
 * the temp file, renames it to path (noreplace: only if path does not exist
 * yet, else -EEXIST, for objects that are never replaced) and fsyncs the
 * directory. abort removes the temp file unless commit put it in place:
 * call it after every open, committed or not (after a failed open too).
 * path must stay valid until then. Messages name path (a failed rename
 * names the temp file too). */
#define SR_DURABLE_SYNC_CHUNK (32u << 20)
struct sr_durable {
    const char *path;
    int fd;          /* the temp file, until commit */
    uint64_t off;    /* bytes written */
    uint64_t synced; /* writeback started up to here */
    /* Set after open: a scratch file that a crash discards anyway (a staged
     * archive only ever read back by this process): still atomic, never
     * synced. */
    int scratch;
    char tmp[PATH_MAX];
};
int sr_durable_open(struct sr_durable *d, const char *path);
int sr_durable_write(struct sr_durable *d, const void *buf, size_t len);
/* Leaves len bytes unwritten (a hole, read as zeros until written). */
int sr_durable_skip(struct sr_durable *d, size_t len);
/* sr_durable_write as a byte sink (storage/codec's sr_sink_fn; d is the
 * struct sr_durable): its writeback steps let the final fsync find little
 * left to do instead of flushing a whole archive. buf NULL: a hole
 * (sr_durable_skip). */
int sr_durable_sink(void *d, const void *buf, size_t len);
int sr_durable_commit(struct sr_durable *d, int noreplace);
void sr_durable_abort(struct sr_durable *d);

/* Durable atomic replace of path with buf (a durable writer of one write). */
int sr_write_file_atomic(const char *path, const void *buf, size_t len);

/* Durably stores the file src as dst (noreplace: as sr_durable_commit). On
 * the same filesystem dst becomes a hard link to src (made durable, mode
 * 0644) and no byte is copied: the caller hands src over and must not
 * modify it in place afterwards (unlinking is fine). Elsewhere, or where
 * there are no hard links, it is copied (copy_file_range, else read/write). */
int sr_adopt_file(const char *src, const char *dst, int noreplace);

/* Reads a whole file of at most max bytes into a NUL-terminated malloc'd
 * buffer. -EFBIG when larger than max. */
int sr_read_file(const char *path, size_t max, char **buf, size_t *len);
/* The same from an open regular file (not consumed); path names it. */
int sr_read_fd(int fd, const char *path, size_t max, char **buf, size_t *len);

/* Reads a small file (/proc, /sys) into buf, NUL-terminated, at most
 * cap - 1 bytes: its length, or -errno (no message is set: a process or
 * cgroup that went away is the caller's to judge). */
ssize_t sr_read_small(const char *path, char *buf, size_t cap);

/* Writes all of buf at off (pwrite, EINTR retried): 0, or -errno (-EIO
 * when nothing more is written). No message is set. */
int sr_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

/* Parent directory of path into out (like dirname, no mutation). */
void sr_dirname(const char *path, char *out, size_t outlen);

/* snprintf for paths: -ENAMETOOLONG (with a message) instead of truncating. */
int sr_pathf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
