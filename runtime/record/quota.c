/*
 * quota.c - quotas per team or user in the store, and their use (see
 * quota.h).
 */
#include "quota.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "manifest.h"
#include "runsum.h"
#include "stats.h"

#define QUOTA_MAX 65536u     /* bytes of one object */
#define VERSIONS_MAX 999999u /* versions of one quota */
#define DAY_MS 86400000LL

const char *sr_quota_per_name(enum sr_quota_per p)
{
    return p == SR_PER_DAY ? "day" : p == SR_PER_MONTH ? "month" : "week";
}

int sr_quota_per_parse(const char *s, enum sr_quota_per *p)
{
    static const enum sr_quota_per all[] = {SR_PER_DAY, SR_PER_WEEK, SR_PER_MONTH};
    for (size_t i = 0; s && i < 3; i++)
        if (strcmp(s, sr_quota_per_name(all[i])) == 0) {
            *p = all[i];
            return 0;
        }
    return -EINVAL;
}

int64_t sr_quota_period_start(int64_t t, enum sr_quota_per p)
{
    int64_t days = t / DAY_MS - (t % DAY_MS < 0);
    if (p == SR_PER_WEEK)
        days -= ((days + 3) % 7 + 7) % 7; /* 1970-01-01 was a Thursday: back to Monday */
    if (p == SR_PER_MONTH) {
        const time_t s = (time_t)(days * 86400);
        struct tm tm;
        gmtime_r(&s, &tm);
        days -= tm.tm_mday - 1;
    }
    return days * DAY_MS;
}

json_t *sr_quota_to_json(const struct sr_quota *q)
{
    char label[2 * SR_LABEL_MAX + 2];
    snprintf(label, sizeof(label), "%s=%s", q->label.key, q->label.value);
    return json_pack("{s:i,s:s,s:I,s:s,s:f,s:f,s:I,s:I,s:f,s:f,s:s,s:I}", "format", 1, "label",
                     label, "version", (json_int_t)q->version, "per", sr_quota_per_name(q->per),
                     "gpu_hours", q->gpu_hours, "max_cost", q->max_cost, "max_gpus_per_run",
                     (json_int_t)q->max_gpus_per_run, "max_concurrent",
                     (json_int_t)q->max_concurrent, "approve_above_gpu_hours", q->approve_gpu_hours,
                     "approve_above_cost", q->approve_cost, "by", q->by, "unix_ms",
                     (json_int_t)q->unix_ms);
}

/* As sr_json_amount; absent is 0 (an object written before the field). */
static int optional_amount(const json_t *o, const char *k, double *out)
{
    *out = 0;
    return json_object_get(o, k) ? sr_json_amount(o, k, out) : 0;
}

