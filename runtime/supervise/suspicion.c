/*
 * suspicion.c - a checkpoint the job fails on right after restoring it
 * (storage/run/quarantine.h; docs/runtime.md, "A bad checkpoint"): each
 * attempt's end is judged against the checkpoint it restored; the second
 * failure in a row marks that checkpoint suspect in the store, and the
 * next start restores the one before it (the restore skips marked ones).
 *
 * Two hooks: sup_suspect_restored() once an attempt's restore is done
 * (attempt.c), sup_suspect_ended() once its job's process ended, before
 * the restart policy's decision is carried out (ending.c).
 *
 * Threads: the supervisor's one thread (supervisor_int.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "layout.h"
#include "log.h"
#include "quarantine.h"
#include "restart.h"
#include "supervisor_int.h"

void sup_suspect_restored(struct sup *s, uint64_t seq, int64_t step)
{
    s->suspect.restored = seq;
    s->suspect.step = step;
    s->suspect.submitted = s->ckpt.submitted; /* a commit since: the job got past its restore */
}

/* The newest checkpoint that is not suspect is the next start's. */
static void fall_back(struct sup *s, uint64_t marked)
{
    const struct sr_supervise_config *c = s->cfg;
    struct sr_manifest m;
    const int rc = sr_suspect_newest_trusted(c->st, c->run_id, &m);
    if (rc < 0) {
        if (rc == -ENOENT)
            sr_warn("no checkpoint of run %s is left that is not suspect: the next start does not "
                    "resume (spotrun stops there and says how to go on)",
                    c->run_id);
        else
            sr_warn("cannot list the checkpoints of run %s: %s", c->run_id, sr_strerror(rc));
        return;
    }
    sup_ckpt_fall_back(s, marked, m.seq, m.step);
    sr_info("the next start restores checkpoint %" PRIu64 ", the newest that is not suspect",
            m.seq);
}

void sup_suspect_ended(struct sup *s, const struct sr_restart_facts *f)
{
    const struct sr_supervise_config *c = s->cfg;
    const struct sr_suspect_facts sf = {
        .restored_seq = s->suspect.restored,
        .attempt = s->attempt,
        .committed = s->ckpt.submitted != s->suspect.submitted,
        .stop = f->end.stop,
        .code = f->end.code,
        .signaled = f->end.signaled,
        .oom = f->end.oom,
        .talked = f->talked || f->listened,
        .multinode = f->end.multinode,
    };
    struct sr_suspect_row *row = &s->suspect.row;
    const enum sr_suspect_verdict v = sr_suspect_judge(row, &sf);
    if (v == SR_SUSPECT_NOT)
        return;
    if (v == SR_SUSPECT_COUNTED) {
        sr_info("the job failed right after restoring checkpoint %" PRIu64
                " (before any commit): if it fails so again, that checkpoint is marked suspect "
                "and the one before it is restored",
                row->seq);
        return;
    }
    char reason[256];
    sr_suspect_reason(row, reason, sizeof(reason));
    const int rc = sr_suspect_put(c->st, c->run_id, s->suspect.step, row);
    if (rc < 0) {
        sr_warn("cannot mark checkpoint %" PRIu64 " suspect (%s): %s; the next start restores it "
                "again",
                row->seq, reason, sr_strerror(rc));
        return;
    }
    char key[512];
    sr_key_suspect(key, sizeof(key), c->run_id, row->seq);
    sr_warn("checkpoint %" PRIu64 " of run %s is suspect: %s; marked in the store (%s), it is "
            "never restored first again (`spotrun pull %s DIR --seq %" PRIu64 "` still fetches it)",
            row->seq, c->run_id, reason, key, c->run_id, row->seq);
    fall_back(s, row->seq);
}
