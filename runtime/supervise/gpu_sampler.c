/*
 * gpu_sampler.c - the GPU utilization sampling thread (see gpu_sampler.h).
 */
#include "gpu_sampler.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "events.h"
#include "log.h"
#include "nvml.h"

struct sr_gpu_sampler {
    int64_t sample_ms;
    char *cvd; /* NULL = unset */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    /* under lock */
    int stop, active;
    unsigned devices;
    struct sr_gpu_stats stats;
};

int sr_gpu_sample_ms_env(int64_t *ms)
{
    *ms = SR_GPU_SAMPLE_MS_DEFAULT;
    const char *v = getenv("SPOTRUN_GPU_SAMPLE_MS");
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    const long long x = strtoll(v, &end, 10);
    if (errno || *end || end == v || v[0] == '-' || v[0] == '+' ||
        (x != 0 && (x < SR_GPU_SAMPLE_MS_MIN || x > SR_GPU_SAMPLE_MS_MAX)))
        return -EINVAL;
    *ms = x;
    return 0;
}

static void add_ms(struct timespec *ts, int64_t ms)
{
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* The devices to sample, or 0 (said at debug level). */
static int open_devices(const struct sr_gpu_sampler *g, struct sr_nvml **nv,
                        struct sr_nvml_dev *devs)
{
    int rc = sr_nvml_open(nv);
    if (rc < 0) {
        sr_debug("GPU utilization is not sampled: %s", sr_strerror(rc));
        return 0;
    }
    char note[512];
    rc = sr_nvml_select(*nv, g->cvd, devs, SR_NVML_MAX_DEVICES, note, sizeof(note));
    if (rc <= 0) {
        if (rc < 0)
            sr_debug("GPU utilization is not sampled: %s", sr_strerror(rc));
        else
            sr_debug("GPU utilization is not sampled: CUDA_VISIBLE_DEVICES=\"%s\" selects no "
                     "GPU%s%s",
                     g->cvd ? g->cvd : "", note[0] ? ": " : "", note);
        sr_nvml_close(*nv);
        *nv = NULL;
        return 0;
    }
    if (note[0])
        sr_debug("GPU utilization: %s", note);
    return rc;
}

/* Under g->lock: the reading of each device to the observer. */
static void tell_live(const struct sr_nvml_dev *devs, const struct sr_nvml_reading *r, int nd)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < nd; i++) {
        json_t *d = json_pack("{s:i,s:i,s:I}", "gpu", (int)devs[i].index, "util", (int)r[i].util,
                              "mem_used", (json_int_t)r[i].mem_used);
        if (d && r[i].power_w >= 0)
            json_object_set_new(d, "power_w", json_real(r[i].power_w));
        json_array_append_new(arr, d);
    }
    if (arr)
        sr_events_tell("gpu_live", json_pack("{s:o}", "devices", arr));
}

static void *sampler(void *arg)
{
    struct sr_gpu_sampler *g = arg;
    struct sr_nvml *nv = NULL;
    struct sr_nvml_dev devs[SR_NVML_MAX_DEVICES];
    struct sr_nvml_reading r[SR_NVML_MAX_DEVICES];
    const int nd = open_devices(g, &nv, devs);
    pthread_mutex_lock(&g->lock);
    g->devices = (unsigned)nd;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (nd > 0 && !g->stop) {
        add_ms(&next, g->sample_ms);
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec > next.tv_sec || (t.tv_sec == next.tv_sec && t.tv_nsec > next.tv_nsec))
            next = t; /* fell behind (slow NVML calls): no burst of samples to catch up */
        while (!g->stop && pthread_cond_timedwait(&g->cond, &g->lock, &next) != ETIMEDOUT)
            ;
        if (g->stop)
            break;
        if (!g->active)
            continue;
        pthread_mutex_unlock(&g->lock); /* NVML calls may take a while */
        int rc = 0;
        for (int i = 0; i < nd && rc == 0; i++)
            rc = sr_nvml_read(nv, &devs[i], &r[i]);
        pthread_mutex_lock(&g->lock);
        if (rc < 0) {
            sr_debug("GPU utilization sampling stopped: %s", sr_strerror(rc));
            break;
        }
        if (!g->active) /* the attempt ended while we read */
            continue;
        for (int i = 0; i < nd; i++)
            sr_gpu_stats_add(&g->stats, r[i].util, r[i].mem_used, r[i].power_w);
        tell_live(devs, r, nd);
    }
    pthread_mutex_unlock(&g->lock);
    sr_nvml_close(nv);
    return NULL;
}

int sr_gpu_sampler_start(int64_t sample_ms, const char *cvd, struct sr_gpu_sampler **out)
{
    *out = NULL;
    if (sample_ms <= 0)
        return 0;
    struct sr_gpu_sampler *g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->sample_ms = sample_ms;
    if (cvd && !(g->cvd = strdup(cvd))) {
        free(g);
        return -ENOMEM;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&g->lock, NULL);
    /* The thread must not take the signals the supervisor reads from its
     * signalfd: it starts with every signal blocked. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    const int rc = pthread_create(&g->thread, NULL, sampler, g);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&g->cond);
        pthread_mutex_destroy(&g->lock);
        free(g->cvd);
        free(g);
        return -rc;
    }
    *out = g;
    return 0;
}

void sr_gpu_sampler_begin(struct sr_gpu_sampler *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    sr_gpu_stats_reset(&g->stats);
    g->active = 1;
    pthread_mutex_unlock(&g->lock);
}

void sr_gpu_sampler_peek(struct sr_gpu_sampler *g, struct sr_gpu_summary *out)
{
    if (!g) {
        sr_gpu_stats_summary(&(struct sr_gpu_stats){0}, 0, out);
        return;
    }
    pthread_mutex_lock(&g->lock);
    sr_gpu_stats_summary(&g->stats, g->devices, out);
    pthread_mutex_unlock(&g->lock);
}

void sr_gpu_sampler_end(struct sr_gpu_sampler *g, struct sr_gpu_summary *out)
{
    if (!g) {
        sr_gpu_sampler_peek(g, out);
        return;
    }
    pthread_mutex_lock(&g->lock);
    sr_gpu_stats_summary(&g->stats, g->devices, out);
    g->active = 0;
    pthread_mutex_unlock(&g->lock);
}

void sr_gpu_sampler_stop(struct sr_gpu_sampler *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    g->stop = 1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->thread, NULL);
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
    free(g->cvd);
    free(g);
}

json_t *sr_gpu_summary_json(const struct sr_gpu_summary *s)
{
    json_t *o = json_pack("{s:I,s:i,s:f,s:f,s:f,s:f,s:I}", "samples", (json_int_t)s->samples,
                          "devices", (int)s->devices, "util_mean", s->util_mean, "util_p50",
                          s->util_p50, "util_p95", s->util_p95, "idle_share", s->idle_share,
                          "mem_used_max", (json_int_t)s->mem_used_max);
    if (o)
        json_object_set_new(o, "power_mean_w",
                            s->power_mean_w >= 0 ? json_real(s->power_mean_w) : json_null());
    return o;
}
