/*
 * child.h - starting the job: resolve the program, build its environment,
 * fork, put it in its own process group, restore the signal mask, exec.
 * An exec failure is reported back through a close-on-exec pipe so the
 * wrapper can exit 127 (not found) or 126 (not executable) like a shell.
 * The job gets PR_SET_PDEATHSIG=SIGKILL: it never outlives its wrapper.
 */
#ifndef SPOTRUN_CHILD_H
#define SPOTRUN_CHILD_H

#include <signal.h>
#include <sys/types.h>

/* Full path of argv0 searched in PATH like a shell; -ENOENT / -EACCES with
 * a message. */
int sr_resolve_program(const char *argv0, char *out, size_t len);

/* Starts path with argv and the NULL-terminated env (complete, not added to
 * ours), in a new process group, with mask as its signal mask and err_fd
 * as its stderr (-1: ours). Returns 0 and the pid, or -errno of the failed
 * exec. */
int sr_spawn(const char *path, char *const argv[], char *const env[], const sigset_t *mask,
             int err_fd, pid_t *pid);

/* environ with the given NAME=value entries replacing or adding, and
 * "unset" names removed. Free with sr_env_free(). */
char **sr_env_build(char *const add[], const char *const unset[]);
void sr_env_free(char **env);

/* 64-bit fingerprint of a directory tree (names, sizes, mtimes, modes),
 * without the paths the patterns leave out (--ckpt-exclude, codec.h's
 * sr_pack_excluded): what a checkpoint of dir would hold. Changes when
 * anything in that changes; sets *empty when it holds nothing. */
uint64_t sr_dir_fingerprint_ex(const char *dir, int *empty, const char *const *pats, size_t n);
/* The same, and the newest mtime (unix ms) of what it holds in *newest_ms
 * (0 when empty): when the state the directory holds was last written. */
uint64_t sr_dir_fingerprint_at(const char *dir, int *empty, const char *const *pats, size_t n,
                               int64_t *newest_ms);

#endif
