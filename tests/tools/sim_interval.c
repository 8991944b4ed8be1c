/*
 * sim_interval.c - `--every auto` against synthetic preemption traces
 * (scripts/sim-interval.sh runs it; docs/interval.md shows a result).
 *
 * A job needs WORK hours of compute on instances that are preempted at
 * the times of a trace, without a notice that saves the work (the case the
 * periodic checkpoints are for). Each checkpoint stops the job for COST
 * seconds; a preemption loses the work since the last complete checkpoint
 * plus a checkpoint it was in the middle of. Restarts cost nothing here
 * (the same for every interval; docs/interval.md). Policies: fixed
 * intervals, and the supervisor's own `--every auto` state (every.c over
 * common/interval.c): a new wrapper after each preemption, starting from
 * the history so far (instance time, preemptions, stage p50), choosing again
 * after each checkpoint, the 6h prior until the first preemption.
 *
 * Traces: poisson (exponential gaps, MTBF 6h) and bursty (calm spells with
 * an MTBF of 24h, mean 36h long, and storms with an MTBF of 20min, mean 4h
 * long: about 3h overall). Every policy sees the same traces (same seeds).
 * Prints a table; exits 0. Deterministic: its own PRNG.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "every.h"
#include "interval.h"
#include "units.h"

#define MIN_MS INT64_C(60000)
#define HOUR_MS INT64_C(3600000)

/* splitmix64: reproducible across libcs. */
static uint64_t rnd_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double expo(uint64_t *s, double mean)
{
    const double u = ((double)(rnd_next(s) >> 11) + 0.5) / 9007199254740992.0;
    return -log(u) * mean;
}

/* A preemption trace on the instance clock. */
struct trace {
    int bursty;
    uint64_t rng;
    double t;          /* last preemption (ms) */
    int storm;         /* bursty: in a storm */
    double regime_end; /* bursty: when the current spell ends */
};

#define CALM_MTBF (24.0 * HOUR_MS)
#define CALM_LEN (36.0 * HOUR_MS)
#define STORM_MTBF (20.0 * MIN_MS)
#define STORM_LEN (4.0 * HOUR_MS)
#define POISSON_MTBF (6.0 * HOUR_MS)

static void trace_init(struct trace *tr, int bursty, uint64_t seed)
{
    *tr = (struct trace){.bursty = bursty, .rng = seed};
    if (bursty)
        tr->regime_end = expo(&tr->rng, CALM_LEN);
}

/* The next preemption after the last one. Memoryless within a spell, so a
 * draw that crosses the spell's end restarts from there. */
static int64_t trace_next(struct trace *tr)
{
    if (!tr->bursty)
        return (int64_t)(tr->t += expo(&tr->rng, POISSON_MTBF));
    for (;;) {
        const double at = tr->t + expo(&tr->rng, tr->storm ? STORM_MTBF : CALM_MTBF);
        if (at < tr->regime_end)
            return (int64_t)(tr->t = at);
        tr->t = tr->regime_end;
        tr->storm = !tr->storm;
        tr->regime_end += expo(&tr->rng, tr->storm ? STORM_LEN : CALM_LEN);
    }
}

struct result {
    double lost_ms, overhead_ms, preemptions, checkpoints, interval_sum;
};

/* --every auto as a new wrapper starts it: from the history so far. */
static void wrapper_start(struct sr_every *e, int64_t t, uint64_t preemptions, int64_t cost_ms,
                          int measured)
{
    const struct sr_every_auto a = {.on = 1,
                                    .mtbf_prior_ms = SR_INTERVAL_MTBF_PRIOR_MS,
                                    .min_ms = SR_INTERVAL_MIN_MS,
                                    .max_ms = SR_INTERVAL_MAX_MS,
                                    .hist_instance_ms = t,
                                    .hist_preemptions = preemptions,
                                    .hist_cost_ms = measured ? cost_ms : 0};
    sr_every_init(e, &a, t);
    sr_every_update(e, t);
}

