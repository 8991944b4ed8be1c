/*
 * delta.c - delta checkpoints (format 2, docs/archive-format.md "Delta
 * checkpoints"): publish uploads only the frames the newest complete
 * checkpoint does not already reference; restore reads every frame from
 * the object it lives in.
 *
 * DESIGN: a frame is named by the XXH3-128 of its content. The staged
 * archive is listed (every frame decompressed and hashed, frames.c); each
 * frame whose hash and size the base checkpoint's list has is referenced
 * where the base found it, the others are copied, still compressed, from
 * the staged file into this checkpoint's data object, followed by a seek
 * table of those frames. Before anything is uploaded, every object the base
 * references must be in the store and long enough, else the checkpoint is
 * made full. The manifest (the commit point, catalog.c) carries the list.
 *
 * Restore presents the listed frames as one archive: a source whose bytes
 * are the frames in list order, read (ranged) from their objects, followed
 * by a seek table made from the list (an older object is read only where
 * its listed frames are, never whole); the unpacker then checks every frame
 * against the list's size and content hash before its bytes are used, and
 * extracts through the usual safe, swap-at-the-end path. A missing object
 * is -ENOENT and a wrong frame -EBADMSG: the checkpoint is bad, restore
 * falls back to the previous one. Export (sr_ckpt_export) lists and
 * verifies the same source, then copies its frames into one ordinary
 * archive.
 *
 * Threads: no state of its own; the restore source is read from the
 * unpacker's workers at once (it only reads immutable state).
 */
#include "catalog.h"
#include "catalog_int.h"
#include "framelist.h"
#include "fsutil.h"
#include "layout.h"
#include "log.h"
#include "seektable.h"
#include "units.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define KEY_LEN 512
/* Smaller frames are uploaded again rather than referenced: they cost
 * little, and a reference keeps the whole object it points into alive
 * (gc counts references per object, docs/store.md). */
#define REUSE_MIN (64u << 10)

/* The key of object o of l. */
static void list_object_key(char key[KEY_LEN], const char *run_id, const struct sr_frame_list *l,
                            uint32_t o)
{
    char name[64];
    sr_frame_object_name(name, sizeof(name), l, o);
    sr_key_run(key, KEY_LEN, run_id, name);
}

/* Whether object o of l is m's own data object. */
static int is_own(const struct sr_frame_list *l, uint32_t o, const struct sr_manifest *m)
{
    return l->obj_seq[o] == m->seq && (!l->part || l->obj_epoch[o] == m->epoch);
}

int sr_ckpt_frames(struct sr_store *st, const struct sr_manifest *m, struct sr_frame_list *l)
{
    char key[KEY_LEN];
    char *buf = NULL;
    size_t len = 0;
    struct sr_manifest again;
    memset(l, 0, sizeof(*l));
    if (m->format < 2)
        return sr_errf(-EINVAL, "checkpoint %s seq %" PRIu64 " has no frame list (format %d)",
                       m->run_id, m->seq, m->format);
    char data[SR_CKPT_NAME_LEN], rec[SR_CKPT_NAME_LEN];
    sr_ckpt_names(m, data, rec); /* MANIFEST.json, or a part's record */
    sr_ckpt_key(key, sizeof(key), m->run_id, m->seq, rec);
    int rc = sr_store_get(st, key, SR_MANIFEST_MAX, &buf, &len);
    if (rc == 0)
        rc = sr_manifest_parse(buf, len, &again);
    /* manifests are create-only: one that changed since it was listed is
     * not the one we chose */
    if (rc == 0 &&
        (again.seq != m->seq || strcmp(again.run_id, m->run_id) != 0 ||
         again.raw_bytes != m->raw_bytes || again.frames != m->frames ||
         again.is_part != m->is_part || again.node_rank != m->node_rank || again.epoch != m->epoch))
        rc = sr_errf(-EBADMSG, "manifest %s changed since it was listed", key);
    if (rc == 0)
        rc = sr_frame_list_parse(buf, len, m, l);
    free(buf);
    return rc;
}

/* ---- publish ---------------------------------------------------------- */

static int cmp_hash(const struct sr_frame_info *a, const struct sr_frame_info *b)
{
    if (a->hash_hi != b->hash_hi)
        return a->hash_hi < b->hash_hi ? -1 : 1;
    if (a->hash_lo != b->hash_lo)
        return a->hash_lo < b->hash_lo ? -1 : 1;
    return a->dsize < b->dsize ? -1 : a->dsize > b->dsize;
}

