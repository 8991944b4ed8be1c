/*
 * s3_parts.c - the part driver (store_s3_int.h): the transfers of a
 * multipart upload and of a ranged download on one curl multi handle, each
 * part with its own attempts and backoff (docs/s3.md, "Faults").
 *
 * DESIGN: curl's multi loop (perform / poll / info_read) with the part's
 * life in one place: a part is started on a pooled easy handle, judged by
 * sr_s3_done when it ends, and either DONE (its handle back in the pool),
 * WAITING again until its backoff ends (it keeps its handle, and with it
 * the connection, for the retry), or failed. The callers keep their
 * policy: which part starts next, where its bytes live, what a complete
 * answer must also have.
 *
 * Threads: one thread drives a driver; s3st_parts_wake may come from any.
 */
#include "log.h"
#include "s3.h"
#include "store_s3_int.h"

#include <errno.h>
#include <stdlib.h>

int s3st_parts_init(struct s3st_parts *d, struct sr_s3 *s3, size_t conc)
{
    d->s3 = s3;
    d->conc = conc;
    d->active = 0;
    if (!(d->multi = curl_multi_init()))
        return sr_errf(-ENOMEM, "out of memory");
    curl_multi_setopt(d->multi, CURLMOPT_MAXCONNECTS, 32L);
    return 0;
}

void s3st_parts_free(struct s3st_parts *d)
{
    if (d->multi)
        curl_multi_cleanup(d->multi);
    d->multi = NULL;
}

int s3st_part_start(struct s3st_parts *d, struct s3st_part *p)
{
    if (!p->c && !(p->c = sr_s3_handle(d->s3)))
        return sr_errf(-ENOMEM, "out of memory");
    const int rc = sr_s3_setup(d->s3, p->c, &p->req);
    if (rc < 0)
        return rc;
    if (curl_multi_add_handle(d->multi, p->c) != CURLM_OK)
        return sr_errf(-ENOMEM, "curl multi");
    p->attempts++;
    p->state = S3ST_PART_IN_FLIGHT;
    d->active++;
    return 0;
}

void s3st_parts_perform(struct s3st_parts *d)
{
    int running = 0;
    curl_multi_perform(d->multi, &running);
}

struct s3st_part *s3st_parts_finished(struct s3st_parts *d, int *verdict)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(d->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *c = msg->easy_handle;
        const CURLcode cc = msg->data.result;
        struct sr_s3_req *req = NULL;
        curl_easy_getinfo(c, CURLINFO_PRIVATE, (char **)&req);
        struct s3st_part *p = (struct s3st_part *)req;
        curl_multi_remove_handle(d->multi, c);
        d->active--;
        *verdict = sr_s3_done(d->s3, c, req, cc, p->attempts);
        sr_s3_cleanup(req);
        free(req->rx.resp);
        req->rx.resp = NULL;
        return p;
    }
    return NULL;
}

int s3st_part_settle(struct s3st_parts *d, struct s3st_part *p, int verdict)
{
    if (verdict == 0) {
        p->state = S3ST_PART_DONE;
        sr_s3_release(d->s3, p->c);
        p->c = NULL;
    } else if (verdict == 1) {
        p->state = S3ST_PART_WAITING;
        p->retry_at = sr_now_ms() + sr_s3_retry_delay_ms(d->s3, p->attempts);
    }
    return verdict;
}

void s3st_parts_wait(struct s3st_parts *d)
{
    curl_multi_poll(d->multi, NULL, 0, 100, NULL);
}

void s3st_parts_wake(struct s3st_parts *d)
{
    if (d->multi)
        curl_multi_wakeup(d->multi);
}

void s3st_part_drop(struct s3st_parts *d, struct s3st_part *p)
{
    if (p->c) {
        curl_multi_remove_handle(d->multi, p->c);
        sr_s3_release(d->s3, p->c);
        p->c = NULL;
    }
    sr_s3_cleanup(&p->req);
    free(p->req.rx.resp);
    p->req.rx.resp = NULL;
}
