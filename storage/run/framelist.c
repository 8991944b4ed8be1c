/*
 * framelist.c - the frame list of a format-2 manifest (see framelist.h).
 *
 * DESIGN: the list is data from the store, so nothing in it is used before
 * it has been checked here: object names are matched against the one form
 * they may have, sizes against the seek table's bounds, totals against the
 * manifest. A list that passes can still point at frames that are missing
 * or corrupt; restore checks each frame's content hash before using it.
 */
#include "framelist.h"
#include "catalog.h"
#include "layout.h"
#include "log.h"
#include "manifest.h"
#include "seektable.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

void sr_frame_list_free(struct sr_frame_list *l)
{
    free(l->obj_seq);
    free(l->obj_epoch);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

void sr_frame_list_init(struct sr_frame_list *l, const struct sr_manifest *m)
{
    memset(l, 0, sizeof(*l));
    l->part = m->is_part;
    l->rank = m->node_rank;
}

void sr_frame_object_name(char *buf, size_t len, const struct sr_frame_list *l, uint32_t i)
{
    if (l->part)
        snprintf(buf, len, SR_KEY_CKPT "/%010" PRIu64 "/part-%" PRIu32 "-e%" PRIu64 ".tar.zst",
                 l->obj_seq[i], l->rank, l->obj_epoch[i]);
    else
        snprintf(buf, len, SR_KEY_CKPT "/%010" PRIu64 "/" SR_KEY_DATA, l->obj_seq[i]);
}

int sr_frame_list_object(struct sr_frame_list *l, uint64_t seq, uint64_t epoch)
{
    if (!l->part)
        epoch = 0;
    for (uint32_t i = 0; i < l->nobj; i++)
        if (l->obj_seq[i] == seq && l->obj_epoch[i] == epoch)
            return (int)i;
    if (l->nobj >= SR_FRAME_OBJECTS_MAX)
        return sr_errf(-E2BIG, "a checkpoint may reference at most %u objects",
                       SR_FRAME_OBJECTS_MAX);
    uint64_t *const p = realloc(l->obj_seq, (l->nobj + 1) * sizeof(*p));
    if (p)
        l->obj_seq = p;
    uint64_t *const e = p ? realloc(l->obj_epoch, (l->nobj + 1) * sizeof(*e)) : NULL;
    if (!e)
        return sr_errf(-ENOMEM, "frame list: out of memory");
    l->obj_epoch = e;
    p[l->nobj] = seq;
    e[l->nobj] = epoch;
    return (int)l->nobj++;
}

int sr_frame_list_add(struct sr_frame_list *l, const struct sr_frame_info *f, uint32_t obj)
{
    if (l->n >= SR_SEEK_MAX_FRAMES)
        return sr_errf(-E2BIG, "a checkpoint may have at most %u frames", SR_SEEK_MAX_FRAMES);
    if ((l->n & (l->n - 1)) == 0) { /* grow at powers of two */
        struct sr_frame_ref *const v = realloc(l->v, (l->n ? 2 * l->n : 1) * sizeof(*v));
        if (!v)
            return sr_errf(-ENOMEM, "frame list: out of memory");
        l->v = v;
    }
    l->v[l->n++] = (struct sr_frame_ref){.f = *f, .obj = obj};
    return 0;
}

int sr_frame_list_build(json_t *o, const char *run_id, const struct sr_frame_list *l)
{
    (void)run_id;
    json_t *const objs = json_array(), *const frames = json_array();
    int bad = !objs || !frames;
    char name[64], hex[33];
    for (uint32_t i = 0; !bad && i < l->nobj; i++) {
        sr_frame_object_name(name, sizeof(name), l, i);
        bad |= json_array_append_new(objs, json_string(name));
    }
    for (uint32_t i = 0; !bad && i < l->n; i++) {
        const struct sr_frame_info *const f = &l->v[i].f;
        snprintf(hex, sizeof(hex), "%016" PRIx64 "%016" PRIx64, f->hash_hi, f->hash_lo);
        bad |= json_array_append_new(frames,
                                     json_pack("[i,I,i,i,s]", (int)l->v[i].obj, (json_int_t)f->coff,
                                               (int)f->csize, (int)f->dsize, hex));
    }
    bad |= json_object_set_new(o, "objects", objs);
    bad |= json_object_set_new(o, "frame_list", frames);
    return bad;
}

/* seq of "ckpt/<10 digits>/data.tar.zst", or in a part's list of
 * "ckpt/<10 digits>/part-<its rank>-e<epoch >= 1>.tar.zst" (*epoch), 0 when
 * name is anything else: the name must be exactly what
 * sr_frame_object_name() gives back. */
static uint64_t object_seq(const struct sr_frame_list *l, const char *name, uint64_t *epoch)
{
    const size_t len = strlen(name);
    if (len < 16 || len > 63 || strncmp(name, "ckpt/", 5) != 0 || name[15] != '/')
        return 0;
    uint64_t seq = 0;
    for (int i = 5; i < 15; i++) {
        if (name[i] < '0' || name[i] > '9')
            return 0;
        seq = seq * 10 + (uint64_t)(name[i] - '0');
    }
    *epoch = 0;
    if (l->part) {
        unsigned rank;
        unsigned long long e;
        int end = 0;
        if (sscanf(name + 16, "part-%u-e%llu.tar.zst%n", &rank, &e, &end) != 2 ||
            (size_t)end != len - 16 || rank != l->rank || e == 0)
            return 0;
        *epoch = e;
    } else if (strcmp(name + 15, "/data.tar.zst") != 0) {
        return 0;
    }
    struct sr_frame_list probe = *l;
    probe.obj_seq = &seq;
    probe.obj_epoch = epoch;
    char again[64];
    sr_frame_object_name(again, sizeof(again), &probe, 0);
    return strcmp(again, name) == 0 ? seq : 0;
}

static int parse_hex(const char *s, uint64_t *hi, uint64_t *lo)
{
    if (strlen(s) != 32)
        return -1;
    uint64_t v[2] = {0, 0};
    for (int i = 0; i < 32; i++) {
        const char c = s[i];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        v[i / 16] = v[i / 16] << 4 | (uint64_t)d;
    }
    *hi = v[0];
    *lo = v[1];
    return 0;
}

static int bad_list(const char *run_id, uint64_t seq, const char *why, size_t i)
{
    return sr_errf(-EBADMSG, "manifest of %s seq %" PRIu64 ": frame list: %s (entry %zu)", run_id,
                   seq, why, i);
}

static int parse_objects(json_t *objs, const struct sr_manifest *m, struct sr_frame_list *l)
{
    const size_t n = json_array_size(objs);
    if (n == 0 || n > SR_FRAME_OBJECTS_MAX)
        return bad_list(m->run_id, m->seq, "1 to 4096 objects", n);
    l->obj_seq = calloc(n, sizeof(*l->obj_seq));
    l->obj_epoch = calloc(n, sizeof(*l->obj_epoch));
    if (!l->obj_seq || !l->obj_epoch)
        return sr_errf(-ENOMEM, "frame list: out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *const s = json_array_get(objs, i);
        uint64_t epoch = 0;
        const uint64_t seq = json_is_string(s) ? object_seq(l, json_string_value(s), &epoch) : 0;
        if (seq == 0 || seq > m->seq || (l->part && seq == m->seq && epoch != m->epoch))
            return bad_list(m->run_id, m->seq,
                            l->part ? "an object is not this node's part of an earlier "
                                      "checkpoint of the run"
                                    : "an object is not the data of an earlier checkpoint of "
                                      "the run",
                            i);
        for (size_t j = 0; j < i; j++)
            if (l->obj_seq[j] == seq && l->obj_epoch[j] == epoch)
                return bad_list(m->run_id, m->seq, "an object is listed twice", i);
        l->obj_seq[l->nobj] = seq;
        l->obj_epoch[l->nobj++] = epoch;
    }
    return 0;
}

static int parse_frames(json_t *frames, const struct sr_manifest *m, struct sr_frame_list *l)
{
    const size_t n = json_array_size(frames);
    if (n == 0 || n > SR_SEEK_MAX_FRAMES || n != m->frames)
        return bad_list(m->run_id, m->seq, "frame count differs from \"frames\"", n);
    l->v = calloc(n, sizeof(*l->v));
    if (!l->v)
        return sr_errf(-ENOMEM, "frame list: out of memory");
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *const e = json_array_get(frames, i);
        json_int_t obj, off, csize, dsize;
        const char *hex;
        struct sr_frame_ref *const r = &l->v[i];
        if (json_unpack(e, "[I,I,I,I,s!]", &obj, &off, &csize, &dsize, &hex) != 0 || obj < 0 ||
            obj >= (json_int_t)l->nobj || off < 0 || csize < 1 ||
            csize > (json_int_t)ZSTD_COMPRESSBOUND(SR_SEEK_MAX_FRAME_SIZE) || dsize < 1 ||
            dsize > SR_SEEK_MAX_FRAME_SIZE || off > INT64_MAX - csize ||
            parse_hex(hex, &r->f.hash_hi, &r->f.hash_lo) < 0)
            return bad_list(m->run_id, m->seq, "malformed entry", i);
        r->obj = (uint32_t)obj;
        r->f.coff = (uint64_t)off;
        r->f.csize = (uint32_t)csize;
        r->f.dsize = (uint32_t)dsize;
        total += (uint64_t)dsize;
    }
    l->n = (uint32_t)n;
    if (total != m->raw_bytes)
        return bad_list(m->run_id, m->seq, "frame sizes do not add up to \"raw_bytes\"", n);
    return 0;
}

int sr_frame_list_parse(const char *buf, size_t len, const struct sr_manifest *m,
                        struct sr_frame_list *out)
{
    sr_frame_list_init(out, m);
    json_error_t err;
    json_t *const o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
    if (!o)
        return sr_errf(-EBADMSG, "manifest: invalid JSON at line %d: %s", err.line,
                       sr_json_error_scrub(err.text));
    int rc = parse_objects(json_object_get(o, "objects"), m, out);
    if (rc == 0)
        rc = parse_frames(json_object_get(o, "frame_list"), m, out);
    json_decref(o);
    if (rc < 0)
        sr_frame_list_free(out);
    return rc;
}
