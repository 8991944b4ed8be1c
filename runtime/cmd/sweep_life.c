/*
 * sweep_life.c - a sweep worker's lifetime record (see sweep_life.h).
 */
#include "sweep_life.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alive.h"
#include "log.h"
#include "units.h"

static void put(struct sr_sweep_life *l)
{
    l->w.alive_ms = sr_wall_ms();
    if (l->w.alive_ms < l->w.start_ms) /* the clock stepped back */
        l->w.alive_ms = l->w.start_ms;
    const int rc = sr_sweep_worker_put(l->st, l->sweep, &l->w);
    if (rc < 0 && !l->warned++)
        sr_warn("sweep %s: cannot record this worker's lifetime: %s (its time between trials "
                "will be missing from `sweep show` and `stats`)",
                l->sweep, sr_strerror(rc));
    l->next = sr_now_ms() + l->every;
}

void sr_sweep_life_begin(struct sr_sweep_life *l, struct sr_store *st, const char *sweep,
                         unsigned slots, double price_per_hour)
{
    memset(l, 0, sizeof(*l));
    l->st = st;
    l->sweep = sweep;
    l->every = sr_keepalive_ms();
    gethostname(l->w.host, sizeof(l->w.host) - 1);
    l->w.pid = (long)getpid();
    l->w.start_ms = sr_wall_ms();
    l->w.slots = slots;
    l->w.price_per_hour = price_per_hour;
    put(l);
}

/* Not written now: a record lists every trial started before its
 * alive_ms, which is all that its readers need (a trial started after the
 * last write is outside the lifetime it records), and the next keep-alive
 * or the end writes it. One write a trial was a request a trial. */
void sr_sweep_life_trial(struct sr_sweep_life *l, long k)
{
    if (sr_sweep_worker_add_trial(&l->w, k) < 0 && !l->warned++)
        sr_warn("sweep %s: cannot record trial %ld in this worker's lifetime: out of memory",
                l->sweep, k);
}

int64_t sr_sweep_life_tick(struct sr_sweep_life *l)
{
    if (sr_now_ms() >= l->next)
        put(l);
    const int64_t left = l->next - sr_now_ms();
    return left > 0 ? left : 0;
}

void sr_sweep_life_end(struct sr_sweep_life *l)
{
    l->w.end_ms = sr_wall_ms();
    if (l->w.end_ms < l->w.start_ms)
        l->w.end_ms = l->w.start_ms;
    put(l);
    free(l->w.trials);
    l->w.trials = NULL;
}
