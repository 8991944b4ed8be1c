/*
 * sweep_rungs.c - a sweep's early-stopping rungs in the store (see
 * sweep_rungs.h).
 */
#include "sweep_rungs.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "asha.h"
#include "layout.h"
#include "log.h"
#include "parallel.h"
#include "sweep.h"

#define REC_MAX (16u << 10) /* bytes of one record */
#define READERS 8           /* records of a rung read at once */

static void rung_prefix(char *buf, size_t len, const char *sweep, unsigned rung)
{
    sr_key_sweep(buf, len, sweep, SR_SWEEP_RUNGS "/%u", rung);
}

static void rec_key(char *buf, size_t len, const char *sweep, unsigned rung, long trial)
{
    sr_key_sweep(buf, len, sweep, SR_SWEEP_RUNGS "/%u/%ld.json", rung, trial);
}

int sr_rung_put(struct sr_store *st, const char *sweep, const struct sr_rung_rec *r)
{
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    json_t *o = json_pack(
        "{s:i,s:I,s:I,s:I,s:o,s:b,s:I,s:I,s:s}", "format", 1, "trial", (json_int_t)r->trial, "rung",
        (json_int_t)r->rung, "step", (json_int_t)r->step, "value",
        isfinite(r->value) ? json_real(r->value) : json_null(), "go_on", r->go_on, "seen",
        (json_int_t)r->seen, "unix_ms", (json_int_t)r->unix_ms, "host", host);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s)
        return -ENOMEM;
    char key[512];
    rec_key(key, sizeof(key), sweep, r->rung, r->trial);
    const int rc = sr_store_put_if(st, key, s, strlen(s), NULL, NULL);
    free(s);
    return rc;
}

/* A record's content, checked against its key's rung and trial. */
static int parse_rec(const char *buf, size_t len, unsigned rung, long trial,
                     struct sr_rung_rec *out)
{
    json_t *o = json_loadb(buf, len, 0, NULL);
    const json_t *k = json_object_get(o, "trial"), *g = json_object_get(o, "rung"),
                 *step = json_object_get(o, "step"), *v = json_object_get(o, "value"),
                 *go = json_object_get(o, "go_on"), *seen = json_object_get(o, "seen"),
                 *ms = json_object_get(o, "unix_ms");
    const int ok = json_is_integer(k) && json_integer_value(k) == trial && json_is_integer(g) &&
                   json_integer_value(g) == (json_int_t)rung && json_is_integer(step) &&
                   json_integer_value(step) >= 0 && (json_is_number(v) || json_is_null(v)) &&
                   json_is_boolean(go);
    if (ok)
        *out = (struct sr_rung_rec){
            .trial = trial,
            .rung = rung,
            .step = json_integer_value(step),
            .value = json_is_number(v) ? json_number_value(v) : NAN,
            .go_on = json_is_true(go),
            .seen = json_is_integer(seen) && json_integer_value(seen) >= 0 &&
                            json_integer_value(seen) <= SR_SWEEP_TRIALS_MAX
                        ? (unsigned)json_integer_value(seen)
                        : 0,
            .unix_ms = json_is_integer(ms) ? json_integer_value(ms) : 0,
        };
    json_decref(o);
    return ok ? 0 : -EBADMSG;
}

static int get_rec(struct sr_store *st, const char *key, unsigned rung, long trial,
                   struct sr_rung_rec *out)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = sr_store_get(st, key, REC_MAX, &buf, &len);
    if (rc < 0 && rc != -EFBIG)
        return rc;
    rc = rc == 0 ? parse_rec(buf, len, rung, trial, out) : -EBADMSG;
    free(buf);
    return rc;
}

int sr_rung_get(struct sr_store *st, const char *sweep, unsigned rung, long trial,
                struct sr_rung_rec *out)
{
    char key[512];
    rec_key(key, sizeof(key), sweep, rung, trial);
    const int rc = get_rec(st, key, rung, trial, out);
    if (rc == -EBADMSG)
        return sr_errf(rc,
                       "%s is not trial %ld's record at rung %u (the store was tampered "
                       "with); it stands as recorded",
                       key, trial, rung);
    return rc;
}

/* The trial of a record's name "<K>.json", -1 when it is not one. */
static long trial_of_name(const char *name)
{
    char *end = NULL;
    if (name[0] < '0' || name[0] > '9' || (name[0] == '0' && name[1] != '.'))
        return -1;
    const long k = strtol(name, &end, 10);
    return end && strcmp(end, ".json") == 0 && k < SR_SWEEP_TRIALS_MAX ? k : -1;
}

