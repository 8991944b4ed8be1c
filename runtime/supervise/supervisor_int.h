/*
 * supervisor_int.h - the state of one `spotrun run` wrapper (struct sup),
 * shared by the files of its event loop: supervisor.c (the loop, its states,
 * commits), attempt.c (one attempt's start), stop.c (the one stop
 * escalation, the phase, the run's end), ending.c (the job's exit),
 * requests.c (the control requests), notices.c (notices: signals, cloud,
 * manual), group.c (the other nodes of a multi-node run), watchdog.c,
 * alive.c and commitlog.c. Internal to runtime/supervise/: nothing outside
 * includes it.
 *
 * The state is the run's (struct sup) and the attempt's (struct
 * sup_attempt, s->att): a new attempt starts from a zeroed one
 * (sup_attempt_reset), so no field of an attempt leaks into the next.
 *
 * Threads: everything here runs on the supervisor's one thread.
 */
#ifndef SPOTRUN_SUPERVISOR_INT_H
#define SPOTRUN_SUPERVISOR_INT_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "checkpointer.h"
#include "control.h"
#include "events.h"
#include "every.h"
#include "evidence.h"
#include "gpu_sampler.h"
#include "gpu_usage.h"
#include "job_page.h"
#include "keeper.h"
#include "memcg.h"
#include "limit.h"
#include "notice.h"
#include "outcome.h"
#include "peers.h"
#include "quarantine.h"
#include "dirstate.h"
#include "stall.h"
#include "supervisor.h"
#include "units.h"
#include "writers.h"

/* The least a notice leaves the job, whatever its deadline says
 * (notices.c): time to commit after the request, and after SIGTERM. */
#define SR_MIN_COMMIT_WINDOW_MS 1000
#define SR_MIN_TERM_GRACE_MS 2000

#define MAX_CONNS 32            /* control connections whose request is still arriving */
#define SUP_SETTLE_POLL_MS 1000 /* --settle looks at the directory this often */

enum phase { RUNNING, BACKOFF, PREEMPTING, FINISHING };
enum pre_phase { WAIT_COMMIT, DRAIN, STOPPING };

/* --stall-timeout's look at one attempt. Owned by watchdog.c: the CPU of
 * the job's processes at the newest heartbeat seen, the page's progress at
 * the last look, the stop of a stalled job (stalling: its exit is a stall,
 * a failure). */
struct sup_watch {
    struct sr_cpu_base stall_cpu;
    uint64_t beat_seen, progress_at_request;
    int64_t request_ms; /* when the request now pending was made (0: none) */
    int64_t next_stall_poll, next_cpu_snap, stall_term_at;
    int stalling;
    int job_stopped; /* every process of the job is stopped (SIGSTOP): said, not judged */
};

/* A save in flight in one attempt. Owned by savewait.c: the newest look at
 * the job's writer of the directory and the next one while a stop is made;
 * torn: the file the job was writing when it ended (pid 0: none); what was
 * said. */
struct sup_save {
    struct sr_writer writer, torn;
    int64_t next_look;
    int hold_said, settle_said;
};

/* One attempt's state: what one start of the job knows and does. Reset as
 * a whole, by sup_attempt_reset(), when the next attempt starts (before
 * its restore); everything else in struct sup lasts the run. */
struct sup_attempt {
    pid_t child;       /* 0 = none running */
    int job_committed; /* the job used the commit protocol this attempt */
    /* The job said something to the wrapper (a commit, a metric, a status
     * or any control request) or listened for requests. */
    int talked;
    int64_t attempt_at; /* when this attempt started */
    /* The set this attempt started from (0 = fresh), which names its done
     * mark; multi-node: the highest step this attempt restored or
     * committed; a commit must name a higher one (a step's parts are one
     * checkpoint, made once: a second commit of it could never be
     * restored). */
    uint64_t start_seq;
    int64_t last_step;
    /* Whether a commit carries the directory (its fingerprint at the
     * restore and at each commit; the checkpointer's results move it), and
     * --settle's watch of it. */
    struct sr_dirstate dir;
    uint64_t settle_fp;
    int64_t settle_since, next_settle, next_every;
    /* The attempt's "gpu" event is written at next_gpu_event and when the
     * job exits; the samples its last one counted. */
    int64_t next_gpu_event;
    uint64_t gpu_samples_said;
    int placement_said; /* the attempt's log has its "placement" event */
    int deaf_said;      /* "the job does not listen" was logged */
    /* What a lost attempt costs: the step of the newest checkpoint this
     * attempt restored or staged and when (now(); the attempt's start when
     * none). */
    int64_t ckpt_step, ckpt_at;
    /* The job's memory cgroup and its OOM-kill count at the attempt's
     * start: an "exit" by SIGKILL after the count rose is an OOM kill. */
    struct sr_memcg memcg;
    /* The stop of the job (stop.c): SIGKILL at kill_at once it was sent
     * SIGTERM (0 = not stopping). */
    int64_t kill_at;
    struct sup_watch watch;
    struct sup_save save;
};

