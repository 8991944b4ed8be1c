/*
 * ending.c - the end of the job's process: what it means is decided by the
 * restart policy (restart.h: backoff, --max-restarts, hopeless starts,
 * stalls, a group requeued) over sr_attempt_end() (runtime/outcome/outcome.h,
 * the one table); this file gathers their facts (the stop under way, the
 * status, an OOM kill, what the attempt said to the wrapper), records the
 * exit and acts on the decision: restart after the backoff, finish the
 * stop under way, or end the run (done, or given up, said why, with the
 * table's exit code).
 *
 * Threads: the supervisor's one thread (supervisor_int.h).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exits.h"
#include "log.h"
#include "outcome.h"
#include "outtail.h"
#include "proctree.h"
#include "restart.h"
#include "signame.h"
#include "supervisor_int.h"
#include "units.h"

/* ---- child exit ------------------------------------------------------------ */

/* "status 1" or "killed by SIGKILL". */
static void describe_status(int status, char *out, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(out, cap, "status %d", WEXITSTATUS(status));
    else
        snprintf(out, cap, "killed by %s",
                 spotrun_signal_name(WTERMSIG(status), (char[32]){0}, 32));
}

/* The job ended during a notice without the commit it was asked for. */
static void say_work_lost(struct sup *s, int status, int dir_committed)
{
    char how[48], lost[32], step[24];
    describe_status(status, how, sizeof(how));
    sr_format_duration_ms(now() - s->att.ckpt_at, lost, sizeof(lost));
    const uint64_t seq = sup_newest_seq(s);
    if (dir_committed)
        sr_warn("the job exited (%s) during the notice without committing: its directory is "
                "committed as it stands instead (whatever it held when the job died)",
                how);
    else if (seq) {
        sr_format_step(s->att.ckpt_step, step, sizeof(step));
        sr_warn("the job exited (%s) during the notice without committing: the run resumes from "
                "checkpoint %" PRIu64 " (step %s), the work since then (%s) is lost",
                how, seq, step, lost);
    } else
        sr_warn("the job exited (%s) during the notice without committing: run %s has no "
                "checkpoint yet, its next start begins from scratch (this attempt's %s of work "
                "is lost)",
                how, s->cfg->run_id, lost);
    emit(
        s, "lost_work",
        json_pack("{s:I,s:I}", "seq", (json_int_t)seq, "ms", (json_int_t)(now() - s->att.ckpt_at)));
}

/* The run ends with this attempt, a failure (outcome.h: e->exit_code). */
static void give_up(struct sup *s, int status, const struct sr_end *e)
{
    sup_phase(s, FINISHING);
    sup_run_end(s, SR_RUN_FAILED, e->exit_code);
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && e->exit_code != WEXITSTATUS(status))
        sr_warn("the job's own exit %d is a failure, not spotrun's %s: exit %d (only spotrun "
                "says 75 or 124)",
                WEXITSTATUS(status),
                WEXITSTATUS(status) == SR_EX_LIMIT ? "limit (124)" : "requeue me (75)",
                e->exit_code);
    if (!s->cfg->result)
        return;
    s->cfg->result->gave_up = 1;
    if (e->cause == SR_CAUSE_STALLED)
        snprintf(s->cfg->result->cause, sizeof(s->cfg->result->cause), "stalled");
    else if (WIFEXITED(status))
        snprintf(s->cfg->result->cause, sizeof(s->cfg->result->cause), "exit %d",
                 WEXITSTATUS(status));
    else
        snprintf(s->cfg->result->cause, sizeof(s->cfg->result->cause), "signal %s",
                 sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
}

/* The job died of SIGKILL (or exited 137, a shell's way of saying its
 * command was) while its memory cgroup counted an OOM kill: it ran out of
 * memory. Said once here; 0 when not, or not known (memcg.h). */
