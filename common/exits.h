/*
 * exits.h - spotrun's exit codes (sysexits.h values, named here so the
 * table in docs/cli.md has one source) and the mapping of the libraries' -errno
 * results to them.
 *
 * Only the commands (runtime/cmd) and the supervisor, which returns the
 * wrapper's exit code, choose exit codes; storage/ never exits and returns
 * -errno.
 */
#ifndef SPOTRUN_EXITS_H
#define SPOTRUN_EXITS_H

/* sysexits.h values, named here so the table in docs/cli.md has one source. */
enum {
    SR_EX_OK = 0,
    SR_EX_USAGE = 64,
    SR_EX_DATAERR = 65,
    SR_EX_NOINPUT = 66,
    SR_EX_UNAVAILABLE = 69,
    SR_EX_SOFTWARE = 70,
    SR_EX_CANTCREAT = 73,
    SR_EX_IOERR = 74,
    SR_EX_TEMPFAIL = 75,
    SR_EX_NOPERM = 77,
    SR_EX_CONFIG = 78,
    /* Not sysexits: stopped at a time limit or budget after making the
     * newest checkpoint durable; do not requeue (timeout(1)'s code). */
    SR_EX_LIMIT = 124,
    /* Not sysexits: refused before the job started by a team's or user's
     * quota (docs/cost.md, "Quotas and approvals"); nothing ran. */
    SR_EX_QUOTA = 79,
};

/* Exit code for a negative errno from the libraries. */
int sr_exit_code(int rc);
/* Prints "spotrun: <what>: <cause>" and returns the exit code. */
int sr_fail(int rc, const char *what);

#endif
