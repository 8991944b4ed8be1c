/*
 * catalog_int.h - what catalog.c shares with delta.c (storage/run/ only).
 */
#ifndef SPOTRUN_CATALOG_INT_H
#define SPOTRUN_CATALOG_INT_H

#include "catalog.h"

/* Largest MANIFEST.json read: a format-2 frame list takes ~60 bytes a frame
 * (16 MiB: ~270,000 frames, a 1 TiB checkpoint in 4 MiB frames). */
#define SR_MANIFEST_MAX (16u << 20)

/* 0 when m's seq has no manifest yet, -EEXIST when it has. */
int sr_ckpt_check_new_seq(struct sr_store *st, const struct sr_manifest *m);

/* Checks m's uploaded data object size, runs the fence, writes the
 * manifest create-only (json: m encoded, or NULL to encode here). */
int sr_ckpt_commit_manifest(struct sr_store *st, const struct sr_manifest *m, const char *json,
                            size_t len, const char *from, const struct sr_fence *fence);

/* Restores a format-2 checkpoint (delta.c). */
int sr_ckpt_restore_frames(struct sr_store *st, const struct sr_manifest *m, const char *dir,
                           int threads);

#endif
