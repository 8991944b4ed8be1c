/*
 * signals.c - keeping the checkpoint-request signal and SIGTERM ours while
 * the application believes it owns them.
 *
 * Under `spotrun run` (SPOTRUN_SIGNAL set), the shim installs one handler
 * for the request signal and for SIGTERM if they are at SIG_DFL when it
 * starts (an ignored or already handled signal is left to whoever set it).
 * From then on signal(), sigaction(), sigset(), bsd_signal() and
 * sysv_signal() on those two signals only record the application's wish
 * (its "action"); the kernel keeps our handler, with the application's mask
 * and flags. Queries return the application's action, so the program sees
 * exactly what it set.
 *
 * The handler:
 *  - request signal: counts a request (spotrun_checkpoint_requested()), then
 *    runs the application's handler if it has one. Unaware programs are not
 *    killed by it.
 *  - SIGTERM with an application handler (or SIG_IGN): runs / ignores it;
 *    the application handles SIGTERM itself.
 *  - Re-raised SIGTERM: a handler that resets SIGTERM to SIG_DFL and raises
 *    it against its own process to "die as by default" (PyTorch's
 *    DataLoader workers do exactly that for any SIGTERM not sent by their
 *    parent) asks for the default action of the SIGTERM it handles. When
 *    that one came from outside the tree, the default under spotrun is a
 *    checkpoint request, so the re-raise is that outside SIGTERM: reported,
 *    not a death. "The re-raise" = a SIGTERM this process sends itself
 *    while an application handler runs for an outside SIGTERM (delivered at
 *    once with SA_NODEFER), or that is pending when such a handler returns
 *    (delivered as it returns). A SIGTERM the job sends itself at any other
 *    time still kills it.
 *  - SIGTERM at the application's SIG_DFL: sent from inside the job's tree
 *    (the wrapper's TERM after a checkpoint, the process itself, a parent
 *    that terminates its child, `timeout`), it kills as usual: that is the
 *    job's own business. Sent from outside the tree (Slurm signals every
 *    process of a job; a user's kill; a sender in another pid namespace),
 *    it is reported to the wrapper as a checkpoint request ("REQUEST
 *    SIGTERM" on the control socket), which treats it as a notice with
 *    --grace, instead of an instant death. Without a wrapper to tell, it
 *    kills as usual. "Inside the tree" = the wrapper is an ancestor of the
 *    sender (/proc/<pid>/stat, walked from the handler with open/read only;
 *    the wrapper is a subreaper, so orphans stay below it). A sender
 *    already exited and reaped cannot be placed: it counts as outside.
 *
 * Children: the table of the application's actions lives in this
 * process's memory, which a vfork / posix_spawn child (CPython >= 3.10
 * starts subprocesses with vfork) shares with its parent until it execs.
 * Such a child resets its dispositions through sigaction() before exec; had
 * we recorded that, the parent would lose its handlers. So the table is
 * written only by its owner process (`owner`, updated in fork children by a
 * pthread_atfork handler); any other caller - a child sharing our memory -
 * goes straight to the kernel. A fork child owns a copy; exec starts over
 * from the environment.
 *
 * The job page (job_page.h): installing a handler for the request signal
 * marks the job as listening, so the wrapper knows a request is heard.
 *
 * Async-signal safety: the handler uses only atomics and socket(),
 * connect(), send(), close(), sigaction(), pthread_sigmask(), raise(),
 * sigpending();
 * everything it reads (the control path, the wrapper pid) was copied at
 * init. errno is preserved.
 * Threads: actions are per-process atomics; a racing update and delivery
 * see the old or the new handler.
 */
#include "hooks.h"
#include "shim.h"
#include "signame.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct app_action {
    atomic_uintptr_t handler; /* SIG_DFL, SIG_IGN or a function */
    atomic_int flags;
    sigset_t mask;
};

static struct app_action app[NSIG];
static atomic_int managed[NSIG];
static int request_sig = -1;
static pid_t wrapper_pid;
static struct sockaddr_un control_addr;
static int have_control;
static atomic_int owner; /* the pid whose memory this is (see "Children") */
/* "Re-raised SIGTERM": application handlers running for a SIGTERM from
 * outside the tree, and a re-raise left pending when the last one returned. */
static atomic_int outside_term;
static atomic_int reraise_pending;

static void atfork_child(void)
{
    atomic_store(&owner, (int)getpid());
}

/* 0 in a vfork / clone(CLONE_VM) child borrowing its parent's memory. */
static int is_owner(void)
{
    return (int)getpid() == atomic_load(&owner);
}

/* ---- the handler ----------------------------------------------------------- */

