/*
 * stop.c - the stop of the job, whoever makes it (a notice, a limit, a lost
 * lease, the stall watchdog): one escalation, SIGTERM to every process of
 * the job (its process group and those that left it), SIGCONT so that a
 * stopped one takes it, then SIGKILL at the stop's kill time (again each
 * minute should it still not end); the PREEMPTING state's times (deadline,
 * commit-by, kill time: set by sup_preempt_lower() only, whatever the
 * source) and steps (wait for the job's commit, drain what persists,
 * stop); and the phase changes of the run, made by sup_phase() only.
 *
 * Threads: the supervisor's one thread (supervisor_int.h).
 */
#include <signal.h>
#include <unistd.h>

#include "log.h"
#include "proctree.h"
#include "signame.h"
#include "supervisor_int.h"

#define TERM_WAIT_MS 10000  /* TERM -> KILL when the deadline allows */
#define KILL_AGAIN_MS 60000 /* a job that outlives SIGKILL is killed again */
#define PERSIST_MARGIN_MS 1000

void sup_phase(struct sup *s, enum phase to)
{
    static const char *const names[] = {"running", "backoff", "preempting", "finishing"};
    if (s->phase != to)
        sr_debug("run %s: %s -> %s", s->cfg->run_id, names[s->phase], names[to]);
    s->phase = to;
}

int sup_run_end(struct sup *s, enum sr_run_end end, int code)
{
    const struct sr_run_end_row *row = sr_run_end_row(end);
    s->run_end = end;
    s->exit_code = row->exit_code >= 0 ? row->exit_code : code;
    sr_debug("run %s ends: %s, exit %d", s->cfg->run_id, row->name, s->exit_code);
    return s->exit_code;
}

/* ---- the escalation ------------------------------------------------------ */

void sup_term_job(struct sup *s, int64_t kill_at)
{
    if (!s->att.child)
        return;
    kill(-s->att.child, SIGTERM);
    sr_proctree_signal_outside(getpid(), SIGTERM, s->att.child); /* those that left the group */
    kill(-s->att.child, SIGCONT); /* a stopped process takes TERM only once it runs */
    sr_proctree_signal(getpid(), SIGCONT, 0);
    s->att.kill_at = kill_at;
}

void sup_kill_job(struct sup *s)
{
    if (!s->att.child)
        return;
    kill(-s->att.child, SIGKILL);
    sr_proctree_signal(getpid(), SIGKILL, 0);
}

void sup_kill_tick(struct sup *s)
{
    const int64_t t = now();
    if (!s->att.child || !s->att.kill_at || t < s->att.kill_at)
        return;
    sr_warn("the %sjob did not stop after SIGTERM; killing it",
            s->att.watch.stalling ? "stalled " : "");
    sup_kill_job(s);
    s->att.kill_at = t + KILL_AGAIN_MS;
}

/* ---- PREEMPTING ---------------------------------------------------------- */

/* The work between the job's commit and a durable checkpoint: its
 * snapshot and packing (last_stage_ms: both, as the last commit took them)
 * and the persist; plus, when a commit is still being packed, that one's
 * packing, which the next snapshot waits for (a skipped persist costs
 * nothing: sr_commits_hurry). */
int64_t sup_store_by(const struct sup *s, int64_t deadline_ms)
{
    const int64_t stage = s->ckpt.last_stage_ms * (sr_commits_staging(s->ckpt.cp) > 0 ? 2 : 1);
    const int64_t work = stage + sr_commits_persist_estimate_ms(s->ckpt.cp);
    return deadline_ms - work - PERSIST_MARGIN_MS - work / 10;
}

/* When the job's commit must arrive: sup_store_by, never less than a
 * second from now. */
static int64_t commit_deadline(const struct sup *s, int64_t deadline_ms)
{
    const int64_t by = sup_store_by(s, deadline_ms);
    return by > now() + SR_MIN_COMMIT_WINDOW_MS ? by : now() + SR_MIN_COMMIT_WINDOW_MS;
}