static int cmp_ref(const void *a, const void *b)
{
    return cmp_hash(&((const struct sr_frame_ref *)a)->f, &((const struct sr_frame_ref *)b)->f);
}

/* The base: the newest complete checkpoint's list, sorted by hash, when a
 * delta may build on it; l->n == 0 means "make a full one". */
static int load_base(struct sr_store *st, const struct sr_manifest *m, unsigned full_every,
                     struct sr_frame_list *l, uint32_t *chain)
{
    struct sr_ckpt_list cl;
    memset(l, 0, sizeof(*l));
    *chain = 0;
    int rc = sr_ckpt_list(st, m->run_id, &cl);
    if (rc < 0)
        return rc;
    const struct sr_manifest *b = cl.n ? &cl.v[cl.n - 1] : NULL;
    /* A multi-node part builds on its own rank's part of the newest set. */
    struct sr_manifest part;
    if (b && m->is_part) {
        if (b->nodes != m->nodes || b->is_part || m->node_rank >= b->nodes)
            b = NULL;
        else if ((rc = sr_ckpt_part_of(st, b, m->node_rank, &part)) == 0)
            b = &part;
        else if (rc == -EBADMSG || rc == -ENOENT)
            b = NULL, rc = 0;
    }
    if (rc == 0 && b && b->format >= 2 && b->seq < m->seq && full_every > 1 &&
        b->chain + 1 < full_every) {
        rc = sr_ckpt_frames(st, b, l);
        if (rc == -EBADMSG || rc == -ENOENT) {
            sr_warn("checkpoint %s seq %" PRIu64 " cannot be a delta's base (%s); uploading "
                    "seq %" PRIu64 " in full",
                    m->run_id, b->seq, sr_strerror(rc), m->seq);
            rc = 0;
        } else if (rc == 0) {
            *chain = b->chain + 1;
        }
    }
    sr_ckpt_list_free(&cl);
    /* every object the base references must still be there, whole */
    for (uint32_t o = 0; rc == 0 && o < l->nobj; o++) {
        uint64_t need = 0, size = 0;
        for (uint32_t i = 0; i < l->n; i++)
            if (l->v[i].obj == o && l->v[i].f.coff + l->v[i].f.csize > need)
                need = l->v[i].f.coff + l->v[i].f.csize;
        char key[KEY_LEN];
        list_object_key(key, m->run_id, l, o);
        rc = sr_store_size(st, key, &size);
        if (rc == -ENOENT || (rc == 0 && size < need)) {
            sr_warn("%s is %s; uploading checkpoint seq %" PRIu64 " in full", key,
                    rc ? "missing" : "shorter than its frames", m->seq);
            sr_frame_list_free(l);
            *chain = 0;
            return 0;
        }
    }
    if (rc == 0 && l->n)
        qsort(l->v, l->n, sizeof(*l->v), cmp_ref);
    if (rc < 0)
        sr_frame_list_free(l);
    return rc;
}

static const struct sr_frame_ref *find(const struct sr_frame_list *base,
                                       const struct sr_frame_info *f)
{
    const struct sr_frame_ref key = {.f = *f};
    return base->n ? bsearch(&key, base->v, base->n, sizeof(key), cmp_ref) : NULL;
}

/* Copies the frames of own not found in base into key (create-only),
 * then their seek table; fills out (the new list) and m's stored size and
 * checksum. */
struct upload {
    struct sr_store_writer *w;
    XXH3_state_t *xxh;
    uint64_t bytes;
};

static int put(void *ctx, const void *buf, size_t len)
{
    struct upload *const u = ctx;
    const int rc = sr_store_writer_write(u->w, buf, len);
    if (rc == 0) {
        XXH3_128bits_update(u->xxh, buf, len);
        u->bytes += len;
    }
    return rc;
}

