/*
 * gpu_sampler.h - GPU utilization measured while the job runs: a thread of
 * the wrapper samples NVML (nvml.h) every sample_ms for the devices the
 * job may use (its CUDA_VISIBLE_DEVICES) and folds each attempt's samples
 * into its statistics (gpu_stats.h), which the supervisor writes as "gpu"
 * events (docs/events.md). Every sample is also told to the event
 * observer as a "gpu_live" reading (per device: utilization, memory used,
 * power), never logged: the metrics file's live gauges.
 *
 * DESIGN: NVML is opened by the thread itself, so a slow nvmlInit (seconds
 * on a machine without persistence mode) never holds up the supervisor's
 * loop. No NVML, no device selected, or any NVML call failing: the thread
 * says so once at debug level (-v) and samples no more; what it sampled
 * stays. The thread samples only between sr_gpu_sampler_begin and
 * sr_gpu_sampler_end (an attempt's job running).
 *
 * Threads: the sampler's own, and the supervisor's calling the functions
 * below; one mutex guards the statistics. Lock order: the sampler's lock,
 * then the observer's (the live reading is told under it, so that none
 * arrives after the attempt ended).
 */
#ifndef SPOTRUN_GPU_SAMPLER_H
#define SPOTRUN_GPU_SAMPLER_H

#include <jansson.h>
#include <stdint.h>

#include "gpu_stats.h"

#define SR_GPU_SAMPLE_MS_DEFAULT 5000
#define SR_GPU_SAMPLE_MS_MIN 10
#define SR_GPU_SAMPLE_MS_MAX 3600000
/* The supervisor writes the attempt's "gpu" event every this many sample
 * periods (a minute at the default), so that an attempt whose wrapper
 * vanishes keeps its numbers, and once more when the job exits. */
#define SR_GPU_EVENT_EVERY 12

struct sr_gpu_sampler;

/* SPOTRUN_GPU_SAMPLE_MS: the sample period in ms (default 5000; 0 turns
 * sampling off). -EINVAL when it is not a whole number in
 * [SR_GPU_SAMPLE_MS_MIN, SR_GPU_SAMPLE_MS_MAX] or 0. */
int sr_gpu_sample_ms_env(int64_t *ms);

/* Starts the thread; cvd is the job's CUDA_VISIBLE_DEVICES (NULL = unset),
 * copied. sample_ms 0: *out = NULL and nothing starts. */
int sr_gpu_sampler_start(int64_t sample_ms, const char *cvd, struct sr_gpu_sampler **out);
/* An attempt's job started: its statistics start empty. NULL is fine. */
void sr_gpu_sampler_begin(struct sr_gpu_sampler *g);
/* The attempt's statistics so far (samples 0: none). NULL is fine. */
void sr_gpu_sampler_peek(struct sr_gpu_sampler *g, struct sr_gpu_summary *out);
/* The attempt's job ended: its statistics, and no more samples until the
 * next begin. NULL is fine. */
void sr_gpu_sampler_end(struct sr_gpu_sampler *g, struct sr_gpu_summary *out);
/* Stops the thread, closes NVML, frees. NULL is fine. */
void sr_gpu_sampler_stop(struct sr_gpu_sampler *g);

/* The "gpu" event's fields of s (docs/events.md). */
json_t *sr_gpu_summary_json(const struct sr_gpu_summary *s);

#endif
