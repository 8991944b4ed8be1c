/*
 * unpack_write.c - writing an extracted file's data: holes, the write cap,
 * and the pool of writer threads (see unpack_write.h).
 *
 * Threads: one mutex guards the job queue, the open-file count and the
 * first error; a job runs without it. A file's descriptor is used by the
 * writers only (pwrite at disjoint offsets) until its last job, whose
 * writer finishes and closes it.
 */
#include "unpack_write.h"
#include "codec.h"
#include "fsutil.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Zero runs are left as holes in blocks of this many bytes of the file (the
 * page and block size of the usual filesystems). */
#define HOLE_BLOCK 4096

struct sr_wfile {
    int fd;
    mode_t perm;
    struct timespec times[2];
    unsigned pending; /* jobs queued or running */
    int done;         /* every job was queued */
    char name[];
};

struct wjob {
    struct wjob *next;
    struct sr_wfile *f;
    const uint8_t *buf;
    size_t len;
    int64_t off;
    void *tag;
};

struct sr_wpool {
    pthread_mutex_t lock;
    pthread_cond_t job_cv;  /* writers: a job, or stop */
    pthread_cond_t idle_cv; /* caller: a file was closed */
    struct wjob *head, *tail;
    unsigned open, max_open;
    int stop;
    int err; /* the first failure */
    char msg[PATH_MAX + 256];
    sr_wpool_release_fn release;
    void *ctx;
    pthread_t *threads;
    int nthreads;
};

