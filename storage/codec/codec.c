/*
 * codec.c - the archive source over a local file, whole-source checksums and
 * the paths --ckpt-exclude leaves out.
 * Packing lives in codec_pack.c, unpacking in codec_unpack.c.
 *
 * DESIGN: a file source is a file descriptor read with pread(), so one source
 * may be read from several threads at once (the unpack workers fetch their
 * frames concurrently, as ranged GETs would). The checksum is XXH3-128 over
 * every byte, read in 4 MiB chunks; it is the same digest that packing
 * computes over the bytes it hands to its sink.
 */
#include "codec.h"
#include "log.h"
#include "seektable.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define CHECKSUM_CHUNK (4u << 20)

void sr_checksum_format(uint64_t high64, uint64_t low64, char out[SR_CHECKSUM_LEN])
{
    snprintf(out, SR_CHECKSUM_LEN, "xxh3-128:%016llx%016llx", (unsigned long long)high64,
             (unsigned long long)low64);
}

int sr_codec_threads(int requested)
{
    long n = requested > 0 ? requested : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    return n > 64 ? 64 : (int)n;
}

int sr_pack_excluded(const char *const *pats, size_t n, const char *rel, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        const char *const pat = pats[i];
        if (strchr(pat, '/') ? fnmatch(pat, rel, FNM_PATHNAME) == 0 : fnmatch(pat, name, 0) == 0)
            return 1;
    }
    return 0;
}

struct file_source {
    int fd;
    char path[];
};

static int file_read_at(void *ctx, void *buf, size_t len, uint64_t off)
{
    const struct file_source *const fs = ctx;
    uint8_t *p = buf;
    while (len > 0) {
        const ssize_t n = pread(fs->fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return sr_errf(-errno, "cannot read %s at offset %llu: %s", fs->path,
                           (unsigned long long)off, strerror(errno));
        if (n == 0)
            return sr_errf(-EBADMSG, "cannot read %s at offset %llu: unexpected end of file",
                           fs->path, (unsigned long long)off);
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

int sr_source_file_open(const char *path, struct sr_source *src)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sr_errf(-errno, "cannot open %s: %s", path, strerror(errno));
    return sr_source_fd_open(fd, path, src);
}

int sr_source_fd_open(int fd, const char *path, struct sr_source *src)
{
    const size_t plen = strlen(path) + 1;
    struct file_source *const fs = malloc(sizeof(*fs) + plen);
    struct stat st;
    if (!fs || fstat(fd, &st) < 0) {
        const int err = fs ? errno : ENOMEM;
        close(fd);
        free(fs);
        return sr_errf(-err, "cannot open %s: %s", path, strerror(err));
    }
    memcpy(fs->path, path, plen);
    fs->fd = fd;
    (void)posix_fadvise(fs->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    src->ctx = fs;
    src->size = (uint64_t)st.st_size;
    src->read_at = file_read_at;
    src->checksum = NULL;
    src->borrow = NULL;
    src->unborrow = NULL;
    src->consumed = NULL;
    return 0;
}

void sr_source_file_close(struct sr_source *src)
{
    struct file_source *const fs = src->ctx;
    if (fs) {
        close(fs->fd);
        free(fs);
    }
    src->ctx = NULL;
    src->size = 0;
    src->read_at = NULL;
    src->checksum = NULL;
    src->borrow = NULL;
    src->unborrow = NULL;
    src->consumed = NULL;
}

int sr_source_checksum(const struct sr_source *src, char out[SR_CHECKSUM_LEN])
{
    int rc = 0;
    uint8_t *const buf = malloc(CHECKSUM_CHUNK);
    XXH3_state_t *const st = XXH3_createState();
    if (!buf || !st) {
        rc = sr_errf(-ENOMEM, "checksum: out of memory");
        goto out;
    }
    XXH3_128bits_reset(st);
    for (uint64_t off = 0; off < src->size;) {
        const uint64_t left = src->size - off;
        const size_t n = left < CHECKSUM_CHUNK ? (size_t)left : CHECKSUM_CHUNK;
        rc = src->read_at(src->ctx, buf, n, off);
        if (rc < 0)
            goto out;
        XXH3_128bits_update(st, buf, n);
        off += n;
    }
    const XXH128_hash_t h = XXH3_128bits_digest(st);
    sr_checksum_format(h.high64, h.low64, out);
out:
    XXH3_freeState(st);
    free(buf);
    return rc;
}

int sr_link_target_inside(const char *link_path, const char *target)
{
    if (!target || !*target || target[0] == '/')
        return 0;
    /* Depth of the directory holding the link: its components but the last. */
    long depth = 0;
    for (const char *p = link_path; *p; p++)
        if (*p == '/' && p[1] && p[1] != '/')
            depth++;
    for (const char *p = target; *p;) {
        const size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (--depth < 0)
                return 0;
        } else if (n > 0 && !(n == 1 && p[0] == '.')) {
            depth++;
        }
        p += n;
        while (*p == '/')
            p++;
    }
    return 1;
}
