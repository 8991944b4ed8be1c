/*
 * interval.c - the Young/Daly checkpoint interval (see interval.h).
 */
#include "interval.h"

#include <math.h>

int64_t sr_interval_optimum(int64_t cost_ms, int64_t mtbf_ms, int64_t min_ms, int64_t max_ms,
                            int *bound)
{
    int b = 0;
    int64_t hi = max_ms;
    if (mtbf_ms > 0 && mtbf_ms / 2 < hi)
        hi = mtbf_ms / 2;
    double t = 0;
    if (cost_ms > 0 && mtbf_ms > 0)
        t = sqrt(2.0 * (double)cost_ms * (double)mtbf_ms);
    int64_t ms;
    if (t > (double)hi) {
        ms = hi;
        b = 1;
    } else {
        ms = (int64_t)llround(t);
    }
    if (ms < min_ms) {
        ms = min_ms;
        b = -1;
    }
    if (bound)
        *bound = b;
    return ms;
}

int64_t sr_interval_loss_ms(int64_t interval_ms, int64_t cost_ms)
{
    return interval_ms / 2 + (cost_ms > 0 ? cost_ms : 0);
}

double sr_interval_overhead(int64_t interval_ms, int64_t cost_ms)
{
    return interval_ms > 0 && cost_ms > 0 ? (double)cost_ms / (double)interval_ms : 0.0;
}

int64_t sr_interval_mtbf(int64_t instance_ms, uint64_t preemptions, int64_t prior_ms)
{
    if (preemptions == 0 || instance_ms <= 0)
        return prior_ms;
    return instance_ms / (int64_t)preemptions;
}
