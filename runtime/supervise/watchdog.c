/*
 * watchdog.c - `spotrun run --stall-timeout` inside the supervisor's loop:
 * reads the job page's heartbeat (job_page.h: progress, progress_ms) at
 * each poll, feeds stall.h, and stops a stalled job with its evidence
 * (evidence.h) in a "stalled" event; its exit is then a failure like a
 * crash (restart from the newest checkpoint, counted toward
 * --max-restarts together with the stalls of the run's earlier wrappers).
 *
 * Held time (stall.h): a pending checkpoint request, a commit being staged,
 * a notice or a restart are never judged. Multi-node: the stalled node
 * publishes a notice ("stalled") through the store, so that the other
 * nodes, whose jobs wait in a collective for this one, stop too (they
 * record a peer notice and exit 75); this node ends as a crash of its job
 * does.
 *
 * Runs on the supervisor's thread. Gathering tracebacks blocks the loop for
 * up to SR_EVIDENCE_TRACE_WAIT_MS (the job is stalled anyway).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "log.h"
#include "proctree.h"
#include "signame.h"
#include "supervisor_int.h"
#include "suspect.h"

#define STALL_POLL_MAX_MS 1000
#define STALL_POLL_MIN_MS 50
#define CPU_SNAP_MS 1000           /* the CPU baseline is at most this old at a heartbeat */
#define STALL_TERM_WAIT_MS 10000   /* TERM -> KILL */
#define STALL_PUBLISH_WAIT_MS 5000 /* multi-node: the notice is written before the stop */

static int64_t poll_ms(const struct sup *s)
{
    int64_t p = s->cfg->stall_timeout_ms / 10;
    if (s->cfg->stall_auto || p > STALL_POLL_MAX_MS)
        p = STALL_POLL_MAX_MS;
    return p < STALL_POLL_MIN_MS ? STALL_POLL_MIN_MS : p;
}

void sup_watchdog_init(struct sup *s)
{
    const struct sr_supervise_config *c = s->cfg;
    s->stall_on = c->stall_auto || c->stall_timeout_ms > 0;
    sr_stall_init(&s->stall, c->stall_timeout_ms, c->stall_auto);
    if (!s->stall_on)
        return;
    /* A realtime signal nobody else uses: the request signal may be one. */
    s->stall_signo = SIGRTMIN + 3 == c->signo ? SIGRTMIN + 4 : SIGRTMIN + 3;
    snprintf(s->stall_dir, sizeof(s->stall_dir), "%s/stall", c->run_dir);
    if (!s->page)
        sr_warn("--stall-timeout: there is no job page, so no heartbeat can be seen: the job "
                "is never judged stalled");
    char how[128];
    sr_stall_describe(&s->stall, how, sizeof(how));
    if (c->stall_auto)
        sr_info("--stall-timeout auto: the job is judged only after its first heartbeat "
                "(checkpoint_due(), commit(), metric(); spotrun_checkpoint_requested() in C) and "
                "%d gaps between heartbeats, at %d x the longest gap seen and at least %d min",
                SR_STALL_AUTO_MIN_GAPS, SR_STALL_AUTO_FACTOR, SR_STALL_AUTO_FLOOR_MS / 60000);
    else
        sr_info("--stall-timeout %s: the job is judged only after its first heartbeat "
                "(checkpoint_due(), commit(), metric(); spotrun_checkpoint_requested() in C)",
                how);
    sr_stall_set_startup(&s->stall, sup_group_startup_ms(s));
    if (c->prior_beaten)
        sr_stall_prior(&s->stall, c->prior_startup_ms);
}

/* Before the job starts: a fresh registration directory (a pid of the last
 * attempt may be reused), not heartbeated yet. */
void sup_watchdog_attempt(struct sup *s)
{
    if (!s->stall_on)
        return;
    sr_rmtree(s->stall_dir);
    const int rc = sr_mkdirs(s->stall_dir, 0700);
    if (rc < 0)
        sr_warn("--stall-timeout: cannot create %s: %s (no Python tracebacks at a stall)",
                s->stall_dir, sr_strerror(rc));
    sr_stall_attempt(&s->stall, now());
    /* sup_attempt_reset() zeroed the attempt's watch (beat_seen: page_reset
     * zeroed progress) */
    if (sr_stall_in_startup(&s->stall) && !s->startup_said) {
        char how[128];
        sr_stall_describe_startup(&s->stall, how, sizeof(how));
        sr_info("--stall-timeout: run %s heartbeated in an earlier attempt, so this attempt is "
                "judged from its start: its first heartbeat is due within %s",
                s->cfg->run_id, how);
        s->startup_said = 1;
    }
    s->att.watch.next_stall_poll = now() + poll_ms(s);
}

/* A stall's tracebacks may hold bytes that are not UTF-8 (a file name):
 * those become '?' so that the event stays valid JSON. */