static void die_by_default(int sig)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    const sigaction_fn real =
        (sigaction_fn)__atomic_load_n(&shim_reals[SH_sigaction], __ATOMIC_ACQUIRE);
    if (real)
        real(sig, &dfl, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    raise(sig); /* pending while blocked in this handler */
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

/* "REQUEST SIGTERM <pid>" to the wrapper; 0 when sent. */
static int report_term(void)
{
    if (!have_control)
        return -1;
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int rc = -1;
    if (connect(fd, (const struct sockaddr *)&control_addr, sizeof control_addr) == 0) {
        char line[48] = "REQUEST SIGTERM ";
        size_t n = strlen(line);
        char digits[16];
        size_t d = 0;
        for (unsigned v = (unsigned)getpid(); v || d == 0; v /= 10)
            digits[d++] = (char)('0' + v % 10);
        while (d)
            line[n++] = digits[--d];
        line[n++] = '\n';
        rc = send(fd, line, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
    }
    close(fd);
    return rc;
}

/* The parent of `pid` from /proc/<pid>/stat, with open/read only (called
 * from the handler); -1 when it cannot be read. The comm field may hold
 * spaces and parentheses: the fields start after the last ')'. */
static int parent_of(int pid)
{
    char path[32] = "/proc/";
    size_t n = 6;
    char digits[12];
    size_t d = 0;
    for (unsigned v = (unsigned)pid; v || d == 0; v /= 10)
        digits[d++] = (char)('0' + v % 10);
    while (d)
        path[n++] = digits[--d];
    memcpy(path + n, "/stat", 6);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[512];
    const ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0)
        return -1;
    buf[r] = '\0';
    const char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
        return -1;
    p += 4; /* ") S " */
    long ppid = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        ppid = ppid * 10 + (*p - '0');
    return *p == ' ' ? (int)ppid : -1;
}

/* Whether `pid` is the wrapper or runs below it (the job's own tree). The
 * wrapper may be pid 1 (a container's entrypoint): it is compared before
 * the walk stops at init. */
static int in_job_tree(int pid)
{
    if (wrapper_pid <= 0 || pid <= 0)
        return 0;
    for (int depth = 0; depth < 256 && pid > 0; depth++) {
        if (pid == wrapper_pid)
            return 1;
        if (pid == 1)
            return 0;
        pid = parent_of(pid);
    }
    return 0;
}

/* A SIGTERM sent by this process to itself, or from inside the job's tree. */
static int term_from_self(const siginfo_t *si)
{
    return si && si->si_code <= 0 && si->si_pid == getpid();
}

static int term_is_ours(const siginfo_t *si)
{
    /* si_code <= 0: sent by a process (kill, sigqueue, tgkill). */
    return si && si->si_code <= 0 && (si->si_pid == getpid() || in_job_tree((int)si->si_pid));
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    const int saved = errno;
    const uintptr_t h = atomic_load(&app[sig].handler);
    const int flags = atomic_load(&app[sig].flags);
    if (sig == request_sig)
        shim_note_request();
    if (sig == request_sig) {
        /* counted above; the application's handler, if any, runs below */
    } else if (h == (uintptr_t)SIG_DFL) { /* SIGTERM */
        /* The application's re-raise of an outside SIGTERM (see "Re-raised
         * SIGTERM") is that SIGTERM; any other consumes the mark. */
        const int reraised =
            (atomic_exchange(&reraise_pending, 0) || atomic_load(&outside_term) > 0) &&
            term_from_self(si);
        if ((!reraised && term_is_ours(si)) || report_term() != 0)
            die_by_default(sig);
        errno = saved;
        return;
    }
    if (h == (uintptr_t)SIG_DFL || h == (uintptr_t)SIG_IGN) {
        errno = saved;
        return;
    }
    const int outside = sig != request_sig && !term_is_ours(si);
    if (outside)
        atomic_fetch_add(&outside_term, 1);
    if (flags & SA_RESETHAND)
        atomic_store(&app[sig].handler, (uintptr_t)SIG_DFL);
    errno = saved;
    if (flags & SA_SIGINFO)
        ((void (*)(int, siginfo_t *, void *))h)(sig, si, uc);
    else
        ((void (*)(int))h)(sig);
    if (outside) {
        /* Re-raised while blocked in this handler: delivered as soon as we
         * return, and still the outside SIGTERM. */
        sigset_t pending;
        if (atomic_load(&app[sig].handler) == (uintptr_t)SIG_DFL && sigpending(&pending) == 0 &&
            sigismember(&pending, sig) == 1)
            atomic_store(&reraise_pending, 1);
        atomic_fetch_sub(&outside_term, 1);
    }
    errno = saved;
}

/* ---- installing ------------------------------------------------------------- */

static int install(int sig, const sigset_t *mask, int app_flags)
{
    const sigaction_fn real = REAL(sigaction);
    if (!real)
        return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    if (mask)
        sa.sa_mask = *mask;
    else
        sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | (app_flags & (SA_RESTART | SA_NODEFER | SA_ONSTACK));
    return real(sig, &sa, NULL);
}

static void take(int sig)
{
    if (sig <= 0 || sig >= NSIG || atomic_load(&managed[sig]))
        return;
    const sigaction_fn real = REAL(sigaction);
    struct sigaction old;
    if (!real || real(sig, NULL, &old) != 0)
        return;
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
        return; /* ignored or handled already: not ours to take */
    atomic_store(&app[sig].handler, (uintptr_t)SIG_DFL);
    atomic_store(&app[sig].flags, 0);
    sigemptyset(&app[sig].mask);
    if (install(sig, NULL, SA_RESTART) == 0)
        atomic_store(&managed[sig], 1);
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

void shim_signals_init(void)
{
    const char *name = getenv("SPOTRUN_SIGNAL");
    if (name == NULL || *name == '\0')
        return; /* not under spotrun: leave every disposition alone */
    atomic_store(&owner, (int)getpid());
    pthread_atfork(NULL, NULL, atfork_child);
    const char *pid = getenv("SPOTRUN_WRAPPER_PID");
    wrapper_pid = pid ? (pid_t)atoi(pid) : 0;
    const char *path = getenv("SPOTRUN_CONTROL");
    if (path && *path && strlen(path) < sizeof control_addr.sun_path) {
        control_addr.sun_family = AF_UNIX;
        memcpy(control_addr.sun_path, path, strlen(path) + 1);
        have_control = 1;
    }
    const int sig = spotrun_signal_parse(name);
    if (sig > 0 && signal_is_takeable(sig)) {
        request_sig = sig;
        take(sig);
    }
    if (have_control)
        take(SIGTERM);
}

/* ---- the application's view ----------------------------------------------- */

static void app_get(int sig, struct sigaction *out)
{
    memset(out, 0, sizeof *out);
    const uintptr_t h = atomic_load(&app[sig].handler);
    out->sa_flags = atomic_load(&app[sig].flags);
    out->sa_mask = app[sig].mask;
    if (out->sa_flags & SA_SIGINFO)
        out->sa_sigaction = (void (*)(int, siginfo_t *, void *))h;
    else
        out->sa_handler = (sighandler_t)h;
}

static int app_set(int sig, const struct sigaction *act)
{
    if (install(sig, &act->sa_mask, act->sa_flags) != 0)
        return -1;
    const uintptr_t h =
        (act->sa_flags & SA_SIGINFO) ? (uintptr_t)act->sa_sigaction : (uintptr_t)act->sa_handler;
    if (sig == request_sig && h != (uintptr_t)SIG_DFL && h != (uintptr_t)SIG_IGN)
        shim_job_listening();
    app[sig].mask = act->sa_mask;
    atomic_store(&app[sig].flags, act->sa_flags);
    atomic_store(&app[sig].handler, (act->sa_flags & SA_SIGINFO) ? (uintptr_t)act->sa_sigaction
                                                                 : (uintptr_t)act->sa_handler);
    return 0;
}

/* Ours to emulate: a managed signal, asked by the process that owns the
 * table (never a vfork child, see "Children"). */
static int is_managed(int sig)
{
    return sig > 0 && sig < NSIG && atomic_load(&managed[sig]) && is_owner();
}

SPOTRUN_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    shim_init();
    const sigaction_fn real = REAL(sigaction);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if (!is_managed(sig))
        return real(sig, act, old);
    struct sigaction prev;
    app_get(sig, &prev);
    if (act && app_set(sig, act) != 0)
        return -1;
    if (old)
        *old = prev;
    return 0;
}

/* signal() and friends, for the signals we manage, in terms of app_set. */
static sighandler_t set_simple(int sig, sighandler_t handler, int flags)
{
    struct sigaction act, prev;
    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    sigemptyset(&act.sa_mask);
    act.sa_flags = flags;
    app_get(sig, &prev);
    if (app_set(sig, &act) != 0)
        return SIG_ERR;
    return prev.sa_handler; /* shares storage with sa_sigaction */
}

#define SIMPLE_HOOK(name, flags)                                                                   \
    SPOTRUN_EXPORT sighandler_t name(int sig, sighandler_t handler)                                \
    {                                                                                              \
        shim_init();                                                                               \
        if (!is_managed(sig)) {                                                                    \
            const name##_fn real = REAL(name);                                                     \
            if (!real) {                                                                           \
                errno = ENOSYS;                                                                    \
                return SIG_ERR;                                                                    \
            }                                                                                      \
            return real(sig, handler);                                                             \
        }                                                                                          \
        return set_simple(sig, handler, flags);                                                    \
    }

SIMPLE_HOOK(signal, SA_RESTART)
SIMPLE_HOOK(bsd_signal, SA_RESTART)
SIMPLE_HOOK(sysv_signal, SA_RESETHAND | SA_NODEFER)

SPOTRUN_EXPORT sighandler_t sigset(int sig, sighandler_t disp)
{
    shim_init();
    if (!is_managed(sig)) {
        const sigset_fn real = REAL(sigset);
        if (!real) {
            errno = ENOSYS;
            return SIG_ERR;
        }
        return real(sig, disp);
    }
    sigset_t one, was;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_BLOCK, NULL, &was);
    const int held = sigismember(&was, sig) == 1;
    sighandler_t prev;
    if (disp == SIG_HOLD) {
        struct sigaction cur;
        app_get(sig, &cur);
        prev = cur.sa_handler;
        pthread_sigmask(SIG_BLOCK, &one, NULL);
    } else {
        prev = set_simple(sig, disp, 0);
        if (prev == SIG_ERR)
            return SIG_ERR;
        pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    }
    return held ? SIG_HOLD : prev;
}
