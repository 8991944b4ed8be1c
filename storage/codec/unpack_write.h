/*
 * unpack_write.h - writing an extracted file's data (codec_unpack.c's
 * helper): all-zero blocks left as holes, at most SR_CODEC_WRITE_MAX bytes
 * per write, and a small pool of writer threads that write regular files'
 * data while the caller's thread reads the next tar headers.
 *
 * DESIGN: the caller creates each file (through libarchive's secure
 * write_disk, so every path check happens there, on its thread) and opens
 * it; the pool then only ever writes through that descriptor: pwrite() at
 * the offsets the tar stream gives, never a path. A job points into memory
 * the caller lends (a decompressed frame, named by tag); the pool hands the
 * tag back through the release callback once the job's bytes are written.
 * When a file's last job is written, the pool gives it its mode and times
 * and closes it. At most max_open files are open at once (the caller waits
 * for one to finish). The first failed write stops every later one; its
 * message is returned by sr_wpool_drain() on the caller's thread.
 */
#ifndef SPOTRUN_UNPACK_WRITE_H
#define SPOTRUN_UNPACK_WRITE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

/* Writes len bytes at off, in one call; 0 or a negative errno. */
typedef int (*sr_put_fn)(void *ctx, const uint8_t *buf, size_t len, int64_t off);

/* Writes size bytes of a file's data at off through put, at most
 * SR_CODEC_WRITE_MAX per call, except every piece of a 4 KiB block (aligned
 * to the file's offsets) that is all zeros: that is skipped, so a file
 * written afresh and sized to its length keeps its holes. */
int sr_write_sparse(sr_put_fn put, void *ctx, const uint8_t *buf, size_t size, int64_t off);

struct sr_wpool;
struct sr_wfile;

/* Called (from a writer thread, no pool lock held) once a job's bytes are
 * written or dropped. */
typedef void (*sr_wpool_release_fn)(void *ctx, void *tag);

/* Starts threads writers; 0 or a negative errno (message via sr_errf). */
int sr_wpool_new(int threads, unsigned max_open, sr_wpool_release_fn release, void *ctx,
                 struct sr_wpool **out);

/* Hands the open descriptor fd of the file name (for messages) to the
 * pool; once written, the file gets mode perm and times (UTIME_OMIT for
 * one not to set). Waits while max_open files are open. NULL (fd closed)
 * when out of memory. */
struct sr_wfile *sr_wpool_file(struct sr_wpool *p, int fd, mode_t perm,
                               const struct timespec times[2], const char *name);

/* Queues len bytes at buf (lent until release(tag)) for offset off. */
void sr_wpool_write(struct sr_wpool *p, struct sr_wfile *f, const uint8_t *buf, size_t len,
                    int64_t off, void *tag);

/* Writes them now, on the caller's thread (memory that cannot be lent). */
int sr_wpool_write_now(struct sr_wfile *f, const uint8_t *buf, size_t len, int64_t off);

/* The file has all its data queued: finish it once written. */
void sr_wpool_done(struct sr_wpool *p, struct sr_wfile *f);

/* Whether a write has failed (the caller stops early, then drains). */
int sr_wpool_failed(struct sr_wpool *p);

/* Waits until every file handed over is written and closed; 0, or the
 * first failure (its message recorded with sr_errf on this thread). */
int sr_wpool_drain(struct sr_wpool *p);

/* Drops what is still queued (releasing it), stops the threads, frees. */
void sr_wpool_free(struct sr_wpool *p);

#endif