/* The stop a notice, a limit, a lost lease or a stalled group makes
 * (PREEMPTING), and what the notices left. Owned by stop.c and notices.c:
 * no other file writes it (tests/docs/sup_owners.py). */
struct sup_stop {
    enum pre_phase pre;
    int64_t deadline, commit_by;
    uint64_t drain_mark; /* the commits submitted when the drain began */
    /* The signal and sender of the notice that started the stop (0: not a
     * signal): the same signal from the same sender again is a user in a
     * hurry. */
    int first_sig;
    pid_t first_from;
    struct sr_notice_event cloud; /* the cloud notice being acted on (source "" = none) */
    struct sr_notice_event ack;   /* to acknowledge before exiting (needs_ack) */
    int notice_after_end;         /* a notice came while FINISHING: a done run exits 75 */
    /* Time limits and budgets (limit.h): at_limit once one was reached
     * (the stop that follows ends with exit 124, not 75). */
    int at_limit;
    struct sr_limit_hit limit_hit;
    int lost; /* the lease went to another wrapper */
};

/* The commit pipeline as the loop sees it: the checkpointer, what was
 * submitted, staged, made durable or failed, and the newest checkpoint
 * known. Owned by supervisor.c and commitlog.c (sup_ckpt_* below). */
struct sup_ckpt {
    struct sr_commits *cp;
    /* Commits submitted, and those whose persist (or stage) has finished;
     * a drain waits for the ones submitted before it began, not for the
     * job's later periodic commits. */
    uint64_t submitted, finished;
    /* The newest commits that failed (a ring; 0 = none): STATUS's "failed",
     * which spotrun_wait_durable() reads. */
    uint64_t failed_seq[16];
    unsigned failed_next;
    uint64_t staged_seq; /* the newest staged seq */
    uint64_t have_seq;   /* the newest checkpoint known to exist (restored or durable) */
    int64_t have_step;   /* the step of checkpoint have_step_seq (restored or made durable here) */
    uint64_t have_step_seq;
    int64_t last_stage_ms; /* how long the last commit took to snapshot + pack */
    /* The job's commits this run, and their count at the notice. */
    uint64_t job_commits, notice_commits;
};

/* Multi-node (cfg->nodes > 1): the other nodes through the store. Owned
 * by group.c. */
struct sup_group {
    struct sr_peers *peers;
    uint64_t await_seq;     /* preempting: the set our newest part belongs to */
    uint64_t durable_seq;   /* the newest durable checkpoint (multi-node: set published) */
    int finished_in_notice; /* the job finished while a notice was being handled */
    int stall_requeue;      /* a stalled node stops with its group, exit 75 */
};

/* The run's state: one wrapper process, all its attempts. The parts that
 * one file or two own are struct sup_stop, sup_ckpt and sup_group (and the
 * attempt's sup_watch and sup_save); tests/docs/sup_owners.py fails when
 * another file writes one of their fields. */
struct sup {
    const struct sr_supervise_config *cfg;
    int quota_wait_said; /* the first start event carried cfg->quota_wait_ms */
    struct sr_events *ev;
    sigset_t orig_mask;
    int sigfd, lfd;
    enum phase phase; /* changed by sup_phase() only */
    uint32_t attempt;
    struct sup_attempt att; /* the attempt now running (or the last one) */
    unsigned restarts;
    /* How the run ends (outcome.h), and spotrun's exit code from it: set
     * by sup_run_end() only. */
    enum sr_run_end run_end;
    int exit_code;

    int64_t restart_at;
    int64_t every_ms;      /* the current request interval, 0 = none */
    struct sr_every every; /* --every auto */

    struct sup_stop stop;
    struct sup_ckpt ckpt;
    struct sup_group group;

    struct sr_gpu_usage gpu; /* from the shim's pages in gpu_dir */
    char gpu_dir[4096];
    /* GPU utilization (NVML, its own thread; NULL = off). */
    struct sr_gpu_sampler *gpu_sampler;
    int64_t alive_ms, next_alive; /* the keep-alive (alive.c): its interval, next due */

