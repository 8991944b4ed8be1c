/*
 * staged.c - archives staged with holes (sr_pack_reuse.by_ref): reading one
 * frame wherever it is, and completing the archive in place.
 *
 * DESIGN: a hole stands for a frame the last staged archive (or one it
 * referred to) already holds, compressed, at a known offset. Such a frame
 * is trusted only when its bytes still have the compressed XXH3-64 they
 * were listed with, zstd's content checksum of the content and its size:
 * an earlier archive that changed since cannot leak into this one.
 * Completing the archive is one pass in order: each frame is read (from
 * the archive itself, or from the earlier one, and then written into its
 * hole) and hashed, then the seek table, so the whole archive's checksum
 * comes out of the same pass.
 *
 * Threads: none; the earlier archives must not be deleted meanwhile (the
 * checkpointer holds them, runtime/supervise/checkpointer.c).
 */
#include "codec.h"
#include "fsutil.h"
#include "log.h"
#include "seektable.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

/* The bytes are the frame f was listed as. */
static int frame_ok(const struct sr_frame_info *f, const uint8_t *buf)
{
    if (!f->chash || f->csize < 4 || XXH3_64bits(buf, f->csize) != f->chash)
        return 0;
    const uint8_t *const t = buf + f->csize - 4;
    const uint32_t tail =
        (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
    return tail == f->xxh64_lo && ZSTD_getFrameContentSize(buf, f->csize) == f->dsize;
}

/* The earlier archives, each opened when a hole first needs it. */
struct earlier {
    const char *const *paths;
    uint32_t n;
    struct sr_source *src; /* src[i].ctx NULL: not open */
};

static int earlier_init(struct earlier *e, const char *const *paths, uint32_t n)
{
    e->paths = paths;
    e->n = n;
    e->src = calloc(n ? n : 1, sizeof(*e->src));
    return e->src ? 0 : sr_errf(-ENOMEM, "staged archive: out of memory");
}

static void earlier_free(struct earlier *e)
{
    for (uint32_t i = 0; e->src && i < e->n; i++)
        if (e->src[i].ctx)
            sr_source_file_close(&e->src[i]);
    free(e->src);
}

static int read_hole(struct earlier *e, const struct sr_frame_info *f, void *buf)
{
    if (f->src > e->n || !e->paths[f->src - 1] || !e->paths[f->src - 1][0])
        return sr_errf(-EIO, "staged archive: frame at %llu refers to an unknown archive %u",
                       (unsigned long long)f->coff, f->src);
    const char *const path = e->paths[f->src - 1];
    struct sr_source *const src = &e->src[f->src - 1];
    int rc = src->ctx ? 0 : sr_source_file_open(path, src);
    if (rc == 0)
        rc = src->read_at(src->ctx, buf, f->csize, f->soff);
    if (rc < 0 || !frame_ok(f, buf))
        return sr_errf(-EIO, "%s changed: its frame at %llu is not the one staged (%s)", path,
                       (unsigned long long)f->soff, rc < 0 ? sr_strerror(rc) : "wrong bytes");
    return 0;
}

int sr_staged_read_frame(const struct sr_source *own, const struct sr_frame_info *f,
                         const char *const *paths, uint32_t npaths, void *buf)
{
    if (!f->src)
        return own->read_at(own->ctx, buf, f->csize, f->coff);
    struct earlier e;
    int rc = earlier_init(&e, paths, npaths);
    if (rc == 0)
        rc = read_hole(&e, f, buf);
    earlier_free(&e);
    return rc;
}

int sr_staged_fill(const char *path, struct sr_frame_info *v, uint32_t n, const char *const *paths,
                   uint32_t npaths, int sync, char checksum[SR_CHECKSUM_LEN])
{
    uint32_t cap = 64u << 10;
    for (uint32_t i = 0; i < n; i++)
        cap = v[i].csize > cap ? v[i].csize : cap;
    uint8_t *buf = malloc(cap);
    struct earlier e;
    struct sr_source own = {0};
    XXH3_state_t *const xxh = XXH3_createState();
    const int fd = open(path, O_RDWR | O_CLOEXEC);
    int rc = earlier_init(&e, paths, npaths);
    if (rc == 0 && (!buf || !xxh))
        rc = sr_errf(-ENOMEM, "staged archive: out of memory");
    if (rc == 0 && fd < 0)
        rc = sr_errf(-errno, "cannot open %s: %s", path, strerror(errno));
    if (rc == 0)
        rc = sr_source_file_open(path, &own);
    if (rc == 0)
        XXH3_128bits_reset(xxh);
    uint64_t off = 0;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        struct sr_frame_info *const f = &v[i];
        if (f->coff != off) {
            rc =
                sr_errf(-EINVAL, "staged archive %s: frame %u is not where the list says", path, i);
        } else if (!f->src) {
            rc = own.read_at(own.ctx, buf, f->csize, f->coff);
        } else if ((rc = read_hole(&e, f, buf)) == 0) {
            if ((rc = sr_pwrite_all(fd, buf, f->csize, f->coff)) < 0)
                rc = sr_errf(rc, "cannot write %s: %s", path, strerror(-rc));
            else
                f->src = 0;
        }
        if (rc == 0)
            XXH3_128bits_update(xxh, buf, f->csize);
        off += f->csize;
    }
    /* the seek table, and anything else after the frames */
    while (rc == 0 && off < own.size) {
        const size_t take = own.size - off < cap ? (size_t)(own.size - off) : cap;
        if ((rc = own.read_at(own.ctx, buf, take, off)) == 0)
            XXH3_128bits_update(xxh, buf, take);
        off += take;
    }
    if (rc == 0 && sync && fsync(fd) != 0)
        rc = sr_errf(-errno, "cannot write %s: %s", path, strerror(errno));
    if (rc == 0 && checksum) {
        const XXH128_hash_t h = XXH3_128bits_digest(xxh);
        sr_checksum_format(h.high64, h.low64, checksum);
    }
    if (fd >= 0)
        close(fd);
    if (own.ctx)
        sr_source_file_close(&own);
    XXH3_freeState(xxh);
    earlier_free(&e);
    free(buf);
    return rc;
}
