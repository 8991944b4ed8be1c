/*
 * runsum.c - TEMPORARY stand-in (see runsum.h): one history per run,
 * serially. Replaced by branch runsum.
 */
#include "runsum.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"

void sr_runsum_free(struct sr_runsum *r)
{
    free(r->att);
    r->att = NULL;
    r->n_att = 0;
}

int sr_runsum_from_history(const struct sr_history *h, const char *run, struct sr_runsum *out)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->run, sizeof(out->run), "%s", run);
    out->labels = h->labels;
    out->state = h->state;
    out->from_logs = 1;
    out->att = calloc(h->n_att + 1, sizeof(*out->att));
    if (!out->att)
        return -ENOMEM;
    for (size_t i = 0; i < h->n_att; i++) {
        const struct sr_hist_attempt *a = &h->att[i];
        struct sr_runsum_attempt *o = &out->att[out->n_att++];
        o->attempt = a->attempt;
        o->nodes = a->nodes ? a->nodes : 1;
        memcpy(o->host, a->host, sizeof(o->host));
        memcpy(o->cloud, a->cloud, sizeof(o->cloud));
        memcpy(o->instance_type, a->instance_type, sizeof(o->instance_type));
        memcpy(o->zone, a->zone, sizeof(o->zone));
        o->start_ms = a->start_ms;
        o->end_ms = a->end_ms;
        o->cause = a->cause;
        o->lost_ms = a->lost_ms;
        o->price_per_hour = a->price_per_hour;
        o->gpus = a->gpu_devices;
        o->gpu_samples = a->gpu_samples;
        o->gpu_util_mean = a->gpu_util_mean;
        o->gpu_idle_share = a->gpu_idle_share;
        for (size_t k = 0; k < h->n_ck; k++)
            if (h->ck[k].attempt == a->attempt && h->ck[k].staged_ms)
                o->stage_seconds += h->ck[k].stage_seconds;
        for (size_t k = 0; k < h->n_no; k++)
            o->notices += h->no[k].attempt == a->attempt;
    }
    return 0;
}

int sr_runsum_load_all(struct sr_store *st, const char *prefix, struct sr_runsum **out, size_t *n)
{
    struct sr_strlist runs = {0};
    *out = NULL;
    *n = 0;
    int rc = sr_ckpt_list_runs(st, &runs);
    if (rc < 0)
        return rc;
    struct sr_runsum *v = calloc(runs.n + 1, sizeof(*v));
    if (!v) {
        sr_strlist_free(&runs);
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < runs.n && rc == 0; i++) {
        if (prefix && strncmp(runs.v[i], prefix, strlen(prefix)) != 0)
            continue;
        struct sr_history h;
        sr_hist_init(&h);
        if (sr_hist_load(st, runs.v[i], &h) == 0) {
            sr_hist_settle_last(st, runs.v[i], &h);
            rc = sr_runsum_from_history(&h, runs.v[i], &v[k]);
            if (rc == 0)
                k++;
        }
        sr_hist_free(&h);
    }
    sr_strlist_free(&runs);
    *out = v;
    *n = k;
    return rc;
}
