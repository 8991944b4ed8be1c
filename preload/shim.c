/*
 * shim.c - initialisation of libspotrun.so and the checkpoint-request signal.
 *
 * The wrapper asks a job for a checkpoint by sending it $SPOTRUN_SIGNAL
 * (default SIGUSR1). The default action of SIGUSR1 is to terminate, so a job
 * that never asked for the signal would die from the very request meant to
 * save it. When that signal is still at SIG_DFL, the shim installs a handler
 * that only records the request; the job reads it through
 * spotrun_checkpoint_requested().
 *
 * DESIGN
 *  - Init runs from a constructor and, lazily, at the top of each public
 *    entry point (libfaketime style), because another library's constructor
 *    may call into us first. The guard is a lock-free atomic state, not
 *    pthread_once: a caller that finds init in progress returns at once
 *    instead of waiting, so init can never deadlock against itself (for
 *    instance when reached from a signal handler that interrupted it).
 *  - The handler touches nothing but a lock-free atomic counter, so it is
 *    async-signal-safe and preserves errno.
 *  - If the application later installs its own handler for the signal, it
 *    simply replaces ours and the in-process flag stops seeing requests.
 *    Chaining the application's handlers (intercepting signal()/sigaction())
 *    comes with the full signal shim in a later issue.
 *  - A signal that is ignored or already handled when we start is left alone:
 *    whoever set that disposition owns the signal.
 *  - Never exits the process, never prints on the hot path.
 */
#include "shim.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { INIT_NONE, INIT_RUNNING, INIT_DONE };

static atomic_int init_state = INIT_NONE;
static atomic_ulong requested_gen;
static atomic_ulong served_gen;

static void on_request_signal(int sig)
{
    (void)sig;
    atomic_fetch_add_explicit(&requested_gen, 1, memory_order_relaxed);
}

unsigned long shim_request_generation(void)
{
    return atomic_load_explicit(&requested_gen, memory_order_relaxed);
}

void shim_mark_served(unsigned long generation)
{
    unsigned long cur = atomic_load(&served_gen);
    /* Advance only: a slower commit that started earlier must not roll back
     * a newer one that already answered a later request. */
    while (cur < generation && !atomic_compare_exchange_weak(&served_gen, &cur, generation)) {
    }
}

SPOTRUN_EXPORT int spotrun_checkpoint_requested(void)
{
    shim_init();
    return atomic_load_explicit(&requested_gen, memory_order_relaxed) !=
           atomic_load_explicit(&served_gen, memory_order_relaxed);
}

/* Parses a decimal number in [1, max]; -1 when `s` is not one. */
static int parse_signo(const char *s, int max)
{
    if (*s < '0' || *s > '9')
        return -1;
    char *end;
    const long v = strtol(s, &end, 10);
    return (*end == '\0' && v >= 1 && v <= max) ? (int)v : -1;
}

/* Resolves "SIGUSR1", "USR1", "usr1", "10", "SIGRTMIN+2", "RTMAX-1" to a
 * signal number; -1 when the name is unknown. Names come from glibc's
 * sigabbrev_np() rather than a table of our own. */
static int signal_from_name(const char *name)
{
    if (strncasecmp(name, "SIG", 3) == 0)
        name += 3;
    const int num = parse_signo(name, NSIG - 1);
    if (num > 0 || (*name >= '0' && *name <= '9'))
        return num;
    if (strncasecmp(name, "RTMIN", 5) == 0 || strncasecmp(name, "RTMAX", 5) == 0) {
        const int is_min = strncasecmp(name, "RTMIN", 5) == 0;
        const char *rest = name + 5;
        int off = 0;
        if (*rest == (is_min ? '+' : '-')) {
            off = parse_signo(rest + 1, SIGRTMAX - SIGRTMIN);
            if (off < 0)
                return -1;
        } else if (*rest != '\0') {
            return -1;
        }
        return is_min ? SIGRTMIN + off : SIGRTMAX - off;
    }
    for (int sig = 1; sig < NSIG; sig++) {
        const char *abbrev = sigabbrev_np(sig);
        if (abbrev && strcasecmp(abbrev, name) == 0)
            return sig;
    }
    return -1;
}

/* Signals whose default action we must not replace with "set a flag and
 * return": faults would re-execute the faulting instruction forever, and
 * KILL/STOP cannot be caught at all. */
static int signal_is_takeable(int sig)
{
    switch (sig) {
    case SIGKILL:
    case SIGSTOP:
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
    case SIGTRAP:
    case SIGSYS:
    case SIGABRT:
        return 0;
    default:
        return 1;
    }
}

static void install_request_handler(void)
{
    const char *name = getenv("SPOTRUN_SIGNAL");
    if (name == NULL || *name == '\0')
        return; /* not under spotrun: leave every disposition alone */
    const int sig = signal_from_name(name);
    if (sig <= 0 || !signal_is_takeable(sig))
        return;

    struct sigaction old;
    if (sigaction(sig, NULL, &old) != 0)
        return;
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
        return;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_request_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    (void)sigaction(sig, &sa, NULL);
}

void shim_init(void)
{
    if (atomic_load_explicit(&init_state, memory_order_acquire) == INIT_DONE)
        return;
    int expected = INIT_NONE;
    if (!atomic_compare_exchange_strong(&init_state, &expected, INIT_RUNNING))
        return; /* done, or in progress elsewhere: never wait for it */
    install_request_handler();
    atomic_store_explicit(&init_state, INIT_DONE, memory_order_release);
}

__attribute__((constructor)) static void shim_constructor(void)
{
    shim_init();
}
