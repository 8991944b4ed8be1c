/*
 * store_az_xfer.c - the "az" store backend's transfers: requests run side
 * by side on one curl multi handle (the blocks of an upload, the ranges of
 * a large read), each retried on its own with backoff; and the streaming
 * writer (push) built on them: Put Blob for an object within one block,
 * else parallel Put Block calls and a conditional Put Block List.
 *
 * DESIGN: the writer fills up to SPOTRUN_AZ_CONCURRENCY block buffers of
 * SPOTRUN_AZ_BLOCK_SIZE; when all are full they go out together and the
 * producer waits (memory stays bounded; the producer is the compressor,
 * which is slower than the upload on a good link). Block IDs carry a
 * random tag per writer, so two writers racing on one key never commit
 * each other's blocks; the loser's Put Block List fails its If-None-Match.
 * Azure has no abort: uncommitted blocks are dropped by the service after
 * a week (docs/azure.md). One writer belongs to one thread.
 */
#include "az.h"
#include "log.h"
#include "store.h"
#include "store_az_int.h"
#include "units.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct slot {
    CURL *c;
    struct curl_slist *h;
    int attempt, done;
    int64_t retry_at;
};

static int batch_start(struct sr_az *az, CURLM *m, struct sr_az_req *r, struct slot *s)
{
    if (!s->c && !(s->c = sr_az_handle(az)))
        return sr_errf(-ENOMEM, "out of memory");
    curl_slist_free_all(s->h);
    s->h = NULL;
    const int rc = sr_az_setup(az, s->c, r, &s->h);
    if (rc == 0)
        curl_multi_add_handle(m, s->c);
    return rc;
}

/* One finished transfer: 0 done, 1 waiting for a retry, < 0 failed. */
static int batch_finish(struct sr_az *az, CURLM *m, struct sr_az_req *r, struct slot *s,
                        CURLcode cc)
{
    curl_multi_remove_handle(m, s->c);
    const int v = sr_az_judge(az, r, cc, s->attempt + 1);
    if (v == 1) {
        s->attempt++;
        s->retry_at = sr_now_ms() + sr_az_retry_delay_ms(az, s->attempt);
        return 1;
    }
    s->done = 1;
    return v;
}

int azst_batch(struct sr_az *az, struct sr_az_req *r, size_t n)
{
    struct slot *s = calloc(n, sizeof(*s));
    CURLM *m = curl_multi_init();
    int rc = s && m ? 0 : sr_errf(-ENOMEM, "out of memory");
    size_t active = 0, done = 0;
    while (rc == 0 && done < n) {
        const int64_t now = sr_now_ms();
        for (size_t i = 0; i < n && active < az->concurrency && rc == 0; i++)
            if (!s[i].done && s[i].retry_at >= 0 && s[i].retry_at <= now &&
                (rc = batch_start(az, m, &r[i], &s[i])) == 0) {
                s[i].retry_at = -1; /* in flight */
                active++;
            }
        int running = 0;
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int left;
        while (rc == 0 && (msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            size_t i = 0;
            while (i < n && s[i].c != msg->easy_handle)
                i++;
            active--;
            const int v = batch_finish(az, m, &r[i], &s[i], msg->data.result);
            if (v < 0)
                rc = v;
            else if (v == 0)
                done++;
        }
        if (rc == 0 && done < n)
            curl_multi_poll(m, NULL, 0, 50, NULL);
    }
    for (size_t i = 0; s && i < n; i++) {
        if (s[i].c && s[i].retry_at == -1 && !s[i].done)
            curl_multi_remove_handle(m, s[i].c);
        curl_slist_free_all(s[i].h);
        sr_az_release(az, s[i].c);
    }
    curl_multi_cleanup(m);
    free(s);
    return rc;
}

/* ---- streaming writer ------------------------------------------------------ */

struct az_writer {
    struct sr_store_writer w;
    struct sr_az *az;
    char *key;
    int create;
    char tag[17];
    uint8_t **bufs; /* concurrency buffers of block_size */
    size_t nfull;   /* buffers full, waiting to go out */
    size_t cur_len; /* bytes in bufs[nfull] */
    char (*ids)[48];
    size_t nids, cap;
    int committed;
};

static void block_id(const struct az_writer *w, size_t i, char out[48])
{
    char raw[32];
    snprintf(raw, sizeof(raw), "%s%08zu", w->tag, i); /* 24 bytes: every ID one length */
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)raw, 24);
}