static int upload_new(struct sr_store *st, struct sr_manifest *m, const struct sr_source *src,
                      const struct sr_frame_info *own, uint32_t n, const struct sr_frame_list *base,
                      struct sr_frame_list *out)
{
    char key[KEY_LEN];
    struct upload u = {.xxh = XXH3_createState()};
    struct sr_seektable t;
    sr_seektable_init(&t);
    uint8_t *buf = NULL;
    const int me = sr_frame_list_object(out, m->seq, m->epoch);
    int rc = me < 0 ? me : u.xxh ? 0 : sr_errf(-ENOMEM, "delta: out of memory");
    if (rc == 0) {
        XXH3_128bits_reset(u.xxh);
        list_object_key(key, m->run_id, out, (uint32_t)me);
        rc = sr_store_writer_open_new(st, key, &u.w);
    }
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        const struct sr_frame_ref *const r = own[i].dsize >= REUSE_MIN ? find(base, &own[i]) : NULL;
        if (r) {
            const int o = sr_frame_list_object(out, base->obj_seq[r->obj], base->obj_epoch[r->obj]);
            rc = o < 0 ? o : sr_frame_list_add(out, &r->f, (uint32_t)o);
            continue;
        }
        uint8_t *const nb = realloc(buf, own[i].csize);
        if (!nb) {
            rc = sr_errf(-ENOMEM, "delta: out of memory");
            break;
        }
        buf = nb;
        struct sr_frame_info f = own[i];
        f.coff = u.bytes;
        f.src = 0; /* read from wherever it was staged, stored here */
        f.soff = 0;
        if ((rc = sr_staged_read_frame(src, &own[i], m->staged_paths, m->staged_npaths, buf)) ==
                0 &&
            (rc = sr_seektable_add(&t, f.csize, f.dsize, f.xxh64_lo)) == 0 &&
            (rc = put(&u, buf, f.csize)) == 0)
            rc = sr_frame_list_add(out, &f, (uint32_t)me);
    }
    if (rc == 0)
        rc = sr_seektable_sink(&t, put, &u);
    if (rc == 0)
        rc = sr_store_writer_commit(u.w);
    if (rc == 0) {
        const XXH128_hash_t h = XXH3_128bits_digest(u.xxh);
        sr_checksum_format(h.high64, h.low64, m->checksum);
        m->stored_bytes = u.bytes;
    }
    if (u.w)
        sr_store_writer_close(u.w);
    XXH3_freeState(u.xxh);
    sr_seektable_free(&t);
    free(buf);
    return rc;
}

/* The packer's list of the staged frames describes a file of size bytes:
 * frames one after the other from 0, then the seek table. */
static int staged_fit(const struct sr_manifest *m, uint64_t size)
{
    if (!m->staged_frames || m->staged_nframes == 0 || m->staged_nframes != m->frames)
        return 0;
    uint64_t off = 0;
    for (uint32_t i = 0; i < m->staged_nframes; i++) {
        if (m->staged_frames[i].coff != off)
            return 0;
        off += m->staged_frames[i].csize;
    }
    return off + sr_seektable_size(m->staged_nframes, 1) == size;
}

int sr_ckpt_fill_staged(struct sr_store *st, struct sr_manifest *m, const char *data_path)
{
    uint32_t holes = 0;
    for (uint32_t i = 0; i < m->staged_nframes; i++)
        holes += m->staged_frames[i].src != 0;
    if (!holes)
        return 0;
    const int64_t t0 = sr_now_ms();
    const int rc = sr_staged_fill(data_path, m->staged_frames, m->staged_nframes, m->staged_paths,
                                  m->staged_npaths, !sr_store_streams(st), m->checksum);
    if (rc == 0)
        sr_debug("filled %" PRIu32 " frames of %s from earlier staged archives in %" PRId64 " ms",
                 holes, data_path, sr_now_ms() - t0);
    return rc;
}