    struct sr_notice *nw;          /* cloud metadata watcher, NULL = none */
    struct sr_placement placement; /* where this instance runs (cloud "" = not known yet) */
    struct sr_keeper *keeper;      /* lease renewal, NULL = no lease */

    struct spotrun_job_page *page; /* the job page, NULL = none (see job_page.h) */
    char page_path[4200];
    struct sr_ctl_conn conns[MAX_CONNS];
    /* Requests made while the job listened. A job that listens and never
     * commits has its directory committed as it stands (named once at the
     * end). */
    unsigned heard_requests;
    /* How the first attempt failed when it never talked to the wrapper (0:
     * it did talk, or did not fail; restart.h). */
    int first_silent_fail;
    /* Suspect checkpoints (suspicion.c): the checkpoint the attempt
     * restored (0 = none) and its step, the commits submitted by then, and
     * the failures in a row right after restoring one (quarantine.h). */
    struct {
        uint64_t restored, submitted;
        int64_t step;
        struct sr_suspect_row row;
    } suspect;
    /* The tee of the job's stderr (outtail.h), NULL = none; started once. */
    struct sr_outtail *outtail;
    int outtail_tried;

    /* --stall-timeout (watchdog.c): the judgement over all attempts. */
    int stall_on;
    struct sr_stall stall;
    int stall_said;   /* auto: the learned timeout was said */
    int startup_said; /* an attempt judged from its start was said */
    unsigned stalls;  /* this wrapper's */
    int stall_signo;
    char stall_dir[4200];

    struct sr_limits limits; /* time limits and budgets (limit.h) */
};

static inline int64_t now(void)
{
    return sr_now_ms();
}

static inline void emit(struct sup *s, const char *type, json_t *fields)
{
    sr_events_emit(s->ev, type, fields);
}

/* Whether a request is heard: someone of the job polls the page or handles
 * the signal (the shim says so). Without the shim nobody would say: assume
 * the job listens. */
static inline int job_listens(const struct sup *s)
{
    return !s->cfg->preload || !s->page || __atomic_load_n(&s->page->listening, __ATOMIC_RELAXED);
}

/* The newest checkpoint the next start restores (staged or known). */
static inline uint64_t sup_newest_seq(const struct sup *s)
{
    return s->ckpt.staged_seq > s->ckpt.have_seq ? s->ckpt.staged_seq : s->ckpt.have_seq;
}

/* attempt.c: one attempt of the job */
/* The job page (job_page.h), created once per run. */
int sup_page_create(struct sup *s);
/* The per-attempt state back to a new attempt's (all of struct sup_attempt). */
void sup_attempt_reset(struct sup *s);
/* Resets the attempt, restores the newest checkpoint and starts the job.
 * Returns 0 or an exit code. */
int sup_start_attempt(struct sup *s);
/* The attempt's "gpu" event (end: the attempt's last). */
void sup_gpu_event(struct sup *s, int end);

/* suspicion.c: a checkpoint the job fails on right after restoring it */
/* The attempt restored checkpoint seq (0 = it starts fresh) at step. */
void sup_suspect_restored(struct sup *s, uint64_t seq, int64_t step);
/* The attempt's job ended (f: the restart policy's facts): counts it
 * against the checkpoint it restored; the second failure in a row marks
 * that checkpoint suspect and makes the newest trusted one the next. */
struct sr_restart_facts;
void sup_suspect_ended(struct sup *s, const struct sr_restart_facts *f);

/* supervisor.c: commits and checkpoint requests */
void sup_commit_dir(struct sup *s, int64_t step, int client_fd, const char *why);
void sup_request_checkpoint(struct sup *s, const char *why);

/* stop.c: the one stop escalation, PREEMPTING's steps, the phase */
/* Every phase change of the run goes through here. */
void sup_phase(struct sup *s, enum phase to);
/* How the run ends, set here only: the exit code is the table's
 * (outcome.h: sr_run_end_row), or code where it has none (failed, error).
 * Returns the exit code. */
