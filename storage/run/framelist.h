/*
 * framelist.h - the frame list of a format-2 manifest (a delta checkpoint,
 * docs/archive-format.md "Delta checkpoints"): the tar stream's frames in
 * order, each named by the XXH3-128 of its content and found in the data
 * object of this or an earlier checkpoint of the same run.
 *
 * JSON (fields of MANIFEST.json, or of a multi-node part's record):
 *   "objects":    ["ckpt/0000000003/data.tar.zst", ...]   keys relative to the run
 *                 a part's: ["ckpt/0000000003/part-1-e2.tar.zst", ...]
 *   "frame_list": [[object index, offset, compressed size, size, "32 hex"], ...]
 *
 * Parsing treats the list as hostile: an object must be the data object of
 * a seq of this run no newer than the manifest's own, and a part's only
 * parts of its own rank (never another run, never an arbitrary key, never
 * another node's data), sizes must be in the archive format's bounds,
 * the sizes must add up to the manifest's raw_bytes and the count to its
 * frames. Anything else is -EBADMSG (the checkpoint is bad: fall back).
 */
#ifndef SPOTRUN_FRAMELIST_H
#define SPOTRUN_FRAMELIST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"

struct sr_manifest;

/* Most distinct objects one checkpoint may reference. */
#define SR_FRAME_OBJECTS_MAX 4096

struct sr_frame_ref {
    struct sr_frame_info f; /* f.coff: offset in object obj */
    uint32_t obj;           /* index into sr_frame_list.obj_seq */
};

struct sr_frame_list {
    /* object i is ckpt/<obj_seq[i]>/data.tar.zst of the run, or in a part's
     * list (part set) ckpt/<obj_seq[i]>/part-<rank>-e<obj_epoch[i]>.tar.zst */
    uint64_t *obj_seq, *obj_epoch;
    uint32_t nobj;
    int part;
    uint32_t rank;
    struct sr_frame_ref *v;
    uint32_t n;
};

void sr_frame_list_free(struct sr_frame_list *l);

/* An empty list for the checkpoint (or part) m. */
void sr_frame_list_init(struct sr_frame_list *l, const struct sr_manifest *m);
/* Index of the object of seq (a part's: of seq and epoch) in l, appended
 * when new; -E2BIG when full. */
int sr_frame_list_object(struct sr_frame_list *l, uint64_t seq, uint64_t epoch);
/* Appends a frame; -ENOMEM or -E2BIG. */
int sr_frame_list_add(struct sr_frame_list *l, const struct sr_frame_info *f, uint32_t obj);

/* Adds "objects" and "frame_list" to the manifest object o; nonzero when
 * jansson failed. */
int sr_frame_list_build(json_t *o, const char *run_id, const struct sr_frame_list *l);

/* The list of the manifest buf (already parsed into m, format 2). */
int sr_frame_list_parse(const char *buf, size_t len, const struct sr_manifest *m,
                        struct sr_frame_list *out);

/* Object i's name, relative to the run: "ckpt/%010llu/data.tar.zst" or a
 * part's "ckpt/%010llu/part-R-eE.tar.zst" (at most 64 bytes). */
void sr_frame_object_name(char *buf, size_t len, const struct sr_frame_list *l, uint32_t i);

#endif
