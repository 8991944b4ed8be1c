/*
 * notices.c - a preemption notice, whatever its source (a signal to the
 * wrapper, the cloud's metadata, `spotrun notify`, the job's own SIGTERM,
 * another node's), starts the stop: ask the job to checkpoint, wait for its
 * commit until the deadline minus the time a persist takes, then drain and
 * stop (the PREEMPTING state, driven by supervisor.c). A second notice of
 * the same reclamation never hurries; the same signal from the same sender
 * again does. Cloud notices may be withdrawn (the stop is cancelled while
 * the job runs) and acknowledged once the checkpoint is durable (Azure).
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "exits.h"
#include "log.h"
#include "signame.h"
#include "supervisor_int.h"

/* A deadline already past or too close (clock skew, a stale metadata
 * answer, a tiny --deadline) still leaves the job the minimum commit
 * window and the TERM grace: a notice never means SIGKILL at once. */
static int64_t notice_deadline(const char *source, int64_t deadline_ms)
{
    const int64_t floor = now() + SR_MIN_COMMIT_WINDOW_MS + SR_MIN_TERM_GRACE_MS;
    if (deadline_ms >= floor)
        return deadline_ms;
    char late[32];
    sr_format_duration_ms(now() - deadline_ms, late, sizeof(late));
    if (deadline_ms <= now())
        sr_warn("the notice from %s has a deadline %s in the past (clock skew or a stale "
                "answer): the job still gets %ds to commit and %ds after SIGTERM",
                source, late, SR_MIN_COMMIT_WINDOW_MS / 1000, SR_MIN_TERM_GRACE_MS / 1000);
    else
        sr_warn("the notice from %s leaves less than %ds: the job still gets %ds to commit and "
                "%ds after SIGTERM",
                source, (SR_MIN_COMMIT_WINDOW_MS + SR_MIN_TERM_GRACE_MS) / 1000,
                SR_MIN_COMMIT_WINDOW_MS / 1000, SR_MIN_TERM_GRACE_MS / 1000);
    return floor;
}

/* A notice of this node's while the stop is under way brings the deadline
 * earlier: the other nodes of a group learn the new one as they learnt the
 * first (a peer's own notice is not passed on again). */
static void lower_deadline(struct sup *s, const char *source, int64_t deadline_ms)
{
    if (sup_preempt_lower(s, source, deadline_ms) && strncmp(source, "peer:", 5) != 0)
        sr_peers_notify(s->group.peers, source, sr_wall_ms() + (deadline_ms - now()));
}

/* A notice while the stop is under way: an earlier deadline counts; only
 * the same signal from the same sender again hurries the stop on. */
static void notice_again(struct sup *s, const char *source, int64_t deadline_ms, int sig,
                         pid_t from)
{
    lower_deadline(s, source, deadline_ms);
    /* The same reclamation seen again (a cloud notice, then systemd's
     * TERM at the shutdown; a fleet worker passing a notice on) never
     * hurries: only the same signal from the same sender again (a
     * second Ctrl-C, a user in a hurry) moves on. */
    if (!sig || sig != s->stop.first_sig || from != s->stop.first_from) {
        sr_info("notice from %s too: still making the checkpoint durable", source);
        return;
    }
    sr_warn("second notice (%s): not waiting any longer", source);
    if (s->stop.pre == WAIT_COMMIT)
        sup_enter_drain(s);
    else if (s->stop.pre == DRAIN)
        sup_stop_job(s);
    else
        sup_kill_job(s);
}

void sup_notice(struct sup *s, const char *source, int64_t deadline_ms)
{
    sup_signal_notice(s, source, deadline_ms, 0, 0);
}

