/*
 * codec.h - the checkpoint archive codec.
 *
 * Format (see docs/archive-format.md): a pax tar stream of the directory,
 * cut into frames of at most frame_size uncompressed bytes (default 4 MiB;
 * a large file's data starts a new frame, so an unchanged file gives the
 * same frames in every checkpoint), each
 * compressed as an independent zstd frame with its content checksum,
 * followed by a zstd seekable-format seek table (a skippable frame). Stock
 * `zstd -d | tar -x` reads it.
 *
 * Packing: the caller's thread walks the directory (sorted, so the archive
 * is deterministic) and feeds libarchive; full frames go to a pool of worker
 * threads; compressed frames are handed to the sink strictly in order.
 * Memory is bounded by (2 * threads + 2) frames whatever the input size.
 *
 * Unpacking: frames are fetched (ranged reads through the source) and
 * decompressed in parallel, each checked against its own checksum, and fed
 * in order to libarchive, which extracts into a fresh temporary directory
 * beside the target; the data of large files is written by a pool of
 * writer threads. Every entry is checked first: absolute paths, "..",
 * entries that would write through a symlink, hardlinks, device nodes and
 * fifos are rejected. The whole object's checksum is computed as the
 * frames stream through (or, for a source that computes it as it
 * downloads, sr_source.checksum, asked for) and compared after the
 * extraction, never by reading the archive again. Only after the whole
 * archive extracted, every frame checksum and the whole-object checksum
 * matched is the temporary directory swapped in for the target.
 *
 * Functions return 0 or a negative errno value (message via sr_errf()):
 *   -EBADMSG  corrupt data (checksum mismatch, bad frame, bad seek table)
 *   -EPERM    hostile entry (unsafe path, link, device node)
 *   -EFBIG    extracted size over the cap
 *   others    I/O errors from the sink, the source or the filesystem
 */
#ifndef SPOTRUN_CODEC_H
#define SPOTRUN_CODEC_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define SR_CODEC_DEFAULT_LEVEL 3
#define SR_CODEC_DEFAULT_FRAME (4u << 20)
/* Regular files of at least this many bytes start a new frame at their
 * data and end one after it (docs/archive-format.md, "Frames"). */
#define SR_CODEC_DEFAULT_ALIGN (1u << 20)
#define SR_CODEC_ALIGN_NEVER UINT64_MAX
/* The most bytes the codec hands to one write() (or to its sink in one
 * call). The page cache sizes its folios by the write: writes of 256 KiB
 * and more get large folios, which cost 5-20x the CPU of small ones where
 * a VM's host takes back free memory (docs/archive-format.md, "Speed");
 * tar writes 10 KiB, zstd 128 KiB. */
#define SR_CODEC_WRITE_MAX (64u << 10)

/* Packing fails with this when a file changed while it was read (a torn
 * checkpoint is never made): the job wrote its checkpoint directory before
 * commit returned. An errno nothing else in spotrun returns, so the CLI can
 * tell it (push exits 75, EX_TEMPFAIL: try again once the directory is
 * still). */
#define SR_ECHANGED (-ETXTBSY)

/* Consumes compressed bytes in order. Returns 0 or a negative errno. */
typedef int (*sr_sink_fn)(void *ctx, const void *buf, size_t len);

struct sr_frame_info;

/* Frames the packer may reuse instead of compressing again: those of
 * earlier archives (the last one staged and the ones it refers to), found
 * by the XXH3-128 and size of their content. Each frame of v is at soff in
 * paths[src - 1] (src >= 1).
 *
 * By default a reused frame is copied, and the copy is checked against the
 * content it stands for (its zstd content checksum), so a stale or damaged
 * earlier archive only costs the compression it would have saved. With
 * by_ref (sr_pack_dir_to_file only) it is not even read: the archive gets
 * a hole of its size and the frame list says where its bytes are (src,
 * soff); the archive is then "staged with holes" and must be completed by
 * sr_staged_fill() before anything reads it whole (sr_staged_read_frame()
 * reads one frame of it). */
