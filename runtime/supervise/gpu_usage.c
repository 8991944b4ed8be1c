/*
 * gpu_usage.c - reading the shim's accounting pages (see gpu_usage.h).
 * Pages are read with read(), a snapshot of atomically updated counters
 * summed over the page's per-thread slots (spotrun_gpu_page_sum); a page
 * with a foreign magic, an unknown version or a short size is skipped (a
 * newer shim may append fields, never move them).
 */
#include "gpu_usage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu_page.h"

_Static_assert(SR_GPU_DEVICES == SPOTRUN_GPU_MAX_DEVICES, "one device limit");

static int is_page(const char *name)
{
    const size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".page") == 0;
}

int sr_gpu_usage_read(const char *dir, struct sr_gpu_usage *u)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    uint64_t peak[SR_GPU_DEVICES] = {0}, cur[SR_GPU_DEVICES] = {0}, allocs = 0, failed = 0;
    int pages = 0;
    struct dirent *e;
    struct spotrun_gpu_page *pg = malloc(sizeof *pg); /* ~100 KiB: not on the stack */
    if (!pg) {
        closedir(d);
        return 0;
    }
    while ((e = readdir(d))) {
        if (!is_page(e->d_name))
            continue;
        const int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        const ssize_t r = read(fd, pg, sizeof(*pg));
        close(fd);
        if (r != (ssize_t)sizeof(*pg) || pg->magic != SPOTRUN_GPU_PAGE_MAGIC ||
            pg->version != SPOTRUN_GPU_PAGE_VERSION || pg->size < sizeof(*pg))
            continue;
        pages++;
        for (int i = 0; i < SR_GPU_DEVICES; i++) {
            for (int k = 0; k < SPOTRUN_MEM_KINDS; k++) {
                const struct spotrun_gpu_sum s = spotrun_gpu_page_sum(pg, i, k);
                if (k != SPOTRUN_MEM_HOST) {
                    peak[i] += s.peak;
                    cur[i] += s.current;
                }
                allocs += s.allocs;
            }
            failed += pg->dev[i].failed;
        }
    }
    free(pg);
    closedir(d);
    for (int i = 0; i < SR_GPU_DEVICES; i++) {
        if (peak[i] > u->peak[i])
            u->peak[i] = peak[i];
        u->current[i] = cur[i];
        if (u->peak[i] && i + 1 > u->devices)
            u->devices = i + 1;
    }
    if (allocs > u->allocs)
        u->allocs = allocs;
    if (failed > u->failed)
        u->failed = failed;
    return pages;
}

int sr_gpu_usage_reset(const char *dir)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -errno;
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    struct dirent *e;
    while ((e = readdir(d)))
        if (is_page(e->d_name))
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    return 0;
}
