/*
 * nvml.c - NVML through dlopen (see nvml.h).
 *
 * The types and entry points below are declared here from NVIDIA's NVML
 * API reference (nvml.h is not needed to build): nvmlReturn_t is an int
 * enum with NVML_SUCCESS 0, a device is an opaque pointer, utilization is
 * two unsigned ints (gpu, memory), memory info is three unsigned long longs
 * (total, free, used; bytes), power usage is unsigned milliwatts.
 */
#include "nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

/* The entry points used, in one table: name, return, parameters. */
#define SR_NVML_CALLS(X)                                                                           \
    X(nvmlInit_v2, nvmlReturn_t, (void))                                                           \
    X(nvmlShutdown, nvmlReturn_t, (void))                                                          \
    X(nvmlErrorString, const char *, (nvmlReturn_t))                                               \
    X(nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned int *))                                       \
    X(nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned int, nvmlDevice_t *))                 \
    X(nvmlDeviceGetHandleByUUID, nvmlReturn_t, (const char *, nvmlDevice_t *))                     \
    X(nvmlDeviceGetUtilizationRates, nvmlReturn_t, (nvmlDevice_t, nvmlUtilization_t *))            \
    X(nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t, nvmlMemory_t *))                       \
    X(nvmlDeviceGetPowerUsage, nvmlReturn_t, (nvmlDevice_t, unsigned int *))

struct sr_nvml {
    void *lib;
#define FIELD(name, ret, args) ret(*name) args;
    SR_NVML_CALLS(FIELD)
#undef FIELD
};

static const char *why(const struct sr_nvml *n, nvmlReturn_t r, char *buf, size_t cap)
{
    const char *s = n->nvmlErrorString ? n->nvmlErrorString(r) : NULL;
    if (s)
        snprintf(buf, cap, "%s (%d)", s, r);
    else
        snprintf(buf, cap, "error %d", r);
    return buf;
}

int sr_nvml_open(struct sr_nvml **out)
{
    *out = NULL;
    struct sr_nvml *n = calloc(1, sizeof(*n));
    if (!n)
        return -ENOMEM;
    n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        const char *e = dlerror();
        free(n);
        return sr_errf(-ENOENT, "no NVML: %s", e ? e : "libnvidia-ml.so.1 not found");
    }
    const char *missing = NULL;
#define LOOKUP(name, ret, args)                                                                    \
    *(void **)(&n->name) = dlsym(n->lib, #name);                                                   \
    if (!n->name && !missing)                                                                      \
        missing = #name;
    SR_NVML_CALLS(LOOKUP)
#undef LOOKUP
    if (missing) {
        dlclose(n->lib);
        free(n);
        return sr_errf(-ENOENT, "no NVML: libnvidia-ml.so.1 lacks %s", missing);
    }
    const nvmlReturn_t r = n->nvmlInit_v2();
    if (r != NVML_SUCCESS) {
        char b[160];
        const int rc = sr_errf(-EIO, "NVML did not start: %s", why(n, r, b, sizeof(b)));
        dlclose(n->lib);
        free(n);
        return rc;
    }
    *out = n;
    return 0;
}

void sr_nvml_close(struct sr_nvml *n)
{
    if (!n)
        return;
    n->nvmlShutdown();
    dlclose(n->lib);
    free(n);
}

int sr_cvd_parse(const char *cvd, struct sr_cvd_entry *out, int cap)
{
    int n = 0;
    const char *p = cvd;
    while (p && *p && n < cap) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        struct sr_cvd_entry e = {0};
        if (len > 4 && len < sizeof(e.uuid) &&
            (strncmp(p, "GPU-", 4) == 0 || strncmp(p, "MIG-", 4) == 0)) {
            e.kind = p[0] == 'G' ? SR_CVD_UUID : SR_CVD_MIG;
            memcpy(e.uuid, p, len);
        } else if (len > 0 && len <= 9 && strspn(p, "0123456789") >= len) {
            e.kind = SR_CVD_INDEX;
            e.index = (unsigned)strtoul(p, NULL, 10);
        } else {
            break; /* CUDA ignores this entry and the rest */
        }
        out[n++] = e;
        p = end ? end + 1 : NULL;
    }
    return n;
}

/* Appends msg to note, "; "-separated. */
static void note_add(char *note, size_t cap, const char *msg)
{
    const size_t used = strlen(note);
    if (used < cap)
        snprintf(note + used, cap - used, "%s%s", used ? "; " : "", msg);
}

