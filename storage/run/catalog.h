/*
 * catalog.h - the checkpoints of a run inside a store (layout in docs/store.md):
 *
 *   <run-id>/ckpt/<seq>/data.tar.zst   written first
 *   <run-id>/ckpt/<seq>/MANIFEST.json  written last: the commit point
 *   <run-id>/events/<attempt>.jsonl    event log, one object per attempt
 *   <run-id>/DONE                      the job exited 0
 *
 * <seq> is printed as %010llu so lexical order is numeric order.
 *
 * A checkpoint is "complete" iff its manifest exists and parses. "Newest"
 * means highest (epoch, seq): the epoch of the lease its maker held
 * (storage/run/lease.h), so a wrapper that lost its lease cannot make its
 * checkpoint the newest. Restore walks complete checkpoints newest first: one whose data is
 * missing, short, or fails its checksum is skipped with a warning and the previous one is restored
 * instead. GC deletes the manifest before the data, so a crash mid-gc never leaves a manifest
 * pointing at missing data.
 */
#ifndef SPOTRUN_CATALOG_H
#define SPOTRUN_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "manifest.h"
#include "store.h"

struct sr_ckpt_list {
    struct sr_manifest *v; /* complete checkpoints, oldest first: by (epoch, seq) */
    size_t n;
};
void sr_ckpt_list_free(struct sr_ckpt_list *l);

/* Key of a file of checkpoint seq ("run/ckpt/0000000007/MANIFEST.json"). */
void sr_ckpt_key(char *buf, size_t len, const char *run_id, uint64_t seq, const char *name);

/* Object names of m inside its seq: "data.tar.zst" and "MANIFEST.json",
 * or for a node's part "part-<rank>-e<epoch>.tar.zst" and ".json"
 * (docs/multinode.md). */
#define SR_CKPT_NAME_LEN 64
void sr_ckpt_names(const struct sr_manifest *m, char *data, char *record);
/* Reads the record `name` of seq (a MANIFEST.json or a part's record) and
 * checks it describes that very object: 0, -ENOENT, -EBADMSG, store errors. */
int sr_ckpt_load_record(struct sr_store *st, const char *run_id, uint64_t seq, const char *name,
                        struct sr_manifest *m);

/* The seq a directory name under ckpt/ stands for, 0 when it is none. */
uint64_t sr_ckpt_parse_seq(const char *name);

/* Complete checkpoints of run (unparseable manifests are skipped with a warning). */
int sr_ckpt_list(struct sr_store *st, const char *run_id, struct sr_ckpt_list *out);

/* The highest epoch among run's complete checkpoints (0 when none): what a
 * writer without a lease stamps, so that seq alone orders its checkpoints
 * after the existing ones. */
int sr_ckpt_max_epoch(struct sr_store *st, const char *run_id, uint64_t *epoch);

/* Highest seq present in the store for run (complete or not) + 1, at least 1. */
int sr_ckpt_next_seq(struct sr_store *st, const char *run_id, uint64_t *seq);

/* A check run right before the commit point (the manifest write): nonzero
 * aborts the publish with that error, leaving the checkpoint incomplete.
 * The wrapper's fence renews its lease (sr_lease_fence, storage/run/lease.h). */
struct sr_fence {
    int (*check)(void *ctx);
    void *ctx;
};

/* Publishes a staged archive: uploads data_path as data.tar.zst, checks its
 * size against m->stored_bytes, runs the fence (may be NULL), then writes
 * the manifest (commit point) create-only: -EEXIST if another writer
 * committed that seq first. */
int sr_ckpt_publish(struct sr_store *st, const struct sr_manifest *m, const char *data_path,
                    const struct sr_fence *fence);

/* Publishes a staged archive as a delta checkpoint (format 2,
 * docs/archive-format.md "Delta checkpoints"): its frames that the newest
 * complete checkpoint of the run already references are referenced, not
 * uploaded; data.tar.zst holds only the others (+ a seek table). A full
 * checkpoint (every frame uploaded, stock-readable) is made when the run
 * has no format-2 checkpoint to build on, when that one is full_every - 1
 * deltas away from its last full one (full_every <= 1: always), or when
 * one of its objects is not in the store. m's archive fields are those of
 * the staged file; stored_bytes, checksum, frames, full and chain are set
 * here. Multi-node parts are published in full (sr_ckpt_publish). */
#define SR_FULL_EVERY_DEFAULT 10
int sr_ckpt_publish_delta(struct sr_store *st, struct sr_manifest *m, const char *data_path,
                          const struct sr_fence *fence, unsigned full_every);

