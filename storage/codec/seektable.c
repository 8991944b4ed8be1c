/*
 * seektable.c - build, serialise and parse the zstd seekable-format seek
 * table (see seektable.h for the layout).
 *
 * DESIGN: the parser is the first code that touches a downloaded archive, so
 * it assumes hostile input: the footer is read first, the announced frame
 * count is bounded by both SR_SEEK_MAX_FRAMES and the bytes actually present,
 * every entry is checked (non-zero sizes, decompressed size <= 64 MiB,
 * compressed size <= zstd's bound for it) and the compressed sizes must add
 * up exactly to the bytes before the table. Only then are offsets computed.
 * All arithmetic is done in uint64_t from values of at most 32 bits, with at
 * most 2^24 terms, so it cannot overflow.
 */
#include "seektable.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

void sr_seektable_init(struct sr_seektable *t)
{
    memset(t, 0, sizeof(*t));
    t->has_checksums = 1;
}

void sr_seektable_free(struct sr_seektable *t)
{
    free(t->frames);
    memset(t, 0, sizeof(*t));
}

int sr_seektable_add(struct sr_seektable *t, uint32_t csize, uint32_t dsize, uint32_t checksum)
{
    if (t->count >= SR_SEEK_MAX_FRAMES)
        return sr_errf(-E2BIG, "seek table: more than %u frames", SR_SEEK_MAX_FRAMES);
    if (t->count == t->cap) {
        const uint32_t cap = t->cap ? t->cap * 2 : 64;
        struct sr_seek_frame *const f = realloc(t->frames, (size_t)cap * sizeof(*f));
        if (!f)
            return sr_errf(-ENOMEM, "seek table: out of memory");
        t->frames = f;
        t->cap = cap;
    }
    struct sr_seek_frame *const f = &t->frames[t->count++];
    f->coff = t->csize_total;
    f->doff = t->dsize_total;
    f->csize = csize;
    f->dsize = dsize;
    f->checksum = checksum;
    t->csize_total += csize;
    t->dsize_total += dsize;
    if (csize > t->max_csize)
        t->max_csize = csize;
    if (dsize > t->max_dsize)
        t->max_dsize = dsize;
    return 0;
}

size_t sr_seektable_size(uint32_t count, int has_checksums)
{
    return SR_SEEK_HEADER_SIZE + (size_t)count * (has_checksums ? 12u : 8u) + SR_SEEK_FOOTER_SIZE;
}

int sr_seektable_sink(const struct sr_seektable *t, sr_sink_fn sink, void *ctx)
{
    const size_t size = sr_seektable_size(t->count, t->has_checksums);
    uint8_t *const buf = malloc(size);
    if (!buf)
        return sr_errf(-ENOMEM, "out of memory for a seek table of %u frames", t->count);
    sr_seektable_write(t, buf);
    const int rc = sink(ctx, buf, size);
    free(buf);
    return rc;
}

void sr_seektable_write(const struct sr_seektable *t, uint8_t *buf)
{
    const size_t size = sr_seektable_size(t->count, t->has_checksums);
    uint8_t *p = buf;
    wr32(p, SR_SEEK_SKIPPABLE_MAGIC);
    wr32(p + 4, (uint32_t)(size - SR_SEEK_HEADER_SIZE));
    p += SR_SEEK_HEADER_SIZE;
    for (uint32_t i = 0; i < t->count; i++) {
        wr32(p, t->frames[i].csize);
        wr32(p + 4, t->frames[i].dsize);
        p += 8;
        if (t->has_checksums) {
            wr32(p, t->frames[i].checksum);
            p += 4;
        }
    }
    wr32(p, t->count);
    p[4] = t->has_checksums ? SR_SEEK_CHECKSUM_FLAG : 0;
    wr32(p + 5, SR_SEEK_FOOTER_MAGIC);
}

/* Checks one entry's sizes. */
static int check_entry(uint32_t i, uint32_t csize, uint32_t dsize)
{
    if (dsize == 0 || dsize > SR_SEEK_MAX_FRAME_SIZE)
        return sr_errf(-EBADMSG, "bad seek table: frame %u has decompressed size %u", i, dsize);
    if (csize < 9 || csize > ZSTD_COMPRESSBOUND((size_t)dsize))
        return sr_errf(-EBADMSG, "bad seek table: frame %u has compressed size %u for %u bytes", i,
                       csize, dsize);
    return 0;
}

