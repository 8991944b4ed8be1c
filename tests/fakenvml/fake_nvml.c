/*
 * fake_nvml.c - a fake NVML (libnvidia-ml.so.1) for machines without a GPU:
 * the calls spotrun samples with (nvmlInit_v2, nvmlShutdown,
 * nvmlErrorString, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2,
 * nvmlDeviceGetHandleByUUID, nvmlDeviceGetUtilizationRates,
 * nvmlDeviceGetMemoryInfo, nvmlDeviceGetPowerUsage), with the types and
 * return codes of NVIDIA's NVML API reference.
 *
 * FAKENVML_TRACE names a trace file; without it there are no devices.
 * Lines (# comments):
 *   gpu UUID MEM_USED POWER_MW UTIL[,UTIL...]
 *        a device (indices in the order given): its UUID, memory used in
 *        bytes (total is twice that, at least 1 GiB), power in milliwatts
 *        or "-" (NVML_ERROR_NOT_SUPPORTED), and the utilization each
 *        successive nvmlDeviceGetUtilizationRates call returns
 *   after hold|cycle|lost
 *        past the end of a device's sequence: repeat the last value
 *        (hold, the default), start again (cycle), or fail every call from
 *        then on with NVML_ERROR_GPU_IS_LOST (lost: NVML failing mid-run)
 *   init fail
 *        nvmlInit_v2 returns NVML_ERROR_DRIVER_NOT_LOADED
 * FAKENVML_LOG names a file that gets a line per utilization read
 * ("util GPU VALUE", or "lost GPU" once a device is lost), so that a test
 * knows how far sampling went.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* NVML's types and codes, as documented. */
typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlUtilization_st {
    unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct nvmlMemory_st {
    unsigned long long total, free, used;
} nvmlMemory_t;

#define MAX_DEV 16
#define MAX_SEQ 4096

struct nvmlDevice_st {
    char uuid[96];
    unsigned long long used;
    long power_mw; /* < 0: not supported */
    unsigned seq[MAX_SEQ];
    size_t n, next;
    int lost;
};

enum after { HOLD, CYCLE, LOST };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvmlDevice_st devs[MAX_DEV];
static unsigned n_dev;
static int inits, fail_init;
static enum after after = HOLD;

/* "util GPU VALUE" (value >= 0) or "lost GPU" to FAKENVML_LOG. */
static void note(const char *kind, unsigned gpu, int value)
{
    const char *path = getenv("FAKENVML_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    if (value >= 0)
        fprintf(f, "%s %u %d\n", kind, gpu, value);
    else
        fprintf(f, "%s %u\n", kind, gpu);
    fclose(f);
}

static void load(void)
{
    n_dev = 0;
    fail_init = 0;
    after = HOLD;
    const char *path = getenv("FAKENVML_TRACE");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return;
    char line[65536];
    while (fgets(line, sizeof(line), f)) {
        char word[16], a[96], b[32], c[32];
        if (line[0] == '#' || sscanf(line, "%15s", word) != 1)
            continue;
        if (strcmp(word, "init") == 0 && sscanf(line, "%*s %95s", a) == 1) {
            fail_init = strcmp(a, "fail") == 0;
        } else if (strcmp(word, "after") == 0 && sscanf(line, "%*s %95s", a) == 1) {
            after = strcmp(a, "cycle") == 0 ? CYCLE : strcmp(a, "lost") == 0 ? LOST : HOLD;
        } else if (strcmp(word, "gpu") == 0 && n_dev < MAX_DEV) {
            int off = 0;
            if (sscanf(line, "%*s %95s %31s %31s %n", a, b, c, &off) != 3)
                continue;
            struct nvmlDevice_st *d = &devs[n_dev++];
            memset(d, 0, sizeof(*d));
            snprintf(d->uuid, sizeof(d->uuid), "%s", a);
            d->used = strtoull(b, NULL, 10);
            d->power_mw = strcmp(c, "-") == 0 ? -1 : strtol(c, NULL, 10);
            for (char *p = line + off; *p && d->n < MAX_SEQ;) {
                char *end;
                const unsigned long v = strtoul(p, &end, 10);
                if (end == p)
                    break;
                d->seq[d->n++] = (unsigned)v;
                p = end + (*end == ',');
            }
        }
    }
    fclose(f);
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    pthread_mutex_lock(&lock);
    if (inits == 0)
        load();
    const int fail = fail_init;
    if (!fail)
        inits++;
    pthread_mutex_unlock(&lock);
    return fail ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    pthread_mutex_lock(&lock);
    const int was = inits;
    if (inits)
        inits--;
    pthread_mutex_unlock(&lock);
    return was ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    default:
        return "Unknown Error";
    }
}

/* Under lock: NVML_SUCCESS when initialised and d is one of ours and not lost. */
static nvmlReturn_t check(nvmlDevice_t d)
{
    if (!inits)
        return NVML_ERROR_UNINITIALIZED;
    if (!d || d < devs || d >= devs + n_dev)
        return NVML_ERROR_INVALID_ARGUMENT;
    return d->lost ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&lock);
    const nvmlReturn_t r = inits ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
    if (r == NVML_SUCCESS)
        *count = n_dev;
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (!device)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&lock);
    nvmlReturn_t r = !inits           ? NVML_ERROR_UNINITIALIZED
                     : index >= n_dev ? NVML_ERROR_INVALID_ARGUMENT
                                      : NVML_SUCCESS;
    if (r == NVML_SUCCESS)
        *device = &devs[index];
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    if (!uuid || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&lock);
    nvmlReturn_t r = inits ? NVML_ERROR_NOT_FOUND : NVML_ERROR_UNINITIALIZED;
    for (unsigned i = 0; inits && i < n_dev; i++)
        if (strcmp(devs[i].uuid, uuid) == 0) {
            *device = &devs[i];
            r = NVML_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    if (!u)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&lock);
    nvmlReturn_t r = check(d);
    if (r == NVML_SUCCESS && d->next >= d->n && after == LOST) {
        d->lost = 1;
        note("lost", (unsigned)(d - devs), -1);
        r = NVML_ERROR_GPU_IS_LOST;
    }
    if (r == NVML_SUCCESS) {
        size_t i = d->next;
        if (i >= d->n)
            i = d->n == 0 ? 0 : after == CYCLE ? i % d->n : d->n - 1;
        u->gpu = d->n ? d->seq[i] : 0;
        u->memory = u->gpu / 2;
        d->next++;
        note("util", (unsigned)(d - devs), (int)u->gpu);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    if (!m)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&lock);
    const nvmlReturn_t r = check(d);
    if (r == NVML_SUCCESS) {
        m->used = d->used;
        m->total = d->used * 2 > (1ull << 30) ? d->used * 2 : 1ull << 30;
        m->free = m->total - m->used;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *power)
{
    if (!power)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&lock);
    nvmlReturn_t r = check(d);
    if (r == NVML_SUCCESS && d->power_mw < 0)
        r = NVML_ERROR_NOT_SUPPORTED;
    if (r == NVML_SUCCESS)
        *power = (unsigned int)d->power_mw;
    pthread_mutex_unlock(&lock);
    return r;
}
