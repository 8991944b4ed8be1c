/*
 * savewait.c - a save the job is making in its checkpoint directory, as
 * the supervisor weighs it (writers.h tells who holds which file open for
 * writing): --settle commits only a directory no process of the job is
 * writing; a stop (notice, SIGTERM, limit, cancel) lets a save in flight
 * finish before the job's SIGTERM, while the deadline leaves time to commit
 * and store it; and the commit of the directory after the job's end is
 * never made of a file that was being written when it ended.
 *
 * DESIGN: the fd table is read at decisions only: at a settle that would
 * commit, and every SAVE_LOOK_MS (or ten times what a look took, for a
 * big tree) while a stop is made (a stop lasts seconds; the job is not
 * looked at while it trains). After the job's end its files are closed
 * and the close events look like any close (writers.c), so the end is
 * judged from before it: the newest look of the stop (a writer then, whose
 * process was killed or is gone since, tore its file) and one more look at
 * the processes still running, which are about to be killed.
 *
 * Threads: the supervisor's one thread (supervisor_int.h).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "supervisor_int.h"
#include "units.h"

#define SAVE_LOOK_MS 200 /* a stop looks at the job's writers this often, at most */

/* The job's writer of the directory now (w->pid 0: none, or unknown). */
static void look(struct sup *s, struct sr_writer *w)
{
    const struct sr_supervise_config *c = s->cfg;
    const int64_t t0 = now();
    const int rc = sr_writers_find(getpid(), c->ckpt_dir, c->ckpt_exclude, c->n_ckpt_exclude, w);
    if (rc < 0)
        sr_debug("cannot tell which files of %s the job writes: %s", c->ckpt_dir, sr_strerror(rc));
    s->att.save.writer = *w;
    /* A big tree (hundreds of processes, thousands of fds) costs tens of
     * ms a look: the wrapper spends at most a tenth of a core on it. */
    const int64_t t1 = now(), every = 10 * (t1 - t0);
    s->att.save.next_look = t1 + (every > SAVE_LOOK_MS ? every : SAVE_LOOK_MS);
}

int sup_save_open(struct sup *s)
{
    struct sr_writer w;
    look(s, &w);
    if (!w.pid)
        return 0;
    if (!s->att.save.settle_said++)
        sr_info("%s is open for writing by pid %d: --settle commits the directory once it is "
                "closed",
                w.file, (int)w.pid);
    return 1;
}

/* When a save in flight must end for its commit to be stored by the
 * deadline (the commit deadline's own bound, less the job's TERM grace). */
static int64_t hold_until(const struct sup *s)
{
    return sup_store_by(s, s->stop.deadline) - SR_MIN_TERM_GRACE_MS;
}

int sup_save_hold(struct sup *s)
{
    if (!s->att.child)
        return 0;
    const int64_t until = hold_until(s);
    struct sr_writer w = s->att.save.writer;
    if (now() >= s->att.save.next_look || !s->att.save.hold_said)
        look(s, &w); /* else the newest look, SAVE_LOOK_MS old at most */
    char left[32];
    if (!w.pid) {
        if (s->att.save.hold_said == 1)
            sr_info("the job's save ended (the file was closed): stopping the job");
        return 0;
    }
    if (now() < until) {
        if (!s->att.save.hold_said) {
            s->att.save.hold_said = 1;
            sr_format_duration_ms(until - now(), left, sizeof(left));
            sr_info("the job is saving: %s is open for writing by pid %d; stopping the job once "
                    "it is closed (waiting at most %s)",
                    w.file, (int)w.pid, left);
        }
        return 1;
    }
    if (s->att.save.hold_said != 2) {
        s->att.save.hold_said = 2;
        sr_warn("%s is still being written by pid %d and the deadline leaves no time to wait "
                "for it: stopping the job; its directory is not committed unless the save "
                "ends first",
                w.file, (int)w.pid);
    }
    return 0;
}

void sup_save_tick(struct sup *s)
{
    if (s->phase == PREEMPTING && s->att.child && now() >= s->att.save.next_look) {
        struct sr_writer w;
        look(s, &w);
    }
}

int64_t sup_save_wakeup(const struct sup *s)
{
    if (s->phase != PREEMPTING || !s->att.child)
        return 0;
    /* The first look of a stop at once: nothing else may wake the loop
     * before the commit deadline (a limit's stop has no notice to read). */
    return s->att.save.next_look > now() ? s->att.save.next_look : now();
}

void sup_save_at_exit(struct sup *s, pid_t child, int status)
{
    const struct sr_writer seen = s->att.save.writer; /* the newest look, before the end */
    const int stopping = s->phase == PREEMPTING;
    struct sr_writer w;
    s->att.save.torn = (struct sr_writer){0};
    look(s, &w); /* the processes left: killed next, mid-write or not */
    if (w.pid) {
        s->att.save.torn = w;
        return;
    }
    if (!stopping || !seen.pid)
        return; /* looked at only while a stop is made: the job's own exit is its word */
    enum sr_fate fate;
    if (seen.pid == child)
        fate = WIFSIGNALED(status) ? SR_FATE_KILLED : SR_FATE_EXITED;
    else
        fate = sr_writers_fate(seen.pid);
    /* Gone: reaped by its parent before anyone could tell how it ended; a
     * save that may be torn is never committed. */
    if (fate == SR_FATE_KILLED || fate == SR_FATE_GONE)
        s->att.save.torn = seen;
}

int sup_save_torn(struct sup *s)
{
    const struct sr_writer *t = &s->att.save.torn;
    if (!t->pid)
        return 0;
    char stands[192];
    sup_what_stands(s, stands, sizeof(stands));
    sr_warn("not committed: %s was being written by pid %d when the job ended (a half-written "
            "save); %s",
            t->file, (int)t->pid, stands);
    sup_save_not_committed(s, "being written");
    return 1;
}

void sup_save_not_committed(struct sup *s, const char *reason)
{
    const struct sr_writer *t = &s->att.save.torn;
    json_t *ev =
        json_pack("{s:s,s:I}", "reason", reason, "stands_seq", (json_int_t)s->ckpt.have_seq);
    if (ev && t->pid) {
        json_object_set_new(ev, "file", json_string(t->file));
        json_object_set_new(ev, "pid", json_integer(t->pid));
    }
    emit(s, "not_committed", ev);
    sr_events_flush(s->ev);
}
