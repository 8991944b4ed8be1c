/*
 * manifest.h - MANIFEST.json of one checkpoint (the commit point: a
 * checkpoint exists iff its manifest exists). JSON via jansson.
 *
 * Parsing is strict about the fields spotrun relies on (types, ranges,
 * checksum syntax, run id and seq matching the key) and ignores unknown
 * fields, so later versions can add some. "format" above
 * SR_MANIFEST_FORMAT is refused.
 */
#ifndef SPOTRUN_MANIFEST_H
#define SPOTRUN_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "layout.h"

/* 2: a delta checkpoint's frame list (framelist.h); 1 is still read. */
#define SR_MANIFEST_FORMAT 2
#define SR_RUN_ID_MAX 128
#define SR_MANIFEST_GPUS 16
/* Largest owner epoch (manifests and leases, storage/run/lease.h): 2^53, exact
 * in every JSON reader, and at one lease a second 285 million years away.
 * A larger one in the store is malformed (never restored first, never
 * overflowing the next epoch). */
#define SR_EPOCH_MAX (UINT64_C(1) << 53)
/* Largest seq: a checkpoint's key names it in 10 digits (ckpt/%010 seq/), so
 * that lexical order is numeric order and a delta's frame list can name it.
 * A multi-node checkpoint's seq is its step + 1 (parts.h), so its step is
 * at most SR_SET_STEP_MAX: a larger one is refused at commit. */
#define SR_SEQ_MAX UINT64_C(9999999999)
#define SR_SET_STEP_MAX ((int64_t)SR_SEQ_MAX - 1)
/* Most nodes a multi-node checkpoint spans (docs/multinode.md). */
#define SR_NODES_MAX 256

struct sr_manifest {
    int format; /* SR_MANIFEST_FORMAT */
    char run_id[SR_RUN_ID_MAX + 1];
    uint64_t seq;     /* >= 1 */
    int64_t step;     /* -1 = unknown (JSON null) */
    int64_t created;  /* unix seconds; written also as ISO-8601 "created_at" */
    char host[256];   /* hostname, "" when unknown */
    uint32_t attempt; /* SPOTRUN_ATTEMPT of the job that made it */
    uint64_t raw_bytes;
    uint64_t stored_bytes; /* size of data.tar.zst */
    uint64_t files;
    uint32_t frames;
    uint32_t frame_size;
    int level;
    char checksum[SR_CHECKSUM_LEN]; /* of data.tar.zst */
    double stage_seconds;           /* pack + compress time */
    /* Owner epoch (storage/run/lease.h) of the wrapper that made it; 0 when made
     * without a lease (optional "epoch" field, absent = 0). Restore orders
     * checkpoints by (epoch, seq): an owner that lost its lease cannot make
     * its checkpoint the newest. */
    uint64_t epoch;
    /* Optional "gpu": {"peak_bytes": [...]}: peak GPU memory (device +
     * managed) of the job per device, from the preload shim; 0 devices =
     * not recorded (field absent). Informational: a malformed value is
     * ignored, never a reason to refuse the manifest. */
    uint32_t gpu_devices;
    uint64_t gpu_peak[SR_MANIFEST_GPUS];
    /* Multi-node checkpoints (docs/multinode.md). `nodes` is how many nodes
     * the checkpoint spans: 0 for a single-node one (field absent). A node's
     * part record (ckpt/<seq>/part-<rank>-e<epoch>.json) is a manifest of
     * that part alone with is_part set and its node_rank; a set's
     * MANIFEST.json has part_epoch[r], the epoch of the part of rank r it
     * is made of, its data fields sum the parts', and it has no checksum
     * of its own (each part has one). */
    uint32_t nodes;
    int is_part;
    uint32_t node_rank;
    uint64_t part_epoch[SR_NODES_MAX];
    /* Format 2 (docs/archive-format.md, "Delta checkpoints"): the tar
     * stream is the frames of "frame_list", in order, each in the data
     * object of this or an earlier checkpoint of the run; data.tar.zst holds
     * only the frames no earlier checkpoint had (stored_bytes: what was
     * uploaded; frames: how many the list has). `full`: every frame is in
     * its own data.tar.zst (stock-readable); `chain`: delta checkpoints
     * since the last full one. frame_list is not owned and only written:
     * the parser leaves it NULL (sr_frame_list_parse reads the list). */
    int full;
    uint32_t chain;
    /* "archive_bytes": the compressed size of the whole archive (every
     * frame, wherever it lives, + a seek table): what a full checkpoint of
     * it stores, against which raw_bytes gives the compression ratio; 0 =
     * absent (format 1: stored_bytes is that size). */
    uint64_t archive_bytes;
    const struct sr_frame_list *frame_list;
    /* The staged archive's frames as the packer listed them (not part of
     * the object; NULL: publishing lists them from the file). Owned by
     * whoever staged it (sr_commits_stage: free() it after the persist). */
    struct sr_frame_info *staged_frames;
    uint32_t staged_nframes;
    /* The earlier archives that the staged archive's holes refer to
     * (sr_pack_reuse.by_ref: a frame with src k is in staged_paths[k - 1]);
     * publishing reads or fills them in from there (sr_ckpt_fill_staged). */
    const char *const *staged_paths;
    uint32_t staged_npaths;
};

/* The archive fields of m from the packing that made its data object
 * (sizes, files, frames, checksum) and how long packing took. */
void sr_manifest_set_archive(struct sr_manifest *m, const struct sr_pack_stats *s,
                             double stage_seconds);

/* Serialises m (pretty, ends with a newline) into a malloc'd string. */
/* A delta: a format 2 checkpoint or part that is not full, or a
 * multi-node set with such a part. Format 1 is always full. */
int sr_manifest_is_delta(const struct sr_manifest *m);
/* The compressed size of m's whole archive, every frame wherever it lives:
 * archive_bytes for a delta, else its own data object (stored_bytes). */
uint64_t sr_manifest_archive_bytes(const struct sr_manifest *m);

int sr_manifest_to_json(const struct sr_manifest *m, char **out, size_t *len);

/* Parses and validates; -EBADMSG with a message naming the field on error. */
int sr_manifest_parse(const char *buf, size_t len, struct sr_manifest *m);

/* 1 if id is a valid run id: 1..128 of [A-Za-z0-9._-], not starting with
 * '.' or '-', and not one of the store's own directories ("sweeps",
 * "summaries"). */
int sr_manifest_run_id_valid(const char *id);

/* A store object is untrusted and may not even be what it claims (a
 * symlink to a secret on a careless file store): a JSON parse error names
 * the line and what was expected, never the object's bytes. Cuts jansson's
 * " near '<token>'" off text, in place; returns text. */
char *sr_json_error_scrub(char *text);

/* The largest amount (money, hours) a store object may hold. */
#define SR_AMOUNT_MAX 1e12
/* o's member k as an amount: a finite number, 0..SR_AMOUNT_MAX. 0, or -1
 * (absent, not a number, out of range). */
struct json_t;
int sr_json_amount(const struct json_t *o, const char *k, double *out);

#endif