int sup_run_end(struct sup *s, enum sr_run_end end, int code);
/* SIGTERM (and SIGCONT) to every process of the job; SIGKILL at kill_at. */
void sup_term_job(struct sup *s, int64_t kill_at);
/* SIGKILL to every process of the job now. */
void sup_kill_job(struct sup *s);
/* The SIGKILL of a stop whose job outlived its SIGTERM, when due. */
void sup_kill_tick(struct sup *s);
/* The stop's one setter of its times, whatever the source (a notice, a
 * second one, SIGTERM, a peer node, a limit, a lost lease, a stalled
 * group): outside PREEMPTING, enters it with deadline_ms as the deadline
 * (pre WAIT_COMMIT); in it, only brings the deadline earlier, never later.
 * The commit-by time (the deadline minus a persist's time) and a sent
 * SIGTERM's kill time follow; the "deadline" event says a lowering; the
 * loop's next tick (sup_preempt_tick) moves the stop on. 1 when the
 * deadline changed. */
int sup_preempt_lower(struct sup *s, const char *source, int64_t deadline_ms);
/* The latest moment a commit can be made and still be stored by
 * deadline_ms: the deadline minus the time to stage and persist a
 * checkpoint like the last one (measured), a tenth more, and a margin. */
int64_t sup_store_by(const struct sup *s, int64_t deadline_ms);
/* The job ended as a part of its group's stop (a stalled node, a peer's
 * notice): the stop as sup_preempt_lower, its job already stopped. */
void sup_preempt_joined(struct sup *s, const char *source, int64_t deadline_ms);
/* PREEMPTING: drain once the commits submitted so far are durable. */
void sup_enter_drain(struct sup *s);
/* PREEMPTING: the job's stop (SIGTERM, SIGKILL by the deadline). */
void sup_stop_job(struct sup *s);
/* PREEMPTING: the commit deadline, the drain's end. */
void sup_preempt_tick(struct sup *s);
/* Another wrapper owns the run now: stop the job without a checkpoint. */
void sup_lease_lost(struct sup *s, const char *why);

/* commitlog.c: the commits' results as the record and the log say them,
 * and the commit of the directory when no commit carries it */
/* "checkpoint 3 (step 40) stands", "no checkpoint: the next start begins
 * from scratch" */
void sup_what_stands(const struct sup *s, char *buf, size_t cap);
/* The checkpoint directory's fingerprint, --ckpt-exclude's paths left out
 * (child.h); *empty (may be NULL) when it holds nothing else. */
uint64_t sup_dir_fp(const struct sup *s, int *empty);
/* One result of the checkpointer: a failure is a "commit_failed" event
 * and a warning naming what stands. */
void sup_commit_result(struct sup *s, const struct sr_commit_result *r);
/* --settle: the directory is quiet; commit it when no commit carries it. */
void sup_commit_if_changed(struct sup *s, const char *why);
/* The job exited with status (not restarted from here yet): unless it was
 * killed by SIGKILL or the lease is lost, commit the directory when no
 * commit carries it. */
void sup_commit_after_exit(struct sup *s, int status, const char *why);
/* The newest checkpoint known (struct sup_ckpt): the attempt restored seq
 * at step; the checkpoints after marked are suspect and the next start
 * restores seq at step; seq (a published set) exists. */
void sup_ckpt_restored(struct sup *s, uint64_t seq, int64_t step);
void sup_ckpt_fall_back(struct sup *s, uint64_t marked, uint64_t seq, int64_t step);
void sup_ckpt_exists(struct sup *s, uint64_t seq);
/* The job committed; a notice came (the job's commits since answer it). */
void sup_ckpt_job_commit(struct sup *s);
void sup_ckpt_at_notice(struct sup *s);

/* requests.c: control connections, each read as its bytes arrive */
void sup_on_accept(struct sup *s);
void sup_on_conn(struct sup *s, struct sr_ctl_conn *c);
void sup_expire_conns(struct sup *s);

/* ending.c: the job's process ended (its wait status): restart, finish
 * the stop, or end the run (outcome.h decides); the stop being made now
 * (stalled: the watchdog stopped the job) */
void sup_child_exited(struct sup *s, int status);
enum sr_stop sup_current_stop(const struct sup *s, int stalled);

/* notices.c: a notice (signal, cloud, manual, a peer's) starts the stop */
void sup_notice(struct sup *s, const char *source, int64_t deadline_ms);
/* A signal's notice: sig from the process from (the same signal from the
 * same sender again hurries the stop on). */
void sup_signal_notice(struct sup *s, const char *source, int64_t deadline_ms, int sig, pid_t from);
void sup_say_what_stands(const struct sup *s, const char *what);
void sup_on_notice(struct sup *s);
/* The "placement" event, once the watcher knows it, in each attempt's log:
 * call when the watcher speaks and after each attempt's "start". */