static int count_of(const json_t *o, const char *k, uint64_t *out)
{
    const json_t *v = json_object_get(o, k);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

int sr_quota_from_json(const json_t *o, const struct sr_label *label, unsigned version,
                       struct sr_quota *out)
{
    memset(out, 0, sizeof(*out));
    char want[2 * SR_LABEL_MAX + 2];
    snprintf(want, sizeof(want), "%s=%s", label->key, label->value);
    const json_t *l = json_object_get(o, "label"), *v = json_object_get(o, "version");
    const json_t *by = json_object_get(o, "by"), *ms = json_object_get(o, "unix_ms");
    if (!json_is_object(o) || !json_is_string(l) || strcmp(json_string_value(l), want) != 0 ||
        !json_is_integer(v) || json_integer_value(v) != (json_int_t)version ||
        sr_quota_per_parse(json_string_value(json_object_get(o, "per")), &out->per) < 0 ||
        sr_json_amount(o, "gpu_hours", &out->gpu_hours) < 0 ||
        sr_json_amount(o, "max_cost", &out->max_cost) < 0 ||
        count_of(o, "max_gpus_per_run", &out->max_gpus_per_run) < 0 ||
        count_of(o, "max_concurrent", &out->max_concurrent) < 0 ||
        optional_amount(o, "approve_above_gpu_hours", &out->approve_gpu_hours) < 0 ||
        optional_amount(o, "approve_above_cost", &out->approve_cost) < 0)
        return -EBADMSG;
    out->label = *label;
    out->version = version;
    if (json_is_string(by) && sr_quota_by_ok(json_string_value(by)))
        snprintf(out->by, sizeof(out->by), "%s", json_string_value(by));
    out->unix_ms = json_is_integer(ms) ? (int64_t)json_integer_value(ms) : 0;
    return 0;
}

int sr_quota_newest(const struct sr_strlist *names, unsigned *version)
{
    int rc = -ENOENT;
    for (size_t i = 0; i < names->n; i++) {
        unsigned k;
        char tail;
        const char *s = names->v[i];
        if (strlen(s) == 11 && strspn(s, "0123456789") == 6 &&
            sscanf(s, "%6u.jso%c", &k, &tail) == 2 && tail == 'n' && strcmp(s + 6, ".json") == 0 &&
            (rc == -ENOENT || k > *version)) {
            *version = k;
            rc = 0;
        }
    }
    return rc;
}

const char *sr_quota_over(const struct sr_quota *q, const struct sr_quota_use *u, uint64_t gpus,
                          int starting, double *limit, double *used)
{
    if (starting && q->max_gpus_per_run > 0 && gpus > q->max_gpus_per_run) {
        *limit = (double)q->max_gpus_per_run;
        *used = (double)gpus;
        return "gpus-per-run";
    }
    if (starting && q->max_concurrent > 0 && u->running + 1 > q->max_concurrent) {
        *limit = (double)q->max_concurrent;
        *used = (double)(u->running + 1);
        return "concurrent";
    }
    if (q->gpu_hours > 0 && u->gpu_hours >= q->gpu_hours) {
        *limit = q->gpu_hours;
        *used = u->gpu_hours;
        return "gpu-hours";
    }
    if (q->max_cost > 0 && u->cost >= q->max_cost) {
        *limit = q->max_cost;
        *used = u->cost;
        return "cost";
    }
    return NULL;
}

static void dir_of(char *buf, size_t len, const struct sr_label *l)
{
    snprintf(buf, len, SR_KEY_QUOTAS "/%s/%s", l->key, l->value);
}

static int read_version(struct sr_store *st, const struct sr_label *label, unsigned v,
                        struct sr_quota *out)
{
    char key[256], *buf = NULL;
    size_t len = 0;
    dir_of(key, sizeof(key) - 16, label);
    snprintf(key + strlen(key), 16, "/%06u.json", v);
    int rc = sr_store_get(st, key, QUOTA_MAX, &buf, &len);
    if (rc < 0)
        return rc;
    json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
    free(buf);
    rc = sr_quota_from_json(o, label, v, out);
    json_decref(o);
    if (rc < 0)
        return sr_errf(rc,
                       "quota %s is not a quota of %s=%s (its \"label\" and \"version\" must be "
                       "its key's, its limits non-negative numbers): set it again with `spotrun "
                       "quota set %s=%s ...`",
                       key, label->key, label->value, label->key, label->value);
    return 0;
}

static int newest_of(struct sr_store *st, const struct sr_label *label, unsigned *v)
{
    char dir[256];
    dir_of(dir, sizeof(dir), label);
    struct sr_strlist l;
    int rc = sr_store_list(st, dir, &l);
    if (rc < 0)
        return rc;
    rc = sr_quota_newest(&l, v);
    sr_strlist_free(&l);
    return rc;
}

int sr_quota_read(struct sr_store *st, const struct sr_label *label, struct sr_quota *out)
{
    unsigned v = 0;
    const int rc = newest_of(st, label, &v);
    return rc < 0 ? rc : read_version(st, label, v, out);
}

/* The quotas of one label key (quotas/<key>/<value>/), appended. */
static int read_key(struct sr_store *st, const char *key, struct sr_quota **out, size_t *n)
{
    char dir[256];
    snprintf(dir, sizeof(dir), SR_KEY_QUOTAS "/%s", key);
    struct sr_strlist vals;
    int rc = sr_store_list(st, dir, &vals);
    if (rc < 0)
        return rc;
    for (size_t i = 0; rc >= 0 && i < vals.n; i++) {
        struct sr_label l;
        if (!sr_label_value_ok(vals.v[i]))
            continue;
        snprintf(l.key, sizeof(l.key), "%s", key);
        snprintf(l.value, sizeof(l.value), "%s", vals.v[i]);
        struct sr_quota q;
        rc = sr_quota_read(st, &l, &q);
        if (rc == -ENOENT) {
            rc = 0;
            continue;
        }
        struct sr_quota *g = rc < 0 ? NULL : realloc(*out, (*n + 1) * sizeof(**out));
        if (rc == 0 && !g)
            rc = -ENOMEM;
        if (rc == 0) {
            *out = g;
            (*out)[(*n)++] = q;
        }
    }
    sr_strlist_free(&vals);
    return rc < 0 ? rc : 0;
}

int sr_quota_read_all(struct sr_store *st, struct sr_quota **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    struct sr_strlist keys;
    int rc = sr_store_list(st, SR_KEY_QUOTAS, &keys);
    if (rc < 0)
        return rc;
    for (size_t i = 0; rc == 0 && i < keys.n; i++)
        if (sr_label_key_ok(keys.v[i]))
            rc = read_key(st, keys.v[i], out, n);
    sr_strlist_free(&keys);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

/* The newest version's limits with those given replaced. */
static void merge(struct sr_quota *q, const struct sr_quota *set, const int given[SR_QUOTA_FIELDS])
{
    if (given[0])
        q->gpu_hours = set->gpu_hours;
    if (given[1])
        q->max_cost = set->max_cost;
    if (given[2])
        q->max_gpus_per_run = set->max_gpus_per_run;
    if (given[3])
        q->max_concurrent = set->max_concurrent;
    if (given[4])
        q->per = set->per;
    if (given[5]) {
        q->approve_gpu_hours = set->approve_gpu_hours;
        q->approve_cost = set->approve_cost;
    }
}

int sr_quota_set(struct sr_store *st, const struct sr_quota *set, const int given[SR_QUOTA_FIELDS],
                 struct sr_quota *q)
{
    int rc = -EEXIST;
    for (int tries = 0; tries < 16 && rc == -EEXIST; tries++) {
        unsigned v = 0;
        *q = (struct sr_quota){.label = set->label, .per = SR_PER_WEEK};
        rc = newest_of(st, &set->label, &v);
        if (rc == 0 && (rc = read_version(st, &set->label, v, q)) < 0)
            return rc;
        if (rc == -ENOENT)
            v = 1;
        else if (rc < 0)
            return rc;
        else if (++v > VERSIONS_MAX)
            return sr_errf(-EFBIG, "quota %s=%s was changed too often", set->label.key,
                           set->label.value);
        merge(q, set, given);
        q->version = v;
        snprintf(q->by, sizeof(q->by), "%s", set->by);
        q->unix_ms = set->unix_ms;
        json_t *o = sr_quota_to_json(q);
        char *s = o ? json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT) : NULL;
        json_decref(o);
        if (!s)
            return -ENOMEM;
        char key[256];
        dir_of(key, sizeof(key) - 16, &set->label);
        snprintf(key + strlen(key), 16, "/%06u.json", v);
        rc = sr_store_put_if(st, key, s, strlen(s), NULL, NULL); /* -EEXIST: raced, next one */
        free(s);
    }
    return rc;
}

int sr_quota_use_in(const struct sr_runsum *runs, size_t n, const struct sr_quota *q,
                    int64_t now_ms, struct sr_quota_use *u)
{
    memset(u, 0, sizeof(*u));
    struct sr_stats_query sq = {.since_ms = sr_quota_period_start(now_ms, q->per)};
    sq.want.v[0] = q->label;
    sq.want.n = 1;
    struct sr_stats s = {0};
    const int rc = sr_stats_compute(runs, n, &sq, &s);
    if (rc == 0) {
        u->gpu_hours = s.total.gpu_h;
        u->cost = s.total.cost;
        u->running = s.total.ends[SR_CAUSE_NONE];
    }
    sr_stats_free(&s);
    return rc;
}

int sr_quota_use_of(struct sr_store *st, const struct sr_quota *q, int64_t now_ms,
                    struct sr_quota_use *u)
{
    memset(u, 0, sizeof(*u));
    struct sr_runsum *runs = NULL;
    size_t n = 0;
    int rc = sr_runsum_load_all(st, NULL, &runs, &n);
    if (rc < 0)
        return rc;
    rc = sr_quota_use_in(runs, n, q, now_ms, u);
    for (size_t i = 0; i < n; i++)
        sr_runsum_free(&runs[i]);
    free(runs);
    return rc;
}

int sr_quota_parse_approve(const char *s, double *gpu_hours, double *cost)
{
    *gpu_hours = *cost = 0;
    char *end = NULL;
    const double v = s && *s ? strtod(s, &end) : -1;
    if (!end || end == s || !isfinite(v) || v < 0 || v > SR_AMOUNT_MAX || *s == '-' || *s == '+')
        return -EINVAL;
    if (strcmp(end, "gpu-hours") == 0 || strcmp(end, "gpu-h") == 0)
        *gpu_hours = v;
    else if (*end == '\0')
        *cost = v;
    else
        return -EINVAL;
    return 0;
}

static void approval_key(char *buf, size_t len, const char *run)
{
    snprintf(buf, len, SR_KEY_APPROVALS "/%s.json", run);
}

int sr_approval_read(struct sr_store *st, const char *run, struct sr_approval *out)
{
    memset(out, 0, sizeof(*out));
    char key[400], *buf = NULL;
    size_t len = 0;
    approval_key(key, sizeof(key), run);
    int rc = sr_store_get(st, key, QUOTA_MAX, &buf, &len);
    if (rc < 0)
        return rc;
    json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
    free(buf);
    const json_t *r = json_object_get(o, "run"), *by = json_object_get(o, "by");
    const json_t *ms = json_object_get(o, "unix_ms");
    rc = json_is_string(r) && strcmp(json_string_value(r), run) == 0 && json_is_string(by) &&
                 sr_quota_by_ok(json_string_value(by)) && json_is_integer(ms)
             ? 0
             : sr_errf(-EBADMSG, "approval %s is not one of run %s", key, run);
    if (rc == 0) {
        snprintf(out->by, sizeof(out->by), "%s", json_string_value(by));
        out->unix_ms = (int64_t)json_integer_value(ms);
    }
    json_decref(o);
    return rc;
}

int sr_approval_write(struct sr_store *st, const char *run, struct sr_approval *a)
{
    json_t *o = json_pack("{s:i,s:s,s:s,s:I}", "format", 1, "run", run, "by", a->by, "unix_ms",
                          (json_int_t)a->unix_ms);
    char *s = o ? json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s)
        return -ENOMEM;
    char key[400];
    approval_key(key, sizeof(key), run);
    int rc = sr_store_put_if(st, key, s, strlen(s), NULL, NULL);
    free(s);
    if (rc == -EEXIST) {
        const int r = sr_approval_read(st, run, a);
        return r < 0 ? r : -EEXIST;
    }
    return rc;
}

