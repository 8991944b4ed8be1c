/*
 * gpu_stats.c - an attempt's GPU utilization statistics (see gpu_stats.h).
 */
#include "gpu_stats.h"

#include <math.h>
#include <string.h>

void sr_gpu_stats_reset(struct sr_gpu_stats *s)
{
    memset(s, 0, sizeof(*s));
}

void sr_gpu_stats_add(struct sr_gpu_stats *s, unsigned util, uint64_t mem_used, double power_w)
{
    if (util > 100)
        util = 100;
    s->n++;
    s->hist[util]++;
    s->util_sum += util;
    if (util < SR_GPU_IDLE_PERCENT)
        s->idle++;
    if (mem_used > s->mem_used_max)
        s->mem_used_max = mem_used;
    if (power_w >= 0) {
        s->power_sum_w += power_w;
        s->power_n++;
    }
}

double sr_gpu_stats_percentile(const struct sr_gpu_stats *s, double p)
{
    if (!s->n)
        return 0;
    if (p < 0)
        p = 0;
    if (p > 100)
        p = 100;
    /* rank in 1..n: ceil(p/100 * n), computed in integers where it is exact */
    uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)s->n - 1e-9);
    if (rank < 1)
        rank = 1;
    if (rank > s->n)
        rank = s->n;
    uint64_t seen = 0;
    for (unsigned v = 0; v <= 100; v++) {
        seen += s->hist[v];
        if (seen >= rank)
            return v;
    }
    return 100;
}

void sr_gpu_stats_summary(const struct sr_gpu_stats *s, unsigned devices,
                          struct sr_gpu_summary *out)
{
    memset(out, 0, sizeof(*out));
    out->samples = s->n;
    out->devices = devices;
    out->power_mean_w = -1;
    if (!s->n)
        return;
    out->util_mean = s->util_sum / (double)s->n;
    out->util_p50 = sr_gpu_stats_percentile(s, 50);
    out->util_p95 = sr_gpu_stats_percentile(s, 95);
    out->idle_share = (double)s->idle / (double)s->n;
    out->mem_used_max = s->mem_used_max;
    if (s->power_n)
        out->power_mean_w = s->power_sum_w / (double)s->power_n;
}
