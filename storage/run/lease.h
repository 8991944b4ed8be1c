/*
 * lease.h - one owner per run: a lease object in the store.
 *
 *   <run-id>/LEASE    {"owner":..,"epoch":N,"expires":T,"released":false,..}
 *
 * A wrapper acquires the lease before it restores, renews it while the job
 * runs (every ttl/3) and before each commit point, and releases it at exit.
 * Another wrapper takes it over only once it is released or has expired
 * (the holder's "expires", unix seconds: clocks must agree to within a few
 * seconds, as NTP keeps them), or at once when the holder ran on this very
 * machine and PID namespace (same boot id, same namespace) and its pid is
 * gone (a wrapper killed with -9 and rerun here need not wait). Every acquisition increments the
 * epoch; each checkpoint records its maker's epoch and restore orders checkpoints by (epoch, seq),
 * so an owner that lost its lease while paused cannot make its checkpoint the newest (fencing).
 *
 * Writes are conditional (sr_store_put_if: S3 If-None-Match / If-Match,
 * flock on the file store). A server that ignores conditional headers is
 * detected at acquisition by a write that must fail; the lease then works
 * by read-check-write ("weak": two wrappers starting within a round trip
 * of each other could both win; the epoch fence still orders their
 * checkpoints) and a warning says so.
 *
 * Threads: an sr_lease may be used from several threads (renewal thread,
 * persister); calls are serialised inside.
 */
#ifndef SPOTRUN_LEASE_H
#define SPOTRUN_LEASE_H

#include <stdint.h>

#include "store.h"

/* What a LEASE object says. */
struct sr_lease_info {
    char owner[128]; /* "host:pid:nonce" */
    char host[256];
    long pid;
    char node[96]; /* "<boot id>/<pid namespace>": pid means something only there */
    uint64_t epoch;
    int64_t acquired, renewed, expires; /* unix seconds */
    int ttl;                            /* seconds */
    int released;
    /* The owner took the lease from a holder that had released it or was
     * proven dead (or from nobody): that holder's last checkpoint parts
     * still count for a multi-node set (parts.h). Optional in the object. */
    int prev_clean;
    /* Which lease this is: -1 the run's LEASE, else LEASE.<rank>. Not
     * stored: set by the reads of this file (a parse alone says -1). */
    int rank;
};

struct sr_lease;

/* Multi-node runs take one lease per node rank: <run>/LEASE.<rank>
 * (docs/multinode.md). rank < 0 is the run's single LEASE. */
int sr_lease_acquire_rank(struct sr_store *st, const char *run_id, int rank, int ttl,
                          struct sr_lease **out, struct sr_lease_info *holder);
int sr_lease_read_rank(struct sr_store *st, const char *run_id, int rank,
                       struct sr_lease_info *info);

/* Fencing of multi-node parts (an sr_part_counts_fn of parts.h, ctx = a
 * struct sr_lease_counts): a part of rank at epoch counts when that rank's
 * lease has that epoch, or the next one taken over cleanly (prev_clean);
 * a run without leases fences nothing. */
struct sr_lease_counts {
    struct sr_store *st;
    const char *run_id;
};
int sr_lease_part_counts(void *ctx, uint32_t rank, uint64_t epoch);

/* How many LEASE.<rank> objects the run has (a multi-node group's, held
 * or not): their count, or a store error; *top (may be NULL) gets the
 * highest rank among them (-1 when none). */
int sr_lease_count_ranks(struct sr_store *st, const char *run_id, int *top);

/* Reads <run>/LEASE: 0, -ENOENT, -EBADMSG (unparseable: taken over by
 * acquire), -EPROTONOSUPPORT (a newer format: acquire refuses), store
 * errors. */
int sr_lease_read(struct sr_store *st, const char *run_id, struct sr_lease_info *info);

/* The lease that says who runs run_id: <run>/LEASE, or when there is
 * none, LEASE.0 (a multi-node run's rank 0). As sr_lease_read. */
int sr_lease_read_owner(struct sr_store *st, const char *run_id, struct sr_lease_info *info);

/* 1 when a wrapper starting now could take over the lease h describes
 * (released, expired at now_s, or held by a process of this machine that
 * is gone), else 0. Acquisition decides; this only says whether to try. */
int sr_lease_takeable(const struct sr_lease_info *h, int64_t now_s);

/* Takes the lease of run for ttl seconds (>= 1): 0 and *out, or -EBUSY
 * when another owner holds it and it has not expired (*holder, may be
 * NULL, says who and until when, and which lease: holder->rank), or the
 * store's error.
 *
 * One rule for every kind of writer (docs/store.md, "Single owner"): the
 * run's LEASE (a single-node wrapper, push, gc, --fresh, sweep delete) and
 * the LEASE.<rank> of a multi-node group exclude each other. Each side
 * writes its own lease first and then reads the other side's (LEASE: every
 * LEASE.<rank> listed under the run; LEASE.<rank>: LEASE), so of two racing
 * writers at least one sees the other. One that sees a live lease of the
 * other side backs off: it puts its own lease back exactly as it found it
 * (the bytes it read, or no object), so backing off moves no epoch and
 * changes no prev_clean (parts stay counted), and returns -EBUSY naming
 * that holder. Both may back off; the callers' waits are bounded. */
int sr_lease_acquire(struct sr_store *st, const char *run_id, int ttl, struct sr_lease **out,
                     struct sr_lease_info *holder);

/* A sweep worker's claim of a trial's run (docs/sweeps.md): the lease,
 * taken as sr_lease_acquire takes it (without the probe of the server's
 * conditional writes), for the wrapper the worker starts next to take
 * over at once: that wrapper calls sr_lease_accept_from(sr_lease_owner())
 * before it acquires. Two workers claiming the same trial race here, for
 * one request, not by starting a wrapper each. The worker releases the
 * claim (sr_lease_release: a no-op once the wrapper took it over) when
 * its wrapper ended without running the trial; else it expires. */
int sr_lease_claim(struct sr_store *st, const char *run_id, int ttl, struct sr_lease **out,
                   struct sr_lease_info *holder);
const char *sr_lease_owner(const struct sr_lease *l);
/* The owner string of a claim this process may take over although it is
 * live (NULL or "": none). Process-wide; call before acquiring. */
void sr_lease_accept_from(const char *owner);
/* Extends the lease by its ttl: 0; -ESTALE when someone else took it over
 * (the message names them; the lease is lost for good); other errors of
 * the store (unreachable: try again, the lease may still be ours). */
int sr_lease_renew(struct sr_lease *l);

/* Marks the lease released so the next owner need not wait; a lost lease
 * is left alone. Later renewals (and so fences) fail with -ESTALE: a
 * persist abandoned at a deadline can never commit after the release.
 * Does not free l (such a persist may still hold it). NULL is fine. */
int sr_lease_release(struct sr_lease *l);

/* Frees l (without releasing it, it expires on its own). */
void sr_lease_free(struct sr_lease *l);

uint64_t sr_lease_epoch(const struct sr_lease *l);
int sr_lease_ttl(const struct sr_lease *l);

/* An sr_fence_fn over a lease (ctx = the lease): renews it. */
int sr_lease_fence(void *ctx);

/* Decoding of the LEASE object. */
int sr_lease_parse(const char *buf, size_t len, struct sr_lease_info *out);

#endif
