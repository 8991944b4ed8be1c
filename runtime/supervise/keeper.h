/*
 * keeper.h - takes a run's lease (storage/run/lease.h), waiting for another
 * owner if need be, and keeps it while the job runs: a
 * thread renews it every ttl/3 (sooner after a failed try) and makes
 * sr_keeper_fd() readable once the lease is lost to another owner.
 *
 * An unreachable store does not lose the lease: the keeper warns, keeps
 * trying, and the epoch fence keeps any later checkpoint of ours below a
 * new owner's should the lease expire meanwhile.
 */
#ifndef SPOTRUN_KEEPER_H
#define SPOTRUN_KEEPER_H

#include <stddef.h>
#include <stdint.h>

#include "lease.h"

struct sr_keeper;

int sr_keeper_start(struct sr_lease *lease, struct sr_keeper **out);
/* Takes the lease of run for ttl_s seconds, waiting up to wait_ms (polling
 * each second) for another owner to release it or let it expire: 0 and
 * *out, or SR_EX_CANTCREAT with "run R is owned by ...: <refusal>" on
 * stderr, or a store failure's exit code (reported). The run's LEASE: the
 * entry point of every whole-run writer (run, push, gc, --fresh, sweep
 * delete); a live LEASE.<rank> of a multi-node group holds it out too,
 * named as "node K of its multi-node group" (lease.h). */
int sr_keeper_take(struct sr_store *st, const char *run_id, int ttl_s, int64_t wait_ms,
                   const char *refusal, struct sr_lease **out);
/* The same for node rank of a multi-node run (its lease LEASE.<rank>). */
int sr_keeper_take_rank(struct sr_store *st, const char *run_id, int rank, int ttl_s,
                        int64_t wait_ms, const char *refusal, struct sr_lease **out);

/* What kind of run run_id is, as its store says (read it under the
 * lease): the node count of its newest complete checkpoint (1 for a
 * single-node one), else, when it has none, SR_RUN_MULTI when a multi-node
 * group's rank leases are there (its count unknown), else 0 (nothing yet:
 * any kind may start it). *newest_seq (may be NULL) gets the seq that
 * decided (0 when none). A store error is returned as -errno. */
#define SR_RUN_MULTI UINT32_MAX
int sr_run_nodes(struct sr_store *st, const char *run_id, uint32_t *nodes, uint64_t *newest_seq);

/* Readable (POLLIN) once the lease is lost (an event queue, common/evq.h). */
int sr_keeper_fd(const struct sr_keeper *k);
/* 1 and why the lease was lost into buf, once, after it was; else 0. */
int sr_keeper_lost(struct sr_keeper *k, char *buf, size_t len);
/* Stops the thread; the lease itself is the caller's. NULL is fine. */
void sr_keeper_stop(struct sr_keeper *k);

#endif
