/*
 * api.c - the public in-process API (spotrun.h): commit over the control
 * socket (after writing the registered buffers, see registry.c) and the
 * restored step.
 *
 * Control protocol: one request line per connection to the unix stream
 * socket $SPOTRUN_CONTROL, one reply line back. `COMMIT <step|->` is
 * answered `OK <seq>` or `ERR <message>` once the wrapper has snapshotted
 * the checkpoint directory (O(files); a copy of each file written in place
 * takes longer), so the reply is awaited without a timeout.
 * spotrun_wait_durable() polls `STATUS` (`OK {json}`: durable_seq, and
 * "failed", the seqs of recent commits that failed after they returned).
 *
 * DESIGN: every call opens its own connection, so concurrent commits from
 * several threads need no lock. Interrupted system calls are retried; the
 * socket is close-on-exec and writes use MSG_NOSIGNAL so that a wrapper that
 * went away yields -EPIPE rather than killing the job with SIGPIPE.
 */
#include "shim.h"
#include "spotrun.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Longest reply line we accept; longer ERR messages are truncated. */
#define REPLY_MAX 1024

static int connect_control(const char *path)
{
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof addr.sun_path)
        return -ENAMETOOLONG;
    memcpy(addr.sun_path, path, strlen(path) + 1);

    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (const struct sockaddr *)&addr, sizeof addr) == 0)
        return fd;

    int err = errno;
    if (err == EINTR) {
        /* The connection goes on in the background: wait for it. */
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int rc;
        do
            rc = poll(&pfd, 1, -1);
        while (rc < 0 && errno == EINTR);
        socklen_t len = sizeof err;
        if (rc < 0)
            err = errno;
        else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err == 0)
            return fd;
    }
    close(fd);
    return -err;
}

static int send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        const ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads one '\n'-terminated line into buf (NUL-terminated, newline
 * stripped). Bytes past cap-1 are dropped but still consumed. */
