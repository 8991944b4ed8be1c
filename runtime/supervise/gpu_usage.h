/*
 * gpu_usage.h - the wrapper's view of the GPU memory its job uses: the
 * shim's accounting pages (preload/gpu_page.h) in the run's gpu directory,
 * one per process, summed per device.
 *
 * Peaks are the sum of per-process peaks (an upper bound of the job's
 * simultaneous peak), and sr_gpu_usage_read() keeps the highest value seen
 * across calls, so the figure covers every attempt of this wrapper.
 */
#ifndef SPOTRUN_GPU_USAGE_H
#define SPOTRUN_GPU_USAGE_H

#include <stdint.h>

#define SR_GPU_DEVICES 16

struct sr_gpu_usage {
    int devices;                   /* 1 + highest device with any use; 0 = none seen */
    uint64_t peak[SR_GPU_DEVICES]; /* device + managed bytes */
    uint64_t current[SR_GPU_DEVICES];
    uint64_t allocs, failed;
};

/* Reads every page in dir and merges it into u (peaks only grow).
 * Returns the number of valid pages read (0 when dir is absent). */
int sr_gpu_usage_read(const char *dir, struct sr_gpu_usage *u);

/* Removes the pages of a previous attempt; creates dir. */
int sr_gpu_usage_reset(const char *dir);

#endif
