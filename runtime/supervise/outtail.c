/*
 * outtail.c - the tee of the job's stderr and the tail of its output (see
 * outtail.h).
 *
 * DESIGN: the pipe's read end is non-blocking and read only under the
 * mutex, so that sr_outtail_take(), holding the mutex, sees every byte the
 * job wrote either in the pipe (FIONREAD) or in the ring; it waits until
 * the pipe is empty and every byte read was forwarded (so the job's last
 * line comes before the wrapper's "the job exited" on a shared terminal),
 * at most TAKE_WAIT_MS (a stderr that does not drain: a stopped terminal).
 * Forwarding runs outside the mutex and may block as long as the
 * original stderr does; close() cancels a thread still blocked after
 * CLOSE_WAIT_MS (the mutex is never held across a cancellation point).
 */
#include "outtail.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "outtext.h"
#include "supervisor_int.h"
#include "units.h"

#define TAKE_WAIT_MS 2000
#define CLOSE_WAIT_MS 2000
#define CHUNK 65536

struct sr_outtail {
    int rfd, wfd, out_fd;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled when bytes were forwarded, and at EOF */
    char ring[SR_TAIL_MAX_BYTES];
    size_t head;     /* next write position in ring */
    uint64_t kept;   /* bytes since the last take (the ring holds the last of them) */
    uint64_t got;    /* bytes read from the pipe */
    uint64_t passed; /* bytes forwarded (or dropped: the original is gone) */
    int64_t last_ms; /* unix ms of the newest bytes read, 0 = none since the last take */
    int eof, out_dead;
    char buf[CHUNK]; /* the thread's */
};

static void keep(struct sr_outtail *t, const char *p, size_t n)
{
    if (n > sizeof(t->ring)) {
        p += n - sizeof(t->ring);
        t->kept += n - sizeof(t->ring);
        n = sizeof(t->ring);
    }
    for (size_t i = 0; i < n; i++) {
        t->ring[t->head] = p[i];
        t->head = (t->head + 1) % sizeof(t->ring);
    }
    t->kept += n;
}

/* Writes all of p to the original stderr; gives it up when it is gone. */
static void forward(struct sr_outtail *t, const char *p, size_t n)
{
    while (n && !t->out_dead) {
        const ssize_t w = write(t->out_fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && errno == EAGAIN) {
            struct pollfd pf = {.fd = t->out_fd, .events = POLLOUT};
            poll(&pf, 1, -1);
        } else if (!(w < 0 && errno == EINTR)) {
            t->out_dead = 1; /* EPIPE, EBADF, EIO...: its reader is gone */
        }
    }
}

static void *tee_main(void *arg)
{
    struct sr_outtail *t = arg;
    char *const buf = t->buf;
    for (;;) {
        struct pollfd pf = {.fd = t->rfd, .events = POLLIN};
        if (poll(&pf, 1, -1) < 0 && errno != EINTR)
            break;
        int old;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
        pthread_mutex_lock(&t->mu);
        const ssize_t r = read(t->rfd, buf, CHUNK);
        if (r > 0) {
            keep(t, buf, (size_t)r);
            t->got += (uint64_t)r;
            t->last_ms = sr_wall_ms();
        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
            t->eof = 1;
            pthread_cond_broadcast(&t->cv);
        }
        const int done = t->eof;
        pthread_mutex_unlock(&t->mu);
        pthread_setcancelstate(old, NULL);
        if (done)
            break;
        if (r <= 0)
            continue;
        forward(t, buf, (size_t)r);
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
        pthread_mutex_lock(&t->mu);
        t->passed += (uint64_t)r;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_setcancelstate(old, NULL);
    }
    return NULL;
}

