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
 */
#include <dlfcn.h>
#include <signal.h>
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
    if (argc >= 3 && !strcmp(argv[1], "wait")) {
        printf("ready\n");
        fflush(stdout);
        nap(atol(argv[2]));
        printf("survived\n");
        return 0;
    }
    fprintf(stderr, "usage: sigprobe chain|term|wait MS\n");
    return 2;
}