int sr_ckpt_publish_delta(struct sr_store *st, struct sr_manifest *m, const char *data_path,
                          const struct sr_fence *fence, unsigned full_every)
{
    int rc;
    if (m->nodes > 0 && !m->is_part) /* not a part: as it is */
        return (rc = sr_ckpt_fill_staged(st, m, data_path)) < 0
                   ? rc
                   : sr_ckpt_publish(st, m, data_path, fence);
    rc = sr_ckpt_check_new_seq(st, m);
    if (rc < 0)
        return rc;
    struct sr_source src;
    struct sr_frame_info *own = NULL;
    uint32_t n = 0;
    struct sr_frame_list base = {0}, list;
    sr_frame_list_init(&list, m);
    if ((rc = sr_source_file_open(data_path, &src)) < 0)
        return rc;
    if (staged_fit(m, src.size) && (own = malloc(m->staged_nframes * sizeof(*own)))) {
        memcpy(own, m->staged_frames, m->staged_nframes * sizeof(*own));
        n = m->staged_nframes; /* listed as it was packed: no second pass */
    } else if ((rc = sr_ckpt_fill_staged(st, m, data_path)) == 0) {
        rc = sr_archive_frames(&src, &own, &n);
    }
    if (rc == 0)
        rc = load_base(st, m, full_every, &base, &m->chain);
    if (rc < 0)
        goto out;
    m->full = base.n == 0;
    m->frames = n;
    m->archive_bytes = src.size; /* the staged archive; stored_bytes: what is uploaded */
    m->frame_list = &list;
    if (m->full) { /* the staged file as it is (made whole): stock-readable */
        if ((rc = sr_ckpt_fill_staged(st, m, data_path)) < 0)
            goto out;
        for (uint32_t i = 0; i < n; i++)
            own[i].src = 0; /* filled */
        const int me = sr_frame_list_object(&list, m->seq, m->epoch);
        for (uint32_t i = 0; me >= 0 && rc == 0 && i < n; i++)
            rc = sr_frame_list_add(&list, &own[i], (uint32_t)me);
        char key[KEY_LEN];
        if (me < 0)
            rc = me;
        else
            list_object_key(key, m->run_id, &list, (uint32_t)me);
        if (rc == 0)
            rc = sr_store_put_file_new(st, key, data_path);
    } else {
        rc = upload_new(st, m, &src, own, n, &base, &list);
        if (rc == 0 && list.nobj == 1) { /* nothing reused: an ordinary archive */
            m->full = 1;
            m->chain = 0;
        }
    }
    if (rc == 0)
        rc = sr_ckpt_commit_manifest(st, m, NULL, 0, data_path, fence);
    m->frame_list = NULL;
out:
    sr_source_file_close(&src);
    sr_frame_list_free(&base);
    sr_frame_list_free(&list);
    free(own);
    return rc;
}

/* ---- restore ---------------------------------------------------------- */

/* The listed frames, one after the other, then a seek table of them. */
struct vsrc {
    const struct sr_frame_list *l;
    struct sr_source *objs;
    uint64_t *voff; /* l->n + 1 entries: where frame i starts */
    uint8_t *table;
    size_t tlen;
    const struct sr_source *own; /* this checkpoint's data object */
    uint32_t own_obj;            /* its index in objs */
    /* the own object's checksum as the unpacker streams its frames by:
     * its first own_next bytes are hashed into xxh (none: NULL) */
    XXH3_state_t *xxh;
    uint64_t own_next;
    uint32_t cursor; /* the frame the next consumed bytes belong to */
};

/* The unpacker used the frame at off: one of the own object's, the next
 * of its bytes, goes into its checksum (sr_source.consumed). A frame out
 * of order stops that: the checksum then reads the object. */
static void vsrc_consumed(void *ctx, uint64_t off, const void *buf, size_t len)
{
    struct vsrc *const v = ctx;
    const uint32_t n = v->l->n;
    while (v->cursor < n && v->voff[v->cursor + 1] <= off)
        v->cursor++;
    if (!v->xxh || v->cursor >= n || v->voff[v->cursor] != off)
        return;
    const struct sr_frame_ref *const r = &v->l->v[v->cursor];
    if (r->obj != v->own_obj)
        return;
    if (r->f.coff != v->own_next || len != r->f.csize) {
        XXH3_freeState(v->xxh);
        v->xxh = NULL;
        return;
    }
    XXH3_128bits_update(v->xxh, buf, len);
    v->own_next += len;
}

/* The manifest's checksum is of this checkpoint's own data object (the
 * integrity root: the list in the manifest names every other frame by
 * hash); checked before the swap, as for a format-1 object. The bytes the
 * unpacker showed (vsrc_consumed) are not read again: only the rest (the
 * seek table). */
