/*
 * stop.c - the stop of the job, whoever makes it (a notice, a limit, a lost
 * lease, the stall watchdog): one escalation, SIGTERM to every process of
 * the job (its process group and those that left it), SIGCONT so that a
 * stopped one takes it, then SIGKILL at the stop's kill time (again each
 * minute should it still not end); the PREEMPTING state's steps (wait for
 * the job's commit, drain what persists, stop); and the phase changes of
 * the run, made by sup_phase() only.
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
    sr_warn("the %sjob did not stop after SIGTERM; killing it", s->att.stalling ? "stalled " : "");
    sup_kill_job(s);
    s->att.kill_at = t + KILL_AGAIN_MS;
}

/* ---- PREEMPTING ---------------------------------------------------------- */

/* From here on the job is stopped once the commits submitted so far are
 * durable (or failed): a job that keeps committing cannot hold it up. */
void sup_enter_drain(struct sup *s)
{
    s->pre = DRAIN;
    s->drain_mark = s->submitted;
}

void sup_stop_job(struct sup *s)
{
    s->pre = STOPPING;
    if (!s->att.child)
        return;
    const int64_t t = now() + TERM_WAIT_MS;
    int64_t kill_at = t < s->deadline ? t : s->deadline;
    if (kill_at < now() + SR_MIN_TERM_GRACE_MS) /* a second notice made it past */
        kill_at = now() + SR_MIN_TERM_GRACE_MS;
    sup_term_job(s, kill_at);
    sr_debug("sent SIGTERM to the job's processes");
}

void sup_preempt_tick(struct sup *s)
{
    const int64_t t = now();
    if (s->pre == WAIT_COMMIT && t >= s->commit_by) {
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
    if (s->pre == DRAIN &&
        (((sr_commits_pending(s->cp) == 0 || s->finished >= s->drain_mark) && sup_set_durable(s)) ||
         t >= s->deadline) &&
        (t >= s->deadline || !sup_save_hold(s))) /* a save in flight ends first, if it can */
        sup_stop_job(s);
}

/* ---- the lease --------------------------------------------------------------- */

/* Another wrapper owns the run now: whatever this one commits from here on
 * can never become the newest, so stop the job without a checkpoint. */
void sup_lease_lost(struct sup *s, const char *why)
{
    if (s->lost)
        return;
    s->lost = 1;
    sr_warn("%s; stopping the job without a checkpoint", why);
    emit(s, "lease_lost", json_pack("{s:s}", "reason", why));
    sr_events_flush(s->ev);
    if (s->phase == FINISHING)
        return;
    sup_phase(s, PREEMPTING);
    s->deadline = now() + s->cfg->grace_ms;
    sup_stop_job(s);
}
