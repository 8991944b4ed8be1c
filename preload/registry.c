/*
 * registry.c - spotrun_register(): buffers that are part of the job's state.
 *
 * At each spotrun_commit() every registered buffer is written to
 * $SPOTRUN_CKPT_DIR/spotrun-buffers/<name>.bin (temp file, fsync, rename,
 * fsync of the directory) before the wrapper is told to stage the
 * directory. Device buffers are copied to the host through one pinned
 * staging buffer in chunks. On a resumed run, registering a name that the
 * restored checkpoint holds fills the buffer back (size mismatch: an error
 * naming both sizes, and the buffer is left untouched).
 *
 * Threads: the table is guarded by a mutex (not a hot path). Not
 * async-signal-safe. The shim's own CUDA calls run with the re-entry guard
 * raised, so the staging buffer and copies never count as the job's memory.
 */
#include "hooks.h"
#include "shim.h"
#include "spotrun.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_BUFFERS 64
#define NAME_MAX_LEN 63
#define STAGE_BYTES (4u << 20)
#define SUBDIR "spotrun-buffers"

struct buffer {
    char name[NAME_MAX_LEN + 1];
    void *ptr;
    size_t bytes;
    int device;
};

static struct buffer buffers[MAX_BUFFERS];
static int nbuffers;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *stage;
static size_t stage_len;

static int name_ok(const char *n)
{
    const size_t len = n ? strlen(n) : 0;
    if (len == 0 || len > NAME_MAX_LEN || n[0] == '.' || n[0] == '-')
        return 0;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            return 0;
    return 1;
}

static int path_of(const char *name, const char *suffix, char *out, size_t len)
{
    const char *dir = getenv("SPOTRUN_CKPT_DIR");
    if (!dir || !*dir)
        return -ENOTCONN;
    const int n =
        snprintf(out, len, "%s/" SUBDIR "%s%s%s", dir, name ? "/" : "", name ? name : "", suffix);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int is_device(const void *ptr)
{
    const cudaPointerGetAttributes_fn get = REAL(cudaPointerGetAttributes);
    if (!get)
        return 0;
    struct sr_cudaPointerAttributes a;
    memset(&a, 0, sizeof a);
    shim_enter();
    const sr_cudaError_t rc = get(&a, ptr);
    shim_leave();
    return rc == SR_cudaSuccess && a.type == SR_cudaMemoryTypeDevice;
}

/* The pinned staging buffer (plain memory if pinning fails). */
static int get_stage(void)
{
    if (stage)
        return 0;
    const cudaMallocHost_fn pin = REAL(cudaMallocHost);
    shim_enter();
    if (pin && pin(&stage, STAGE_BYTES) != SR_cudaSuccess)
        stage = NULL;
    shim_leave();
    if (!stage)
        stage = malloc(STAGE_BYTES);
    stage_len = STAGE_BYTES;
    return stage ? 0 : -ENOMEM;
}

static int copy(void *dst, const void *src, size_t n, int kind)
{
    const cudaMemcpy_fn cp = REAL(cudaMemcpy);
    if (!cp)
        return -ENOSYS;
    shim_enter();
    const sr_cudaError_t rc = cp(dst, src, n, kind);
    shim_leave();
    return rc == SR_cudaSuccess ? 0 : -EIO;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        const ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        const ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int save_one(const struct buffer *b)
{
    char tmp[PATH_MAX], path[PATH_MAX];
    int rc = path_of(b->name, ".bin.tmp", tmp, sizeof tmp);
    if (rc == 0)
        rc = path_of(b->name, ".bin", path, sizeof path);
    if (rc < 0)
        return rc;
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    if (!b->device) {
        rc = write_all(fd, b->ptr, b->bytes);
    } else if ((rc = get_stage()) == 0) {
        for (size_t off = 0; rc == 0 && off < b->bytes; off += stage_len) {
            const size_t n = b->bytes - off < stage_len ? b->bytes - off : stage_len;
            rc = copy(stage, (const char *)b->ptr + off, n, SR_cudaMemcpyDeviceToHost);
            if (rc == 0)
                rc = write_all(fd, stage, n);
        }
    }
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc < 0)
        unlink(tmp);
    return rc;
}

static int restore_one(const struct buffer *b)
{
    char path[PATH_MAX];
    int rc = path_of(b->name, ".bin", path, sizeof path);
    if (rc < 0)
        return 0;
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
    } else if ((uint64_t)st.st_size != (uint64_t)b->bytes) {
        fprintf(stderr,
                "spotrun: register \"%s\": the checkpoint holds %lld bytes but the buffer has "
                "%zu; not restoring it (did its shape change?)\n",
                b->name, (long long)st.st_size, b->bytes);
        rc = -EMSGSIZE;
    } else if (!b->device) {
        rc = read_all(fd, b->ptr, b->bytes);
    } else if ((rc = get_stage()) == 0) {
        for (size_t off = 0; rc == 0 && off < b->bytes; off += stage_len) {
            const size_t n = b->bytes - off < stage_len ? b->bytes - off : stage_len;
            rc = read_all(fd, stage, n);
            if (rc == 0)
                rc = copy((char *)b->ptr + off, stage, n, SR_cudaMemcpyHostToDevice);
        }
    }
    close(fd);
    if (rc == -EIO)
        fprintf(stderr, "spotrun: register \"%s\": cannot read %s back\n", b->name, path);
    return rc < 0 ? rc : 1;
}

SPOTRUN_EXPORT int spotrun_register(const char *name, void *ptr, size_t bytes)
{
    shim_init();
    if (!name_ok(name) || (!ptr && bytes))
        return -EINVAL;
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < nbuffers && strcmp(buffers[i].name, name) != 0)
        i++;
    int rc = 0;
    if (i == MAX_BUFFERS) {
        rc = -ENOSPC;
    } else {
        struct buffer *b = &buffers[i];
        snprintf(b->name, sizeof b->name, "%s", name);
        b->ptr = ptr;
        b->bytes = bytes;
        b->device = bytes ? is_device(ptr) : 0;
        if (i == nbuffers)
            nbuffers++;
        const char *resumed = getenv("SPOTRUN_RESUMED");
        if (resumed && strcmp(resumed, "1") == 0)
            rc = restore_one(b);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

int shim_registry_save(void)
{
    pthread_mutex_lock(&lock);
    int rc = 0;
    if (nbuffers) {
        char dir[PATH_MAX];
        rc = path_of(NULL, "", dir, sizeof dir);
        if (rc == 0 && mkdir(dir, 0755) != 0 && errno != EEXIST)
            rc = -errno;
        for (int i = 0; rc == 0 && i < nbuffers; i++) {
            rc = save_one(&buffers[i]);
            if (rc < 0)
                fprintf(stderr, "spotrun: cannot save registered buffer \"%s\": %s\n",
                        buffers[i].name, strerror(-rc));
        }
        if (rc == 0) {
            const int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd >= 0) {
                fsync(dfd);
                close(dfd);
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}
