/*
 * seektable.h - the zstd seekable-format seek table that ends every archive.
 *
 * Layout (all integers little-endian), a skippable frame:
 *
 *   u32 magic 0x184D2A5E | u32 frame size (= entries + 9)
 *   per data frame:  u32 compressed size | u32 decompressed size
 *                    [| u32 low 32 bits of XXH64(decompressed, seed 0)]
 *   footer: u32 number of frames | u8 descriptor (bit 7: checksums present,
 *           bits 2-6 reserved, must be 0) | u32 seekable magic 0x8F92EAB1
 *
 * DESIGN: building is append-only in memory (one entry per frame, in order).
 * Parsing treats its input as hostile (it is fuzzed): every size is checked
 * before it is used, no allocation is made before the frame count has been
 * checked against the source size, and the table must account for the source
 * exactly (sum of compressed sizes + table size == source size). A parsed
 * table carries each frame's offsets so that frames can be fetched and
 * decompressed independently. Not thread-safe; a parsed table is read-only
 * and may then be shared between threads.
 */
#ifndef SPOTRUN_SEEKTABLE_H
#define SPOTRUN_SEEKTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"

#define SR_SEEK_SKIPPABLE_MAGIC 0x184D2A5Eu
#define SR_SEEK_FOOTER_MAGIC 0x8F92EAB1u
#define SR_SEEK_FOOTER_SIZE 9u
#define SR_SEEK_HEADER_SIZE 8u
#define SR_SEEK_CHECKSUM_FLAG 0x80u
/* Bounds enforced on parse (and on pack options): at most 2^24 frames of at
 * most 64 MiB each, so a hostile table cannot make us allocate much. */
#define SR_SEEK_MAX_FRAMES (1u << 24)
#define SR_SEEK_MAX_FRAME_SIZE (64u << 20)

struct sr_seek_frame {
    uint64_t coff;     /* offset of the compressed frame in the source */
    uint64_t doff;     /* offset of its content in the tar stream */
    uint32_t csize;    /* compressed size */
    uint32_t dsize;    /* decompressed size */
    uint32_t checksum; /* low 32 bits of XXH64(content, 0); valid if has_checksums */
};

struct sr_seektable {
    struct sr_seek_frame *frames;
    uint32_t count;
    uint32_t cap;
    int has_checksums;
    uint32_t max_csize; /* largest frame sizes, for buffer sizing */
    uint32_t max_dsize;
    uint64_t csize_total; /* sum of compressed frame sizes */
    uint64_t dsize_total; /* sum of decompressed frame sizes (tar stream size) */
};

/* An empty table that records checksums. */
void sr_seektable_init(struct sr_seektable *t);
void sr_seektable_free(struct sr_seektable *t);

/* Appends the next frame. -ENOMEM, or -E2BIG past SR_SEEK_MAX_FRAMES. */
int sr_seektable_add(struct sr_seektable *t, uint32_t csize, uint32_t dsize, uint32_t checksum);

/* Serialised size of a table of count frames. */
size_t sr_seektable_size(uint32_t count, int has_checksums);

/* Serialises into buf (sr_seektable_size() bytes). */
void sr_seektable_write(const struct sr_seektable *t, uint8_t *buf);
/* Serialises t and hands it to sink in one piece (the end of an archive). */
int sr_seektable_sink(const struct sr_seektable *t, sr_sink_fn sink, void *ctx);

/* Parses buf, the last len bytes of a source of source_size bytes, which must
 * hold the whole seek table (extra leading bytes are ignored). On success t
 * is filled (free it with sr_seektable_free()). -EBADMSG when the table is
 * malformed or does not match the source size; -EAGAIN with *need set when
 * buf is too short to hold the table that the footer announces. */
int sr_seektable_parse(const uint8_t *buf, size_t len, uint64_t source_size, struct sr_seektable *t,
                       size_t *need);

/* Reads and parses the seek table at the end of src. */
int sr_seektable_read(const struct sr_source *src, struct sr_seektable *t);

/* Internals shared by the codec's files (codec.c, codec_pack.c,
 * codec_unpack.c); not part of the public interface. */

/* "xxh3-128:" + 32 lowercase hex digits of the canonical (big-endian) hash. */
void sr_checksum_format(uint64_t high64, uint64_t low64, char out[SR_CHECKSUM_LEN]);

/* Worker thread count: requested, or the number of online CPUs; 1..64. */
int sr_codec_threads(int requested);

/* 1 when the symlink at relative path link_path with this target resolves
 * (lexically) to a place inside the archived tree, else 0. Pack refuses
 * what unpack would refuse, so every stored checkpoint can be restored. */
int sr_link_target_inside(const char *link_path, const char *target);

#endif
