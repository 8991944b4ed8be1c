/*
 * frames.c - the frame list of an archive: each frame's place in its object
 * and the XXH3-128 of its content, the identity delta checkpoints use
 * (docs/archive-format.md, "Delta checkpoints").
 *
 * DESIGN: one pass over the archive in the caller's thread, one frame in
 * memory at a time; every frame is decompressed and checked against the
 * seek table as the unpacker would (size, zstd's own content checksum), so
 * a list is never made of a corrupt archive.
 */
#include "codec.h"
#include "log.h"
#include "seektable.h"

#include <errno.h>
#include <stdlib.h>
#include <xxhash.h>
#include <zstd.h>

static int hash_frames(const struct sr_source *src, const struct sr_seektable *t,
                       struct sr_frame_info *v)
{
    uint8_t *const c = malloc(t->max_csize ? t->max_csize : 1);
    uint8_t *const d = malloc(t->max_dsize ? t->max_dsize : 1);
    ZSTD_DCtx *const dc = ZSTD_createDCtx();
    int rc = c && d && dc ? 0 : sr_errf(-ENOMEM, "frame list: out of memory");
    for (uint32_t i = 0; rc == 0 && i < t->count; i++) {
        const struct sr_seek_frame *const f = &t->frames[i];
        if ((rc = src->read_at(src->ctx, c, f->csize, f->coff)) < 0)
            break;
        const size_t r = ZSTD_findFrameCompressedSize(c, f->csize) == f->csize
                             ? ZSTD_decompressDCtx(dc, d, f->dsize, c, f->csize)
                             : (size_t)-1;
        if (ZSTD_isError(r) || r != f->dsize) {
            rc = sr_errf(-EBADMSG, "corrupt archive: frame %u does not decompress to %u bytes", i,
                         f->dsize);
            break;
        }
        const XXH128_hash_t h = XXH3_128bits(d, r);
        v[i] = (struct sr_frame_info){
            .hash_hi = h.high64,
            .hash_lo = h.low64,
            .coff = f->coff,
            .csize = f->csize,
            .dsize = f->dsize,
            .xxh64_lo = t->has_checksums ? f->checksum : (uint32_t)XXH64(d, r, 0),
            .chash = XXH3_64bits(c, f->csize),
        };
    }
    ZSTD_freeDCtx(dc);
    free(d);
    free(c);
    return rc;
}

int sr_archive_frames(const struct sr_source *src, struct sr_frame_info **out, uint32_t *n)
{
    struct sr_seektable t;
    sr_seektable_init(&t);
    *out = NULL;
    *n = 0;
    int rc = sr_seektable_read(src, &t);
    struct sr_frame_info *const v = rc == 0 ? calloc(t.count ? t.count : 1, sizeof(*v)) : NULL;
    if (rc == 0 && !v)
        rc = sr_errf(-ENOMEM, "frame list: out of memory for %u frames", t.count);
    if (rc == 0)
        rc = hash_frames(src, &t, v);
    if (rc == 0) {
        *out = v;
        *n = t.count;
    } else {
        free(v);
    }
    sr_seektable_free(&t);
    return rc;
}