static json_t *text_value(char *t)
{
    json_t *v = json_string(t);
    if (v)
        return v;
    for (unsigned char *p = (unsigned char *)t; *p; p++)
        if (*p >= 0x80)
            *p = '?';
    return json_string(t);
}

static void stop_stalled(struct sup *s)
{
    s->att.watch.stall_term_at = 0;
    s->att.watch.stalling = 1;
    sup_term_job(s, now() + STALL_TERM_WAIT_MS);
}

static void say_stalled(const struct sup *s, int64_t since, int64_t timeout, int startup,
                        int have_tb, const char *suspect)
{
    char a[32], b[32], head[192];
    sr_format_duration_ms(since, a, sizeof(a));
    sr_format_duration_ms(timeout, b, sizeof(b));
    if (startup) /* judged from its start: the run heartbeated before */
        snprintf(head, sizeof(head),
                 "no heartbeat for %s since the job started (it heartbeated in an earlier "
                 "attempt; start-up allowance %s, --stall-startup)",
                 a, b);
    else
        snprintf(head, sizeof(head), "no heartbeat for %s (--stall-timeout %s)", a, b);
    sr_warn("%s: the job is stalled; stopping it (%s%s%severy process's state%s: `spotrun show %s "
            "--events --attempt %" PRIu32 "`)",
            head, suspect[0] ? "suspect: " : "", suspect, suspect[0] ? "; " : "",
            have_tb ? " and Python traceback" : "", s->cfg->run_id, s->attempt);
}

static void stalled(struct sup *s, int64_t t)
{
    const int64_t timeout = sr_stall_timeout(&s->stall);
    const int startup = sr_stall_in_startup(&s->stall);
    int64_t since = t - (startup ? s->stall.started_ms : s->stall.last_ms);
    const int64_t wall = sr_wall_ms();
    const uint64_t pm = __atomic_load_n(&s->page->progress_ms, __ATOMIC_RELAXED);
    if (pm && (int64_t)pm <= wall && wall - (int64_t)pm > since)
        since = wall - (int64_t)pm; /* the heartbeat itself, not when we saw it */
    json_t *procs = sr_evidence_procs(getpid(), &s->att.watch.stall_cpu);
    char *tb = sr_evidence_tracebacks(getpid(), s->stall_dir, s->stall_signo, SR_EVIDENCE_TRACE_MAX,
                                      SR_EVIDENCE_TRACE_WAIT_MS);
    json_t *ev = json_pack("{s:I,s:I,s:o}", "since_ms", (json_int_t)since, "timeout_ms",
                           (json_int_t)timeout, "procs", procs ? procs : json_array());
    if (ev && startup)
        json_object_set_new(ev, "startup", json_true());
    const int have_tb = ev && tb;
    if (have_tb)
        json_object_set_new(ev, "traceback", text_value(tb));
    free(tb);
    char suspect[384] = "";
    sr_stall_suspect(ev, suspect, sizeof(suspect));
    emit(s, "stalled", ev); /* takes ev */
    sr_events_flush(s->ev);
    s->stalls++;
    say_stalled(s, since, timeout, startup, have_tb, suspect);
    if (sup_group_stop_stalled(s, wall)) {
        /* Ours is stopped once the other nodes were told: their jobs fail
         * as ours dies, and a failure in a group being stopped is part of
         * the stop only if the notice is there to say so. */
        s->att.watch.stalling = 1;
        s->att.watch.stall_term_at = t + STALL_PUBLISH_WAIT_MS;
        return;
    }
    stop_stalled(s);
}

/* 1 when every process of the job is stopped (SIGSTOP; docs/runtime.md):
 * said once when it is found, and again once it runs. */
static int job_stopped(struct sup *s)
{
    pid_t pids[8];
    size_t n_stopped = 0;
    const int live = sr_evidence_stopped(getpid(), pids, 8, &n_stopped);
    const int stopped = live > 0 && n_stopped == (size_t)live;
    if (stopped && !s->att.watch.job_stopped) {
        char list[128] = "";
        size_t used = 0;
        for (size_t i = 0; i < n_stopped && i < 8 && used < sizeof(list); i++)
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%d", i ? " " : "",
                                     (int)pids[i]);
        sr_warn("--stall-timeout: the job is stopped (pid%s %s%s in state T: SIGSTOP or a "
                "debugger), not hung: it is not judged while it is stopped; SIGCONT continues it",
                n_stopped > 1 ? "s" : "", list, n_stopped > 8 ? " ..." : "");
    } else if (!stopped && s->att.watch.job_stopped) {
        sr_info("--stall-timeout: the job runs again; its stall clock starts over from now");
    }
    s->att.watch.job_stopped = stopped;
    return stopped;
}

