/*
 * pagedump.c - prints the shim's accounting pages (gpu_page.h) found in a
 * directory, summed over processes (and each page over its per-thread
 * slots), one line per device and kind in use:
 *   dev0 device current=C peak=P allocs=A frees=F
 *   dev0 failed=N limited=M
 *   pages=K untracked=U
 */
#include "gpu_page.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: pagedump DIR\n");
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (!d) {
        perror(argv[1]);
        return 1;
    }
    static struct spotrun_gpu_page pg;
    static struct spotrun_gpu_sum sum[SPOTRUN_GPU_MAX_DEVICES][SPOTRUN_MEM_KINDS];
    static uint64_t failed[SPOTRUN_GPU_MAX_DEVICES], limited[SPOTRUN_GPU_MAX_DEVICES];
    uint64_t untracked = 0;
    int pages = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".page"))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
        const int fd = open(path, O_RDONLY);
        if (fd < 0)
            continue;
        const ssize_t r = read(fd, &pg, sizeof pg);
        close(fd);
        if (r != (ssize_t)sizeof pg || pg.magic != SPOTRUN_GPU_PAGE_MAGIC ||
            pg.version != SPOTRUN_GPU_PAGE_VERSION || pg.size < sizeof pg)
            continue;
        pages++;
        untracked += pg.untracked;
        for (int i = 0; i < SPOTRUN_GPU_MAX_DEVICES; i++) {
            for (int k = 0; k < SPOTRUN_MEM_KINDS; k++) {
                const struct spotrun_gpu_sum s = spotrun_gpu_page_sum(&pg, i, k);
                sum[i][k].current += s.current;
                sum[i][k].peak += s.peak;
                sum[i][k].allocs += s.allocs;
                sum[i][k].frees += s.frees;
            }
            failed[i] += pg.dev[i].failed;
            limited[i] += pg.dev[i].limited;
        }
    }
    closedir(d);
    static const char *const names[] = {"device", "managed", "host"};
    for (int i = 0; i < SPOTRUN_GPU_MAX_DEVICES; i++) {
        for (int k = 0; k < SPOTRUN_MEM_KINDS; k++) {
            const struct spotrun_gpu_sum *c = &sum[i][k];
            if (c->allocs || c->peak)
                printf("dev%d %s current=%llu peak=%llu allocs=%llu frees=%llu\n", i, names[k],
                       (unsigned long long)c->current, (unsigned long long)c->peak,
                       (unsigned long long)c->allocs, (unsigned long long)c->frees);
        }
        if (failed[i])
            printf("dev%d failed=%llu limited=%llu\n", i, (unsigned long long)failed[i],
                   (unsigned long long)limited[i]);
    }
    printf("pages=%d untracked=%llu\n", pages, (unsigned long long)untracked);
    return 0;
}