static int recv_line(int fd, char *buf, size_t cap)
{
    size_t used = 0;
    for (;;) {
        char c;
        const ssize_t n = recv(fd, &c, 1, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -ECONNRESET; /* the wrapper hung up without answering */
        if (c == '\n')
            break;
        if (used + 1 < cap)
            buf[used++] = c;
    }
    buf[used] = '\0';
    return 0;
}

static int parse_reply(const char *reply)
{
    if (strcmp(reply, "OK") == 0 || strncmp(reply, "OK ", 3) == 0)
        return 0;
    if (strcmp(reply, "ERR") == 0 || strncmp(reply, "ERR ", 4) == 0) {
        const char *msg = reply[3] ? reply + 4 : "refused by the wrapper";
        fprintf(stderr, "spotrun: %s\n", msg);
        return -EIO;
    }
    fprintf(stderr, "spotrun: unexpected reply from the control socket: '%s'\n", reply);
    return -EPROTO;
}

/* The seq of this process's newest successful commit, 0 = none. */
static long last_seq;

/* One request line, one reply line (into reply, when not NULL); 0 when the
 * reply is OK. */
static int call_reply(const char *req, char *out, size_t cap)
{
    const char *path = getenv("SPOTRUN_CONTROL");
    if (path == NULL || *path == '\0')
        return -ENOTCONN;
    const int fd = connect_control(path);
    if (fd < 0)
        return fd;
    char reply[REPLY_MAX];
    int result = send_all(fd, req, strlen(req));
    if (result == 0)
        result = recv_line(fd, reply, sizeof reply);
    if (result == 0)
        result = parse_reply(reply);
    if (result == 0 && out)
        snprintf(out, cap, "%s", reply);
    close(fd);
    return result;
}

static int call(const char *req)
{
    return call_reply(req, NULL, 0);
}

SPOTRUN_EXPORT int spotrun_commit(long step)
{
    shim_init();
    const char *path = getenv("SPOTRUN_CONTROL");
    if (path == NULL || *path == '\0')
        return -ENOTCONN;
    shim_heartbeat(); /* a commit is progress (the wrapper counts it too) */

    /* Requests seen before the directory is handed over are answered by
     * this commit; any that arrive later stay pending. */
    const unsigned long generation = shim_request_generation();

    /* Registered buffers go into the directory before it is handed over. */
    const int saved = shim_registry_save();
    if (saved < 0)
        return saved;

    char req[64];
    if (step < 0)
        snprintf(req, sizeof req, "COMMIT -\n");
    else
        snprintf(req, sizeof req, "COMMIT %ld\n", step);
    char reply[REPLY_MAX];
    const int result = call_reply(req, reply, sizeof reply);
    if (result == 0) {
        shim_mark_served(generation);
        const long seq = strtol(reply + 2, NULL, 10);
        if (seq > 0)
            __atomic_store_n(&last_seq, seq, __ATOMIC_RELAXED);
    }
    return result;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* In a STATUS reply's JSON: 1 when durable_seq >= seq, -1 when seq is in
 * "failed", 0 while neither. */
static int durable_in(const char *json, long seq)
{
    const char *f = strstr(json, "\"failed\":[");
    for (const char *p = f ? f + 10 : NULL; p && *p && *p != ']';) {
        char *end;
        const long v = strtol(p, &end, 10);
        if (end == p)
            break;
        if (v == seq)
            return -1;
        p = *end == ',' ? end + 1 : end;
    }
    const char *d = strstr(json, "\"durable_seq\":");
    return d && strtol(d + 14, NULL, 10) >= seq;
}

SPOTRUN_EXPORT int spotrun_wait_durable(long seq, long timeout_ms)
{
    shim_init();
    if (seq <= 0)
        seq = __atomic_load_n(&last_seq, __ATOMIC_RELAXED);
    if (seq <= 0)
        return getenv("SPOTRUN_CONTROL") ? -EINVAL : -ENOTCONN;
    const int64_t end = timeout_ms >= 0 ? mono_ms() + timeout_ms : INT64_MAX;
    long nap_ms = 20;
    for (;;) {
        char reply[REPLY_MAX];
        const int rc = call_reply("STATUS\n", reply, sizeof reply);
        if (rc < 0)
            return rc;
        const int d = durable_in(reply, seq);
        if (d > 0)
            return 0;
        if (d < 0) {
            fprintf(stderr,
                    "spotrun: checkpoint %ld failed after its commit returned (the wrapper's "
                    "log says why); the previous checkpoint stands\n",
                    seq);
            return -EIO;
        }
        const int64_t left = end - mono_ms();
        if (left <= 0)
            return -ETIMEDOUT;
        const long ms = left < nap_ms ? (long)left : nap_ms;
        const struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (nanosleep(&ts, NULL) != 0 && errno == EINTR) {
        }
        nap_ms = nap_ms < 250 ? nap_ms * 2 : 250;
    }
}

SPOTRUN_EXPORT int spotrun_metric(const char *name, double value, long step)
{
    shim_init();
    const size_t len = name ? strlen(name) : 0;
    if (len == 0 || len > 64 || !isfinite(value))
        return -EINVAL;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("_.:-", name[i]))
            return -EINVAL;
    char req[160];
    if (step < 0)
        snprintf(req, sizeof req, "METRIC - %s %.17g\n", name, value);
    else
        snprintf(req, sizeof req, "METRIC %ld %s %.17g\n", step, name, value);
    return call(req);
}

SPOTRUN_EXPORT long spotrun_restored_step(void)
{
    shim_init();
    const char *resumed = getenv("SPOTRUN_RESUMED");
    const char *step = getenv("SPOTRUN_STEP");
    if (resumed == NULL || strcmp(resumed, "1") != 0 || step == NULL)
        return -1;
    if (*step < '0' || *step > '9')
        return -1;
    const int saved_errno = errno; /* a getter should not disturb errno */
    char *end;
    errno = 0;
    const long v = strtol(step, &end, 10);
    const int bad = errno != 0 || *end != '\0';
    errno = saved_errno;
    return bad ? -1 : v;
}
