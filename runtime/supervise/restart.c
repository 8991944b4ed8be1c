/*
 * restart.c - the restart policy (see restart.h): the rules that turn the
 * end of the job's process into restart, give up, requeue or finish.
 */
#include "restart.h"

int64_t sr_restart_delay(int64_t backoff_ms, unsigned restarts)
{
    int64_t delay = backoff_ms;
    for (unsigned i = 0; i < restarts && delay < SR_RESTART_MAX_BACKOFF_MS; i++)
        delay *= 2;
    return delay > SR_RESTART_MAX_BACKOFF_MS ? SR_RESTART_MAX_BACKOFF_MS : delay;
}

/* The job failed by itself before it could ever work: a restart would
 * repeat it. Sets *first_silent on the first start's failure. */
static enum sr_restart_why hopeless(const struct sr_restart_facts *f, int *first_silent)
{
    const int code = f->end.code;
    const int quiet = !f->talked && !f->listened && !f->has_checkpoint;
    if (f->max_restarts == 0)
        return SR_WHY_NONE;
    /* 126/127: a command the job runs cannot be executed or was not found */
    if (!f->end.signaled && (code == 126 || code == 127) && f->restarts == 0 && quiet)
        return SR_WHY_NOT_RUNNABLE;
    /* One restart stays for what a new start can cure. */
    const int silent = quiet && f->ran_ms < SR_RESTART_SILENT_MS;
    if (f->restarts == 0) {
        *first_silent = silent ? f->status : 0;
        return SR_WHY_NONE;
    }
    if (f->restarts != 1 || f->restarts >= f->max_restarts || !silent ||
        f->first_silent_fail != f->status)
        return SR_WHY_NONE;
    return SR_WHY_SAME_FAILURE;
}

/* The watchdog stopped the job outside a notice: 1 when the run's stalls
 * are past what it allows. */
static int too_many_stalls(const struct sr_restart_facts *f)
{
    if (f->end.multinode)
        return f->stalls > f->max_stalls; /* the group's engine reruns it until then */
    return f->stalls > f->max_restarts || f->restarts >= f->max_restarts;
}

void sr_restart_decide(const struct sr_restart_facts *f, struct sr_restart *out)
{
    struct sr_end_facts ef = f->end;
    enum sr_restart_why why = SR_WHY_NONE;
    *out = (struct sr_restart){.first_silent_fail = f->first_silent_fail};
    ef.restarts_left = (int)f->max_restarts - (int)f->restarts;
    ef.stall_give_up = ef.stop == SR_STOP_STALL && !f->in_notice && too_many_stalls(f);
    if (ef.stall_give_up)
        why = SR_WHY_STALLS;
    if (ef.stop == SR_STOP_NONE && ef.code != 0 && !ef.group_stopping) {
        why = hopeless(f, &out->first_silent_fail);
        ef.hopeless = why != SR_WHY_NONE;
    }
    sr_attempt_end(&ef, &out->end);
    switch (out->end.next) {
    case SR_NEXT_RESTART:
        out->what = SR_DO_RESTART;
        out->delay_ms = sr_restart_delay(f->backoff_ms, f->restarts);
        return;
    case SR_NEXT_STOP:
        out->what = ef.stop == SR_STOP_STALL  ? SR_DO_REQUEUE_GROUP
                    : ef.stop == SR_STOP_NONE ? SR_DO_JOIN_STOP
                                              : SR_DO_FINISH_STOP;
        return;
    case SR_NEXT_END:
        break;
    }
    if (out->end.done) {
        out->what = SR_DO_FINISH;
        return;
    }
    out->what = SR_DO_GIVE_UP;
    out->why = why != SR_WHY_NONE ? why : SR_WHY_MAX_RESTARTS;
}