static int all_zero(const uint8_t *p, size_t n)
{
    return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

static int put_run(sr_put_fn put, void *ctx, const uint8_t *buf, size_t len, int64_t off)
{
    for (size_t done = 0; done < len;) {
        const size_t n = len - done < SR_CODEC_WRITE_MAX ? len - done : SR_CODEC_WRITE_MAX;
        const int rc = put(ctx, buf + done, n, off + (int64_t)done);
        if (rc < 0)
            return rc;
        done += n;
    }
    return 0;
}

int sr_write_sparse(sr_put_fn put, void *ctx, const uint8_t *buf, size_t size, int64_t off)
{
    size_t run = 0; /* start of the run of data not yet written */
    int rc;
    for (size_t i = 0; i < size;) {
        size_t n = HOLE_BLOCK - (size_t)((uint64_t)(off + (int64_t)i) % HOLE_BLOCK);
        if (n > size - i)
            n = size - i;
        if (all_zero(buf + i, n)) {
            if (i > run && (rc = put_run(put, ctx, buf + run, i - run, off + (int64_t)run)) < 0)
                return rc;
            run = i + n;
        }
        i += n;
    }
    if (size > run && (rc = put_run(put, ctx, buf + run, size - run, off + (int64_t)run)) < 0)
        return rc;
    return 0;
}

static int put_fd(void *ctx, const uint8_t *buf, size_t len, int64_t off)
{
    const struct sr_wfile *const f = ctx;
    return sr_pwrite_all(f->fd, buf, len, (uint64_t)off);
}

/* Records the first failure (lock held). */
static void fail_locked(struct sr_wpool *p, int rc, const char *name, const char *what)
{
    if (p->err)
        return;
    p->err = rc;
    snprintf(p->msg, sizeof(p->msg), "cannot extract %s: %s: %s", name, what, strerror(-rc));
}

/* Gives the written file its mode and times and closes it: 0 or -errno
 * with *what set. */
static int finish_file(struct sr_wfile *f, int skip, const char **what)
{
    int rc = 0;
    if (!skip && (f->perm & 0600) != 0600 && fchmod(f->fd, f->perm) < 0) {
        rc = -errno;
        *what = "chmod";
    }
    if (!skip && rc == 0 && futimens(f->fd, f->times) < 0) {
        rc = -errno;
        *what = "set times";
    }
    if (close(f->fd) < 0 && rc == 0 && !skip) {
        rc = -errno;
        *what = "close";
    }
    return rc;
}

/* One job's file is one job closer to finished (lock held; drops it
 * while a finished file is closed). */
static void job_done_locked(struct sr_wpool *p, struct sr_wfile *f)
{
    if (--f->pending > 0 || !f->done)
        return;
    const int skip = p->err != 0;
    pthread_mutex_unlock(&p->lock);
    const char *what = "";
    const int rc = finish_file(f, skip, &what);
    pthread_mutex_lock(&p->lock);
    if (rc < 0)
        fail_locked(p, rc, f->name, what);
    free(f);
    p->open--;
    pthread_cond_broadcast(&p->idle_cv);
}

static void *writer(void *arg)
{
    struct sr_wpool *const p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stop)
            pthread_cond_wait(&p->job_cv, &p->lock);
        struct wjob *const j = p->head;
        if (!j)
            break;
        if (!(p->head = j->next))
            p->tail = NULL;
        const int skip = p->err != 0 || p->stop;
        pthread_mutex_unlock(&p->lock);
        const int rc = skip ? 0 : sr_write_sparse(put_fd, j->f, j->buf, j->len, j->off);
        p->release(p->ctx, j->tag);
        pthread_mutex_lock(&p->lock);
        if (rc < 0)
            fail_locked(p, rc, j->f->name, "write");
        job_done_locked(p, j->f);
        free(j);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int sr_wpool_new(int threads, unsigned max_open, sr_wpool_release_fn release, void *ctx,
                 struct sr_wpool **out)
{
    struct sr_wpool *const p = calloc(1, sizeof(*p));
    if (!p || !(p->threads = calloc((size_t)threads, sizeof(*p->threads)))) {
        free(p);
        return sr_errf(-ENOMEM, "unpack: out of memory");
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->job_cv, NULL);
    pthread_cond_init(&p->idle_cv, NULL);
    p->max_open = max_open ? max_open : 1;
    p->release = release;
    p->ctx = ctx;
    *out = p;
    for (; p->nthreads < threads; p->nthreads++) {
        const int e = pthread_create(&p->threads[p->nthreads], NULL, writer, p);
        if (e)
            return sr_errf(-e, "unpack: cannot start a writer thread: %s", strerror(e));
    }
    return 0;
}

struct sr_wfile *sr_wpool_file(struct sr_wpool *p, int fd, mode_t perm,
                               const struct timespec times[2], const char *name)
{
    const size_t n = strlen(name) + 1;
    struct sr_wfile *const f = malloc(sizeof(*f) + n);
    if (!f) {
        close(fd);
        return NULL;
    }
    *f = (struct sr_wfile){.fd = fd, .perm = perm, .times = {times[0], times[1]}};
    memcpy(f->name, name, n);
    pthread_mutex_lock(&p->lock);
    while (p->open >= p->max_open)
        pthread_cond_wait(&p->idle_cv, &p->lock);
    p->open++;
    pthread_mutex_unlock(&p->lock);
    return f;
}

void sr_wpool_write(struct sr_wpool *p, struct sr_wfile *f, const uint8_t *buf, size_t len,
                    int64_t off, void *tag)
{
    struct wjob *const j = malloc(sizeof(*j));
    if (!j) { /* write it here instead */
        const int rc = sr_wpool_write_now(f, buf, len, off);
        p->release(p->ctx, tag);
        pthread_mutex_lock(&p->lock);
        if (rc < 0)
            fail_locked(p, rc, f->name, "write");
        pthread_mutex_unlock(&p->lock);
        return;
    }
    *j = (struct wjob){.f = f, .buf = buf, .len = len, .off = off, .tag = tag};
    pthread_mutex_lock(&p->lock);
    f->pending++;
    if (p->tail)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    pthread_cond_signal(&p->job_cv);
    pthread_mutex_unlock(&p->lock);
}

int sr_wpool_write_now(struct sr_wfile *f, const uint8_t *buf, size_t len, int64_t off)
{
    const int rc = sr_write_sparse(put_fd, f, buf, len, off);
    if (rc < 0)
        return sr_errf(rc, "cannot extract %s: write: %s", f->name, strerror(-rc));
    return 0;
}

void sr_wpool_done(struct sr_wpool *p, struct sr_wfile *f)
{
    pthread_mutex_lock(&p->lock);
    f->done = 1;
    f->pending++; /* job_done_locked finishes it when this was the last */
    job_done_locked(p, f);
    pthread_mutex_unlock(&p->lock);
}

int sr_wpool_failed(struct sr_wpool *p)
{
    pthread_mutex_lock(&p->lock);
    const int err = p->err;
    pthread_mutex_unlock(&p->lock);
    return err != 0;
}

int sr_wpool_drain(struct sr_wpool *p)
{
    pthread_mutex_lock(&p->lock);
    while (p->open > 0)
        pthread_cond_wait(&p->idle_cv, &p->lock);
    const int err = p->err;
    char msg[sizeof(p->msg)];
    memcpy(msg, p->msg, sizeof(msg));
    pthread_mutex_unlock(&p->lock);
    return err ? sr_errf(err, "%s", msg) : 0;
}

void sr_wpool_free(struct sr_wpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1; /* what is still queued is released unwritten */
    pthread_cond_broadcast(&p->job_cv);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->idle_cv);
    pthread_cond_destroy(&p->job_cv);
    pthread_mutex_destroy(&p->lock);
    free(p->threads);
    free(p);
}