static int vsrc_checksum(void *ctx, char out[SR_CHECKSUM_LEN])
{
    struct vsrc *const v = ctx;
    const struct sr_source *const own = v->own;
    if (own->checksum)
        return own->checksum(own->ctx, out);
    if (!v->xxh || v->own_next > own->size)
        return sr_source_checksum(own, out);
    int rc = 0;
    uint8_t buf[64 << 10];
    for (uint64_t off = v->own_next; rc == 0 && off < own->size; off += sizeof(buf)) {
        const size_t k = own->size - off < sizeof(buf) ? (size_t)(own->size - off) : sizeof(buf);
        if ((rc = own->read_at(own->ctx, buf, k, off)) == 0)
            XXH3_128bits_update(v->xxh, buf, k);
    }
    if (rc < 0)
        return rc;
    const XXH128_hash_t h = XXH3_128bits_digest(v->xxh);
    sr_checksum_format(h.high64, h.low64, out);
    XXH3_freeState(v->xxh); /* once: a later call reads the object */
    v->xxh = NULL;
    return 0;
}

static int vsrc_read_at(void *ctx, void *buf, size_t len, uint64_t off)
{
    const struct vsrc *const v = ctx;
    uint8_t *p = buf;
    const uint32_t n = v->l->n;
    while (len > 0) {
        if (off >= v->voff[n]) {
            const uint64_t at = off - v->voff[n];
            if (at > v->tlen || len > v->tlen - at)
                return sr_errf(-EIO, "delta: read past the end of the archive");
            memcpy(p, v->table + at, len);
            return 0;
        }
        uint32_t lo = 0, hi = n - 1; /* the last frame starting at or before off */
        while (lo < hi) {
            const uint32_t mid = lo + (hi - lo + 1) / 2;
            if (v->voff[mid] <= off)
                lo = mid;
            else
                hi = mid - 1;
        }
        const struct sr_frame_ref *const r = &v->l->v[lo];
        const uint64_t in = off - v->voff[lo];
        const size_t take = len < v->voff[lo + 1] - off ? len : (size_t)(v->voff[lo + 1] - off);
        const struct sr_source *const o = &v->objs[r->obj];
        const int rc = o->read_at(o->ctx, p, take, r->f.coff + in);
        if (rc < 0)
            return rc;
        p += take;
        off += take;
        len -= take;
    }
    return 0;
}

static int vsrc_open(struct sr_store *st, const struct sr_manifest *m, struct vsrc *v,
                     uint32_t *opened)
{
    const struct sr_frame_list *const l = v->l;
    struct sr_seektable t;
    sr_seektable_init(&t);
    t.has_checksums = 0; /* zstd checks each frame's own; the hash checks the rest */
    *opened = 0;
    v->objs = calloc(l->nobj, sizeof(*v->objs));
    v->voff = calloc((size_t)l->n + 1, sizeof(*v->voff));
    int rc = v->objs && v->voff ? 0 : sr_errf(-ENOMEM, "delta restore: out of memory");
    struct sr_range *reads = calloc(l->n ? l->n : 1, sizeof(*reads));
    if (!reads)
        rc = sr_errf(-ENOMEM, "delta restore: out of memory");
    for (uint32_t o = 0; rc == 0 && o < l->nobj; o++) {
        char key[KEY_LEN];
        list_object_key(key, m->run_id, l, o);
        /* Every frame of the own object is listed: it is read whole (S3:
         * the background download, which also hashes it). Of an older
         * object only the listed frames are read, in list order: that is
         * the plan (S3 fetches just those bytes ahead, consecutive frames
         * in one request), never the whole object. */
        size_t nreads = 0;
        for (uint32_t i = 0; i < l->n; i++)
            if (l->v[i].obj == o)
                reads[nreads++] = (struct sr_range){l->v[i].f.coff, l->v[i].f.csize};
        rc = is_own(l, o, m) ? sr_store_source(st, key, &v->objs[o])
                             : sr_store_source_ranged(st, key, reads, nreads, &v->objs[o]);
        if (rc == 0)
            (*opened)++;
        if (rc == 0 && is_own(l, o, m)) {
            v->own = &v->objs[o];
            v->own_obj = o;
        }
    }
    free(reads); /* a source keeps its own plan */
    if (rc == 0 && !v->own)
        rc = sr_errf(-EBADMSG, "the frame list of %s seq %" PRIu64 " does not name its own object",
                     m->run_id, m->seq);
    if (rc == 0 && v->own->size != m->stored_bytes)
        rc = sr_errf(-EBADMSG,
                     "%s seq %" PRIu64 ": data is %" PRIu64 " bytes, its manifest says %" PRIu64,
                     m->run_id, m->seq, v->own->size, m->stored_bytes);
    for (uint32_t i = 0; rc == 0 && i < l->n; i++) {
        const struct sr_frame_ref *const r = &l->v[i];
        if (r->f.coff > v->objs[r->obj].size || r->f.csize > v->objs[r->obj].size - r->f.coff)
            rc = sr_errf(-EBADMSG, "frame %u of %s seq %" PRIu64 " lies outside its object", i,
                         m->run_id, m->seq);
        else if ((rc = sr_seektable_add(&t, r->f.csize, r->f.dsize, 0)) == 0)
            v->voff[i + 1] = v->voff[i] + r->f.csize;
    }
    if (rc == 0) {
        v->tlen = sr_seektable_size(t.count, 0);
        if (!(v->table = malloc(v->tlen)))
            rc = sr_errf(-ENOMEM, "delta restore: out of memory");
        else
            sr_seektable_write(&t, v->table);
    }
    sr_seektable_free(&t);
    return rc;
}