static int oom_killed(struct sup *s, int status)
{
    const int killed = (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
                       (WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGKILL);
    if (!killed || sr_memcg_oom_rose(&s->att.memcg) != 1)
        return 0;
    sr_warn("the job ran out of memory: the OOM killer of its memory cgroup killed it "
            "(SIGKILL; %s counted it); give it more memory or make it use less",
            s->att.memcg.path);
    return 1;
}

/* The stop spotrun is making (outcome.h: the first that applies wins). */
enum sr_stop sup_current_stop(const struct sup *s, int stalled)
{
    if (s->stop.lost)
        return SR_STOP_LEASE;
    if (stalled || s->group.stall_requeue)
        return SR_STOP_STALL;
    if (s->stop.at_limit)
        return SR_STOP_LIMIT;
    return s->phase == PREEMPTING ? SR_STOP_NOTICE : SR_STOP_NONE;
}

/* Why the run gives up, said once (restart.h: the rule that decided). */
static void say_why(struct sup *s, int status, const struct sr_restart *r)
{
    const struct sr_supervise_config *c = s->cfg;
    const unsigned stalls = c->prior_stalls + s->stalls;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    char how[48];
    switch (r->why) {
    case SR_WHY_NOT_RUNNABLE:
        sr_warn("not restarting: the job exited with %d (%s) on its first attempt, before it "
                "ever talked to spotrun, and run %s has no checkpoint: a restart would repeat "
                "it; fix the command and run it again",
                code, code == 127 ? "a command was not found" : "a command cannot be executed",
                c->run_id);
        break;
    case SR_WHY_SAME_FAILURE:
        describe_status(status, how, sizeof(how));
        sr_warn("not restarting again: the job failed the same way (%s) on its first start and "
                "on its restart, both times within %ds and before it ever talked to spotrun, "
                "and run %s has no checkpoint: another restart would repeat it; read the job's "
                "output above, fix it and run it again",
                how, SR_RESTART_SILENT_MS / 1000, c->run_id);
        break;
    case SR_WHY_STALLS:
        if (sup_group_on(s))
            sr_warn("not requeuing: run %s stalled %u time(s)%s, more than %u (--max-restarts): "
                    "read the \"stalled\" events (`spotrun show %s --events`), fix the hang and "
                    "run the group again",
                    c->run_id, stalls, c->prior_stalls ? " (counting its earlier starts)" : "",
                    c->max_stalls, c->run_id);
        else
            sr_warn("not restarting: run %s stalled %u time(s)%s, --max-restarts is %u: read the "
                    "\"stalled\" events (`spotrun show %s --events`), fix the hang and run it "
                    "again",
                    c->run_id, stalls, c->prior_stalls ? " (counting its earlier wrappers)" : "",
                    c->max_restarts, c->run_id);
        break;
    case SR_WHY_MAX_RESTARTS:
    case SR_WHY_NONE:
        break;
    }
}

static void schedule_restart(struct sup *s, int64_t delay)
{
    s->restarts++;
    char d[32];
    sr_format_duration_ms(delay, d, sizeof(d));
    if (sup_newest_seq(s))
        sr_info("restarting from the newest checkpoint (%" PRIu64 ") in %s (restart %u of %u)",
                sup_newest_seq(s), d, s->restarts, s->cfg->max_restarts);
    else {
        sr_info("restarting from scratch in %s: run %s has no checkpoint yet (restart %u of %u)", d,
                s->cfg->run_id, s->restarts, s->cfg->max_restarts);
        if (!s->every_ms) {
            char lost[32];
            sr_format_duration_ms(now() - s->att.ckpt_at, lost, sizeof(lost));
            sr_warn("the %s this attempt ran are lost: give --every DURATION (say --every 10m), "
                    "or commit from the job, so that a crash keeps the work done before it",
                    lost);
        }
    }
    emit(s, "restart",
         json_pack("{s:i,s:I}", "restart", (int)s->restarts, "delay_ms", (json_int_t)delay));
    sup_phase(s, BACKOFF);
    s->restart_at = now() + delay;
}

/* The job ended while a stop was under way (or, one node of a group,
 * started one): finish it, the exit code is the stop's (outcome.h). */
static void continue_stop(struct sup *s, int status, const struct sr_restart *r, enum sr_stop stop)
{
    if (r->what == SR_DO_REQUEUE_GROUP || r->what == SR_DO_JOIN_STOP) {
        if (r->what == SR_DO_REQUEUE_GROUP) { /* one node: the group starts again as a whole */
            sup_group_stall_requeue(s);
        } else { /* its collectives failed because another node is being stopped */
            sr_info("another node of run %s got a preemption notice: the job's end is part of "
                    "that stop",
                    s->cfg->run_id);
            emit(s, "notice", json_pack("{s:s}", "source", "peer"));
        }
        sup_preempt_joined(s, "group", now() + s->cfg->grace_ms);
        return;
    }
    const uint64_t submitted = s->ckpt.submitted;
    sup_commit_after_exit(s, status, "job stopped");
    if (s->stop.pre == STOPPING)
        return; /* the stop's TERM ended it: drain goes on (settle_state) */
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code == 0 && sup_group_on(s)) {
        /* One node's job finished: its group's done marks decide (group.c). */
        sup_group_finished_in_notice(s);
        return;
    }
    if (code == 0)
        sr_info("the job exited 0 while spotrun was stopping it (%s): a stop is not a finish; "
                "run %s is not done",
                sr_stop_name(stop), s->cfg->run_id);
    if (!s->stop.lost && s->ckpt.job_commits == s->ckpt.notice_commits)
        say_work_lost(s, status, s->ckpt.submitted != submitted);
    sup_enter_drain(s);
}