/* Put Block for the first n buffers (the last one holding last bytes). */
static int put_blocks(struct az_writer *w, size_t n, size_t last)
{
    if (w->nids + n > 50000)
        return sr_errf(-EFBIG, "%s needs more than 50,000 blocks (raise SPOTRUN_AZ_BLOCK_SIZE)",
                       w->key);
    if (w->nids + n > w->cap) {
        const size_t cap = (w->nids + n) * 2;
        void *p = realloc(w->ids, cap * sizeof(*w->ids));
        if (!p)
            return sr_errf(-ENOMEM, "out of memory");
        w->ids = p;
        w->cap = cap;
    }
    struct sr_az_req r[64];
    char q[64][128];
    for (size_t i = 0; i < n; i++) {
        char esc[100];
        block_id(w, w->nids + i, w->ids[w->nids + i]);
        sr_url_escape(w->ids[w->nids + i], 0, esc, sizeof(esc));
        snprintf(q[i], sizeof(q[i]), "blockid=%s&comp=block", esc);
        r[i] = azst_req("PUT", w->key);
        r[i].query = q[i];
        r[i].tx.body = w->bufs[i];
        r[i].tx.body_len = i + 1 == n ? last : w->az->block_size;
    }
    const int rc = azst_batch(w->az, r, n);
    for (size_t i = 0; i < n; i++)
        free(r[i].rx.resp);
    if (rc == 0)
        w->nids += n;
    return rc;
}

int azst_writer_open(struct sr_store *st, const char *key, int create, struct sr_store_writer **out)
{
    struct sr_az *az = st->impl;
    struct az_writer *w = calloc(1, sizeof(*w));
    if (!w || !(w->key = strdup(key)) || !(w->bufs = calloc(az->concurrency, sizeof(*w->bufs)))) {
        if (w)
            free(w->key);
        free(w);
        return sr_errf(-ENOMEM, "out of memory");
    }
    w->w.st = st;
    w->az = az;
    w->create = create;
    unsigned char t[8];
    if (RAND_bytes(t, sizeof(t)) != 1)
        memcpy(t, &(int64_t){sr_wall_ms() ^ (int64_t)(uintptr_t)w}, sizeof(t));
    for (size_t i = 0; i < 8; i++)
        snprintf(w->tag + 2 * i, 3, "%02x", t[i]);
    *out = &w->w;
    return 0;
}

int azst_writer_write(struct sr_store_writer *sw, const void *buf, size_t len)
{
    struct az_writer *w = (struct az_writer *)sw;
    const size_t bs = w->az->block_size;
    while (len > 0) {
        if (!w->bufs[w->nfull] && !(w->bufs[w->nfull] = malloc(bs)))
            return sr_errf(-ENOMEM, "out of memory (a %zu-byte block)", bs);
        const size_t k = len < bs - w->cur_len ? len : bs - w->cur_len;
        memcpy(w->bufs[w->nfull] + w->cur_len, buf, k);
        w->cur_len += k;
        sw->bytes += k;
        buf = (const char *)buf + k;
        len -= k;
        if (w->cur_len < bs)
            continue;
        w->nfull++;
        w->cur_len = 0;
        if (w->nfull == w->az->concurrency) {
            const int rc = put_blocks(w, w->nfull, bs);
            if (rc < 0)
                return rc;
            w->nfull = 0;
        }
    }
    return 0;
}

static int put_block_list(struct az_writer *w, int *attempts)
{
    const size_t cap = 64 + w->nids * 64;
    char *xml = malloc(cap);
    if (!xml)
        return sr_errf(-ENOMEM, "out of memory");
    size_t o = (size_t)snprintf(xml, cap, "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>");
    for (size_t i = 0; i < w->nids; i++)
        o += (size_t)snprintf(xml + o, cap - o, "<Latest>%s</Latest>", w->ids[i]);
    o += (size_t)snprintf(xml + o, cap - o, "</BlockList>");
    struct sr_az_req r = azst_req("PUT", w->key);
    r.query = "comp=blocklist";
    r.tx.body = xml;
    r.tx.body_len = o;
    r.if_none_match = w->create;
    const int rc = sr_az_do(w->az, &r);
    *attempts = r.attempts;
    free(r.rx.resp);
    free(xml);
    return rc;
}

int azst_writer_commit(struct sr_store_writer *sw)
{
    struct az_writer *w = (struct az_writer *)sw;
    int rc, attempts = 1;
    if (w->nids == 0 && w->nfull == 0) { /* within one block: Put Blob */
        rc = azst_put_buf(w->w.st, w->key, w->bufs[0] ? w->bufs[0] : (uint8_t *)"", w->cur_len,
                          w->create);
    } else {
        const size_t n = w->nfull + (w->cur_len > 0);
        rc = n ? put_blocks(w, n, w->cur_len ? w->cur_len : w->az->block_size) : 0;
        w->nfull = w->cur_len = 0;
        if (rc == 0)
            rc = put_block_list(w, &attempts);
        /* A retry after a lost answer finds the list it committed. */
        uint64_t size = 0;
        if (rc == -EEXIST && attempts > 1 && azst_size(w->w.st, w->key, &size) == 0 &&
            size == sw->bytes)
            rc = 0;
        if (rc == -EEXIST) {
            char name[2400];
            sr_az_name(w->az, w->key, name, sizeof(name));
            rc = sr_errf(-EEXIST, "%s already exists", name);
        }
    }
    w->committed = rc == 0;
    return rc;
}

void azst_writer_close(struct sr_store_writer *sw)
{
    struct az_writer *w = (struct az_writer *)sw;
    if (!w)
        return;
    for (size_t i = 0; i < w->az->concurrency; i++)
        free(w->bufs[i]);
    free(w->bufs);
    free(w->ids);
    free(w->key);
    free(w);
}