struct sr_pack_reuse {
    const char *const *paths; /* the earlier archives ("" = none) */
    uint32_t npaths;
    const struct sr_frame_info *v; /* their frames */
    uint32_t n;
    int by_ref;
};

struct sr_pack_opts {
    int level;         /* zstd level; 0 = SR_CODEC_DEFAULT_LEVEL */
    size_t frame_size; /* uncompressed bytes per frame; 0 = default */
    int threads;       /* worker threads; 0 = number of online CPUs */
    /* files of at least this size get frames of their own; 0 = default,
     * SR_CODEC_ALIGN_NEVER = fixed cuts of the tar stream (format 1's) */
    uint64_t align_min;
    int list_frames; /* fill sr_pack_stats.frame_list */
    int scratch;     /* sr_pack_dir_to_file: a file a crash discards, never synced (fsutil.h) */
    const struct sr_pack_reuse *reuse; /* NULL: compress every frame */
    /* glob patterns of paths left out of the archive (sr_pack_excluded) */
    const char *const *exclude;
    size_t nexclude;
};

/* Whether the entry at rel (its last component: name) is left out by one
 * of the patterns (--ckpt-exclude): a pattern with a '/' matches the whole
 * relative path, one without matches the name at any depth (fnmatch; '*'
 * never crosses a '/'). A directory left out takes its contents along. */
int sr_pack_excluded(const char *const *pats, size_t n, const char *rel, const char *name);

/* "xxh3-128:" + 32 hex digits + NUL */
#define SR_CHECKSUM_LEN 42

struct sr_pack_stats {
    uint64_t raw_bytes;             /* tar stream bytes (uncompressed) */
    uint64_t stored_bytes;          /* bytes handed to the sink, seek table included */
    uint64_t files;                 /* regular files archived */
    uint32_t frames;                /* zstd data frames (seek table not counted) */
    char checksum[SR_CHECKSUM_LEN]; /* XXH3-128 of everything handed to the sink */
    /* with list_frames: every frame (malloc'd, `frames` entries; the caller
     * frees it), as sr_archive_frames() would list them, without a second
     * pass over the archive */
    struct sr_frame_info *frame_list;
    uint32_t reused; /* frames copied (or, by_ref, referenced) from opts->reuse */
    uint32_t holes;  /* frames referenced (by_ref): checksum is then "" */
    uint64_t grown;  /* files that grew while read: archived as they were when opened */
};

/* Packs dir (its contents, with paths relative to it) into the sink. */
int sr_pack_dir(const char *dir, sr_sink_fn sink, void *sink_ctx, const struct sr_pack_opts *opts,
                struct sr_pack_stats *stats);

/* Packs dir into path, durably (temp file + fsync + rename). */
int sr_pack_dir_to_file(const char *dir, const char *path, const struct sr_pack_opts *opts,
                        struct sr_pack_stats *stats);

/* Random-access reader of a stored archive (a local file, a ranged GET...).
 * read_at must fill exactly len bytes or fail. */
struct sr_source {
    void *ctx;
    uint64_t size;
    int (*read_at)(void *ctx, void *buf, size_t len, uint64_t off);
    /* Optional (NULL: none): the whole-source checksum, computed by the
     * source itself as its bytes arrive (a download hashes its contiguous
     * prefix as it grows); may block until every byte arrived. With it,
     * unpacking asks for it (after the extraction, before the swap)
     * instead of hashing the frames as they stream through. */
    int (*checksum)(void *ctx, char out[SR_CHECKSUM_LEN]);
    /* Optional (NULL: none): lends the source's own copy of [off, off + len)
     * when it holds those bytes in one piece of memory (a download's ring
     * buffer), waiting for them as read_at does, and saves the copy into
     * the caller's buffer. Returns 1 with *p set (hand it back with
     * unborrow), 0 when it cannot (use read_at), or a negative errno. */
    int (*borrow)(void *ctx, uint64_t off, size_t len, const void **p);
    void (*unborrow)(void *ctx, uint64_t off, size_t len);
    /* Optional (NULL: none), with checksum: unpacking with an expected
     * checksum shows it every frame's compressed bytes (off, len in this
     * source) as it uses them, in order, from one thread, before it asks
     * for the checksum: a source whose checksum is that of other bytes (a
     * delta's own object) may hash them here rather than read them again. */
    void (*consumed)(void *ctx, uint64_t off, const void *buf, size_t len);
};

