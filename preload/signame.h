/*
 * signame.h - signal names and numbers, the one spelling shared by the
 * wrapper (--signal, SPOTRUN_SIGNAL, log lines) and the shim (which reads
 * SPOTRUN_SIGNAL back). Header-only: the shim links nothing of runtime/.
 *
 * Accepted: "SIGUSR1", "USR1", "usr1", "10", "SIGRTMIN", "RTMIN+2",
 * "SIGRTMAX-1". Written: "SIGUSR1", and real-time signals as "SIGRTMIN+N"
 * (glibc has no abbreviation for them), so that every name written parses
 * back to the same number.
 */
#ifndef SPOTRUN_SIGNAME_H
#define SPOTRUN_SIGNAME_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A decimal number in [lo, hi] with nothing after it; -1 otherwise. */
static inline int spotrun_signame_num(const char *s, int lo, int hi)
{
    if (*s < '0' || *s > '9')
        return -1;
    long v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (*s - '0');
        if (v > hi)
            return -1;
    }
    return (*s == '\0' && v >= lo) ? (int)v : -1;
}

/* s starts with the upper-case ASCII prefix p, in any case. Spelled out
 * rather than strncasecmp so that the compiler sees a short constant name
 * end before the prefix does (gcc -O3's -Warray-bounds). */
static inline int spotrun_signame_prefix(const char *s, const char *p)
{
    for (; *p; s++, p++) {
        const char c = (*s >= 'a' && *s <= 'z') ? (char)(*s - 'a' + 'A') : *s;
        if (c != *p)
            return 0;
    }
    return 1;
}

/* "SIGUSR1", "USR1", "10", "RTMIN+2" -> the signal's number; -1 if none. */
static inline int spotrun_signal_parse(const char *name)
{
    if (name == NULL)
        return -1;
    if (spotrun_signame_prefix(name, "SIG"))
        name += 3;
    if (*name >= '0' && *name <= '9')
        return spotrun_signame_num(name, 1, NSIG - 1);
    const int is_min = spotrun_signame_prefix(name, "RTMIN");
    if (is_min || spotrun_signame_prefix(name, "RTMAX")) {
        const char *rest = name + 5;
        int off = 0;
        if (*rest == (is_min ? '+' : '-')) {
            off = spotrun_signame_num(rest + 1, 0, SIGRTMAX - SIGRTMIN);
            if (off < 0)
                return -1;
        } else if (*rest != '\0') {
            return -1;
        }
        return is_min ? SIGRTMIN + off : SIGRTMAX - off;
    }
    for (int sig = 1; sig < SIGRTMIN; sig++) {
        const char *abbrev = sigabbrev_np(sig);
        if (abbrev && strcasecmp(abbrev, name) == 0)
            return sig;
    }
    return -1;
}

/* The signal's name into buf ("SIGUSR1", "SIGRTMIN+2", "SIG99" for a number
 * that is no signal); returns buf. */
static inline const char *spotrun_signal_name(int sig, char *buf, size_t len)
{
    const char *abbrev = sig > 0 && sig < SIGRTMIN ? sigabbrev_np(sig) : NULL;
    if (abbrev)
        snprintf(buf, len, "SIG%s", abbrev);
    else if (sig == SIGRTMIN)
        snprintf(buf, len, "SIGRTMIN");
    else if (sig > SIGRTMIN && sig <= SIGRTMAX)
        snprintf(buf, len, "SIGRTMIN+%d", sig - SIGRTMIN);
    else
        snprintf(buf, len, "SIG%d", sig);
    return buf;
}

#endif