/* sr_quota_uses, the runs loaded here when load is set (and there is a
 * quota). */
static int uses(struct sr_store *st, const struct sr_runsum *runs, size_t n, int load,
                int64_t now_ms, struct sr_quota **qs, struct sr_quota_use **us, size_t *nq)
{
    *qs = NULL;
    *us = NULL;
    *nq = 0;
    int rc = sr_quota_read_all(st, qs, nq);
    if (rc < 0 || !*nq)
        return rc;
    struct sr_runsum *loaded = NULL;
    if (load && (rc = sr_runsum_load_all(st, NULL, &loaded, &n)) < 0)
        return rc;
    if (!(*us = calloc(*nq, sizeof(**us))))
        rc = -ENOMEM;
    for (size_t i = 0; rc == 0 && i < *nq; i++)
        rc = sr_quota_use_in(load ? loaded : runs, n, &(*qs)[i], now_ms, &(*us)[i]);
    for (size_t i = 0; load && i < n; i++)
        sr_runsum_free(&loaded[i]);
    free(loaded);
    return rc;
}

int sr_quota_uses(struct sr_store *st, const struct sr_runsum *runs, size_t n, int64_t now_ms,
                  struct sr_quota **qs, struct sr_quota_use **us, size_t *nq)
{
    return uses(st, runs, n, 0, now_ms, qs, us, nq);
}

int sr_quota_uses_now(struct sr_store *st, int64_t now_ms, struct sr_quota **qs,
                      struct sr_quota_use **us, size_t *nq)
{
    return uses(st, NULL, 0, 1, now_ms, qs, us, nq);
}