/* A staged archive with holes (m->staged_frames with src != 0) made
 * whole in place, fsync()ed unless the store streams it (a file store
 * adopts it), and m->checksum set: before anything uploads it whole.
 * 0 when there is nothing to do. */
int sr_ckpt_fill_staged(struct sr_store *st, struct sr_manifest *m, const char *data_path);

/* The record of rank's part of the multi-node checkpoint set, checked to
 * be that part (-EBADMSG otherwise, -ENOENT when it is gone). */
int sr_ckpt_part_of(struct sr_store *st, const struct sr_manifest *set, uint32_t rank,
                    struct sr_manifest *part);

/* The frame list of a format-2 checkpoint, or of a multi-node part (re-read
 * from its manifest or record). */
struct sr_frame_list;
int sr_ckpt_frames(struct sr_store *st, const struct sr_manifest *m, struct sr_frame_list *l);

/* Publishes dir without staging it locally: packs it straight into the
 * store's data object (sr_store_writer), fills m's archive fields
 * (raw_bytes, stored_bytes, files, frames, checksum, stage_seconds) from
 * the packing, checks the stored size, then writes the manifest (commit
 * point). The other fields of m are the caller's. */
struct sr_pack_opts;
int sr_ckpt_publish_dir(struct sr_store *st, struct sr_manifest *m, const char *dir,
                        const struct sr_pack_opts *opts, const struct sr_fence *fence);

/* Restores into dir checkpoint seq (0 = the newest complete one that
 * verifies, falling back to older ones with a warning). *out receives its
 * manifest. -ENOENT when the run has no complete checkpoint (dir untouched);
 * -EBADMSG when it has some but none of them can be restored;
 * with an explicit seq, a failure of that checkpoint is returned as is. */
int sr_ckpt_restore(struct sr_store *st, const char *run_id, uint64_t seq, const char *dir,
                    int threads, struct sr_manifest *out);

/* Which part of a multi-node checkpoint a node restores
 * (docs/multinode.md): its own (rank), or with all_parts every part merged
 * into the directory. A checkpoint made by another number of nodes than
 * `nodes` (0 = 1) is refused (-EINVAL, naming both) unless all_parts. */
struct sr_restore_opts {
    int threads;
    uint32_t nodes, rank;
    int all_parts;
};
int sr_ckpt_restore_node(struct sr_store *st, const char *run_id, uint64_t seq, const char *dir,
                         const struct sr_restore_opts *o, struct sr_manifest *out);

/* Writes checkpoint seq of run (0 = the newest complete one; no fallback)
 * to path as a standalone ordinary archive (every frame, then a seek
 * table: `zstd -d < path | tar -x` reads it), delta or full: every frame
 * is decompressed and checked (zstd's checksum, its sizes, a delta's
 * listed content hash) and the checkpoint's own object against the
 * manifest's checksum before path is made (create-only: -EEXIST; written
 * to a temp file, fsynced, renamed). A multi-node checkpoint is -ENOTSUP.
 * *out (may be NULL) receives its manifest. */
int sr_ckpt_export(struct sr_store *st, const char *run_id, uint64_t seq, const char *path,
                   struct sr_manifest *out);

/* Keeps the newest keep complete checkpoints; deletes older ones and also
 * incomplete ones older than the newest complete one. *deleted gets the
 * count (may be NULL). */
int sr_ckpt_gc(struct sr_store *st, const char *run_id, unsigned keep, unsigned *deleted);

/* sr_ckpt_gc() for a caller that holds the run's lease and uploads nothing
 * (`spotrun gc`): an incomplete seq newer than the newest complete one is
 * then no upload in progress but the leftover of an earlier owner (one
 * fenced, or one that died: its staged files are never published, and its
 * manifest can never be written under its old epoch), and goes too unless a
 * kept checkpoint references it. *leftovers (may be NULL) counts those. */
int sr_ckpt_gc_held(struct sr_store *st, const char *run_id, unsigned keep, unsigned *deleted,
                    unsigned *leftovers);

/* DONE marker. */
int sr_ckpt_mark_done(struct sr_store *st, const char *run_id);
int sr_ckpt_is_done(struct sr_store *st, const char *run_id); /* 1, 0, or -errno */
/* Deletes the whole run but its LEASE (the caller may hold it), its
 * summaries/<run>.json first. */
int sr_ckpt_clear_run(struct sr_store *st, const char *run_id);

/* Runs in the store (names of top-level entries that are valid run ids). */
int sr_ckpt_list_runs(struct sr_store *st, struct sr_strlist *out);

#endif