/* One rung's records, read on a few threads (sr_parallel_for). */
struct reading {
    struct sr_store *st;
    const char *prefix;
    unsigned rung;
    const struct sr_strlist *names;
    struct sr_rung_rec *recs;
    signed char *ok; /* per name: 1 read and believed */
};

static int read_one(void *ctx, size_t i)
{
    struct reading *r = ctx;
    const long k = trial_of_name(r->names->v[i]);
    char key[1024];
    if (k < 0 || sr_key_join(key, sizeof(key), r->prefix, r->names->v[i]) < 0)
        return 0;
    const int rc = get_rec(r->st, key, r->rung, k, &r->recs[i]);
    r->ok[i] = rc == 0;
    /* not believed, or deleted meanwhile: skipped */
    return rc == -EBADMSG || rc == -ENOENT ? 0 : rc < 0 ? rc : 0;
}

int sr_rung_list(struct sr_store *st, const char *sweep, unsigned rung, struct sr_rung_rec **out,
                 size_t *n)
{
    *out = NULL;
    *n = 0;
    char prefix[512];
    rung_prefix(prefix, sizeof(prefix), sweep, rung);
    struct sr_strlist l;
    int rc = sr_store_list(st, prefix, &l);
    if (rc < 0)
        return rc;
    struct reading r = {.st = st,
                        .prefix = prefix,
                        .rung = rung,
                        .names = &l,
                        .recs = calloc(l.n ? l.n : 1, sizeof(*r.recs)),
                        .ok = calloc(l.n ? l.n : 1, 1)};
    rc = r.recs && r.ok ? sr_parallel_for(l.n, READERS, read_one, &r) : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < l.n; i++) /* believed records, in the listing's order */
        if (r.ok[i])
            r.recs[(*n)++] = r.recs[i];
    sr_strlist_free(&l);
    free(r.ok);
    if (rc < 0) {
        free(r.recs);
        *n = 0;
        return rc;
    }
    *out = r.recs;
    return 0;
}

int sr_rung_levels(struct sr_store *st, const char *sweep, size_t ntrials, unsigned char *level)
{
    memset(level, 0, ntrials);
    for (unsigned rung = 0; rung < SR_ASHA_RUNGS_MAX; rung++) {
        char prefix[512];
        rung_prefix(prefix, sizeof(prefix), sweep, rung);
        struct sr_strlist l;
        const int rc = sr_store_list(st, prefix, &l);
        if (rc < 0)
            return rc;
        const size_t found = l.n;
        for (size_t i = 0; i < l.n; i++) {
            const long k = trial_of_name(l.v[i]);
            if (k >= 0 && (size_t)k < ntrials)
                level[k] = (unsigned char)(rung + 1);
        }
        sr_strlist_free(&l);
        if (!found) /* a trial reaches rung K+1 only through rung K */
            return 0;
    }
    return 0;
}

int sr_rung_remove_trial(struct sr_store *st, const char *sweep, long trial)
{
    int rc = 0;
    for (unsigned rung = 0; rung < SR_ASHA_RUNGS_MAX && rc == 0; rung++) {
        char key[512];
        struct sr_rung_rec r;
        rec_key(key, sizeof(key), sweep, rung, trial);
        rc = get_rec(st, key, rung, trial, &r);
        if (rc == -ENOENT) { /* a trial reaches rung K+1 only through rung K */
            return 0;
        }
        if (rc == 0 || rc == -EBADMSG)
            rc = sr_store_delete(st, key);
    }
    return rc;
}

int sr_rung_remove_all(struct sr_store *st, const char *sweep)
{
    int rc = 0;
    for (unsigned rung = 0; rung < SR_ASHA_RUNGS_MAX && rc == 0; rung++) {
        char prefix[512];
        rung_prefix(prefix, sizeof(prefix), sweep, rung);
        struct sr_strlist l;
        if ((rc = sr_store_list(st, prefix, &l)) < 0)
            break;
        const size_t found = l.n;
        for (size_t i = 0; i < l.n && rc == 0; i++) {
            char key[1024];
            sr_key_join(key, sizeof(key), prefix, l.v[i]);
            rc = sr_store_delete(st, key);
        }
        sr_strlist_free(&l);
        if (!found)
            break;
    }
    return rc;
}
