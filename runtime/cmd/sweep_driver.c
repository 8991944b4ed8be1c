/*
 * sweep_driver.c - runs a sweep's driver for `sweep work --driver`
 * (sweep_driver.h). The worker waits for it: a driver reads the store and
 * adds a few trials, in seconds; the worker's running trials go on
 * meanwhile and are reaped after it.
 */
#include "sweep_driver.h"

#include <errno.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "child.h"

int sr_sweep_driver_run(const char *cmd, const char *sweep, const char *store_url, const char *self,
                        const sigset_t *mask)
{
    char e_sweep[256], e_store[4200], e_bin[4200];
    snprintf(e_sweep, sizeof(e_sweep), "SPOTRUN_SWEEP=%s", sweep);
    snprintf(e_store, sizeof(e_store), "SPOTRUN_STORE=%s", store_url);
    snprintf(e_bin, sizeof(e_bin), "SPOTRUN_BIN=%s", self);
    char *add[] = {e_sweep, e_store, e_bin, NULL};
    char **env = sr_env_build(add, NULL);
    if (!env)
        return -ENOMEM;
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, mask);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    char *argv[] = {"sh", "-c", (char *)cmd, NULL};
    pid_t pid;
    const int rc = posix_spawn(&pid, "/bin/sh", NULL, &attr, argv, env);
    posix_spawnattr_destroy(&attr);
    sr_env_free(env);
    if (rc != 0)
        return -rc;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -errno;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
