/*
 * sigprobe.c - an application with its own signal handlers, for the shim's
 * signal tests.
 *
 *   sigprobe chain      SIGUSR1 handler via signal(); waits (<= 5 s) until
 *                       both its handler ran and spotrun_checkpoint_requested()
 *                       is set; checks sigaction() reports its own handler.
 *   sigprobe term       SIGTERM handler via sigaction(SA_SIGINFO); prints
 *                       "ready", waits (<= 10 s) for SIGTERM, exits 0.
 *   sigprobe wait MS    no handlers; prints "ready", sleeps MS, prints
 *                       "survived".
 *   sigprobe vfork      SIGUSR1 handler; starts children that reset their
 *                       dispositions before exec (vfork, as CPython does;
 *                       fork; posix_spawn with SETSIGDEF), then raises
 *                       SIGUSR1: prints "vfork handler=ok hits=N" when its
 *                       handler still runs and sigaction() still reports it.
 */
#include <dlfcn.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t usr1, term;

static void on_usr1(int sig)
{
    (void)sig;
    usr1++;
}

static void on_term(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si, (void)uc;
    term = 1;
}

static void nap(long ms)
{
    nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "chain")) {
        int (*requested)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "spotrun_checkpoint_requested");
        if (signal(SIGUSR1, on_usr1) == SIG_ERR)
            return 1;
        for (int i = 0; i < 500 && !(usr1 && requested && requested()); i++)
            nap(10);
        struct sigaction cur;
        sigaction(SIGUSR1, NULL, &cur);
        printf("app=%d shim=%d query=%s\n", usr1 > 0, requested ? requested() : -1,
               cur.sa_handler == on_usr1 ? "ok" : "wrong");
        return usr1 && requested && requested() && cur.sa_handler == on_usr1 ? 0 : 1;
    }
    if (argc >= 2 && !strcmp(argv[1], "term")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_term;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGTERM, &sa, NULL);
        printf("ready\n");
        fflush(stdout);
        for (int i = 0; i < 1000 && !term; i++)
            nap(10);
        printf(term ? "app handled TERM\n" : "no TERM\n");
        return term ? 0 : 1;
    }
    if (argc >= 2 && !strcmp(argv[1], "vfork")) {
        struct sigaction sa, dfl, cur;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;
        sigaction(SIGUSR1, &sa, NULL);
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        char *const argv_true[] = {"/bin/true", NULL};
        extern char **environ;
        for (int round = 0; round < 3; round++) {
            pid_t pid;
            if (round == 0) {
                pid = vfork();
                if (pid == 0) { /* what CPython's _posixsubprocess does */
                    for (int sig = 1; sig < NSIG; sig++)
                        if (sig != SIGKILL && sig != SIGSTOP)
                            sigaction(sig, &dfl, NULL);
                    execve(argv_true[0], argv_true, environ);
                    _exit(127);
                }
            } else if (round == 1) {
                pid = fork();
                if (pid == 0) {
                    sigaction(SIGUSR1, &dfl, NULL);
                    execve(argv_true[0], argv_true, environ);
                    _exit(127);
                }
            } else {
                posix_spawnattr_t at;
                posix_spawnattr_init(&at);
                sigset_t all;
                sigfillset(&all);
                posix_spawnattr_setsigdefault(&at, &all);
                posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF);
                if (posix_spawn(&pid, argv_true[0], NULL, &at, argv_true, environ) != 0)
                    pid = -1;
                posix_spawnattr_destroy(&at);
            }
            if (pid < 0)
                return 1;
            waitpid(pid, NULL, 0);
            raise(SIGUSR1);
        }
        sigaction(SIGUSR1, NULL, &cur);
        const int ok = usr1 == 3 && cur.sa_handler == on_usr1;
        printf("vfork handler=%s hits=%d\n", ok ? "ok" : "lost", (int)usr1);
        return ok ? 0 : 1;
    }
    if (argc >= 3 && !strcmp(argv[1], "wait")) {
        printf("ready\n");
        fflush(stdout);
        nap(atol(argv[2]));
        printf("survived\n");
        return 0;
    }
    fprintf(stderr, "usage: sigprobe chain|term|wait MS|vfork\n");
    return 2;
}