int sr_outtail_open(struct sr_outtail **out, int out_fd)
{
    *out = NULL;
    if (fcntl(out_fd, F_GETFL) < 0 || isatty(out_fd))
        return 0;
    struct sr_outtail *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        const int e = errno;
        free(t);
        return -e;
    }
    fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
    t->rfd = p[0];
    t->wfd = p[1];
    t->out_fd = out_fd;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    const int rc = pthread_create(&t->th, NULL, tee_main, t);
    if (rc) {
        close(p[0]);
        close(p[1]);
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
        free(t);
        return -rc;
    }
    *out = t;
    return 0;
}

int sr_outtail_fd(const struct sr_outtail *t)
{
    return t ? t->wfd : -1;
}

static struct timespec deadline_in(int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* Under the mutex: until the pipe is empty and all of it forwarded. */
static void drain(struct sr_outtail *t)
{
    const struct timespec until = deadline_in(TAKE_WAIT_MS);
    for (;;) {
        int avail = 0;
        if (t->eof || ioctl(t->rfd, FIONREAD, &avail) < 0 || (avail == 0 && t->passed == t->got))
            return;
        if (pthread_cond_timedwait(&t->cv, &t->mu, &until) == ETIMEDOUT)
            return;
    }
}

char *sr_outtail_take(struct sr_outtail *t)
{
    return sr_outtail_take_at(t, NULL);
}

char *sr_outtail_take_at(struct sr_outtail *t, int64_t *last_ms)
{
    if (last_ms)
        *last_ms = 0;
    if (!t)
        return NULL;
    char raw[SR_TAIL_MAX_BYTES];
    pthread_mutex_lock(&t->mu);
    drain(t);
    const size_t n = t->kept < sizeof(raw) ? (size_t)t->kept : sizeof(raw);
    const size_t start = (t->head + sizeof(t->ring) - n) % sizeof(t->ring);
    for (size_t i = 0; i < n; i++)
        raw[i] = t->ring[(start + i) % sizeof(t->ring)];
    const int cut = t->kept > n;
    t->kept = 0;
    if (last_ms)
        *last_ms = t->last_ms;
    t->last_ms = 0;
    pthread_mutex_unlock(&t->mu);
    return n ? sr_outtext_tail(raw, n, cut, SR_TAIL_MAX_LINES, SR_TAIL_MAX_BYTES) : NULL;
}

void sr_outtail_close(struct sr_outtail *t)
{
    if (!t)
        return;
    close(t->wfd);
    pthread_mutex_lock(&t->mu);
    const struct timespec until = deadline_in(CLOSE_WAIT_MS);
    while (!t->eof && pthread_cond_timedwait(&t->cv, &t->mu, &until) != ETIMEDOUT) {
    }
    const int eof = t->eof;
    pthread_mutex_unlock(&t->mu);
    if (!eof) /* a process still holds the pipe, or the original stderr is stuck */
        pthread_cancel(t->th);
    pthread_join(t->th, NULL);
    close(t->rfd);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

int sup_job_stderr(struct sup *s)
{
    if (!s->outtail_tried) {
        s->outtail_tried = 1;
        const int rc = sr_outtail_open(&s->outtail, STDERR_FILENO);
        if (rc < 0)
            sr_warn("cannot keep the last lines of the job's stderr (%s): a failure's message "
                    "will be in this machine's log only",
                    strerror(-rc));
    }
    return sr_outtail_fd(s->outtail);
}

void sup_output_tail(struct sup *s, json_t *ex)
{
    int64_t at = 0;
    char *tail = sr_outtail_take_at(s->outtail, &at);
    /* a failure's: not a stop spotrun made for a notice, a limit or a peer */
    if (tail && ex && json_integer_value(json_object_get(ex, "code")) != 0 &&
        s->phase != PREEMPTING) {
        json_object_set_new(ex, "tail", json_string(tail));
        /* A killed job's last lines may be much older than its end: when
         * they were written. */
        if (at > 0 && json_object_get(ex, "signal"))
            json_object_set_new(ex, "tail_ms", json_integer((json_int_t)at));
    }
    free(tail);
}
