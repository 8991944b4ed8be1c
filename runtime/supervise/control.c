/*
 * control.c - the control socket (see control.h).
 */
#include "control.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "units.h"

static int make_addr(const char *path, struct sockaddr_un *sa)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa->sun_path))
        return sr_errf(-ENAMETOOLONG, "control socket path too long: %s", path);
    strcpy(sa->sun_path, path);
    return 0;
}

static int connect_to(const char *path, int *out)
{
    struct sockaddr_un sa;
    int rc = make_addr(path, &sa);
    if (rc < 0)
        return rc;
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    *out = fd;
    return 0;
}

int sr_ctl_listen(const char *path, int *out)
{
    struct sockaddr_un sa;
    int rc = make_addr(path, &sa);
    if (rc < 0)
        return rc;
    int probe;
    if (connect_to(path, &probe) == 0) {
        close(probe);
        return sr_errf(-EADDRINUSE, "another spotrun is serving %s", path);
    }
    struct stat sb;
    if (lstat(path, &sb) == 0) {
        if (!S_ISSOCK(sb.st_mode))
            return sr_errf(-EEXIST, "%s exists and is not a socket; not replacing it", path);
        unlink(path); /* stale socket of a wrapper that died */
    }
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return sr_errf(-errno, "cannot create control socket: %s", strerror(errno));
    const mode_t old = umask(0177);
    rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc < 0 || listen(fd, 16) < 0) {
        rc = sr_errf(-errno, "cannot listen on %s: %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    *out = fd;
    return 0;
}

/* Reads one '\n'-terminated line within timeout_ms (<0: forever). */
static int read_line(int fd, char *buf, size_t len, int timeout_ms)
{
    size_t n = 0;
    const int64_t end = sr_now_ms() + timeout_ms;
    while (n + 1 < len) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        const int wait = timeout_ms < 0 ? -1 : (int)(end - sr_now_ms());
        if (timeout_ms >= 0 && wait <= 0)
            return -ETIMEDOUT;
        const int pr = poll(&p, 1, wait);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            return -errno;
        if (pr == 0)
            return -ETIMEDOUT;
        const ssize_t r = read(fd, buf + n, len - 1 - n);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return -ECONNRESET;
        n += (size_t)r;
        buf[n] = '\0';
        char *nl = strchr(buf, '\n');
        if (nl) {
            *nl = '\0';
            return 0;
        }
    }
    return -EMSGSIZE;
}

int sr_ctl_source_valid(const char *source)
{
    const size_t n = strlen(source);
    if (n == 0 || n >= sizeof(((struct sr_ctl_req *)0)->source))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)source[i]) && !strchr("_.:-", source[i]))
            return 0;
    return 1;
}

#define WORDS_MAX 4
#define WORD_LEN 80

/* The words of a request line, separated by spaces: -EINVAL when there are
 * more than WORDS_MAX or one is longer than WORD_LEN - 1 (never cut short:
 * a long number must not parse as its first digits). Returns the count. */
static int split_words(const char *line, char w[WORDS_MAX][WORD_LEN])
{
    int n = 0;
    for (const char *p = line; *p;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        const size_t len = strcspn(p, " ");
        if (n == WORDS_MAX || len >= WORD_LEN)
            return -EINVAL;
        memcpy(w[n], p, len);
        w[n++][len] = '\0';
        p += len;
    }
    return n;
}

/* METRIC <step|-> <name> <value> */
static int parse_metric(char w[WORDS_MAX][WORD_LEN], int n, struct sr_ctl_req *req)
{
    if (n != 4)
        return -EINVAL;
    req->kind = SR_CTL_METRIC;
    req->step = -1;
    if (strcmp(w[1], "-") != 0 && sr_parse_int(w[1], 0, INT64_MAX, &req->step) < 0)
        return -EINVAL;
    const char *name = w[2];
    const size_t len = strlen(name);
    if (len == 0 || len >= sizeof(req->name))
        return -EINVAL;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("_.:-", name[i]))
            return -EINVAL;
    memcpy(req->name, name, len + 1);
    return sr_parse_real(w[3], &req->value) < 0 ? -EINVAL : 0;
}

/* One request line; a word more or less than its verb takes is refused
 * ("COMMIT 1 extra" is no commit of step 1). */
