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

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
    uint8_t *p = buf;
    while (len > 0) {
        const ssize_t n = pread(fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
    const uint8_t *p = buf;
    while (len > 0) {
        const ssize_t n = pwrite(fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

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

static int read_hole(const struct sr_frame_info *f, const char *const *paths, uint32_t npaths,
                     int *fds, void *buf)
{
    if (f->src > npaths || !paths[f->src - 1] || !paths[f->src - 1][0])
        return sr_errf(-EIO, "staged archive: frame at %llu refers to an unknown archive %u",
                       (unsigned long long)f->coff, f->src);
    const char *const path = paths[f->src - 1];
    int *const fd = &fds[f->src - 1];
    if (*fd < 0 && (*fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return sr_errf(-errno, "cannot open %s: %s", path, strerror(errno));
    const int rc = pread_all(*fd, buf, f->csize, f->soff);
    if (rc < 0 || !frame_ok(f, buf))
        return sr_errf(-EIO, "%s changed: its frame at %llu is not the one staged (%s)", path,
                       (unsigned long long)f->soff, rc < 0 ? strerror(-rc) : "wrong bytes");
    return 0;
}

static int *new_fds(uint32_t n)
{
    int *const fds = malloc((n ? n : 1) * sizeof(*fds));
    for (uint32_t i = 0; fds && i < n; i++)
        fds[i] = -1;
    return fds;
}

static void free_fds(int *fds, uint32_t n)
{
    for (uint32_t i = 0; fds && i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
}

int sr_staged_read_frame(const struct sr_source *own, const struct sr_frame_info *f,
                         const char *const *paths, uint32_t npaths, void *buf)
{
    if (!f->src)
        return own->read_at(own->ctx, buf, f->csize, f->coff);
    int *const fds = new_fds(npaths);
    const int rc = fds ? read_hole(f, paths, npaths, fds, buf)
                       : sr_errf(-ENOMEM, "staged archive: out of memory");
    free_fds(fds, npaths);
    return rc;
}

int sr_staged_fill(const char *path, struct sr_frame_info *v, uint32_t n, const char *const *paths,
                   uint32_t npaths, int sync, char checksum[SR_CHECKSUM_LEN])
{
    uint32_t cap = 64u << 10;
    for (uint32_t i = 0; i < n; i++)
        cap = v[i].csize > cap ? v[i].csize : cap;
    uint8_t *buf = malloc(cap);
    int *const fds = new_fds(npaths);
    XXH3_state_t *const xxh = XXH3_createState();
    const int fd = open(path, O_RDWR | O_CLOEXEC);
    int rc = buf && fds && xxh ? 0 : sr_errf(-ENOMEM, "staged archive: out of memory");
    if (rc == 0 && fd < 0)
        rc = sr_errf(-errno, "cannot open %s: %s", path, strerror(errno));
    if (rc == 0)
        XXH3_128bits_reset(xxh);
    uint64_t off = 0;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        struct sr_frame_info *const f = &v[i];
        if (f->coff != off) {
            rc =
                sr_errf(-EINVAL, "staged archive %s: frame %u is not where the list says", path, i);
        } else if (!f->src) {
            if ((rc = pread_all(fd, buf, f->csize, f->coff)) < 0)
                rc = sr_errf(rc, "cannot read %s: %s", path, strerror(-rc));
        } else if ((rc = read_hole(f, paths, npaths, fds, buf)) == 0) {
            if ((rc = pwrite_all(fd, buf, f->csize, f->coff)) < 0)
                rc = sr_errf(rc, "cannot write %s: %s", path, strerror(-rc));
            else
                f->src = 0;
        }
        if (rc == 0)
            XXH3_128bits_update(xxh, buf, f->csize);
        off += f->csize;
    }
    /* the seek table, and anything else after the frames */
    while (rc == 0) {
        const ssize_t got = pread(fd, buf, cap, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            rc = sr_errf(-errno, "cannot read %s: %s", path, strerror(errno));
        if (got <= 0)
            break;
        XXH3_128bits_update(xxh, buf, (size_t)got);
        off += (uint64_t)got;
    }
    if (rc == 0 && sync && fsync(fd) != 0)
        rc = sr_errf(-errno, "cannot write %s: %s", path, strerror(errno));
    if (rc == 0 && checksum) {
        const XXH128_hash_t h = XXH3_128bits_digest(xxh);
        sr_checksum_format(h.high64, h.low64, checksum);
    }
    if (fd >= 0)
        close(fd);
    XXH3_freeState(xxh);
    free_fds(fds, npaths);
    free(buf);
    return rc;
}
