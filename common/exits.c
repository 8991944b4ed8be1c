/*
 * exits.c - errors to exit codes (see exits.h).
 */
#include "exits.h"

#include <errno.h>
#include <stdio.h>

#include "log.h"

int sr_exit_code(int rc)
{
    switch (-rc) {
    case 0:
        return SR_EX_OK;
    case EINVAL:
    case EPROTONOSUPPORT:
        return SR_EX_USAGE;
    case EBADMSG:
    case ELOOP: /* a symlink planted inside the store */
    case EPERM:
    case EFBIG:
        return SR_EX_DATAERR;
    case ENOENT:
    case ENOTDIR:
    case ENXIO: /* S3 NoSuchBucket */
        return SR_EX_NOINPUT;
    case EACCES:
        return SR_EX_NOPERM;
    case ECONNREFUSED:
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ECONNRESET:
    case ENETUNREACH:
        return SR_EX_UNAVAILABLE;
    case EPROTO: /* the store does not answer as S3: check the endpoint */
        return SR_EX_CONFIG;
    case EADDRINUSE:
    case EEXIST:
        return SR_EX_CANTCREAT;
    case ETXTBSY: /* SR_ECHANGED: a file changed while it was archived (push) */
        return SR_EX_TEMPFAIL;
    case EIO:
    case ENOSPC:
    case EROFS:
    case EDQUOT:
        return SR_EX_IOERR;
    default:
        return SR_EX_SOFTWARE;
    }
}

int sr_fail(int rc, const char *what)
{
    fprintf(stderr, "spotrun: %s: %s\n", what, sr_strerror(rc));
    return sr_exit_code(rc);
}