int sr_nvml_select(struct sr_nvml *n, const char *cvd, struct sr_nvml_dev *devs, int cap,
                   char *note, size_t note_cap)
{
    if (note_cap)
        note[0] = '\0';
    unsigned count = 0;
    char b[160];
    nvmlReturn_t r = n->nvmlDeviceGetCount_v2(&count);
    if (r != NVML_SUCCESS)
        return sr_errf(-EIO, "cannot count the GPUs: %s", why(n, r, b, sizeof(b)));
    if (count > SR_NVML_MAX_DEVICES)
        count = SR_NVML_MAX_DEVICES;
    nvmlDevice_t all[SR_NVML_MAX_DEVICES] = {0};
    for (unsigned i = 0; i < count; i++) {
        r = n->nvmlDeviceGetHandleByIndex_v2(i, &all[i]);
        if (r != NVML_SUCCESS)
            return sr_errf(-EIO, "cannot reach GPU %u: %s", i, why(n, r, b, sizeof(b)));
    }
    int k = 0;
    if (!cvd) {
        for (unsigned i = 0; i < count && k < cap; i++)
            devs[k++] = (struct sr_nvml_dev){.handle = all[i], .index = i};
        return k;
    }
    struct sr_cvd_entry e[SR_NVML_MAX_DEVICES];
    const int ne = sr_cvd_parse(cvd, e, SR_NVML_MAX_DEVICES);
    for (int j = 0; j < ne && k < cap; j++) {
        int idx = -1;
        if (e[j].kind == SR_CVD_MIG) {
            char msg[160];
            snprintf(msg, sizeof(msg), "%s is a MIG instance: not sampled", e[j].uuid);
            note_add(note, note_cap, msg);
            continue;
        }
        if (e[j].kind == SR_CVD_INDEX && e[j].index < count) {
            idx = (int)e[j].index;
        } else if (e[j].kind == SR_CVD_UUID) {
            nvmlDevice_t h = NULL;
            if (n->nvmlDeviceGetHandleByUUID(e[j].uuid, &h) == NVML_SUCCESS)
                for (unsigned i = 0; i < count && idx < 0; i++)
                    if (all[i] == h)
                        idx = (int)i;
        }
        if (idx < 0) { /* CUDA stops at an entry that names no device */
            char msg[200];
            if (e[j].kind == SR_CVD_UUID)
                snprintf(msg, sizeof(msg), "CUDA_VISIBLE_DEVICES entry %s names no GPU here",
                         e[j].uuid);
            else
                snprintf(msg, sizeof(msg),
                         "CUDA_VISIBLE_DEVICES entry %u names no GPU here (%u found)", e[j].index,
                         count);
            note_add(note, note_cap, msg);
            break;
        }
        int dup = 0;
        for (int q = 0; q < k; q++)
            dup |= devs[q].index == (unsigned)idx;
        if (!dup)
            devs[k++] = (struct sr_nvml_dev){.handle = all[idx], .index = (unsigned)idx};
    }
    return k;
}

int sr_nvml_read(struct sr_nvml *n, const struct sr_nvml_dev *d, struct sr_nvml_reading *out)
{
    nvmlDevice_t h = d->handle;
    nvmlUtilization_t u = {0};
    nvmlMemory_t m = {0};
    unsigned int mw = 0;
    char b[160];
    nvmlReturn_t r = n->nvmlDeviceGetUtilizationRates(h, &u);
    if (r != NVML_SUCCESS)
        return sr_errf(-EIO, "GPU %u utilization: %s", d->index, why(n, r, b, sizeof(b)));
    r = n->nvmlDeviceGetMemoryInfo(h, &m);
    if (r != NVML_SUCCESS)
        return sr_errf(-EIO, "GPU %u memory: %s", d->index, why(n, r, b, sizeof(b)));
    r = n->nvmlDeviceGetPowerUsage(h, &mw);
    if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_SUPPORTED)
        return sr_errf(-EIO, "GPU %u power: %s", d->index, why(n, r, b, sizeof(b)));
    out->util = u.gpu > 100 ? 100 : u.gpu;
    out->mem_used = m.used;
    out->power_w = r == NVML_SUCCESS ? mw / 1000.0 : -1.0;
    return 0;
}
