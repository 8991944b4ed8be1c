/*
 * gpu_stats.h - one attempt's GPU utilization, folded from NVML samples
 * (gpu_sampler.h): mean, median and 95th percentile of the utilization
 * over every sample of every device, the share of idle samples, the
 * highest memory used and the mean power draw.
 *
 * NVML reports utilization in whole percent (0..100), so the samples are
 * kept as a histogram of 101 counts: exact percentiles in constant memory,
 * however long the attempt. Percentiles are nearest-rank: the smallest
 * value v such that at least p % of the samples are <= v.
 *
 * Pure and not thread-safe: the sampler holds its lock around it.
 */
#ifndef SPOTRUN_GPU_STATS_H
#define SPOTRUN_GPU_STATS_H

#include <stdint.h>

/* A sample below this utilization (percent) is idle. */
#define SR_GPU_IDLE_PERCENT 5

struct sr_gpu_stats {
    uint64_t n;         /* samples, of every device */
    uint64_t hist[101]; /* samples by utilization percent */
    double util_sum;
    uint64_t idle;
    uint64_t mem_used_max; /* bytes */
    double power_sum_w;    /* over the samples that had a power reading */
    uint64_t power_n;
};

/* What the "gpu" event says (docs/events.md); power_mean_w < 0 when no
 * sample had a power reading. */
struct sr_gpu_summary {
    uint64_t samples;
    unsigned devices;
    double util_mean, util_p50, util_p95, idle_share, power_mean_w;
    uint64_t mem_used_max;
};

void sr_gpu_stats_reset(struct sr_gpu_stats *s);
/* One device's sample: util in percent (values above 100 count as 100),
 * memory used in bytes, power in watts (power_w < 0: no reading). */
void sr_gpu_stats_add(struct sr_gpu_stats *s, unsigned util, uint64_t mem_used, double power_w);
/* The nearest-rank percentile p (0..100) of the utilization; 0 without samples. */
double sr_gpu_stats_percentile(const struct sr_gpu_stats *s, double p);
void sr_gpu_stats_summary(const struct sr_gpu_stats *s, unsigned devices,
                          struct sr_gpu_summary *out);

#endif