/* The facts the restart policy decides on (restart.h). */
static void gather_facts(struct sup *s, int status, int stalled, int oom,
                         struct sr_restart_facts *f)
{
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const struct sr_supervise_config *c = s->cfg;
    *f = (struct sr_restart_facts){
        .end = {.stop = sup_current_stop(s, stalled),
                .limit = s->stop.at_limit && s->stop.limit_hit.cause &&
                                 sr_limit_cause_of(s->stop.limit_hit.cause) != SR_CAUSE_NONE
                             ? sr_limit_cause_of(s->stop.limit_hit.cause)
                             : SR_CAUSE_TIME_LIMIT,
                .code = code,
                .signaled = WIFSIGNALED(status),
                .oom = oom,
                .multinode = sup_group_on(s)},
        .status = status,
        .restarts = s->restarts,
        .max_restarts = c->max_restarts,
        .backoff_ms = c->backoff_ms,
        .talked = s->att.talked,
        .listened = s->page && __atomic_load_n(&s->page->listening, __ATOMIC_RELAXED),
        .has_checkpoint = sup_newest_seq(s) != 0,
        .ran_ms = now() - s->att.attempt_at,
        .first_silent_fail = s->first_silent_fail,
        .in_notice = s->phase == PREEMPTING,
        .stalls = c->prior_stalls + s->stalls,
        .max_stalls = c->max_stalls,
    };
    /* a store listing: asked only of a failure nobody stopped */
    if (f->end.stop == SR_STOP_NONE && code != 0)
        f->end.group_stopping = f->end.multinode && sr_peers_group_preempted(s->group.peers);
}

/* The "exit" event, and the failure said in the log. */
static void record_exit(struct sup *s, int status, int oom, enum sr_stop stop)
{
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    json_t *ex =
        WIFEXITED(status)
            ? json_pack("{s:i}", "code", code)
            : json_pack("{s:i,s:s}", "code", code, "signal",
                        sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
    if (oom && ex)
        json_object_set_new(ex, "oom", json_true());
    sup_output_tail(s, ex); /* the last lines of a failure's stderr */
    emit(s, "exit", ex);
    if ((stop == SR_STOP_NONE || stop == SR_STOP_STALL) && code != 0) {
        if (WIFEXITED(status))
            sr_warn("the job exited with code %d", code);
        else
            sr_warn("the job was killed by %s",
                    spotrun_signal_name(WTERMSIG(status), (char[32]){0}, 32));
    }
}

void sup_child_exited(struct sup *s, int status)
{
    const pid_t pgid = s->att.child;
    const int stalled = sup_watchdog_exited(s); /* stopped by it: never a success */
    sup_save_at_exit(s, pgid, status);          /* before the rest of its tree is killed */
    s->att.child = 0;
    kill(-pgid, SIGKILL);                     /* leftovers of the job's process group */
    sr_proctree_signal(getpid(), SIGKILL, 0); /* and any daemon it left below us */
    sup_gpu_event(s, 1);
    const int oom = oom_killed(s, status);
    struct sr_restart_facts f;
    record_exit(s, status, oom, sup_current_stop(s, stalled));
    gather_facts(s, status, stalled, oom, &f);
    struct sr_restart r;
    sr_restart_decide(&f, &r);
    s->first_silent_fail = r.first_silent_fail;
    sup_suspect_ended(s, &f); /* before the restart line: it may name an older checkpoint */
    say_why(s, status, &r);
    if (f.end.stop == SR_STOP_STALL && f.end.code == 0)
        sr_warn("the job exited 0 after the stall watchdog stopped it: a stall is not a finish");
    switch (r.what) {
    case SR_DO_RESTART:
        schedule_restart(s, r.delay_ms);
        break;
    case SR_DO_REQUEUE_GROUP:
    case SR_DO_JOIN_STOP:
    case SR_DO_FINISH_STOP:
        continue_stop(s, status, &r, f.end.stop);
        break;
    case SR_DO_FINISH:
        sr_info("the job finished successfully");
        sup_commit_after_exit(s, status, "job finished");
        sup_phase(s, FINISHING);
        sup_run_end(s, SR_RUN_DONE, 0);
        break;
    case SR_DO_GIVE_UP:
        if (r.why == SR_WHY_MAX_RESTARTS && r.end.cause != SR_CAUSE_STALLED)
            sr_warn("giving up after %u restart(s) (--max-restarts)%s", s->restarts,
                    f.end.code == SR_EX_TEMPFAIL
                        ? "; exit 75 is the job's own code: no notice came, this is a failure, "
                          "not a preemption"
                        : "");
        give_up(s, status, &r.end);
        break;
    }
}
