/*
 * pbt.c - population-based training over the store (see pbt.h).
 */
#include "pbt.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "asha.h"
#include "layout.h"
#include "log.h"
#include "sweep.h"
#include "units.h"

#define REC_MAX (64u << 10)

/* One OPTION of a --pbt rule (sr_rule_parse). */
static int option(void *ctx, const char *p, size_t len, char *err, size_t errlen)
{
    struct sr_pbt *out = ctx;
    char opt[96];
    snprintf(opt, sizeof(opt), "%.*s", (int)(len < 90 ? len : 90), p);
    if (strncmp(opt, "interval=", 9) == 0) {
        if (sr_parse_int(opt + 9, 1, INT64_C(1) << 53, &out->interval) < 0) {
            snprintf(err, errlen, "interval=\"%s\" is not an integer >= 1", opt + 9);
            return -EINVAL;
        }
    } else if (strncmp(opt, "quantile=", 9) == 0) {
        if (sr_parse_real(opt + 9, &out->quantile) < 0 || !(out->quantile > 0) ||
            out->quantile > 0.5) {
            snprintf(err, errlen, "quantile=\"%s\" is not a number in (0, 0.5]", opt + 9);
            return -EINVAL;
        }
    } else {
        snprintf(err, errlen, "unknown option \"%s\" (interval=K, quantile=Q)", opt);
        return -EINVAL;
    }
    return 0;
}

int sr_pbt_parse(const char *spec, struct sr_pbt *out, char *err, size_t errlen)
{
    *out = (struct sr_pbt){.quantile = 0.25};
    const int rc = sr_rule_parse(spec, out->metric, &out->maximize, option, out, err, errlen);
    if (rc < 0)
        return rc;
    if (!out->interval) {
        snprintf(err, errlen, "it needs interval=K (the steps between two rounds)");
        return -EINVAL;
    }
    return 0;
}

/* A perturb rule's parts: factors, resample probability, keep. */
static int rule_parse(const char *rule, double *factors, size_t *nf, double *resample, int *keep,
                      char *err, size_t errlen)
{
    *nf = 0;
    *resample = 0;
    *keep = 0;
    if (strcmp(rule, "keep") == 0) {
        *keep = 1;
        return 0;
    }
    int any = 0;
    for (const char *p = rule; *p || !any;) {
        const size_t len = strcspn(p, ",");
        char tok[64];
        if (len == 0 || len >= sizeof(tok)) {
            snprintf(err, errlen, "an empty or long part in \"%.80s\"", rule);
            return -EINVAL;
        }
        snprintf(tok, sizeof(tok), "%.*s", (int)len, p);
        any = 1;
        double x;
        if (strcmp(tok, "resample") == 0) {
            *resample = 1;
        } else if (strncmp(tok, "resample=", 9) == 0) {
            if (sr_parse_real(tok + 9, resample) < 0 || *resample < 0 || *resample > 1) {
                snprintf(err, errlen, "resample=\"%s\" is not a probability in [0, 1]", tok + 9);
                return -EINVAL;
            }
        } else if (sr_parse_real(tok, &x) == 0 && isfinite(x) && x > 0 &&
                   *nf < SR_PBT_FACTORS_MAX) {
            factors[(*nf)++] = x;
        } else {
            snprintf(err, errlen, "\"%s\" is no factor > 0 (at most %d), resample[=P] or keep", tok,
                     SR_PBT_FACTORS_MAX);
            return -EINVAL;
        }
        p += len;
        if (*p)
            p++;
        else
            break;
    }
    if (*nf == 0 && *resample < 1) { /* resample=P alone: the default factors otherwise */
        factors[0] = 0.8;
        factors[1] = 1.2;
        *nf = 2;
    }
    return 0;
}

int sr_pbt_perturb_check(const char *spec, size_t *name_len, char *err, size_t errlen)
{
    const char *eq = strchr(spec, '=');
    char name[SR_SWEEP_PARAM_NAME_MAX + 1];
    if (!eq || (size_t)(eq - spec) > SR_SWEEP_PARAM_NAME_MAX) {
        snprintf(err, errlen, "it needs NAME=RULE (e.g. lr=0.8,1.2 or opt=resample)");
        return -EINVAL;
    }
    snprintf(name, sizeof(name), "%.*s", (int)(eq - spec), spec);
    if (!sr_sweep_param_name_valid(name)) {
        snprintf(err, errlen, "\"%s\" is not a parameter name", name);
        return -EINVAL;
    }
    double f[SR_PBT_FACTORS_MAX], r;
    size_t nf;
    int keep;
    *name_len = (size_t)(eq - spec);
    return rule_parse(eq + 1, f, &nf, &r, &keep, err, errlen);
}

