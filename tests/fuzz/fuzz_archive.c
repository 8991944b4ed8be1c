/*
 * fuzz_archive.c - libFuzzer target: the archive reader end to end. The
 * input is a stored checkpoint (zstd frames + seek table, or garbage);
 * sr_unpack_to_dir must extract it into the target or refuse it, never
 * write outside the target, and leave the target untouched on failure.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "fsutil.h"

struct mem {
    const uint8_t *data;
    size_t size;
};

static int mem_read_at(void *ctx, void *buf, size_t len, uint64_t off)
{
    const struct mem *m = ctx;
    if (off > m->size || len > m->size - off)
        return -EBADMSG;
    memcpy(buf, m->data + off, len);
    return 0;
}

static char root[256];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!root[0]) {
        snprintf(root, sizeof(root), "/tmp/spotrun-fuzz-archive.%d", (int)getpid());
        sr_mkdirs(root, 0700);
    }
    char target[300], sentinel[320], outside[320];
    snprintf(target, sizeof(target), "%s/target", root);
    snprintf(sentinel, sizeof(sentinel), "%s/target/sentinel", root);
    snprintf(outside, sizeof(outside), "%s/evil", root);
    sr_rmtree(target);
    sr_mkdirs(target, 0700);
    sr_write_file_atomic(sentinel, "x", 1);

    struct mem m = {data, size};
    const struct sr_source src = {.ctx = &m, .size = size, .read_at = mem_read_at};
    const struct sr_unpack_opts opts = {.threads = 2, .max_raw_bytes = 64u << 20};
    const int rc = sr_unpack_to_dir(&src, target, &opts, NULL);
    struct stat sb;
    if (rc != 0 && stat(sentinel, &sb) != 0)
        abort(); /* a refused archive must leave the target as it was */
    if (lstat(outside, &sb) == 0)
        abort(); /* nothing may land beside the target */
    return 0;
}
