/*
 * quota.h - quotas per team or user (docs/cost.md, "Quotas and
 * approvals"): what the runs carrying one label may use in a period.
 *
 *   quotas/<key>/<value>/<NNNNNN>.json   {"format","label","version","per",
 *       "gpu_hours","max_cost","max_gpus_per_run","max_concurrent",
 *       "approve_above_gpu_hours","approve_above_cost","by","unix_ms"}
 *   approvals/<run>.json                 {"format","run","by","unix_ms"}
 *
 * Each `spotrun quota set` is a new object, written create-only with the
 * next number (sr_store_put_if with no match): two setters racing get
 * consecutive numbers, the later one wins, nothing is ever overwritten.
 * The highest number is the quota in force. A limit of 0 is none.
 *
 * The use (sr_quota_use) is what `spotrun stats --label K=V --since
 * <period start>` adds up, from the same summaries (runsum.h): GPU-hours,
 * cost, and the runs with an attempt still running.
 *
 * Nothing read is trusted: an object whose label or version is not its
 * key's, or whose numbers are not finite and non-negative, is -EBADMSG.
 */
#ifndef SPOTRUN_QUOTA_H
#define SPOTRUN_QUOTA_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "labels.h"
#include "layout.h"
#include "store.h"

enum sr_quota_per { SR_PER_DAY, SR_PER_WEEK, SR_PER_MONTH };

struct sr_quota {
    struct sr_label label; /* team=vision */
    enum sr_quota_per per;
    double gpu_hours, max_cost; /* per period; 0 = none */
    uint64_t max_gpus_per_run;  /* 0 = none */
    uint64_t max_concurrent;    /* runs at once; 0 = none */
    /* approval needed above this size of one run (its own limits): in
     * GPU-hours or in cost; 0 = none */
    double approve_gpu_hours, approve_cost;
    char by[128];     /* who set it */
    int64_t unix_ms;  /* when */
    unsigned version; /* the object's number */
};

/* What the runs carrying the quota's label used in the period so far. */
struct sr_quota_use {
    double gpu_hours, cost;
    uint64_t running; /* runs with an attempt still running */
};

/* "day", "week", "month"; parse: 0 or -EINVAL. */
const char *sr_quota_per_name(enum sr_quota_per p);
int sr_quota_per_parse(const char *s, enum sr_quota_per *p);
/* The start of the period holding t (UTC; ISO weeks start on Monday). */
int64_t sr_quota_period_start(int64_t t, enum sr_quota_per p);

/* The object's JSON, and back: the key's label and version are checked
 * against the object's (-EBADMSG). */
json_t *sr_quota_to_json(const struct sr_quota *q);
int sr_quota_from_json(const json_t *o, const struct sr_label *label, unsigned version,
                       struct sr_quota *out);
/* The newest version among a listing's names (NNNNNN.json); -ENOENT when
 * none is one. */
int sr_quota_newest(const struct sr_strlist *names, unsigned *version);

/* Which of the quota's limits the use is over: the measure's name
 * ("gpu-hours", "cost", "gpus-per-run", "concurrent"), its limit and the
 * use in *limit, *used; NULL when none. Only for a run starting (starting
 * 1: it adds one running run, with gpus GPUs, 0 = unknown) are the GPUs
 * per run and the runs at once checked; while it runs, hours and cost. */
const char *sr_quota_over(const struct sr_quota *q, const struct sr_quota_use *u, uint64_t gpus,
                          int starting, double *limit, double *used);

/* The quota in force for label: 0, -ENOENT (none), or -errno. */
int sr_quota_read(struct sr_store *st, const struct sr_label *label, struct sr_quota *out);
/* Every quota in force, sorted by label; *out malloc'd. 0 or -errno. */
int sr_quota_read_all(struct sr_store *st, struct sr_quota **out, size_t *n);
/* Writes the next version: the newest's limits with those of set given
 * (given[]: gpu_hours, max_cost, max_gpus_per_run, max_concurrent, per).
 * *q gets what was written. 0 or -errno. */
#define SR_QUOTA_FIELDS 6 /* ... and approve_gpu_hours with approve_cost */
int sr_quota_set(struct sr_store *st, const struct sr_quota *set, const int given[SR_QUOTA_FIELDS],
                 struct sr_quota *q);
/* The use of q's label in the period holding now_ms among runs (as
 * sr_runsum_load_all gives them): stats' total over --label and --since
 * the period's start. Pure. 0 or -errno. */
struct sr_runsum;
int sr_quota_use_in(const struct sr_runsum *runs, size_t n, const struct sr_quota *q,
                    int64_t now_ms, struct sr_quota_use *u);
/* Every quota in force (*qs) and its use now (*us, as `quota show`) among
 * runs: *nq of each, malloc'd (NULL when none). 0 or -errno. */
int sr_quota_uses(struct sr_store *st, const struct sr_runsum *runs, size_t n, int64_t now_ms,
                  struct sr_quota **qs, struct sr_quota_use **us, size_t *nq);
/* The same, the runs' summaries loaded from the store when there is a
 * quota (`quota show`). */
int sr_quota_uses_now(struct sr_store *st, int64_t now_ms, struct sr_quota **qs,
                      struct sr_quota_use **us, size_t *nq);
/* The same, loading the runs' summaries from the store. */
int sr_quota_use_of(struct sr_store *st, const struct sr_quota *q, int64_t now_ms,
                    struct sr_quota_use *u);

/* --approve-above: "100gpu-hours" (GPU-hours) or "250" (cost). 0 or
 * -EINVAL. */
int sr_quota_parse_approve(const char *s, double *gpu_hours, double *cost);

/* A run's approval (`spotrun approve RUN --by NAME`): create-only, one per
 * run, never replaced. */
struct sr_approval {
    char by[128];
    int64_t unix_ms;
};
/* 0, -ENOENT (none), -errno. */
int sr_approval_read(struct sr_store *st, const char *run, struct sr_approval *out);
/* 0, or -EEXIST with the approval already there in *out; -errno. */
int sr_approval_write(struct sr_store *st, const char *run, struct sr_approval *a);

#endif
