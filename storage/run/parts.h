/*
 * parts.h - multi-node checkpoints (docs/multinode.md): each node uploads
 * its part of step S into ckpt/<S+1>/ create-only (sr_ckpt_publish with a
 * part manifest: is_part, node_rank, nodes, epoch = the node's lease epoch),
 * and the set's MANIFEST.json is written, create-only, by whichever node
 * first sees every rank's part there. No coordinator: every node may try.
 *
 * Fencing: a part counts only when the caller's `counts` says its epoch is
 * its rank's current one (storage/run/lease.h: sr_lease_part_counts), so a
 * part from an owner that lost its lease never completes a set.
 */
#ifndef SPOTRUN_PARTS_H
#define SPOTRUN_PARTS_H

#include <stdint.h>

#include "manifest.h"
#include "store.h"

/* The seq of step's checkpoint in a multi-node run: every node names it
 * alike without talking to the others. */
static inline uint64_t sr_set_seq(int64_t step)
{
    return (uint64_t)step + 1;
}

/* 1 when the part of rank at epoch may complete a set, 0 when it is fenced
 * off, -errno when that cannot be told now (the store failed). */
typedef int (*sr_part_counts_fn)(void *ctx, uint32_t rank, uint64_t epoch);

/* Publishes the set of seq when it is complete: for every rank 0..nodes-1
 * a part record that parses, names this run, seq, step and node count, and
 * counts. Returns 1 when the set is published (now, or by another node
 * before: *set, may be NULL, receives its manifest), 0 when a part is
 * missing or fenced off (*missing, may be NULL, the first such rank), or
 * -errno. */
int sr_set_complete(struct sr_store *st, const char *run_id, uint64_t seq, uint32_t nodes,
                    sr_part_counts_fn counts, void *ctx, struct sr_manifest *set,
                    uint32_t *missing);

/* At a start: completes the sets newer than the newest published one whose
 * parts are all there (a node that died between its part and the
 * manifest, the whole group stopped at a deadline meanwhile).
 * *published (may be NULL) counts them. */
int sr_sets_publish_pending(struct sr_store *st, const char *run_id, uint32_t nodes,
                            sr_part_counts_fn counts, void *ctx, unsigned *published);

/* Steps newer than the newest published checkpoint that have node parts
 * but no manifest (yet): out[i] = {seq, parts}, at most max of them, the
 * newest last. Returns how many, or -errno. For `show`. */
struct sr_set_partial {
    uint64_t seq;
    uint32_t parts;
};
int sr_sets_incomplete(struct sr_store *st, const char *run_id, uint64_t newest,
                       struct sr_set_partial *out, int max);

/* A multi-node run is done only when every node's job finished. Each rank's
 * wrapper whose job exited 0 records it: <run>/done/<rank>-s<from_seq>,
 * create-only (an existing mark is fine), where from_seq is the set its
 * attempt started from (0 = fresh). Marks of one from_seq belong together:
 * a rank that finished while another was preempted runs again from the
 * group's newest set, and its old mark, of an older start, never counts. */
int sr_node_mark_done(struct sr_store *st, const char *run_id, uint32_t rank, uint64_t from_seq);

/* How many ranks < nodes have a done mark of from_seq, or -errno. The run
 * is done (DONE may be written) when that is nodes. */
int sr_nodes_done(struct sr_store *st, const char *run_id, uint32_t nodes, uint64_t from_seq);

#endif
