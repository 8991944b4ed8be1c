/*
 * quarantine.h - suspect checkpoints: a checkpoint the job failed on right
 * after restoring it, twice in a row, is marked suspect in the store and
 * is never restored first again (docs/runtime.md, "A bad checkpoint";
 * docs/store.md, "Layout": <run>/suspect/<seq>.json).
 *
 * Three parts: the judgement of one attempt's end (sr_suspect_judge, pure:
 * does it count against the checkpoint it restored, is that the second
 * time in a row), what gc keeps when some checkpoints are suspect
 * (sr_suspect_gc_drop, pure), and the marks in the store (a create-only
 * object per checkpoint; one listing of <run>/suspect/ reads them all).
 *
 * A failure counts against checkpoint N when the attempt restored N, made
 * no commit of its own (nothing was submitted since the restore), nobody
 * stopped it (a notice, a limit, a stall, a lost lease: stops.h's stop
 * is SR_STOP_NONE), and the job failed by itself: a non-zero exit or a
 * crash signal (SEGV, BUS, ILL, FPE, ABRT, SYS, TRAP). Not counted: an OOM
 * kill (the machine, not the checkpoint), exit 126/127 before the job
 * talked to the wrapper (the command, not the checkpoint), TERM, INT, HUP
 * or KILL from outside the job (and 128 + those: a shell's way of saying
 * its command was killed), and every failure of a multi-node run (its
 * nodes must restore the same set: docs/multinode.md). Anything that does
 * not count ends the row.
 *
 * Threads: no state of its own; the store part is safe wherever the
 * store handle is.
 */
#ifndef SPOTRUN_QUARANTINE_H
#define SPOTRUN_QUARANTINE_H

#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "stops.h"
#include "store.h"

#define SR_SUSPECT_AFTER 2 /* failures in a row right after one restore */

/* One attempt's end, as far as the checkpoint it restored is concerned. */
struct sr_suspect_facts {
    uint64_t restored_seq; /* the checkpoint the attempt restored, 0 = fresh */
    uint32_t attempt;
    int committed;     /* a commit was submitted since the restore */
    enum sr_stop stop; /* stops.h: a stop spotrun made */
    int code;          /* as a shell says it: the exit code, 128+N for signal N */
    int signaled;      /* died of signal code - 128 */
    int oom, talked, multinode;
};

/* The failures in a row right after restoring checkpoint seq. */
struct sr_suspect_row {
    uint64_t seq;
    unsigned n;
    uint32_t attempts[SR_SUSPECT_AFTER];
    int codes[SR_SUSPECT_AFTER], signaled[SR_SUSPECT_AFTER];
};

enum sr_suspect_verdict {
    SR_SUSPECT_NOT,     /* not a failure of the checkpoint: the row ends */
    SR_SUSPECT_COUNTED, /* counted, not yet SR_SUSPECT_AFTER in a row */
    SR_SUSPECT_MARK,    /* the SR_SUSPECT_AFTER-th in a row: mark row->seq */
};

/* Adds f to the row (a row that was marked starts over). */
enum sr_suspect_verdict sr_suspect_judge(struct sr_suspect_row *row,
                                         const struct sr_suspect_facts *f);

/* "job failed twice right after restoring it (exit 1, killed by SIGSEGV)". */
void sr_suspect_reason(const struct sr_suspect_row *row, char *buf, size_t len);

/* The marks of a run: the seqs listed under <run>/suspect/, ascending. */
struct sr_suspect_set {
    uint64_t *seq;
    size_t n;
};
void sr_suspect_set_free(struct sr_suspect_set *s);
int sr_suspect_has(const struct sr_suspect_set *s, uint64_t seq);

/* How many of the oldest checkpoints of l (oldest first) gc drops to keep
 * `keep`: the newest keep checkpoints that are not suspect stay, with
 * every checkpoint newer than the oldest of them (suspect ones included:
 * a user may still pull them); with fewer than keep trusted ones, all
 * stay. Without marks, l->n - keep (at least 0). */
size_t sr_suspect_gc_drop(const struct sr_ckpt_list *l, const struct sr_suspect_set *s,
                          unsigned keep);

/* One listing of <run>/suspect/ (names that are not <digits>.json are
 * ignored). */
int sr_suspect_list(struct sr_store *st, const char *run_id, struct sr_suspect_set *out);

/* A mark, as stored ({"format":1,"run_id","seq","step","reason","attempts",
 * "exits":[{"code","signal"}],"host","time"}). */
struct sr_suspect_mark {
    uint64_t seq;
    int64_t step;
    char reason[256];
    char host[256];
    char time[40];
};

/* Writes the mark of row->seq (create-only: a mark already there stands,
 * 0). */
int sr_suspect_put(struct sr_store *st, const char *run_id, int64_t step,
                   const struct sr_suspect_row *row);

/* Reads the mark of seq: 0, -ENOENT (not suspect), -EBADMSG (unreadable,
 * still a mark: the listing says so), store errors. Strings are as
 * stored: pass them through sr_term_safe before a terminal. */
int sr_suspect_load(struct sr_store *st, const char *run_id, uint64_t seq,
                    struct sr_suspect_mark *out);

/* The newest complete checkpoint of run that is not suspect, into *out
 * (its data not checked): 0, or -ENOENT when there is none. */
int sr_suspect_newest_trusted(struct sr_store *st, const char *run_id, struct sr_manifest *out);

/* Deletes the mark of seq (gc, once its checkpoint is gone); a missing one
 * is fine. */
int sr_suspect_forget(struct sr_store *st, const char *run_id, uint64_t seq);

#endif