void sup_signal_notice(struct sup *s, const char *source, int64_t deadline_ms, int sig, pid_t from)
{
    const int64_t t = now();
    if (s->phase == FINISHING) {
        /* The job has ended (done, or given up) and its last checkpoint is
         * persisting: that end stands; a notice only hurries it, and a
         * finished run still says "requeue me" (the machine is going away:
         * a sweep worker must not take another trial; a rerun of a done run
         * exits 0 at once). */
        sr_info("notice from %s after the job ended: its end stands; finishing what persists",
                source);
        sr_commits_hurry(s->ckpt.cp, 1);
        s->stop.notice_after_end = 1;
        return;
    }
    deadline_ms = notice_deadline(source, deadline_ms);
    if (s->phase == PREEMPTING) {
        notice_again(s, source, deadline_ms, sig, from);
        return;
    }
    sup_preempt_lower(s, source, deadline_ms);
    s->stop.first_sig = sig;
    s->stop.first_from = from;
    sup_group_notice(s);
    sup_ckpt_at_notice(s);
    sr_commits_hurry(s->ckpt.cp, 1);      /* only the newest checkpoint counts now */
    if (strncmp(source, "peer:", 5) != 0) /* the other nodes checkpoint too */
        sr_peers_notify(s->group.peers, source, sr_wall_ms() + (deadline_ms - t));
    char left[32], commit_in[32];
    sr_format_duration_ms(deadline_ms - t, left, sizeof(left));
    sr_format_duration_ms(s->stop.commit_by - t, commit_in, sizeof(commit_in));
    const int cloud = strcmp(source, s->stop.cloud.source) == 0;
    if (s->stop.at_limit) { /* no notice: the "limit" event says why (sup_limit_reached) */
        sr_info("asking the job to checkpoint (commit within %s, %s to stop)", commit_in, left);
    } else {
        sr_info("preemption notice from %s%s%s%s: %s left; asking the job to checkpoint (commit "
                "within %s)",
                source, cloud ? " (" : "", cloud ? s->stop.cloud.what : "", cloud ? ")" : "", left,
                commit_in);
        emit(s, "notice",
             json_pack("{s:s,s:I,s:I,s:I,s:s?,s:s?}", "source", source, "ms_left",
                       (json_int_t)(deadline_ms - t), "commit_in_ms",
                       (json_int_t)(s->stop.commit_by - t), "deadline_unix_ms",
                       (json_int_t)(sr_wall_ms() + (deadline_ms - t)), "what",
                       cloud ? s->stop.cloud.what : NULL, "id", cloud ? s->stop.cloud.id : NULL));
    }
    sr_events_flush(s->ev);
    if (s->att.child && !job_listens(s)) {
        if (!s->att.deaf_said++)
            sr_warn("the job does not listen for checkpoint requests (no handler for %s, never "
                    "polled spotrun_checkpoint_requested() or the Python module): not waiting for "
                    "a commit; its directory is committed when it stops",
                    spotrun_signal_name(s->cfg->signo, (char[32]){0}, 32));
        emit(s, "deaf", NULL);
        sup_enter_drain(s);
    } else if (s->att.child) {
        s->stop.pre = WAIT_COMMIT;
        sup_request_checkpoint(s, s->stop.at_limit ? "limit" : "notice");
    } else {
        sup_enter_drain(s);
    }
}

/* A time limit or budget: the stop of a notice with --grace to commit (the
 * other nodes of a group are told as of a notice: source
 * "limit:CAUSE:WHAT"), then exit 124: the run is not done, and a requeue
 * would only stop again. from_rank >= 0: another node reached it (source,
 * deadline: its notice's). */
static void limit_stop(struct sup *s, const struct sr_limit_hit *hit, int from_rank,
                       const char *source, int64_t deadline)
{
    if (s->stop.at_limit || s->phase == PREEMPTING || s->phase == FINISHING)
        return;
    s->stop.at_limit = 1;
    s->stop.limit_hit = *hit;
    char what[160], extend[200];
    sr_limit_describe(hit, what, sizeof(what));
    sr_limit_extend(&s->limits, hit, extend, sizeof(extend));
    const char *then = s->phase == BACKOFF ? "between attempts: the job is not restarted"
                                           : "stopping after a checkpoint";
    if (from_rank >= 0)
        sr_warn("node %d of run %s reached %s %s; %s (%s)", from_rank, s->cfg->run_id,
                strcmp(hit->cause, "budget") == 0   ? "a budget"
                : strcmp(hit->cause, "pruned") == 0 ? "the early stopping of its"
                                                    : "a time limit",
                hit->what, then, extend);
    else
        sr_warn("run %s reached %s; %s (%s)", s->cfg->run_id, what, then, extend);
    json_t *ev = sr_limit_event(hit);
    if (ev && from_rank >= 0)
        json_object_set_new(ev, "from_node", json_integer(from_rank));
    emit(s, "limit", ev);
    if (s->phase == BACKOFF) { /* no job to ask: nothing newer than what stands */
        sr_events_flush(s->ev);
        sup_phase(s, FINISHING);
        sup_run_end(s, SR_RUN_LIMIT, 0);
        return;
    }
    sup_notice(s, source, deadline);
}

void sup_limit_reached(struct sup *s, const struct sr_limit_hit *hit)
{
    /* the other nodes learn which limit, and its value (theirs may differ) */
    char source[48];
    if (strcmp(hit->cause, "time-limit") == 0)
        snprintf(source, sizeof(source), "limit:%s:%s:%.0f", hit->cause, hit->what, hit->limit);
    else
        snprintf(source, sizeof(source), "limit:%s:%s:%.2f", hit->cause, hit->what, hit->limit);
    limit_stop(s, hit, -1, source, now() + s->cfg->grace_ms);
}

int sup_peer_limit(struct sup *s, uint32_t rank, const char *limit, const char *source,
                   int64_t deadline)
{
    char cause[16], what[16], value[24];
    if (sscanf(limit, "%15[a-z-]:%15[a-z]:%23[0-9.]", cause, what, value) != 3)
        return -EINVAL;
    double v;
    struct sr_limit_hit hit;
    if (sr_parse_decimal(value, &v) < 0 ||
        sr_limits_hit_of(&s->limits, now(), s->phase == RUNNING ? s->att.attempt_at : now(), cause,
                         what, &hit) < 0)
        return -EINVAL;
    /* The origin's limit; what this node used of it when it has the same
     * limit, else what the origin reached (the limit). */
    if (hit.limit != v || hit.used < v)
        hit.used = v;
    hit.limit = v;
    limit_stop(s, &hit, (int)rank, source, deadline);
    return 0;
}