/* The job heartbeated since the last look at t (progress moved). */
static void saw_beat(struct sup *s, int64_t t)
{
    int64_t at = t;
    const int64_t wall = sr_wall_ms();
    const uint64_t pm = __atomic_load_n(&s->page->progress_ms, __ATOMIC_RELAXED);
    if (pm && (int64_t)pm <= wall && wall - (int64_t)pm < poll_ms(s) * 2)
        at = t - (wall - (int64_t)pm); /* when it happened, within the last polls */
    const int first = !s->stall.beaten;
    const int64_t was = first ? 0 : sr_stall_timeout(&s->stall); /* not the start-up's */
    sr_stall_beat(&s->stall, at);
    if (first) /* a later attempt is judged from its start (sr_hist_heartbeated) */
        emit(s, "heartbeat",
             json_pack("{s:I}", "after_ms",
                       (json_int_t)(at > s->stall.started_ms ? at - s->stall.started_ms : 0)));
    if (s->cfg->stall_auto && sr_stall_timeout(&s->stall) != was) {
        char how[128];
        sr_stall_describe(&s->stall, how, sizeof(how));
        if (!s->stall_said) /* said once; later moves only at debug level */
            sr_info("--stall-timeout %s: the job is judged from now on", how);
        else
            sr_debug("--stall-timeout %s", how);
        s->stall_said = 1;
    }
    if (t >= s->att.watch.next_cpu_snap) {
        sr_evidence_cpu_snapshot(getpid(), &s->att.watch.stall_cpu);
        s->att.watch.next_cpu_snap = t + CPU_SNAP_MS;
    }
}

void sup_watchdog_tick(struct sup *s)
{
    if (!s->stall_on || !s->att.child)
        return;
    const int64_t t = now();
    if (s->att.watch.stalling) {
        if (s->att.watch.stall_term_at &&
            (t >= s->att.watch.stall_term_at || sr_peers_notified(s->group.peers)))
            stop_stalled(s);
        return;
    }
    if (!s->page || t < s->att.watch.next_stall_poll)
        return;
    s->att.watch.next_stall_poll = t + poll_ms(s);
    const uint64_t p = __atomic_load_n(&s->page->progress, __ATOMIC_ACQUIRE);
    if (p != s->att.watch.beat_seen) {
        s->att.watch.beat_seen = p;
        saw_beat(s, t);
    }
    /* A pending request holds only once the job heartbeated after it was
     * made (it polled, heard it and is saving): a job that hung before it
     * would otherwise be shielded by the request it never hears. */
    const int pending = __atomic_load_n(&s->page->requested, __ATOMIC_ACQUIRE) !=
                        __atomic_load_n(&s->page->served, __ATOMIC_ACQUIRE);
    const int saving =
        sr_stall_saving(&s->stall, pending && p != s->att.watch.progress_at_request, t);
    if (s->phase != RUNNING || saving || sr_commits_staging(s->ckpt.cp)) {
        sr_stall_hold(&s->stall, t); /* checkpointing is no stall */
        return;
    }
    if ((s->att.watch.job_stopped || sr_stall_due(&s->stall, t)) && job_stopped(s)) {
        sr_stall_hold(&s->stall, t); /* a stopped job is not hung */
        return;
    }
    if (sr_stall_due(&s->stall, t))
        stalled(s, t);
}

void sup_watchdog_request(struct sup *s)
{
    /* A request made while another is pending (--every again during a long
     * save) is answered by the same commit: the job heard the first. */
    if (s->page && __atomic_load_n(&s->page->requested, __ATOMIC_ACQUIRE) ==
                       __atomic_load_n(&s->page->served, __ATOMIC_ACQUIRE)) {
        s->att.watch.progress_at_request = __atomic_load_n(&s->page->progress, __ATOMIC_ACQUIRE);
        s->att.watch.request_ms = now();
    }
}

void sup_watchdog_answered(struct sup *s)
{
    if (s->att.watch.request_ms && s->page &&
        __atomic_load_n(&s->page->requested, __ATOMIC_ACQUIRE) !=
            __atomic_load_n(&s->page->served, __ATOMIC_ACQUIRE))
        sr_stall_saved(&s->stall, now() - s->att.watch.request_ms);
    s->att.watch.request_ms = 0;
}

int64_t sup_watchdog_wakeup(const struct sup *s)
{
    if (!s->stall_on || !s->att.child)
        return 0;
    if (s->att.watch.stalling &&
        s->att.watch.stall_term_at) /* the notice is being written: look again soon */
        return now() + STALL_POLL_MIN_MS < s->att.watch.stall_term_at ? now() + STALL_POLL_MIN_MS
                                                                      : s->att.watch.stall_term_at;
    if (s->att.watch.stalling)
        return 0; /* the stop's SIGKILL is stop.c's */
    return s->att.watch.next_stall_poll;
}

int sup_watchdog_exited(struct sup *s)
{
    const int stalling = s->att.watch.stalling;
    s->att.watch.stalling = 0;
    return stalling;
}