static int parse_request(const char *line, struct sr_ctl_req *req)
{
    memset(req, 0, sizeof(*req));
    char w[WORDS_MAX][WORD_LEN];
    const int n = split_words(line, w);
    if (n < 1)
        return -EINVAL;
    const char *verb = w[0];
    if (strcmp(verb, "COMMIT") == 0) {
        req->kind = SR_CTL_COMMIT;
        req->step = -1;
        req->pause_ms = -1;
        if (n < 2 || n > 3 ||
            (strcmp(w[1], "-") != 0 && sr_parse_int(w[1], 0, INT64_MAX, &req->step) < 0))
            return -EINVAL;
        if (n == 3 && (strncmp(w[2], "pause_ms=", 9) != 0 ||
                       sr_parse_int(w[2] + 9, 0, INT64_MAX / 2, &req->pause_ms) < 0))
            return -EINVAL;
        return 0;
    }
    if (strcmp(verb, "NOTIFY") == 0) {
        req->kind = SR_CTL_NOTIFY;
        if (n < 2 || n > 3 || sr_parse_int(w[1], 0, INT64_MAX / 2, &req->deadline_ms) < 0 ||
            (n == 3 && !sr_ctl_source_valid(w[2])))
            return -EINVAL;
        snprintf(req->source, sizeof(req->source), "%.31s", n == 3 ? w[2] : "manual");
        return 0;
    }
    if (strcmp(verb, "REQUEST") == 0) {
        req->kind = SR_CTL_REQUEST;
        if (n < 2 || n > 3 || strlen(w[1]) > 16)
            return -EINVAL;
        if (n == 3 && sr_parse_int(w[2], 1, INT32_MAX, &req->pid) < 0)
            return -EINVAL;
        snprintf(req->source, sizeof(req->source), "job:%.16s", w[1]); /* length checked above */
        return 0;
    }
    if (strcmp(verb, "STATUS") == 0) {
        req->kind = SR_CTL_STATUS;
        return n == 1 ? 0 : -EINVAL;
    }
    if (strcmp(verb, "METRIC") == 0)
        return parse_metric(w, n, req);
    return -EINVAL;
}

int sr_ctl_read_request(int fd, struct sr_ctl_req *req)
{
    char line[256];
    const int rc = read_line(fd, line, sizeof(line), SR_CTL_REQUEST_TIMEOUT_MS);
    return rc < 0 ? rc : parse_request(line, req);
}

int sr_ctl_conn_feed(struct sr_ctl_conn *c, struct sr_ctl_req *req)
{
    for (;;) {
        if (c->used + 1 >= sizeof(c->buf))
            return -EMSGSIZE;
        const ssize_t r = read(c->fd, c->buf + c->used, sizeof(c->buf) - 1 - c->used);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
        if (r == 0)
            return -ECONNRESET;
        c->used += (size_t)r;
        c->buf[c->used] = '\0';
        char *nl = strchr(c->buf, '\n');
        if (nl) {
            *nl = '\0';
            return parse_request(c->buf, req) < 0 ? -EINVAL : 1;
        }
    }
}

void sr_ctl_reply(int fd, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    /* Best effort: a client that went away must not kill the wrapper
     * (MSG_NOSIGNAL: no SIGPIPE). */
    for (ssize_t off = 0; off < n;) {
        const ssize_t w = send(fd, line + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        off += w;
    }
}

int sr_ctl_call(const char *path, const char *request, char *reply, size_t len, int timeout_ms)
{
    int fd;
    int rc = connect_to(path, &fd);
    struct stat sb;
    if (rc < 0 && stat(path, &sb) == 0 && !S_ISSOCK(sb.st_mode))
        return sr_errf(-EINVAL, /* a setting that is wrong: 64 */
                       "%s is not a spotrun control socket (it is a %s): SPOTRUN_CONTROL or "
                       "--control must name the socket `spotrun run` gives its job",
                       path, S_ISDIR(sb.st_mode) ? "directory" : "regular file or other file");
    if (rc < 0)
        return sr_errf(rc, "cannot reach the spotrun wrapper at %s: %s", path, strerror(-rc));
    char line[256];
    const int n = snprintf(line, sizeof(line), "%s\n", request);
    if (n < 0 || (size_t)n >= sizeof(line)) {
        rc = sr_errf(-EMSGSIZE, "request to %s too long", path);
        goto out;
    }
    if (send(fd, line, (size_t)n, MSG_NOSIGNAL) != n) {
        rc = sr_errf(-errno, "cannot send to %s: %s", path, strerror(errno));
        goto out;
    }
    rc = read_line(fd, reply, len, timeout_ms);
    if (rc < 0)
        rc = sr_errf(rc, "no answer from the spotrun wrapper at %s: %s", path, strerror(-rc));
out:
    close(fd);
    return rc;
}