/* What stands when the job's new checkpoint does not come. */
void sup_say_what_stands(const struct sup *s, const char *what)
{
    if (s->ckpt.have_seq)
        sr_warn("%s; checkpoint %" PRIu64 " stands", what, s->ckpt.have_seq);
    else
        sr_warn("%s, and run %s has no checkpoint yet: its next start begins from scratch", what,
                s->cfg->run_id);
}

static void cloud_preempt(struct sup *s, const struct sr_notice_event *ev)
{
    if (ev->needs_ack)
        s->stop.ack = *ev;
    if (s->phase != PREEMPTING) {
        s->stop.cloud = *ev;
        sup_notice(s, ev->source, ev->deadline_ms);
        return;
    }
    /* Already preempting (a signal came first): the cloud's deadline may
     * be the earlier one, but it is no reason to hurry past the commit. */
    sr_info("%s notice (%s) while preempting", ev->source, ev->what);
    lower_deadline(s, ev->source, notice_deadline(ev->source, ev->deadline_ms));
}

/* A withdrawn notice cancels the stop, if the job is still running. */
static void cloud_withdrawn(struct sup *s, const struct sr_notice_event *ev)
{
    if (strcmp(ev->id, s->stop.ack.id) == 0)
        s->stop.ack.needs_ack = 0; /* nothing left to acknowledge */
    emit(s, "withdrawn", json_pack("{s:s,s:s}", "source", ev->source, "id", ev->id));
    if (s->phase != PREEMPTING || strcmp(ev->source, s->stop.cloud.source) != 0 ||
        strcmp(ev->id, s->stop.cloud.id) != 0) {
        sr_info("%s notice %s withdrawn", ev->source, ev->id);
        return;
    }
    s->stop.cloud.source[0] = '\0';
    if (s->stop.pre == STOPPING || !s->att.child) {
        sr_warn("the %s notice was withdrawn, but the job is already stopping", ev->source);
        return;
    }
    sr_info("the %s notice was withdrawn: cancelling the stop, the job keeps running", ev->source);
    sup_phase(s, RUNNING);
    s->stop.deadline = s->stop.commit_by = 0; /* no SIGTERM was sent: no SIGKILL is due */
    sr_commits_hurry(s->ckpt.cp, 0);
}

void sup_on_notice(struct sup *s)
{
    struct sr_notice_event ev;
    while (sr_notice_take(s->nw, &ev)) {
        if (ev.kind == SR_NOTICE_PREEMPT) {
            cloud_preempt(s, &ev);
        } else if (ev.kind == SR_NOTICE_WITHDRAWN) {
            cloud_withdrawn(s, &ev);
        } else if (s->phase == RUNNING) {
            sr_info("%s from %s: asking the job to checkpoint (it keeps running)", ev.what,
                    ev.source);
            emit(s, "rebalance", json_pack("{s:s,s:s}", "source", ev.source, "what", ev.what));
            sup_request_checkpoint(s, "rebalance");
        }
    }
    sup_placement(s);
}

void sup_placement(struct sup *s)
{
    if (!s->placement.cloud[0] && !sr_notice_placement(s->nw, &s->placement))
        return;
    if (s->att.placement_said || !s->ev)
        return;
    const struct sr_placement *p = &s->placement;
    json_t *f = json_pack("{s:s}", "cloud", p->cloud);
    if (f && p->instance_type[0])
        json_object_set_new(f, "instance_type", json_string(p->instance_type));
    if (f && p->zone[0])
        json_object_set_new(f, "zone", json_string(p->zone));
    if (f && p->region[0])
        json_object_set_new(f, "region", json_string(p->region));
    emit(s, "placement", f);
    sr_events_flush(s->ev);
    s->att.placement_said = 1;
}

/* Azure waits for NotBefore unless told to go ahead: after the checkpoint
 * is durable and the job stopped, tell it. */
void sup_acknowledge(struct sup *s)
{
    if (!s->stop.ack.needs_ack)
        return;
    const int rc = sr_notice_ack(s->nw, &s->stop.ack);
    if (rc < 0)
        sr_warn("cannot acknowledge %s event %s: %s", s->stop.ack.source, s->stop.ack.id,
                sr_strerror(rc));
    else
        sr_info("acknowledged %s event %s", s->stop.ack.source, s->stop.ack.id);
    emit(s, "ack",
         json_pack("{s:s,s:s,s:b}", "source", s->stop.ack.source, "id", s->stop.ack.id, "ok",
                   rc == 0));
    s->stop.ack.needs_ack = 0;
}