json_t *sr_pbt_to_json(const struct sr_pbt *p, json_t *perturb)
{
    json_t *o =
        json_pack("{s:s,s:s,s:I,s:f}", "metric", p->metric, "mode", p->maximize ? "max" : "min",
                  "interval", (json_int_t)p->interval, "quantile", p->quantile);
    if (o && json_object_size(perturb))
        json_object_set(o, "perturb", perturb);
    return o;
}

int sr_pbt_from_json(const json_t *o, struct sr_pbt *out)
{
    const json_t *m = json_object_get(o, "metric"), *mode = json_object_get(o, "mode"),
                 *k = json_object_get(o, "interval"), *q = json_object_get(o, "quantile"),
                 *pt = json_object_get(o, "perturb");
    if (!json_is_string(m) || strlen(json_string_value(m)) == 0 ||
        strlen(json_string_value(m)) >= sizeof(out->metric) || !json_is_string(mode) ||
        (strcmp(json_string_value(mode), "min") != 0 &&
         strcmp(json_string_value(mode), "max") != 0) ||
        !json_is_integer(k) || json_integer_value(k) < 1 || !json_is_number(q) ||
        !(json_number_value(q) > 0) || json_number_value(q) > 0.5 || (pt && !json_is_object(pt)))
        return -EBADMSG;
    *out = (struct sr_pbt){.maximize = strcmp(json_string_value(mode), "max") == 0,
                           .interval = json_integer_value(k),
                           .quantile = json_number_value(q)};
    snprintf(out->metric, sizeof(out->metric), "%s", json_string_value(m));
    return 0;
}

/* ---- the decision ---- */

static uint64_t mix(uint64_t z)
{
    z += UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

uint64_t sr_pbt_seed(uint64_t sweep_seed, long trial, long round)
{
    return mix(mix(mix(sweep_seed) ^ (uint64_t)trial) ^ (uint64_t)round);
}

static int g_max; /* qsort's direction (the decision is pure; one thread sorts) */

static int better_first(const void *a, const void *b)
{
    const struct sr_pbt_val *x = a, *y = b;
    const int xn = isnan(x->value), yn = isnan(y->value);
    if (xn != yn)
        return xn - yn; /* a NaN is the worst */
    if (!xn && x->value != y->value)
        return (g_max ? x->value > y->value : x->value < y->value) ? -1 : 1;
    return x->trial < y->trial ? -1 : x->trial > y->trial;
}

long sr_pbt_decide(const struct sr_pbt *p, const struct sr_pbt_val *vals, size_t n, long trial,
                   uint64_t seed, size_t *k)
{
    *k = 0;
    if (n < 2)
        return -1;
    struct sr_pbt_val *v = malloc(n * sizeof(*v));
    if (!v)
        return -1;
    memcpy(v, vals, n * sizeof(*v));
    g_max = p->maximize;
    qsort(v, n, sizeof(*v), better_first);
    size_t q = (size_t)ceil((double)n * p->quantile - 1e-9);
    if (q > n / 2)
        q = n / 2;
    *k = q;
    long donor = -1;
    for (size_t i = n - q; i < n; i++)
        if (v[i].trial == trial) {
            uint64_t s = seed;
            donor = v[(size_t)(mix(s) % q)].trial;
        }
    free(v);
    return donor;
}

json_t *sr_pbt_explore(const json_t *pbt, const json_t *spec, const json_t *params, uint64_t *state)
{
    json_t *out = json_deep_copy(params);
    const json_t *given = json_object_get(spec, "param"),
                 *perturb = json_object_get(pbt, "perturb");
    size_t i;
    const json_t *s;
    json_array_foreach(given, i, s)
    {
        const char *sp = json_string_value(s);
        const char *eq = sp ? strchr(sp, '=') : NULL;
        if (!eq)
            continue;
        char name[SR_SWEEP_PARAM_NAME_MAX + 1];
        snprintf(name, sizeof(name), "%.*s", (int)(eq - sp), sp);
        const json_t *cur = json_object_get(params, name);
        if (!json_is_string(cur) || !*json_string_value(cur)) /* absent: stays absent */
            continue;
        const char *rule = json_string_value(json_object_get(perturb, name));
        double f[SR_PBT_FACTORS_MAX] = {0.8, 1.2}, r = 0;
        size_t nf = 2;
        int keep = 0;
        char err[160];
        if (rule && rule_parse(rule, f, &nf, &r, &keep, err, sizeof(err)) < 0)
            continue;
        if (keep)
            continue;
        char val[SR_SWEEP_VALUE_MAX + 1];
        if (sr_sweep_explore(sp, json_string_value(cur), f, nf, r, state, val, sizeof(val)) == 0)
            json_object_set_new(out, name, json_string(val));
    }
    return out;
}

/* ---- records ---- */

static int put_json(struct sr_store *st, const char *key, json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (!s)
        return -ENOMEM;
    const int rc = sr_store_put_if(st, key, s, strlen(s), NULL, NULL);
    free(s);
    return rc;
}

static int get_json(struct sr_store *st, const char *key, json_t **out)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = sr_store_get(st, key, REC_MAX, &buf, &len);
    if (rc < 0)
        return rc == -EFBIG ? -EBADMSG : rc;
    *out = json_loadb(buf, len, 0, NULL);
    free(buf);
    return *out ? 0 : -EBADMSG;
}