/* Validates the entries at p (count of them, entry size esz) against the
 * data size, then fills t. */
static int parse_entries(const uint8_t *p, uint32_t count, size_t esz, uint64_t data_size,
                         struct sr_seektable *t)
{
    uint64_t csum = 0;
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *const e = p + (size_t)i * esz;
        const int rc = check_entry(i, rd32(e), rd32(e + 4));
        if (rc < 0)
            return rc;
        csum += rd32(e);
    }
    if (csum != data_size)
        return sr_errf(-EBADMSG,
                       "bad seek table: frames add up to %llu bytes but %llu precede the table "
                       "(truncated or corrupt archive)",
                       (unsigned long long)csum, (unsigned long long)data_size);
    t->frames = count ? malloc((size_t)count * sizeof(*t->frames)) : NULL;
    if (count && !t->frames)
        return sr_errf(-ENOMEM, "seek table: out of memory for %u frames", count);
    t->cap = count;
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *const e = p + (size_t)i * esz;
        t->count = i; /* sr_seektable_add() cannot fail here: capacity is reserved */
        (void)sr_seektable_add(t, rd32(e), rd32(e + 4), esz == 12 ? rd32(e + 8) : 0);
    }
    t->count = count;
    return 0;
}

int sr_seektable_parse(const uint8_t *buf, size_t len, uint64_t source_size, struct sr_seektable *t,
                       size_t *need)
{
    sr_seektable_init(t);
    if (len < SR_SEEK_FOOTER_SIZE || source_size < SR_SEEK_HEADER_SIZE + SR_SEEK_FOOTER_SIZE ||
        len > source_size)
        return sr_errf(-EBADMSG, "bad seek table: archive too short (%llu bytes)",
                       (unsigned long long)source_size);
    const uint8_t *const foot = buf + len - SR_SEEK_FOOTER_SIZE;
    if (rd32(foot + 5) != SR_SEEK_FOOTER_MAGIC)
        return sr_errf(-EBADMSG,
                       "bad seek table: no seekable footer (not a spotrun archive, or truncated)");
    const uint32_t count = rd32(foot);
    const uint8_t desc = foot[4];
    if (desc & 0x7C)
        return sr_errf(-EBADMSG, "bad seek table: reserved descriptor bits set (0x%02x)", desc);
    const int checks = (desc & SR_SEEK_CHECKSUM_FLAG) != 0;
    const size_t esz = checks ? 12 : 8;
    if (count > SR_SEEK_MAX_FRAMES ||
        (uint64_t)count * esz + SR_SEEK_HEADER_SIZE + SR_SEEK_FOOTER_SIZE > source_size)
        return sr_errf(-EBADMSG, "bad seek table: %u frames do not fit in %llu bytes", count,
                       (unsigned long long)source_size);
    const size_t tsize = sr_seektable_size(count, checks);
    if (tsize > len) {
        if (need)
            *need = tsize;
        return -EAGAIN;
    }
    const uint8_t *const head = buf + len - tsize;
    if (rd32(head) != SR_SEEK_SKIPPABLE_MAGIC || rd32(head + 4) != tsize - SR_SEEK_HEADER_SIZE)
        return sr_errf(-EBADMSG,
                       "bad seek table: skippable frame header does not match the footer");
    const int rc = parse_entries(head + SR_SEEK_HEADER_SIZE, count, esz, source_size - tsize, t);
    if (rc < 0) {
        sr_seektable_free(t);
        return rc;
    }
    t->has_checksums = checks;
    return 0;
}

int sr_seektable_read(const struct sr_source *src, struct sr_seektable *t)
{
    size_t want = 4096;
    uint8_t *buf = NULL;
    int rc;
    for (int attempt = 0; attempt < 2; attempt++) {
        const size_t len = want < src->size ? want : (size_t)src->size;
        uint8_t *const nb = realloc(buf, len ? len : 1);
        if (!nb) {
            rc = sr_errf(-ENOMEM, "seek table: out of memory");
            goto out;
        }
        buf = nb;
        rc = src->read_at(src->ctx, buf, len, src->size - len);
        if (rc < 0)
            goto out;
        rc = sr_seektable_parse(buf, len, src->size, t, &want);
        if (rc != -EAGAIN)
            goto out;
    }
    rc = sr_errf(-EBADMSG, "bad seek table: size changed while reading");
out:
    free(buf);
    return rc;
}