static void vsrc_close(struct sr_store *st, struct vsrc *v, uint32_t opened)
{
    for (uint32_t o = 0; o < opened; o++)
        sr_store_source_close(st, &v->objs[o]);
    free(v->objs);
    free(v->voff);
    free(v->table);
    XXH3_freeState(v->xxh);
}

int sr_ckpt_restore_frames(struct sr_store *st, const struct sr_manifest *m, const char *dir,
                           int threads)
{
    struct sr_frame_list l;
    int rc = sr_ckpt_frames(st, m, &l);
    if (rc < 0)
        return rc;
    struct vsrc v = {.l = &l};
    uint32_t opened = 0;
    struct sr_frame_info *want = calloc(l.n, sizeof(*want));
    rc = want ? vsrc_open(st, m, &v, &opened) : sr_errf(-ENOMEM, "delta restore: out of memory");
    if (rc == 0) {
        for (uint32_t i = 0; i < l.n; i++)
            want[i] = l.v[i].f;
        if ((v.xxh = XXH3_createState()))
            XXH3_128bits_reset(v.xxh); /* else the checksum reads the object */
        const struct sr_source src = {.ctx = &v,
                                      .size = v.voff[l.n] + v.tlen,
                                      .read_at = vsrc_read_at,
                                      .checksum = vsrc_checksum,
                                      .consumed = vsrc_consumed};
        const struct sr_unpack_opts opts = {
            .threads = threads,
            .checksum = m->checksum,
            .max_raw_bytes = m->raw_bytes ? m->raw_bytes : 1,
            .frames = want,
            .nframes = l.n,
        };
        rc = sr_unpack_to_dir(&src, dir, &opts, NULL);
    }
    vsrc_close(st, &v, opened);
    free(want);
    sr_frame_list_free(&l);
    return rc;
}

/* ---- export ----------------------------------------------------------- */

/* Copies the frames of src (already listed and verified in fi) into out,
 * then a seek table of them with their checksums: an ordinary archive. */
static int export_write(const struct sr_source *src, const struct sr_frame_info *fi, uint32_t n,
                        const char *path)
{
    struct sr_durable d;
    struct sr_seektable t;
    sr_seektable_init(&t);
    uint8_t *buf = NULL;
    int rc = sr_durable_open(&d, path);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        uint8_t *const nb = realloc(buf, fi[i].csize ? fi[i].csize : 1);
        if (!nb) {
            rc = sr_errf(-ENOMEM, "export: out of memory");
            break;
        }
        buf = nb;
        if ((rc = src->read_at(src->ctx, buf, fi[i].csize, fi[i].coff)) == 0 &&
            (rc = sr_seektable_add(&t, fi[i].csize, fi[i].dsize, fi[i].xxh64_lo)) == 0)
            rc = sr_durable_write(&d, buf, fi[i].csize);
    }
    if (rc == 0)
        rc = sr_seektable_sink(&t, sr_durable_sink, &d);
    if (rc == 0)
        rc = sr_durable_commit(&d, 1);
    sr_durable_abort(&d);
    sr_seektable_free(&t);
    free(buf);
    return rc;
}