void sup_placement(struct sup *s);
void sup_acknowledge(struct sup *s);
/* A time limit or budget was reached: the stop of a notice, then exit 124. */
void sup_limit_reached(struct sup *s, const struct sr_limit_hit *hit);
/* Another node of the group reached one (its notice's source
 * "limit:CAUSE:WHAT" gives limit "CAUSE:WHAT"): the same stop, exit 124.
 * -EINVAL when limit names none (then it is a notice like any other). */
int sup_peer_limit(struct sup *s, uint32_t rank, const char *limit, const char *source,
                   int64_t deadline);

/* savewait.c: a save in flight in the checkpoint directory (writers.h) */
/* --settle: 1 when a process of the job holds a file of the directory
 * open for writing now (then it is not committed). */
int sup_save_open(struct sup *s);
/* A stop, before the job's SIGTERM: 1 while a save is in flight and the
 * deadline leaves time to wait for it (look again later). */
int sup_save_hold(struct sup *s);
/* PREEMPTING: the look at the job's writers, when due; its time. */
void sup_save_tick(struct sup *s);
int64_t sup_save_wakeup(const struct sup *s);
/* The job's main process (child) ended with status, the rest of its tree
 * not killed yet: whether a file was being written as it ended. */
void sup_save_at_exit(struct sup *s, pid_t child, int status);
/* Before a commit of the directory after the job's end: 1 when a file was
 * being written as it ended (said, with a "not_committed" event). */
int sup_save_torn(struct sup *s);
/* The "not_committed" event (reason "being written" or "killed"), naming
 * the file being written as the job ended when one was. */
void sup_save_not_committed(struct sup *s, const char *reason);

/* watchdog.c: --stall-timeout */
/* alive.c: the attempt's periodic "alive" event, flushed (alive.h). */
void sup_alive_attempt(struct sup *s);
void sup_alive_tick(struct sup *s);
int64_t sup_alive_wakeup(const struct sup *s);

void sup_watchdog_init(struct sup *s);
void sup_watchdog_attempt(struct sup *s);
void sup_watchdog_tick(struct sup *s);
/* A checkpoint request is being made (before requested moves). */
void sup_watchdog_request(struct sup *s);
/* The job committed: what answered the pending request took is learned. */
void sup_watchdog_answered(struct sup *s);
int64_t sup_watchdog_wakeup(const struct sup *s);
/* The job's process ended: whether the watchdog had stopped it (a stall),
 * and no longer stalling. */
int sup_watchdog_exited(struct sup *s);

/* group.c: the other nodes of a multi-node run, and every way such a run
 * differs from a single node's in the loop (over supervisor.h's
 * sr_cfg_multinode/_rank/_nodes): no other file of the loop asks how many
 * nodes there are (tests/docs/sup_owners.py). For a single
 * node each answers as the first words say. */
/* Whether the run has more than one node. */
int sup_group_on(const struct sup *s);
/* This node's rank (-1: single node) and the number of nodes (1). */
int sup_group_rank(const struct sup *s);
unsigned sup_group_nodes(const struct sup *s);
/* --stall-timeout's judgement of a start (stall.h): the run's (-1: only
 * after the first heartbeat, as the other nodes may come late). */
int64_t sup_group_startup_ms(const struct sup *s);
/* Before a restore: nothing (publishes the sets every node's part made
 * but no one published). */
void sup_group_before_restore(struct sup *s);
/* A COMMIT of step from the job: 0 (a set's step must be given, fit a
 * seq and be newer than this node's last; it becomes the last; else -1,
 * the job answered and fd closed). */
int sup_group_commit_step(struct sup *s, int64_t step, int fd);
/* The job stalled: 0 (1: the other nodes were told to stop, as by a
 * notice, and this node's job is stopped after). */
int sup_group_stop_stalled(struct sup *s, int64_t wall_ms);
int sup_set_durable(const struct sup *s);
void sup_set_published(struct sup *s, uint64_t seq);
void sup_on_peers(struct sup *s);
void sup_node_finished(struct sup *s);
/* The watch of the other nodes through the store (peers.h); none. */
void sup_group_start(struct sup *s);
/* Our part of set seq is durable: wait for the set (preempting) and watch
 * for it. */
void sup_group_await(struct sup *s, uint64_t seq);
/* A notice: no part awaited yet. */
void sup_group_notice(struct sup *s);
/* This node's job stalled past its limit: the group stops and requeues. */
void sup_group_stall_requeue(struct sup *s);
/* This node's job finished (exit 0) during the notice: the run ends done
 * here, and the group's done marks decide. */
void sup_group_finished_in_notice(struct sup *s);

#endif
