/*
 * dirstate.c - is the checkpoint directory carried by a commit (see
 * dirstate.h).
 *
 * DESIGN: two fingerprints, no queue. Results arrive in submission order
 * (stages in order, persists in order), so "the newest commit that has not
 * failed" is the last one submitted until its own failure says otherwise,
 * and then the newest durable one. Equal fingerprints are equal contents:
 * a failed commit of the same contents as a newer, still pending one
 * cannot be told from it, and is taken as the newer one failing (one
 * commit more, never one less).
 */
#include "dirstate.h"

#include <signal.h>
#include <sys/wait.h>

void sr_dirstate_reset(struct sr_dirstate *d, uint64_t fp)
{
    d->newest = d->durable = fp;
}

void sr_dirstate_submitted(struct sr_dirstate *d, uint64_t fp)
{
    d->newest = fp;
}

void sr_dirstate_result(struct sr_dirstate *d, uint64_t tag, int ok)
{
    if (ok)
        d->durable = tag;
    else if (tag == d->newest)
        d->newest = d->durable;
}

int sr_dirstate_due(const struct sr_dirstate *d, uint64_t fp, int empty)
{
    return !empty && fp != d->newest;
}

enum sr_final_commit sr_dirstate_after_exit(const struct sr_dirstate *d, int status, int lost,
                                            uint64_t fp, int empty)
{
    if (lost)
        return SR_FINAL_LEASE_LOST;
    /* A shell says 137 when the command it ran was killed (the OOM
     * killer kills one process, not the group). */
    if ((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
        (WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGKILL))
        return SR_FINAL_KILLED;
    return sr_dirstate_due(d, fp, empty) ? SR_FINAL_COMMIT : SR_FINAL_CARRIED;
}