/* Verifies m frame by frame and writes it to path (see catalog.h). */
static int export_one(struct sr_store *st, const struct sr_manifest *m, const char *path)
{
    struct sr_frame_list l = {0};
    struct vsrc v = {.l = &l};
    uint32_t opened = 0;
    struct sr_source own = {0}, src;
    struct sr_frame_info *fi = NULL;
    uint32_t n = 0;
    char key[KEY_LEN], sum[SR_CHECKSUM_LEN];
    int rc = 0;
    if (m->format >= 2) {
        if ((rc = sr_ckpt_frames(st, m, &l)) == 0)
            rc = vsrc_open(st, m, &v, &opened);
        src = (struct sr_source){.ctx = &v,
                                 .size = v.voff ? v.voff[l.n] + v.tlen : 0,
                                 .read_at = vsrc_read_at,
                                 .checksum = vsrc_checksum};
    } else {
        sr_key_ckpt(key, sizeof(key), m->run_id, m->seq, SR_KEY_DATA);
        rc = sr_store_source(st, key, &own);
        src = own;
        if (rc == 0 && own.size != m->stored_bytes)
            rc = sr_errf(-EBADMSG, "%s: %" PRIu64 " bytes, its manifest says %" PRIu64, key,
                         own.size, m->stored_bytes);
    }
    /* every frame decompressed, checked against zstd's own checksum and
     * its sizes, and hashed; a delta's against its list */
    if (rc == 0)
        rc = sr_archive_frames(&src, &fi, &n);
    if (rc == 0 && m->format >= 2 && n != l.n)
        rc = sr_errf(-EBADMSG, "checkpoint %s seq %" PRIu64 ": %u frames, its list has %u",
                     m->run_id, m->seq, n, l.n);
    for (uint32_t i = 0; rc == 0 && m->format >= 2 && i < n; i++)
        if (cmp_hash(&fi[i], &l.v[i].f) != 0)
            rc = sr_errf(-EBADMSG,
                         "checkpoint %s seq %" PRIu64 ": frame %u does not match its list "
                         "(size or content hash)",
                         m->run_id, m->seq, i);
    uint64_t raw = 0;
    for (uint32_t i = 0; rc == 0 && i < n; i++)
        raw += fi[i].dsize;
    if (rc == 0 && raw != m->raw_bytes)
        rc = sr_errf(-EBADMSG,
                     "checkpoint %s seq %" PRIu64 ": %" PRIu64 " bytes, its manifest "
                     "says %" PRIu64,
                     m->run_id, m->seq, raw, m->raw_bytes);
    /* the integrity root: the manifest's checksum of its own object */
    if (rc == 0)
        rc = src.checksum ? src.checksum(src.ctx, sum) : sr_source_checksum(&src, sum);
    if (rc == 0 && strcmp(sum, m->checksum) != 0)
        rc = sr_errf(-EBADMSG, "checkpoint %s seq %" PRIu64 ": checksum mismatch", m->run_id,
                     m->seq);
    if (rc == 0)
        rc = export_write(&src, fi, n, path);
    free(fi);
    if (m->format >= 2)
        vsrc_close(st, &v, opened);
    else if (own.ctx)
        sr_store_source_close(st, &own);
    sr_frame_list_free(&l);
    return rc;
}

int sr_ckpt_export(struct sr_store *st, const char *run_id, uint64_t seq, const char *path,
                   struct sr_manifest *out)
{
    struct sr_ckpt_list cl;
    int rc = sr_ckpt_list(st, run_id, &cl);
    if (rc < 0)
        return rc;
    const struct sr_manifest *m = NULL;
    for (size_t i = cl.n; i-- > 0 && !m;)
        if (seq == 0 || cl.v[i].seq == seq)
            m = &cl.v[i];
    if (!m)
        rc = seq ? sr_errf(-ENOENT, "run %s has no complete checkpoint %" PRIu64, run_id, seq)
                 : sr_errf(-ENOENT, "run %s has no complete checkpoint", run_id);
    else if (m->nodes > 0)
        rc = sr_errf(-ENOTSUP,
                     "checkpoint %" PRIu64 " of %s spans %u nodes: spotrun pull it (every "
                     "part) and pack the directory",
                     m->seq, run_id, m->nodes);
    else
        rc = export_one(st, m, path);
    if (rc == 0 && out)
        *out = *m;
    sr_ckpt_list_free(&cl);
    return rc;
}