int sr_pbt_put_value(struct sr_store *st, const char *sweep, long trial, long round, int64_t step,
                     double value)
{
    char key[512], host[256] = "";
    gethostname(host, sizeof(host) - 1);
    sr_key_sweep(key, sizeof(key), sweep, SR_SWEEP_PBT "/rounds/%ld/%ld.json", round, trial);
    json_t *o = json_pack("{s:i,s:I,s:I,s:I,s:o,s:I,s:s}", "format", 1, "trial", (json_int_t)trial,
                          "round", (json_int_t)round, "step", (json_int_t)step, "value",
                          isfinite(value) ? json_real(value) : json_null(), "unix_ms",
                          (json_int_t)sr_wall_ms(), "host", host);
    const int rc = put_json(st, key, o);
    json_decref(o);
    return rc;
}

static long trial_of_name(const char *name, const char *suffix)
{
    char *end = NULL;
    if (name[0] < '0' || name[0] > '9')
        return -1;
    const long k = strtol(name, &end, 10);
    return end && strcmp(end, suffix) == 0 && k < SR_SWEEP_TRIALS_MAX ? k : -1;
}

int sr_pbt_list_values(struct sr_store *st, const char *sweep, long round, struct sr_pbt_val **out,
                       size_t *n)
{
    *out = NULL;
    *n = 0;
    char prefix[512];
    sr_key_sweep(prefix, sizeof(prefix), sweep, SR_SWEEP_PBT "/rounds/%ld", round);
    struct sr_strlist l;
    int rc = sr_store_list(st, prefix, &l);
    if (rc < 0)
        return rc;
    *out = calloc(l.n ? l.n : 1, sizeof(**out));
    if (!*out) {
        sr_strlist_free(&l);
        return -ENOMEM;
    }
    for (size_t i = 0; i < l.n && rc == 0; i++) {
        const long k = trial_of_name(l.v[i], ".json");
        char key[1024];
        json_t *o = NULL;
        if (k < 0 || sr_key_join(key, sizeof(key), prefix, l.v[i]) < 0)
            continue;
        rc = get_json(st, key, &o);
        if (rc == -ENOENT || rc == -EBADMSG) {
            rc = 0;
            continue;
        }
        const json_t *t = json_object_get(o, "trial"), *v = json_object_get(o, "value");
        if (rc == 0 && json_is_integer(t) && json_integer_value(t) == k &&
            (json_is_number(v) || json_is_null(v)))
            (*out)[(*n)++] = (struct sr_pbt_val){
                .trial = k, .value = json_is_number(v) ? json_number_value(v) : NAN};
        json_decref(o);
    }
    sr_strlist_free(&l);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

int sr_pbt_put_decision(struct sr_store *st, const char *sweep, const json_t *d, json_t **existing)
{
    const long trial = (long)json_integer_value(json_object_get(d, "trial")),
               round = (long)json_integer_value(json_object_get(d, "round"));
    char key[512];
    sr_key_sweep(key, sizeof(key), sweep, SR_SWEEP_PBT "/lineage/%ld/%ld.json", trial, round);
    int rc = put_json(st, key, (json_t *)d);
    if (rc == -EEXIST && existing) {
        const int grc = get_json(st, key, existing);
        if (grc < 0)
            return grc;
    }
    return rc;
}

int sr_pbt_mark_applied(struct sr_store *st, const char *sweep, long trial, long round,
                        uint64_t seq)
{
    char key[512];
    sr_key_sweep(key, sizeof(key), sweep, SR_SWEEP_PBT "/lineage/%ld/%ld.applied.json", trial,
                 round);
    json_t *o = json_pack("{s:I,s:I}", "seq", (json_int_t)seq, "unix_ms", (json_int_t)sr_wall_ms());
    const int rc = put_json(st, key, o);
    json_decref(o);
    return rc == -EEXIST ? 0 : rc;
}

static int by_round(const void *a, const void *b)
{
    const json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "round")),
                     y = json_integer_value(json_object_get(*(json_t *const *)b, "round"));
    return x < y ? -1 : x > y;
}

