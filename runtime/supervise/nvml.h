/*
 * nvml.h - the few NVML calls the wrapper samples GPU utilization with,
 * reached through dlopen("libnvidia-ml.so.1"): no build-time dependency,
 * and a machine without the driver simply has no NVML (sr_nvml_open fails).
 *
 * Devices are chosen as the job's CUDA runtime would see them from
 * CUDA_VISIBLE_DEVICES (sr_cvd_parse): unset means every device; a list of
 * indices or GPU-... UUIDs selects those, and the list ends at its first
 * entry that names no device (CUDA's rule: "" and "-1" select none). MIG
 * instances (MIG-...) are skipped with a note: the calls used here measure
 * whole GPUs. An index is NVML's, which is CUDA's with
 * CUDA_DEVICE_ORDER=PCI_BUS_ID (on a machine of identical GPUs they agree
 * anyway).
 *
 * Threads: one sr_nvml is used by one thread at a time (the sampler's).
 */
#ifndef SPOTRUN_NVML_H
#define SPOTRUN_NVML_H

#include <stddef.h>
#include <stdint.h>

#define SR_NVML_MAX_DEVICES 64

struct sr_nvml;

/* Loads libnvidia-ml.so.1 and initialises it. -ENOENT: no library (or a
 * symbol missing); -EIO: nvmlInit failed. The reason is in sr_strerror(). */
int sr_nvml_open(struct sr_nvml **out);
/* Shuts NVML down and unloads it. NULL is fine. */
void sr_nvml_close(struct sr_nvml *n);

/* One entry of CUDA_VISIBLE_DEVICES. */
enum sr_cvd_kind { SR_CVD_INDEX, SR_CVD_UUID, SR_CVD_MIG };
struct sr_cvd_entry {
    enum sr_cvd_kind kind;
    unsigned index; /* SR_CVD_INDEX */
    char uuid[96];  /* SR_CVD_UUID, SR_CVD_MIG: as written */
};
/* Parses a CUDA_VISIBLE_DEVICES value: comma-separated entries, blanks
 * around them ignored, up to the first entry that is neither a
 * non-negative index nor a GPU-/MIG- id (that one and the rest are
 * ignored, as CUDA does). Returns the number of entries (at most cap). */
int sr_cvd_parse(const char *cvd, struct sr_cvd_entry *out, int cap);

struct sr_nvml_dev {
    void *handle;   /* nvmlDevice_t */
    unsigned index; /* NVML's index of the device */
};
/* The devices the job may use: cvd is CUDA_VISIBLE_DEVICES (NULL = unset:
 * every device). An index beyond the devices or an unknown UUID ends the
 * list like an invalid entry; a device named twice counts once. note gets
 * what was skipped ("" when nothing). Returns the count (0..cap) or a
 * negative error (the device count could not be read). */
int sr_nvml_select(struct sr_nvml *n, const char *cvd, struct sr_nvml_dev *devs, int cap,
                   char *note, size_t note_cap);

struct sr_nvml_reading {
    unsigned util;     /* percent of the last sample period a kernel ran */
    uint64_t mem_used; /* bytes */
    double power_w;    /* watts; < 0 when the device cannot say */
};
/* One reading of a device; -EIO (reason in sr_strerror) when a call failed. */
int sr_nvml_read(struct sr_nvml *n, const struct sr_nvml_dev *d, struct sr_nvml_reading *r);

#endif