int sup_preempt_lower(struct sup *s, const char *source, int64_t deadline_ms)
{
    const int64_t t = now();
    if (s->phase != PREEMPTING) {
        sup_phase(s, PREEMPTING);
        s->stop.pre = WAIT_COMMIT;
        s->stop.deadline = deadline_ms;
        s->stop.commit_by = commit_deadline(s, deadline_ms);
        return 1;
    }
    if (deadline_ms >= s->stop.deadline) /* the same reclamation, seen later: never later */
        return 0;
    s->stop.deadline = deadline_ms;
    const int64_t by = commit_deadline(s, deadline_ms);
    if (by < s->stop.commit_by)
        s->stop.commit_by = by;
    /* A SIGTERM already sent: its SIGKILL by the new deadline, the TERM's
     * least grace kept. */
    int64_t kill_at =
        deadline_ms > t + SR_MIN_TERM_GRACE_MS ? deadline_ms : t + SR_MIN_TERM_GRACE_MS;
    if (s->stop.pre == STOPPING && s->att.kill_at && kill_at < s->att.kill_at)
        s->att.kill_at = kill_at;
    char left[32];
    sr_format_duration_ms(deadline_ms - t, left, sizeof(left));
    sr_info("the stop's deadline comes earlier (%s): %s left", source, left);
    emit(s, "deadline",
         json_pack("{s:s,s:I,s:I,s:I}", "source", source, "ms_left", (json_int_t)(deadline_ms - t),
                   "commit_in_ms", (json_int_t)(s->stop.commit_by - t), "deadline_unix_ms",
                   (json_int_t)(sr_wall_ms() + (deadline_ms - t))));
    return 1;
}

/* From here on the job is stopped once the commits submitted so far are
 * durable (or failed): a job that keeps committing cannot hold it up. */
void sup_preempt_joined(struct sup *s, const char *source, int64_t deadline_ms)
{
    sup_preempt_lower(s, source, deadline_ms);
    s->stop.pre = STOPPING;
}

void sup_enter_drain(struct sup *s)
{
    s->stop.pre = DRAIN;
    s->stop.drain_mark = s->ckpt.submitted;
}

void sup_stop_job(struct sup *s)
{
    s->stop.pre = STOPPING;
    if (!s->att.child)
        return;
    const int64_t t = now() + TERM_WAIT_MS;
    int64_t kill_at = t < s->stop.deadline ? t : s->stop.deadline;
    if (kill_at < now() + SR_MIN_TERM_GRACE_MS) /* a second notice made it past */
        kill_at = now() + SR_MIN_TERM_GRACE_MS;
    sup_term_job(s, kill_at);
    sr_debug("sent SIGTERM to the job's processes");
}

void sup_preempt_tick(struct sup *s)
{
    const int64_t t = now();
    if (s->stop.pre == WAIT_COMMIT && t >= s->stop.commit_by) {
        if (!s->att.job_committed && s->cfg->preload && s->page && job_listens(s))
            sr_warn("the job listens for checkpoint requests (it polled them or handles %s) but "
                    "never called commit() in this attempt: not waiting any longer; its "
                    "directory %s is committed as it stands once it stops, if it changed (call "
                    "spotrun.commit() after saving, or `spotrun commit`)",
                    spotrun_signal_name(s->cfg->signo, (char[32]){0}, 32), s->cfg->ckpt_dir);
        else
            sup_say_what_stands(s, "the job did not commit in time");
        sup_enter_drain(s);
    }
    if (s->stop.pre == DRAIN &&
        (((sr_commits_pending(s->ckpt.cp) == 0 || s->ckpt.finished >= s->stop.drain_mark) &&
          sup_set_durable(s)) ||
         t >= s->stop.deadline) &&
        (t >= s->stop.deadline || !sup_save_hold(s))) /* a save in flight ends first, if it can */
        sup_stop_job(s);
}

/* ---- the lease --------------------------------------------------------------- */

/* Another wrapper owns the run now: whatever this one commits from here on
 * can never become the newest, so stop the job without a checkpoint. */
void sup_lease_lost(struct sup *s, const char *why)
{
    if (s->stop.lost)
        return;
    s->stop.lost = 1;
    sr_warn("%s; stopping the job without a checkpoint", why);
    emit(s, "lease_lost", json_pack("{s:s}", "reason", why));
    sr_events_flush(s->ev);
    if (s->phase == FINISHING)
        return;
    sup_preempt_lower(s, "lease", now() + s->cfg->grace_ms);
    sup_stop_job(s);
}