/* A source over a local file; close with sr_source_file_close(). */
int sr_source_file_open(const char *path, struct sr_source *src);
/* The same over an open file (consumed, even on failure); path names it. */
int sr_source_fd_open(int fd, const char *path, struct sr_source *src);
void sr_source_file_close(struct sr_source *src);

/* Checksum (as in sr_pack_stats) of the whole source. */
int sr_source_checksum(const struct sr_source *src, char out[SR_CHECKSUM_LEN]);

/* One frame of an archive, identified by the XXH3-128 of its content
 * (what delta checkpoints reference, docs/archive-format.md). */
struct sr_frame_info {
    uint64_t hash_hi, hash_lo; /* XXH3-128 of the decompressed content */
    uint64_t coff;             /* offset of the compressed frame in its object */
    uint32_t csize, dsize;
    uint32_t xxh64_lo; /* the seek table's checksum (low 32 bits of XXH64) */
    /* XXH3-64 of the compressed frame as listed (0 = unknown, e.g. read
     * from a manifest): lets a packer copy it back unchanged */
    uint64_t chash;
    /* Only in a list of staged frames (never stored): 0 = at coff in this
     * archive; k > 0 = a hole at coff, the bytes are at soff in the k-th
     * earlier archive (struct sr_pack_reuse). */
    uint32_t src;
    uint64_t soff;
};

/* Lists the frames of the archive src (its seek table, every frame
 * decompressed, verified and hashed). *out is malloc'd. */
int sr_archive_frames(const struct sr_source *src, struct sr_frame_info **out, uint32_t *n);

/* A staged archive with holes (sr_pack_reuse.by_ref): v is its frame
 * list, paths the earlier archives its holes refer to. Every frame read
 * from an earlier archive must have the compressed XXH3-64 (chash), zstd
 * content checksum and size it was listed with, else -EIO: the earlier
 * archive changed, and this one cannot be completed. */
/* Reads frame f (f->csize bytes) into buf: from own, or for a hole from
 * the earlier archive it refers to. */
int sr_staged_read_frame(const struct sr_source *own, const struct sr_frame_info *f,
                         const char *const *paths, uint32_t npaths, void *buf);
/* Completes the archive at path in place: every hole gets its frame, and
 * v's entries then say so (src 0). With sync, fsync()s it. checksum (may
 * be NULL) gets the whole archive's, as sr_pack_stats' would have been. */
int sr_staged_fill(const char *path, struct sr_frame_info *v, uint32_t n, const char *const *paths,
                   uint32_t npaths, int sync, char checksum[SR_CHECKSUM_LEN]);

struct sr_unpack_opts {
    int threads;            /* 0 = number of online CPUs */
    const char *checksum;   /* expected checksum; NULL skips the check */
    uint64_t max_raw_bytes; /* cap on the tar stream size; 0 = no cap */
    /* Optional: what each frame of the archive must hold (count, sizes,
     * XXH3-128 of its content), checked before its bytes are used. */
    const struct sr_frame_info *frames;
    uint32_t nframes;
};

struct sr_unpack_stats {
    uint64_t raw_bytes;
    uint64_t files;
    uint64_t pooled_files; /* of those, the ones the writer threads wrote */
    uint32_t frames;
};

/* Extracts the archive so that dir ends up holding exactly its contents
 * (dir is created if missing; its previous contents are replaced). On any
 * failure dir is left exactly as it was. */
int sr_unpack_to_dir(const struct sr_source *src, const char *dir,
                     const struct sr_unpack_opts *opts, struct sr_unpack_stats *stats);

#endif