int sr_pbt_lineage(struct sr_store *st, const char *sweep, long trial, json_t **out)
{
    *out = NULL;
    char prefix[512];
    sr_key_sweep(prefix, sizeof(prefix), sweep, SR_SWEEP_PBT "/lineage/%ld", trial);
    struct sr_strlist l;
    int rc = sr_store_list(st, prefix, &l);
    if (rc < 0)
        return rc;
    json_t **v = calloc(l.n ? l.n : 1, sizeof(*v));
    size_t n = 0;
    for (size_t i = 0; v && i < l.n && rc == 0; i++) {
        const long r = trial_of_name(l.v[i], ".json");
        char key[1024];
        json_t *o = NULL;
        if (r < 0 || sr_key_join(key, sizeof(key), prefix, l.v[i]) < 0)
            continue;
        rc = get_json(st, key, &o);
        if (rc == -ENOENT || rc == -EBADMSG) {
            rc = 0;
            continue;
        }
        if (rc < 0)
            break;
        if (json_integer_value(json_object_get(o, "trial")) != trial ||
            json_integer_value(json_object_get(o, "round")) != r ||
            !json_is_integer(json_object_get(o, "donor")) ||
            !json_is_object(json_object_get(o, "params"))) {
            json_decref(o);
            continue;
        }
        char akey[1024], aname[64];
        snprintf(aname, sizeof(aname), "%ld.applied.json", r);
        json_t *a = NULL;
        if (sr_key_join(akey, sizeof(akey), prefix, aname) == 0) {
            for (size_t j = 0; j < l.n; j++)
                if (strcmp(l.v[j], aname) == 0 && get_json(st, akey, &a) == 0) {
                    json_object_set(o, "applied", json_object_get(a, "seq"));
                    json_decref(a);
                    break;
                }
        }
        v[n++] = o;
    }
    sr_strlist_free(&l);
    if (!v)
        return -ENOMEM;
    qsort(v, n, sizeof(*v), by_round);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, v[i]);
    free(v);
    if (rc < 0) {
        json_decref(arr);
        return rc;
    }
    *out = arr;
    return 0;
}

int sr_pbt_remove_trial(struct sr_store *st, const char *sweep, long trial)
{
    char prefix[512];
    sr_key_sweep(prefix, sizeof(prefix), sweep, SR_SWEEP_PBT "/lineage/%ld", trial);
    struct sr_strlist l = {0};
    int rc = sr_store_list(st, prefix, &l);
    for (size_t i = 0; rc == 0 && i < l.n; i++) {
        char key[1024];
        if (sr_key_join(key, sizeof(key), prefix, l.v[i]) == 0)
            rc = sr_store_delete(st, key);
    }
    if (rc == 0 || l.n)
        sr_strlist_free(&l);
    sr_key_sweep(prefix, sizeof(prefix), sweep, SR_SWEEP_PBT "/rounds");
    if (rc == 0 && (rc = sr_store_list(st, prefix, &l)) == 0) {
        for (size_t i = 0; rc == 0 && i < l.n; i++) {
            char key[1024];
            if (sr_key_sweep(key, sizeof(key), sweep, SR_SWEEP_PBT "/rounds/%s/%ld.json", l.v[i],
                             trial) == 0)
                rc = sr_store_delete(st, key);
        }
        sr_strlist_free(&l);
    }
    return rc;
}

static const char *pstr(const json_t *o, const char *name)
{
    const char *s = json_string_value(json_object_get(o, name));
    return s ? s : "-";
}

void sr_pbt_changes(const json_t *from, const json_t *to, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    const char *name;
    const json_t *x;
    json_object_foreach((json_t *)to, name, x)
    {
        if (strcmp(pstr(from, name), pstr(to, name)) == 0 || n >= len)
            continue;
        n += (size_t)snprintf(buf + n, len - n, "%s%s %s -> %s", n ? ", " : "", name,
                              pstr(from, name), pstr(to, name));
    }
    if (!buf[0])
        snprintf(buf, len, "parameters unchanged");
}