/* One job of work_ms under one trace; fixed_ms 0 = auto. */
static void simulate(int bursty, uint64_t seed, int64_t work_ms, int64_t cost_ms, int64_t fixed_ms,
                     struct result *r)
{
    struct trace tr;
    trace_init(&tr, bursty, seed);
    int64_t t = 0, p = 0, saved = 0, next = trace_next(&tr);
    uint64_t n_pre = 0;
    int measured = 0;
    struct sr_every e;
    wrapper_start(&e, 0, 0, cost_ms, 0);
    while (p < work_ms) {
        const int64_t every = fixed_ms ? fixed_ms : e.interval_ms;
        const int64_t seg = every < work_ms - p ? every : work_ms - p;
        const int last = seg == work_ms - p; /* the job ends: no checkpoint needed */
        const int64_t busy = seg + (last ? 0 : cost_ms);
        if (next < t + busy) { /* preempted: back to the last checkpoint */
            r->lost_ms += (double)(p - saved + (next - t));
            t = next;
            p = saved;
            n_pre++;
            next = trace_next(&tr);
            if (!fixed_ms)
                wrapper_start(&e, t, n_pre, cost_ms, measured);
            continue;
        }
        t += busy;
        p += seg;
        if (last)
            break;
        saved = p;
        r->overhead_ms += (double)cost_ms;
        r->checkpoints++;
        r->interval_sum += (double)every;
        if (!fixed_ms) {
            measured = 1;
            sr_every_sample(&e, cost_ms);
            sr_every_update(&e, t);
        }
    }
    r->preemptions += (double)n_pre;
}

static void row(const char *name, const struct result *r, int seeds, int64_t work_ms)
{
    const double n = seeds, h = (double)HOUR_MS;
    char avg[32];
    sr_format_duration_ms(r->checkpoints ? (int64_t)(r->interval_sum / r->checkpoints) : 0, avg,
                          sizeof(avg));
    printf("  %-22s %9s %11.2f %13.2f %13.2f %8.2f%% %8.1f\n", name, avg, r->lost_ms / n / h,
           r->overhead_ms / n / h, (r->lost_ms + r->overhead_ms) / n / h,
           100.0 * (r->lost_ms + r->overhead_ms) / n / (double)work_ms, r->preemptions / n);
}

int main(int argc, char **argv)
{
    const double cost_s = argc > 1 ? atof(argv[1]) : 30;
    const int seeds = argc > 2 ? atoi(argv[2]) : 50;
    const double work_h = argc > 3 ? atof(argv[3]) : 720;
    if (cost_s <= 0 || seeds <= 0 || work_h <= 0) {
        fprintf(stderr, "usage: sim_interval [COST_SECONDS [SEEDS [WORK_HOURS]]]\n");
        return 64;
    }
    const int64_t cost_ms = (int64_t)(cost_s * 1000), work_ms = (int64_t)(work_h * HOUR_MS);
    static const int64_t fixed[] = {1 * MIN_MS,  2 * MIN_MS,  5 * MIN_MS, 10 * MIN_MS, 15 * MIN_MS,
                                    20 * MIN_MS, 30 * MIN_MS, HOUR_MS,    2 * HOUR_MS};
    const size_t nf = sizeof(fixed) / sizeof(fixed[0]);
    for (int bursty = 0; bursty <= 1; bursty++) {
        printf("\ntrace %s, checkpoint cost %.0fs, %.0fh of work, mean of %d traces:\n",
               bursty ? "bursty (calm MTBF 24h / storms MTBF 20m, ~3h overall)"
                      : "poisson (MTBF 6h)",
               cost_s, work_h, seeds);
        printf("  %-22s %9s %11s %13s %13s %9s %8s\n", "policy", "interval", "lost (h)",
               "overhead (h)", "waste (h)", "waste", "preempt");
        double best = -1;
        size_t best_i = 0;
        for (size_t i = 0; i <= nf; i++) {
            struct result r = {0};
            for (int s = 0; s < seeds; s++)
                simulate(bursty, UINT64_C(1000) + (uint64_t)s, work_ms, cost_ms,
                         i < nf ? fixed[i] : 0, &r);
            char name[48], d[32];
            if (i < nf) {
                sr_format_duration_ms(fixed[i], d, sizeof(d));
                snprintf(name, sizeof(name), "fixed %s", d);
            } else {
                snprintf(name, sizeof(name), "auto");
            }
            row(name, &r, seeds, work_ms);
            const double waste = r.lost_ms + r.overhead_ms;
            if (i < nf && (best < 0 || waste < best)) {
                best = waste;
                best_i = i;
            }
            if (i == nf) {
                char b[32];
                sr_format_duration_ms(fixed[best_i], b, sizeof(b));
                printf("  auto wastes %.2fx the best fixed interval's (%s)\n", waste / best, b);
            }
        }
    }
    return 0;
}
