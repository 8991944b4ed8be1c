/*
 * sweep_budget.c - a sweep's budget in the store (see sweep_budget.h).
 */
#include "sweep_budget.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "layout.h"
#include "log.h"
#include "manifest.h"
#include "sweep.h"

#define BUDGET_MAX 65536u    /* bytes of one object */
#define VERSIONS_MAX 100000u /* changes of one sweep's budget */

static void key_of(char *buf, size_t len, const char *name, unsigned v)
{
    sr_key_sweep(buf, len, name, SR_SWEEP_BUDGET "/%06u.json", v);
}

/* The highest version present (budget/NNNNNN.json), or -ENOENT. */
static int newest(struct sr_store *st, const char *name, unsigned *v)
{
    struct sr_strlist l;
    int rc = sr_list_sweep(st, name, SR_SWEEP_BUDGET, &l);
    if (rc < 0)
        return rc;
    rc = -ENOENT;
    for (size_t i = 0; i < l.n; i++) {
        unsigned k;
        char tail;
        if (strlen(l.v[i]) == 11 && strspn(l.v[i], "0123456789") == 6 &&
            sscanf(l.v[i], "%6u.jso%c", &k, &tail) == 2 && tail == 'n' && k < VERSIONS_MAX &&
            (rc == -ENOENT || k > *v)) {
            *v = k;
            rc = 0;
        }
    }
    sr_strlist_free(&l);
    return rc;
}

int sr_sweep_budget_read(struct sr_store *st, const char *name, struct sr_sweep_budget *out)
{
    memset(out, 0, sizeof(*out));
    if (!sr_sweep_name_valid(name))
        return sr_errf(-EINVAL, "invalid sweep name \"%.*s\"", 200, name);
    unsigned v = 0;
    int rc = newest(st, name, &v);
    if (rc < 0)
        return rc;
    char key[256], *buf = NULL;
    size_t len = 0;
    key_of(key, sizeof(key), name, v);
    if ((rc = sr_store_get(st, key, BUDGET_MAX, &buf, &len)) < 0)
        return rc;
    json_error_t err;
    json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
    free(buf);
    const json_t *sweep = json_object_get(o, "sweep"), *ver = json_object_get(o, "version");
    if (!json_is_object(o) || !json_is_string(sweep) || strcmp(json_string_value(sweep), name) ||
        !json_is_integer(ver) || json_integer_value(ver) != (json_int_t)v ||
        sr_json_amount(o, "max_cost", &out->max_cost) < 0 ||
        sr_json_amount(o, "price_per_hour", &out->price_per_hour) < 0)
        rc = sr_errf(-EBADMSG,
                     "sweep %s: budget %s is not a budget of this sweep (its \"sweep\" and "
                     "\"version\" must be its key's, its amounts non-negative numbers): set it "
                     "again with `spotrun sweep set %s --max-cost AMOUNT`",
                     name, key, name);
    json_decref(o);
    out->version = v;
    return rc;
}

int sr_sweep_budget_set(struct sr_store *st, const char *name, const struct sr_sweep_budget *b,
                        unsigned *version)
{
    if (!sr_sweep_name_valid(name))
        return sr_errf(-EINVAL, "invalid sweep name \"%.*s\"", 200, name);
    int rc = -EEXIST;
    for (int tries = 0; tries < 8 && rc == -EEXIST; tries++) {
        unsigned v = 0;
        rc = newest(st, name, &v);
        if (rc == -ENOENT)
            v = 0;
        else if (rc < 0)
            return rc;
        else if (++v >= VERSIONS_MAX)
            return sr_errf(-EFBIG, "sweep %s: its budget was changed too often", name);
        char host[256] = "";
        gethostname(host, sizeof(host) - 1);
        json_t *o =
            json_pack("{s:i,s:s,s:I,s:f,s:f,s:s,s:I}", "format", 1, "sweep", name, "version",
                      (json_int_t)v, "max_cost", b->max_cost, "price_per_hour", b->price_per_hour,
                      "host", host, "unix_ms", (json_int_t)time(NULL) * 1000);
        char *s = o ? json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT) : NULL;
        json_decref(o);
        if (!s)
            return -ENOMEM;
        char key[256];
        key_of(key, sizeof(key), name, v);
        rc = sr_store_put_if(st, key, s, strlen(s), NULL, NULL); /* -EEXIST: raced, next one */
        free(s);
        if (rc == 0 && version)
            *version = v;
    }
    return rc;
}
