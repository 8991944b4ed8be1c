/*
 * metrics.c - the Prometheus metrics file of `spotrun run` (see metrics.h).
 */
#include "metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "log.h"
#include "units.h"

#define REFRESH_MS 10000

struct sr_metrics {
    char *path, *run_id;
    struct sr_history h;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t thread;
    int stop, warned;
};

static const double buckets[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

/* A label value: backslash, double quote and newline escaped. */
static void label_value(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            fprintf(f, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{run="...",extra} value */
static void sample(FILE *f, const char *name, const char *run, const char *label, const char *value,
                   double v)
{
    fprintf(f, "%s{run=\"", name);
    label_value(f, run);
    fputc('"', f);
    if (label) {
        fprintf(f, ",%s=\"", label);
        label_value(f, value);
        fputc('"', f);
    }
    /* The shortest form that reads back as v: 0.31, not 0.31000000000000000. */
    char num[32];
    snprintf(num, sizeof(num), "%.15g", v);
    if (strtod(num, NULL) != v)
        snprintf(num, sizeof(num), "%.17g", v);
    fprintf(f, "} %s\n", num);
}

static void histogram(FILE *f, const char *name, const char *help, const char *run,
                      const struct sr_history *h, int persist)
{
    unsigned counts[N_BUCKETS] = {0}, n = 0;
    double sum = 0;
    for (size_t i = 0; i < h->n_ck; i++) {
        const struct sr_hist_ckpt *c = &h->ck[i];
        if (persist ? !c->persisted_ms : !c->staged_ms)
            continue;
        const double s = persist ? c->persist_seconds : c->stage_seconds;
        n++;
        sum += s;
        for (size_t b = 0; b < N_BUCKETS; b++)
            if (s <= buckets[b])
                counts[b]++;
    }
    char full[96], le[32];
    family(f, name, "histogram", help);
    snprintf(full, sizeof(full), "%s_bucket", name);
    for (size_t b = 0; b < N_BUCKETS; b++) {
        snprintf(le, sizeof(le), "%g", buckets[b]);
        sample(f, full, run, "le", le, counts[b]);
    }
    sample(f, full, run, "le", "+Inf", n);
    snprintf(full, sizeof(full), "%s_sum", name);
    sample(f, full, run, NULL, NULL, sum);
    snprintf(full, sizeof(full), "%s_count", name);
    sample(f, full, run, NULL, NULL, n);
}

static void counters(FILE *f, const char *run, const struct sr_history *h)
{
    family(f, "spotrun_attempts_total", "counter", "Starts of the job (attempts) in this run.");
    sample(f, "spotrun_attempts_total", run, NULL, NULL, (double)h->n_att);
    family(f, "spotrun_preemptions_total", "counter", "Preemptions of the run.");
    sample(f, "spotrun_preemptions_total", run, NULL, NULL, h->preemptions);
    family(f, "spotrun_preemptions_by_source_total", "counter",
           "Preemptions of the run by notice source.");
    for (size_t i = 0; i < h->n_sources; i++)
        sample(f, "spotrun_preemptions_by_source_total", run, "source", h->by_source[i].name,
               h->by_source[i].n);
    family(f, "spotrun_failures_total", "counter",
           "Attempts that ended in a crash, a give-up or a vanished wrapper.");
    sample(f, "spotrun_failures_total", run, NULL, NULL, h->failures);
    family(f, "spotrun_failures_by_cause_total", "counter", "Failures by cause.");
    for (size_t i = 0; i < h->n_causes; i++)
        sample(f, "spotrun_failures_by_cause_total", run, "cause", h->by_cause[i].name,
               h->by_cause[i].n);
    family(f, "spotrun_attempt_ends_total", "counter",
           "Ended attempts by cause: done, preempted, vanished, crashed, oom, stalled, "
           "time-limit, budget, lease-lost (docs/events.md).");
    for (int c = SR_CAUSE_DONE; c < SR_CAUSE_COUNT; c++)
        sample(f, "spotrun_attempt_ends_total", run, "cause",
               sr_hist_cause_name((enum sr_hist_cause)c), h->ends[c]);
    family(f, "spotrun_restarts_total", "counter", "Restarts after crashes.");
    sample(f, "spotrun_restarts_total", run, NULL, NULL, h->restarts);
    family(f, "spotrun_checkpoints_total", "counter",
           "Checkpoints staged (packed locally) and made durable (in the store).");
    sample(f, "spotrun_checkpoints_total", run, "phase", "staged", h->staged);
    sample(f, "spotrun_checkpoints_total", run, "phase", "durable", h->durable);
    family(f, "spotrun_checkpoint_bytes_total", "counter",
           "Bytes of durable checkpoints, raw (the directory) and stored (compressed).");
    sample(f, "spotrun_checkpoint_bytes_total", run, "kind", "raw", (double)h->raw_bytes);
    sample(f, "spotrun_checkpoint_bytes_total", run, "kind", "stored", (double)h->stored_bytes);
    family(f, "spotrun_lost_work_seconds_total", "counter",
           "Training time lost to preemptions and crashes (since the newest durable checkpoint).");
    sample(f, "spotrun_lost_work_seconds_total", run, NULL, NULL, (double)h->lost_ms / 1000.0);
}

/* name{run="...",gpu="N"} value */
static void gpu_sample(FILE *f, const char *name, const char *run, unsigned gpu, double v)
{
    char idx[16];
    snprintf(idx, sizeof(idx), "%u", gpu);
    sample(f, name, run, "gpu", idx, v);
}

/* GPU utilization (NVML): each device's newest reading while the job runs,
 * and the mean of the newest attempt that sampled any. */
static void gpu_gauges(FILE *f, const char *run, const struct sr_history *h)
{
    const struct sr_hist_gpu_live *l = &h->gpu_live;
    if (l->n && h->state == SR_STATE_RUNNING) {
        family(f, "spotrun_gpu_utilization_percent", "gauge",
               "Share of the last sample period a kernel ran on the GPU (NVML), per device.");
        for (size_t i = 0; i < l->n; i++)
            gpu_sample(f, "spotrun_gpu_utilization_percent", run, l->dev[i].gpu, l->dev[i].util);
        family(f, "spotrun_gpu_memory_used_bytes", "gauge",
               "GPU memory in use on the device, by every process (NVML), per device.");
        for (size_t i = 0; i < l->n; i++)
            gpu_sample(f, "spotrun_gpu_memory_used_bytes", run, l->dev[i].gpu,
                       (double)l->dev[i].mem_used);
        int power = 0;
        for (size_t i = 0; i < l->n; i++)
            power |= l->dev[i].power_w >= 0;
        if (power)
            family(f, "spotrun_gpu_power_watts", "gauge",
                   "Power draw of the GPU (NVML), per device.");
        for (size_t i = 0; power && i < l->n; i++)
            if (l->dev[i].power_w >= 0)
                gpu_sample(f, "spotrun_gpu_power_watts", run, l->dev[i].gpu, l->dev[i].power_w);
    }
    for (size_t i = h->n_att; i-- > 0;) {
        const struct sr_hist_attempt *a = &h->att[i];
        if (!a->gpu_samples)
            continue;
        family(f, "spotrun_gpu_attempt_utilization_mean_percent", "gauge",
               "Mean GPU utilization of the newest attempt that sampled any, over its devices "
               "(its last gpu event).");
        sample(f, "spotrun_gpu_attempt_utilization_mean_percent", run, NULL, NULL,
               a->gpu_util_mean);
        family(f, "spotrun_gpu_attempt_idle_ratio", "gauge",
               "Share of that attempt's samples under 5 % utilization.");
        sample(f, "spotrun_gpu_attempt_idle_ratio", run, NULL, NULL, a->gpu_idle_share);
        break;
    }
}

/* The job's own metrics (`spotrun metric`): newest value, its step, best. */
static void job_metrics(FILE *f, const char *run, const struct sr_history *h)
{
    if (!h->n_met)
        return;
    family(f, "spotrun_job_metric", "gauge",
           "The newest value of each metric the job reported (spotrun metric).");
    for (size_t i = 0; i < h->n_met; i++)
        sample(f, "spotrun_job_metric", run, "name", h->met[i].name, h->met[i].last);
    family(f, "spotrun_job_metric_step", "gauge",
           "The step of the newest value (metrics reported with a step).");
    for (size_t i = 0; i < h->n_met; i++)
        if (h->met[i].last_step >= 0)
            sample(f, "spotrun_job_metric_step", run, "name", h->met[i].name,
                   (double)h->met[i].last_step);
    family(f, "spotrun_job_metric_best", "gauge",
           "The best value of each metric: the smallest, or the largest for names like acc, "
           "f1, reward, score (docs/json-schema.md).");
    for (size_t i = 0; i < h->n_met; i++)
        sample(f, "spotrun_job_metric_best", run, "name", h->met[i].name,
               sr_hist_metric_best(&h->met[i], sr_hist_metric_maximized(h->met[i].name)));
}

void sr_metrics_render(FILE *f, const char *run, const struct sr_history *h, int64_t now_ms)
{
    family(f, "spotrun_state", "gauge", "1 for the run's current state, 0 for the others.");
    for (int s = SR_STATE_RUNNING; s <= SR_STATE_STOPPED; s++)
        sample(f, "spotrun_state", run, "state", sr_hist_state_name(s),
               h->state == (enum sr_hist_state)s);
    counters(f, run, h);
    if (h->last_durable_ms) {
        family(f, "spotrun_last_checkpoint_timestamp_seconds", "gauge",
               "Unix time the newest checkpoint became durable.");
        sample(f, "spotrun_last_checkpoint_timestamp_seconds", run, NULL, NULL,
               (double)h->last_durable_ms / 1000.0);
        family(f, "spotrun_last_checkpoint_age_seconds", "gauge",
               "Age of the newest durable checkpoint when this file was written.");
        sample(f, "spotrun_last_checkpoint_age_seconds", run, NULL, NULL,
               (double)(now_ms - h->last_durable_ms) / 1000.0);
    }
    if (h->gpu_bytes) {
        family(f, "spotrun_gpu_memory_bytes", "gauge", "GPU memory the job holds (from the shim).");
        sample(f, "spotrun_gpu_memory_bytes", run, NULL, NULL, (double)h->gpu_bytes);
    }
    if (h->gpu_peak_bytes) {
        family(f, "spotrun_gpu_memory_peak_bytes", "gauge",
               "Peak GPU memory of the job (from the shim).");
        sample(f, "spotrun_gpu_memory_peak_bytes", run, NULL, NULL, (double)h->gpu_peak_bytes);
    }
    gpu_gauges(f, run, h);
    job_metrics(f, run, h);
    histogram(f, "spotrun_checkpoint_stage_seconds",
              "Time to stage a checkpoint (pack and compress; the job waits for it).", run, h, 0);
    histogram(f, "spotrun_checkpoint_persist_seconds",
              "Time to make a staged checkpoint durable in the store.", run, h, 1);
    family(f, "spotrun_metrics_updated_timestamp_seconds", "gauge",
           "Unix time this file was written.");
    sample(f, "spotrun_metrics_updated_timestamp_seconds", run, NULL, NULL,
           (double)now_ms / 1000.0);
}

/* Under m->lock. */
static void write_file(struct sr_metrics *m)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return;
    sr_metrics_render(mem, m->run_id, &m->h, sr_wall_ms());
    fclose(mem);
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", m->path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    int ok = f && fwrite(buf, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = 0;
    if (ok && rename(tmp, m->path) < 0)
        ok = 0;
    if (!ok) {
        if (!m->warned)
            sr_warn("cannot write the metrics file %s: %s", m->path, strerror(errno));
        m->warned = 1;
        unlink(tmp);
    }
    free(buf);
}

static void observe(void *ctx, const json_t *ev)
{
    struct sr_metrics *m = ctx;
    pthread_mutex_lock(&m->lock);
    sr_hist_add(&m->h, ev);
    sr_hist_derive(&m->h);
    write_file(m);
    pthread_mutex_unlock(&m->lock);
}

static void *refresher(void *arg)
{
    struct sr_metrics *m = arg;
    pthread_mutex_lock(&m->lock);
    while (!m->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += REFRESH_MS / 1000;
        if (pthread_cond_timedwait(&m->cond, &m->lock, &ts) == ETIMEDOUT && !m->stop)
            write_file(m);
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

int sr_metrics_open(struct sr_metrics **out, const char *path, struct sr_store *st,
                    const char *run_id, const struct sr_hist_logs *logs)
{
    struct sr_metrics *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->path = strdup(path);
    m->run_id = strdup(run_id);
    sr_hist_init(&m->h);
    int rc = m->path && m->run_id ? 0 : -ENOMEM;
    if (rc == 0 && logs)
        sr_hist_from_logs(logs, &m->h);
    else if (rc == 0)
        rc = sr_hist_load(st, run_id, &m->h);
    if (rc < 0) {
        sr_hist_free(&m->h);
        free(m->path);
        free(m->run_id);
        free(m);
        return rc;
    }
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->cond, NULL);
    pthread_mutex_lock(&m->lock);
    write_file(m);
    pthread_mutex_unlock(&m->lock);
    /* The thread must not take the signals the supervisor reads from its
     * signalfd (SIGCHLD above all): it starts with every signal blocked. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&m->thread, NULL, refresher, m) != 0)
        abort(); /* out of threads at start-up: nothing sensible to do */
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    sr_events_observe(observe, m);
    *out = m;
    return 0;
}

void sr_metrics_close(struct sr_metrics *m)
{
    if (!m)
        return;
    sr_events_observe(NULL, NULL);
    pthread_mutex_lock(&m->lock);
    m->stop = 1;
    pthread_cond_broadcast(&m->cond);
    pthread_mutex_unlock(&m->lock);
    pthread_join(m->thread, NULL);
    write_file(m);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->cond);
    sr_hist_free(&m->h);
    free(m->path);
    free(m->run_id);
    free(m);
}
