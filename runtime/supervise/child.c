/*
 * child.c - spawning the job and watching its checkpoint directory (see
 * child.h).
 */
#include <stdint.h>

#include "child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "codec.h"
#include "log.h"

extern char **environ;

int sr_resolve_program(const char *argv0, char *out, size_t len)
{
    if (strchr(argv0, '/')) {
        snprintf(out, len, "%s", argv0);
        if (access(out, F_OK) < 0)
            return sr_errf(-ENOENT, "%s: no such file", argv0);
        if (access(out, X_OK) < 0)
            return sr_errf(-EACCES, "%s: permission denied", argv0);
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    int found_noexec = 0;
    for (const char *p = path; *p;) {
        const char *colon = strchr(p, ':');
        const size_t n = colon ? (size_t)(colon - p) : strlen(p);
        snprintf(out, len, "%.*s/%s", (int)n, n ? p : ".", argv0);
        struct stat sb;
        if (stat(out, &sb) == 0 && S_ISREG(sb.st_mode)) {
            if (access(out, X_OK) == 0)
                return 0;
            found_noexec = 1;
        }
        p += n + (colon ? 1 : 0);
    }
    if (found_noexec)
        return sr_errf(-EACCES, "%s: permission denied", argv0);
    return sr_errf(-ENOENT, "%s: command not found", argv0);
}

int sr_spawn(const char *path, char *const argv[], char *const env[], const sigset_t *mask,
             int err_fd, pid_t *pid)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    const pid_t parent = getpid();
    /* The wrapper ignores SIGPIPE (main.c); the job gets the default back. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    const pid_t child = fork();
    if (child < 0) {
        const int e = errno;
        close(p[0]);
        close(p[1]);
        return -e;
    }
    if (child == 0) {
        /* Only async-signal-safe calls from here on. */
        close(p[0]);
        setpgid(0, 0);
        /* The job must not outlive a wrapper that was killed: a rerun would
         * otherwise start a second copy writing the same checkpoint dir. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(126);
        if (err_fd >= 0 && dup2(err_fd, STDERR_FILENO) < 0)
            _exit(126);
        sigaction(SIGPIPE, &dfl, NULL);
        sigprocmask(SIG_SETMASK, mask, NULL);
        execve(path, argv, env);
        const int e = errno;
        if (write(p[1], &e, sizeof(e)) < 0) {
        }
        _exit(e == ENOENT ? 127 : 126);
    }
    close(p[1]);
    setpgid(child, child); /* also here: no window where the group is missing */
    int e = 0;
    ssize_t r;
    while ((r = read(p[0], &e, sizeof(e))) < 0 && errno == EINTR) {
    }
    close(p[0]);
    *pid = child;
    return r == (ssize_t)sizeof(e) ? -e : 0;
}

static int name_in(const char *entry, char *const list[], const char *const unset[])
{
    const size_t n = strcspn(entry, "=");
    for (size_t i = 0; list && list[i]; i++)
        if (strncmp(entry, list[i], n) == 0 && list[i][n] == '=')
            return 1;
    for (size_t i = 0; unset && unset[i]; i++)
        if (strlen(unset[i]) == n && strncmp(entry, unset[i], n) == 0)
            return 1;
    return 0;
}

char **sr_env_build(char *const add[], const char *const unset[])
{
    size_t n = 0, na = 0;
    while (environ[n])
        n++;
    while (add && add[na])
        na++;
    char **env = calloc(n + na + 1, sizeof(char *));
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!name_in(environ[i], add, unset))
            env[k++] = strdup(environ[i]);
    for (size_t i = 0; i < na; i++)
        env[k++] = strdup(add[i]);
    env[k] = NULL;
    return env;
}

void sr_env_free(char **env)
{
    for (size_t i = 0; env && env[i]; i++)
        free(env[i]);
    free(env);
}

/* The paths left out (--ckpt-exclude) and the path of the directory being
 * read, relative to the root. */
struct fp_walk {
    const char *const *pats;
    size_t n;
    int64_t newest_ms; /* the newest mtime seen, unix ms */
    char rel[4096];
};

/* readdir order is arbitrary: entries are combined by addition, which does
 * not depend on it. */
static uint64_t fingerprint_dir(int dfd, int *count, int depth, struct fp_walk *w)
{
    const size_t rlen = strlen(w->rel);
    uint64_t acc = 0;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return 0;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(w->rel + rlen, sizeof(w->rel) - rlen, "%s%s", rlen ? "/" : "", de->d_name);
        if (sr_pack_excluded(w->pats, w->n, w->rel, de->d_name))
            continue;
        struct stat sb;
        if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        (*count)++;
        const int64_t ms = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
        if (ms > w->newest_ms)
            w->newest_ms = ms;
        const int64_t facts[] = {(int64_t)sb.st_size, sb.st_mtim.tv_sec,  sb.st_mtim.tv_nsec,
                                 (int64_t)sb.st_mode, (int64_t)sb.st_ino, depth};
        acc +=
            XXH3_64bits_withSeed(facts, sizeof(facts), XXH3_64bits(de->d_name, strlen(de->d_name)));
        if (S_ISDIR(sb.st_mode) && depth < 64) {
            const int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
            if (sub >= 0)
                acc += XXH3_64bits_withSeed(&acc, 0, fingerprint_dir(sub, count, depth + 1, w));
        }
    }
    w->rel[rlen] = '\0';
    closedir(d);
    return acc;
}

uint64_t sr_dir_fingerprint_ex(const char *dir, int *empty, const char *const *pats, size_t n)
{
    int64_t newest;
    return sr_dir_fingerprint_at(dir, empty, pats, n, &newest);
}

uint64_t sr_dir_fingerprint_at(const char *dir, int *empty, const char *const *pats, size_t n,
                               int64_t *newest_ms)
{
    int count = 0;
    uint64_t h = 0;
    struct fp_walk w = {.pats = pats, .n = n};
    const int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0)
        h = fingerprint_dir(fd, &count, 0, &w);
    if (empty)
        *empty = count == 0;
    *newest_ms = w.newest_ms;
    return h;
}
