/*
 * commitlog.c - what the supervisor says and records about the job's
 * commits: a failed commit as a "commit_failed" event with what checkpoint
 * stands (docs/events.md), and the commit of the directory after the job
 * exits or settles, whenever the newest commit failed or never happened
 * (dirstate.h).
 *
 * Threads: the supervisor's loop only (struct sup, supervisor_int.h).
 */
#include "supervisor_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "child.h"
#include "dirstate.h"
#include "log.h"

void sup_what_stands(const struct sup *s, char *buf, size_t cap)
{
    char step[24], more[96] = "";
    if (s->ckpt.staged_seq > s->ckpt.have_seq && sr_commits_pending(s->ckpt.cp) > 0)
        snprintf(more, sizeof(more), " (checkpoint %" PRIu64 " is staged and still being stored)",
                 s->ckpt.staged_seq);
    if (!s->ckpt.have_seq) {
        snprintf(buf, cap, "no checkpoint: the next start begins from scratch%s", more);
        return;
    }
    sr_format_step(s->ckpt.have_step, step, sizeof(step));
    if (s->ckpt.have_step_seq == s->ckpt.have_seq)
        snprintf(buf, cap, "checkpoint %" PRIu64 " (step %s) stands%s", s->ckpt.have_seq, step,
                 more);
    else
        snprintf(buf, cap, "checkpoint %" PRIu64 " stands%s", s->ckpt.have_seq, more);
}

uint64_t sup_dir_fp(const struct sup *s, int *empty)
{
    return sr_dir_fingerprint_ex(s->cfg->ckpt_dir, empty, s->cfg->ckpt_exclude,
                                 s->cfg->n_ckpt_exclude);
}

/* The newest checkpoint known durable, with its step, for what_stands. */
static void note_durable(struct sup *s, uint64_t seq, int64_t step)
{
    if (seq >= s->ckpt.have_seq) {
        s->ckpt.have_step_seq = seq;
        s->ckpt.have_step = step;
    }
}

static void commit_failed(struct sup *s, const struct sr_commit_result *r)
{
    const char *phase = r->kind == SR_COMMIT_STAGED ? "stage" : "persist";
    char stands[192], step[24];
    sup_what_stands(s, stands, sizeof(stands));
    sr_format_step(r->step, step, sizeof(step));
    if (r->kind == SR_COMMIT_STAGED)
        sr_warn("checkpoint of %s (step %s) failed: %s; %s", s->cfg->ckpt_dir, step, r->msg,
                stands);
    else
        sr_warn("checkpoint %" PRIu64 " could not be stored: %s; %s", r->seq, r->msg, stands);
    const int known = s->ckpt.have_step_seq == s->ckpt.have_seq;
    emit(s, "commit_failed",
         json_pack("{s:s,s:I,s:I,s:s,s:I,s:I}", "phase", phase, "seq", (json_int_t)r->seq, "step",
                   (json_int_t)r->step, "reason", r->msg, "stands_seq",
                   (json_int_t)s->ckpt.have_seq, "stands_step",
                   (json_int_t)(s->ckpt.have_seq && known ? s->ckpt.have_step : -1)));
    sr_events_flush(s->ev);
}

void sup_commit_result(struct sup *s, const struct sr_commit_result *r)
{
    if (r->rc == -ECANCELED) /* superseded by a newer commit: not a failure */
        return;
    if (r->rc < 0) {
        s->ckpt.failed_seq[s->ckpt.failed_next++ % 16] = r->seq;
        sr_dirstate_result(&s->att.dir, r->tag, 0);
        if (r->rc == -ESTALE && s->cfg->lease && r->kind == SR_COMMIT_PERSISTED)
            return; /* the lease is lost: said by its own event */
        commit_failed(s, r);
        return;
    }
    if (r->kind == SR_COMMIT_PERSISTED) {
        sr_dirstate_result(&s->att.dir, r->tag, 1);
        if (!r->part || r->set)
            note_durable(s, r->seq, r->step);
    }
}

/* Commits the directory as it stands (step unknown) when no commit carries it. */
void sup_commit_if_changed(struct sup *s, const char *why)
{
    int empty;
    const uint64_t fp = sup_dir_fp(s, &empty);
    if (sr_dirstate_due(&s->att.dir, fp, empty) && !sup_save_open(s)) {
        sr_info("committing %s (%s)", s->cfg->ckpt_dir, why);
        sup_commit_dir(s, -1, -1, why);
    }
}

void sup_commit_after_exit(struct sup *s, int status, const char *why)
{
    /* Multi-node: a checkpoint is one step's parts from every node; a
     * lone node's commit of what its job left after a commit of its own
     * could never complete a set (as before: only a job that never
     * committed has its directory committed as it stands). */
    if (sup_group_on(s) && s->att.job_committed)
        return;
    int empty;
    const uint64_t fp = sup_dir_fp(s, &empty);
    char stands[192];
    switch (sr_dirstate_after_exit(&s->att.dir, status, s->stop.lost, fp, empty)) {
    case SR_FINAL_COMMIT: {
        if (sup_save_torn(s))
            return;
        /* After a commit of the job's this attempt, the directory holds at
         * least that step (a log grew, or newer files came): it is recorded
         * with that step, so a resume still knows where it is. */
        const int64_t step = s->att.job_committed ? s->att.ckpt_step : -1;
        char st[24];
        sr_format_step(step, st, sizeof(st));
        sr_info("committing %s as it stands (%s), step %s: no commit carries what it holds%s",
                s->cfg->ckpt_dir, why, st,
                s->att.job_committed ? " (it changed after the job's newest commit, or that failed)"
                                     : "");
        sup_commit_dir(s, step, -1, why);
        return;
    }
    case SR_FINAL_KILLED:
        if (!sr_dirstate_due(&s->att.dir, fp, empty))
            return;
        sup_what_stands(s, stands, sizeof(stands));
        sr_warn("the job was killed (SIGKILL): its directory %s changed since the newest commit "
                "but may hold half-written files, so it is not committed; %s",
                s->cfg->ckpt_dir, stands);
        sup_save_not_committed(s, "killed");
        return;
    case SR_FINAL_CARRIED:
    case SR_FINAL_LEASE_LOST:
        return;
    }
}

void sup_ckpt_restored(struct sup *s, uint64_t seq, int64_t step)
{
    if (seq > s->ckpt.have_seq)
        s->ckpt.have_seq = seq;
    if (seq >= s->ckpt.have_step_seq) {
        s->ckpt.have_step_seq = seq;
        s->ckpt.have_step = step;
    }
}

void sup_ckpt_fall_back(struct sup *s, uint64_t marked, uint64_t seq, int64_t step)
{
    if (s->ckpt.staged_seq <= marked)
        s->ckpt.staged_seq = 0;
    if (s->ckpt.have_seq <= marked) {
        s->ckpt.have_seq = seq;
        s->ckpt.have_step_seq = seq;
        s->ckpt.have_step = step;
    }
}

void sup_ckpt_exists(struct sup *s, uint64_t seq)
{
    if (seq > s->ckpt.have_seq)
        s->ckpt.have_seq = seq;
}

void sup_ckpt_job_commit(struct sup *s)
{
    s->ckpt.job_commits++;
}

void sup_ckpt_at_notice(struct sup *s)
{
    s->ckpt.notice_commits = s->ckpt.job_commits;
}
