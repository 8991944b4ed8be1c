/*
 * inject.c - libspotrun-inject.so, an LD_PRELOAD library for the fault
 * tests: makes chosen file-system calls fail with a chosen errno, the way a
 * full or failing disk does, or kills the process there (kill -9 at an
 * exact point).
 *
 *   SPOTRUN_INJECT=op:ERRNO[:N][,op:ERRNO[:N]...]
 *       op     write pwrite fsync fdatasync rename link copy_file_range mkdir
 *              unlink (unlink and unlinkat)
 *       ERRNO  ENOSPC EIO EDQUOT EROFS, or KILL: SIGKILL instead of the call,
 *              or STOP: SIGSTOP the process, then make the call (once: only
 *              the (N+1)th matching call; a paused VM or process)
 *       N      let the first N matching calls through (default 0)
 *   SPOTRUN_INJECT_PATH=SUBSTRING
 *       only calls on paths (or fds open on paths) containing it
 *   SPOTRUN_INJECT_MINLEN=N
 *       only write and pwrite calls of at least N bytes (a writer that
 *       must keep its writes small)
 *
 *   SPOTRUN_INJECT_REWRITE=SUBSTRING
 *       after the first read() of a file whose path contains it, rewrite
 *       that file in place (same size, every byte 'X'), once per process:
 *       a job writing its checkpoint while spotrun reads it
 *   SPOTRUN_INJECT_APPEND=SUBSTRING
 *       the same, but append 4096 bytes 'A' to the file (after the rewrite
 *       when both match): a log growing while spotrun reads it
 *
 * Every matching call after the first N fails (a full disk stays full).
 * The counters are atomics: the codec and checkpointer threads all count.
 * Test-only: never installed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum op {
    OP_WRITE,
    OP_PWRITE,
    OP_FSYNC,
    OP_FDATASYNC,
    OP_RENAME,
    OP_LINK,
    OP_CFR,
    OP_MKDIR,
    OP_UNLINK,
    N_OPS
};
#define INJECT_KILL (-1)
#define INJECT_STOP (-2)
static const char *const op_names[N_OPS] = {"write",           "pwrite", "fsync",
                                            "fdatasync",       "rename", "link",
                                            "copy_file_range", "mkdir",  "unlink"};

static struct {
    int err; /* 0 = not injected */
    long skip;
    atomic_long seen;
} rules[N_OPS];
static const char *path_filter;
static size_t min_len; /* SPOTRUN_INJECT_MINLEN */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int errno_of(const char *name)
{
    static const struct {
        const char *n;
        int e;
    } t[] = {{"ENOSPC", ENOSPC}, {"EIO", EIO},          {"EDQUOT", EDQUOT},
             {"EROFS", EROFS},   {"KILL", INJECT_KILL}, {"STOP", INJECT_STOP}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (strcmp(name, t[i].n) == 0)
            return t[i].e;
    return 0;
}

static void init(void)
{
    const char *spec = getenv("SPOTRUN_INJECT");
    path_filter = getenv("SPOTRUN_INJECT_PATH");
    const char *ml = getenv("SPOTRUN_INJECT_MINLEN");
    min_len = ml ? strtoul(ml, NULL, 10) : 0;
    if (!spec)
        return;
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", spec);
    for (char *save = NULL, *r = strtok_r(buf, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
        char *op = r, *err = strchr(r, ':');
        if (!err)
            continue;
        *err++ = '\0';
        char *n = strchr(err, ':');
        if (n)
            *n++ = '\0';
        for (int i = 0; i < N_OPS; i++)
            if (strcmp(op, op_names[i]) == 0) {
                rules[i].err = errno_of(err);
                rules[i].skip = n ? atol(n) : 0;
            }
    }
}

/* The rules are read before the first hooked call, whose own condition
 * (rules[op].err, min_len) is evaluated before inject() would read them. */
__attribute__((constructor)) static void init_early(void)
{
    pthread_once(&once, init);
}

static int path_matches(const char *path)
{
    return !path_filter || !*path_filter || (path && strstr(path, path_filter));
}

static int fd_matches(int fd)
{
    if (!path_filter || !*path_filter)
        return 1;
    char link[64], target[4096];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    const ssize_t n = readlink(link, target, sizeof(target) - 1);
    if (n < 0)
        return 0;
    target[n] = '\0';
    return strstr(target, path_filter) != NULL;
}

/* Returns the errno to fail with, or 0 to let the call through. */
static int inject(enum op op, int matches)
{
    pthread_once(&once, init);
    if (!rules[op].err || !matches)
        return 0;
    const long seen = atomic_fetch_add(&rules[op].seen, 1);
    if (seen < rules[op].skip || (rules[op].err == INJECT_STOP && seen > rules[op].skip))
        return 0;
    return rules[op].err;
}

#define REAL(ret, name, ...)                                                                       \
    static ret (*real_##name)(__VA_ARGS__);                                                        \
    if (!real_##name)                                                                              \
        *(void **)&real_##name = dlsym(RTLD_NEXT, #name);

#define FAIL_IF(e)                                                                                 \
    do {                                                                                           \
        const int e_ = (e);                                                                        \
        if (e_ == INJECT_KILL)                                                                     \
            kill(getpid(), SIGKILL);                                                               \
        if (e_ == INJECT_STOP)                                                                     \
            kill(getpid(), SIGSTOP); /* continued later: the call then runs */                     \
        else if (e_) {                                                                             \
            errno = e_;                                                                            \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

ssize_t write(int fd, const void *buf, size_t n)
{
    REAL(ssize_t, write, int, const void *, size_t);
    FAIL_IF(inject(OP_WRITE, rules[OP_WRITE].err && fd > 2 && n >= min_len && fd_matches(fd)));
    return real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    REAL(ssize_t, pwrite, int, const void *, size_t, off_t);
    FAIL_IF(inject(OP_PWRITE, rules[OP_PWRITE].err && n >= min_len && fd_matches(fd)));
    return real_pwrite(fd, buf, n, off);
}

/* SPOTRUN_INJECT_REWRITE: overwrite the file open at fd through a second
 * descriptor, keeping its size. errno is kept. */
static void rewrite_file(int fd)
{
    const int saved = errno;
    char link[64], path[4096];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    const ssize_t n = readlink(link, path, sizeof(path) - 1);
    struct stat st;
    if (n > 0 && fstat(fd, &st) == 0) {
        path[n] = '\0';
        const int w = open(path, O_WRONLY | O_CLOEXEC);
        char x[65536];
        memset(x, 'X', sizeof(x));
        for (off_t off = 0; w >= 0 && off < st.st_size; off += (off_t)sizeof(x)) {
            const size_t len =
                st.st_size - off < (off_t)sizeof(x) ? (size_t)(st.st_size - off) : sizeof(x);
            if (pwrite(w, x, len, off) != (ssize_t)len)
                break;
        }
        if (w >= 0)
            close(w);
    }
    errno = saved;
}

/* SPOTRUN_INJECT_APPEND: grow the file open at fd. errno is kept. */
static void append_file(int fd)
{
    const int saved = errno;
    char link[64], path[4096], x[4096];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    const ssize_t n = readlink(link, path, sizeof(path) - 1);
    if (n > 0) {
        path[n] = '\0';
        const int w = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
        memset(x, 'A', sizeof(x));
        if (w >= 0 && write(w, x, sizeof(x)) < 0) {
        }
        if (w >= 0)
            close(w);
    }
    errno = saved;
}

/* Whether fd is open on a path containing the value of env var name. */
static int fd_named(int fd, const char *name)
{
    const char *w = getenv(name);
    if (!w || !*w || fd <= 2)
        return 0;
    char link[64], path[4096];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    const int saved = errno;
    const ssize_t k = readlink(link, path, sizeof(path) - 1);
    errno = saved;
    if (k <= 0)
        return 0;
    path[k] = '\0';
    return strstr(path, w) != NULL;
}

ssize_t read(int fd, void *buf, size_t n)
{
    REAL(ssize_t, read, int, void *, size_t);
    static atomic_int rewritten, appended;
    const ssize_t r = real_read(fd, buf, n);
    if (r <= 0)
        return r;
    if (!atomic_load(&rewritten) && fd_named(fd, "SPOTRUN_INJECT_REWRITE") &&
        !atomic_exchange(&rewritten, 1))
        rewrite_file(fd);
    if (!atomic_load(&appended) && fd_named(fd, "SPOTRUN_INJECT_APPEND") &&
        !atomic_exchange(&appended, 1))
        append_file(fd);
    return r;
}

int fsync(int fd)
{
    REAL(int, fsync, int);
    FAIL_IF(inject(OP_FSYNC, rules[OP_FSYNC].err && fd_matches(fd)));
    return real_fsync(fd);
}

int fdatasync(int fd)
{
    REAL(int, fdatasync, int);
    FAIL_IF(inject(OP_FDATASYNC, rules[OP_FDATASYNC].err && fd_matches(fd)));
    return real_fdatasync(fd);
}

int rename(const char *from, const char *to)
{
    REAL(int, rename, const char *, const char *);
    FAIL_IF(inject(OP_RENAME, path_matches(to)));
    return real_rename(from, to);
}

int link(const char *from, const char *to)
{
    REAL(int, link, const char *, const char *);
    FAIL_IF(inject(OP_LINK, path_matches(to)));
    return real_link(from, to);
}

ssize_t copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t len, unsigned flags)
{
    REAL(ssize_t, copy_file_range, int, off_t *, int, off_t *, size_t, unsigned);
    FAIL_IF(inject(OP_CFR, rules[OP_CFR].err && fd_matches(out)));
    return real_copy_file_range(in, in_off, out, out_off, len, flags);
}

int mkdir(const char *path, mode_t mode)
{
    REAL(int, mkdir, const char *, mode_t);
    FAIL_IF(inject(OP_MKDIR, path_matches(path)));
    return real_mkdir(path, mode);
}

int unlink(const char *path)
{
    REAL(int, unlink, const char *);
    FAIL_IF(inject(OP_UNLINK, path_matches(path)));
    return real_unlink(path);
}

int unlinkat(int dfd, const char *name, int flags)
{
    REAL(int, unlinkat, int, const char *, int);
    FAIL_IF(inject(OP_UNLINK, rules[OP_UNLINK].err && (path_matches(name) || fd_matches(dfd))));
    return real_unlinkat(dfd, name, flags);
}
