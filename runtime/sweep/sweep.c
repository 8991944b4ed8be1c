/*
 * sweep.c - a sweep's definition and its trials' end marks in the store
 * (sweep.h).
 */
#include "sweep.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "asha.h"
#include "pbt.h"
#include "catalog.h"
#include "layout.h"
#include "log.h"
#include "termsafe.h"
#include "manifest.h"
#include "sweep_rungs.h"

#define DEF_MAX (64u << 20) /* bytes of one definition part */
#define PARTS_MAX 10000u

int sr_sweep_name_valid(const char *name)
{
    return name && strlen(name) <= SR_SWEEP_NAME_MAX && sr_manifest_run_id_valid(name) &&
           strcmp(name, SR_KEY_SWEEPS) != 0;
}

int sr_sweep_param_name_valid(const char *name)
{
    if (!name || !*name || strlen(name) > SR_SWEEP_PARAM_NAME_MAX)
        return 0;
    for (const char *p = name; *p; p++) {
        const int alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_';
        if (!alpha && !(p > name && *p >= '0' && *p <= '9'))
            return 0;
    }
    return 1;
}

/* A metric's name as `spotrun metric` takes it: [A-Za-z0-9_.:-]{1,64}. */
static int objective_metric_valid(const char *m, size_t len)
{
    if (len == 0 || len > 64)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!m[i] ||
            !strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-", m[i]))
            return 0;
    return 1;
}

json_t *sr_sweep_objective_parse(const char *spec, char *err, size_t errlen)
{
    const char *colon = strrchr(spec, ':');
    if (!colon) {
        snprintf(err, errlen, "it needs METRIC:min or METRIC:max");
        return NULL;
    }
    const size_t mlen = (size_t)(colon - spec);
    if (!objective_metric_valid(spec, mlen)) {
        snprintf(err, errlen, "\"%.*s\" is not a metric name ([A-Za-z0-9_.:-], at most 64)",
                 (int)(mlen > 80 ? 80 : mlen), spec);
        return NULL;
    }
    if (strcmp(colon + 1, "min") != 0 && strcmp(colon + 1, "max") != 0) {
        snprintf(err, errlen, "the direction \"%.40s\" is not min or max", colon + 1);
        return NULL;
    }
    return json_pack("{s:s%,s:s}", "metric", spec, mlen, "direction", colon + 1);
}

int sr_sweep_objectives_valid(const json_t *o)
{
    if (!json_is_array(o) || json_array_size(o) > SR_SWEEP_OBJECTIVES_MAX)
        return 0;
    for (size_t i = 0; i < json_array_size(o); i++) {
        const json_t *e = json_array_get(o, i);
        const char *m = json_string_value(json_object_get(e, "metric")),
                   *d = json_string_value(json_object_get(e, "direction"));
        if (!json_is_object(e) || !m || !objective_metric_valid(m, strlen(m)) || !d ||
            (strcmp(d, "min") != 0 && strcmp(d, "max") != 0))
            return 0;
        for (size_t j = 0; j < i; j++)
            if (strcmp(m, json_string_value(json_object_get(json_array_get(o, j), "metric"))) == 0)
                return 0;
    }
    return 1;
}

size_t sr_sweep_nobjectives(const struct sr_sweep *sw)
{
    return json_array_size(sw->objectives);
}

const char *sr_sweep_objective(const struct sr_sweep *sw, size_t i, int *maximize)
{
    const json_t *e = json_array_get(sw->objectives, i);
    *maximize = strcmp(json_string_value(json_object_get(e, "direction")), "max") == 0;
    return json_string_value(json_object_get(e, "metric"));
}

static void part_key(char *buf, size_t len, const char *name, unsigned part)
{
    sr_key_sweep(buf, len, name, SR_SWEEP_DEF "/%06u.json", part);
}

void sr_sweep_free(struct sr_sweep *sw)
{
    if (!sw)
        return;
    json_decref(sw->params);
    json_decref(sw->command);
    json_decref(sw->trials);
    json_decref(sw->spec);
    json_decref(sw->labels);
    json_decref(sw->early_stop);
    json_decref(sw->pbt);
    sw->pbt = NULL;
    json_decref(sw->objectives);
    sw->params = sw->command = sw->trials = sw->spec = sw->labels = sw->early_stop = NULL;
    sw->objectives = NULL;
}

size_t sr_sweep_count(const struct sr_sweep *sw)
{
    return sw->trials ? json_array_size(sw->trials) : 0;
}

size_t sr_sweep_nparams(const struct sr_sweep *sw)
{
    return sw->params ? json_array_size(sw->params) : 0;
}

const char *sr_sweep_param(const struct sr_sweep *sw, size_t i)
{
    return json_string_value(json_array_get(sw->params, i));
}

const char *sr_sweep_value(const struct sr_sweep *sw, size_t trial, const char *param)
{
    return json_string_value(json_object_get(json_array_get(sw->trials, trial), param));
}

/* ---- checking what was read --------------------------------------------- */

static int strings(const json_t *a, size_t max, size_t max_len)
{
    if (!json_is_array(a) || json_array_size(a) > max)
        return 0;
    size_t i;
    const json_t *v;
    json_array_foreach(a, i, v) if (!json_is_string(v) || json_string_length(v) > max_len ||
                                    strlen(json_string_value(v)) != json_string_length(v)) return 0;
    return 1;
}

/* Names valid and distinct ignoring case (they become SPOTRUN_PARAM_<NAME>). */
static int params_valid(const json_t *params)
{
    if (!strings(params, SR_SWEEP_PARAMS_MAX, SR_SWEEP_PARAM_NAME_MAX))
        return 0;
    for (size_t i = 0; i < json_array_size(params); i++) {
        const char *a = json_string_value(json_array_get(params, i));
        if (!sr_sweep_param_name_valid(a))
            return 0;
        for (size_t j = 0; j < i; j++)
            if (strcasecmp(a, json_string_value(json_array_get(params, j))) == 0)
                return 0;
    }
    return 1;
}

/* Each trial: an object with exactly the parameters, string values. */
static int trials_valid(const json_t *trials, const json_t *params)
{
    if (!json_is_array(trials))
        return 0;
    size_t i;
    const json_t *t;
    json_array_foreach(trials, i, t)
    {
        if (!json_is_object(t) || json_object_size(t) != json_array_size(params))
            return 0;
        for (size_t j = 0; j < json_array_size(params); j++) {
            const json_t *v = json_object_get(t, json_string_value(json_array_get(params, j)));
            if (!json_is_string(v) || json_string_length(v) > SR_SWEEP_VALUE_MAX ||
                strlen(json_string_value(v)) != json_string_length(v) ||
                sr_text_has_ctrl(json_string_value(v))) /* printed by sweep show */
                return 0;
        }
    }
    return 1;
}

static int read_part(struct sr_store *st, const char *name, unsigned part, json_t **out)
{
    char key[256], *buf = NULL;
    size_t len = 0;
    part_key(key, sizeof(key), name, part);
    int rc = sr_store_get(st, key, DEF_MAX, &buf, &len);
    if (rc < 0)
        return rc;
    json_error_t err;
    json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
    free(buf);
    json_int_t format = -1;
    if (o && json_is_integer(json_object_get(o, "format")))
        format = json_integer_value(json_object_get(o, "format"));
    if (!json_is_object(o) || format < 1) {
        json_decref(o);
        return sr_errf(-EBADMSG, "sweep %s: definition part %u is not a sweep definition", name,
                       part);
    }
    /* a part copied from another sweep or position is not this one */
    const json_t *sweep = json_object_get(o, "sweep"), *num = json_object_get(o, "part");
    if (format <= SR_SWEEP_FORMAT &&
        (!json_is_string(sweep) || strcmp(json_string_value(sweep), name) != 0 ||
         !json_is_integer(num) || json_integer_value(num) != (json_int_t)part)) {
        json_decref(o);
        return sr_errf(-EBADMSG,
                       "sweep %s: definition part %u names another sweep or part (its \"sweep\" "
                       "and \"part\" must be its key's): the store was tampered with",
                       name, part);
    }
    if (format > SR_SWEEP_FORMAT) {
        json_decref(o);
        return sr_errf(-EPROTONOSUPPORT,
                       "sweep %s: definition part %u has format %" JSON_INTEGER_FORMAT
                       " (this spotrun reads %d): upgrade spotrun",
                       name, part, format, SR_SWEEP_FORMAT);
    }
    *out = o;
    return 0;
}

/* The part numbers present (def/NNNNNN.json), checked to be 0..n-1. */
static int count_parts(struct sr_store *st, const char *name, unsigned *n)
{
    struct sr_strlist l;
    int rc = sr_list_sweep(st, name, SR_SWEEP_DEF, &l);
    if (rc < 0)
        return rc;
    unsigned count = 0;
    for (size_t i = 0; i < l.n; i++) {
        unsigned k;
        char tail;
        if (strlen(l.v[i]) == 11 && sscanf(l.v[i], "%6u.jso%c", &k, &tail) == 2 && tail == 'n' &&
            k == count && count < PARTS_MAX)
            count++;
    }
    sr_strlist_free(&l);
    *n = count;
    return 0;
}

int sr_sweep_read(struct sr_store *st, const char *name, struct sr_sweep *out)
{
    memset(out, 0, sizeof(*out));
    if (!sr_sweep_name_valid(name))
        return sr_errf(-EINVAL, "invalid sweep name \"%.*s\"", 200, name);
    snprintf(out->name, sizeof(out->name), "%s", name);
    unsigned n = 0;
    int rc = count_parts(st, name, &n);
    if (rc < 0)
        return rc;
    if (n == 0)
        return sr_errf(-ENOENT, "no sweep %s in %s (create it with `spotrun sweep init %s`)", name,
                       sr_store_url(st), name);
    out->trials = json_array();
    for (unsigned p = 0; p < n && rc == 0; p++) {
        json_t *o = NULL;
        rc = read_part(st, name, p, &o);
        if (rc < 0)
            break;
        if (p == 0) {
            out->params = json_incref(json_object_get(o, "params"));
            out->command = json_incref(json_object_get(o, "command"));
            out->spec = json_incref(json_object_get(o, "spec"));
            out->labels = json_incref(json_object_get(o, "labels"));
            out->early_stop = json_incref(json_object_get(o, "early_stop"));
            struct sr_asha rule;
            if (out->early_stop && sr_asha_from_json(out->early_stop, &rule) < 0)
                rc = sr_errf(-EBADMSG, "sweep %s: the definition's early_stop is malformed", name);
            const json_t *best = json_object_get(o, "best");
            out->best_step =
                json_is_string(best) && strcmp(json_string_value(best), "best-step") == 0;
            if (rc == 0 && best &&
                !(json_is_string(best) &&
                  (out->best_step || strcmp(json_string_value(best), "final") == 0)))
                rc = sr_errf(-EBADMSG, "sweep %s: the definition's best rule is malformed", name);
            out->pbt = json_incref(json_object_get(o, "pbt"));
            struct sr_pbt pr;
            if (rc == 0 && out->pbt && sr_pbt_from_json(out->pbt, &pr) < 0)
                rc = sr_errf(-EBADMSG, "sweep %s: the definition's pbt rule is malformed", name);
            out->objectives = json_incref(json_object_get(o, "objectives"));
            if (rc == 0 && out->objectives && !sr_sweep_objectives_valid(out->objectives))
                rc = sr_errf(-EBADMSG, "sweep %s: the definition's objectives are malformed", name);
            const json_t *id = json_object_get(o, "id");
            if (json_is_string(id) && json_string_length(id) < sizeof(out->id))
                snprintf(out->id, sizeof(out->id), "%s", json_string_value(id));
            if (rc == 0 && (!params_valid(out->params) || !strings(out->command, 4096, 65536)))
                rc = sr_errf(-EBADMSG,
                             "sweep %s: the definition's parameters or command are "
                             "malformed",
                             name);
        }
        json_t *trials = json_object_get(o, "trials");
        if (rc == 0 &&
            (!trials_valid(trials, out->params) ||
             json_array_size(out->trials) + json_array_size(trials) > SR_SWEEP_TRIALS_MAX))
            rc = sr_errf(-EBADMSG, "sweep %s: definition part %u has malformed trials", name, p);
        if (rc == 0)
            rc = json_array_extend(out->trials, trials) == 0 ? 0 : -ENOMEM;
        if (p == 0)
            out->first_part_trials = json_array_size(out->trials);
        json_decref(o);
        out->parts = p + 1;
    }
    if (rc < 0)
        sr_sweep_free(out);
    return rc;
}

/* ---- writing --------------------------------------------------------------- */

static int put_part(struct sr_store *st, const char *name, unsigned part, const json_t *fields)
{
    json_t *o = json_deep_copy(fields);
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    json_object_set_new(o, "format", json_integer(SR_SWEEP_FORMAT));
    json_object_set_new(o, "sweep", json_string(name));
    json_object_set_new(o, "part", json_integer(part));
    json_object_set_new(o, "host", json_string(host));
    json_object_set_new(o, "unix_ms", json_integer((json_int_t)time(NULL) * 1000));
    char *s = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
    json_decref(o);
    if (!s)
        return -ENOMEM;
    char key[256];
    part_key(key, sizeof(key), name, part);
    const int rc = sr_store_put_if(st, key, s, strlen(s), NULL, NULL);
    free(s);
    return rc;
}

static int check_new(const struct sr_sweep *def)
{
    if (!sr_sweep_name_valid(def->name))
        return sr_errf(-EINVAL, "invalid sweep name \"%s\" (letters, digits, . _ -; at most %d)",
                       def->name, SR_SWEEP_NAME_MAX);
    if (!params_valid(def->params) || !trials_valid(def->trials, def->params) ||
        json_array_size(def->trials) > SR_SWEEP_TRIALS_MAX)
        return sr_errf(-EINVAL, "sweep %s: malformed parameters or trials", def->name);
    if (def->command && !strings(def->command, 4096, 65536))
        return sr_errf(-EINVAL, "sweep %s: malformed command", def->name);
    return 0;
}

/* What differs between an existing definition and a new one, or NULL. */
static const char *differs(const struct sr_sweep *old, const struct sr_sweep *def)
{
    if (!json_equal(old->params, def->params))
        return "parameters";
    json_t *none = json_array();
    const int same_cmd = json_equal(old->command, def->command ? def->command : none);
    json_decref(none);
    if (!same_cmd)
        return "command";
    if (json_object_size(old->labels) != json_object_size(def->labels) ||
        (json_object_size(def->labels) && !json_equal(old->labels, def->labels)))
        return "labels";
    if (!old->early_stop != !def->early_stop ||
        (def->early_stop && !json_equal(old->early_stop, def->early_stop)))
        return "early-stopping rule";
    if (!old->pbt != !def->pbt || (def->pbt && !json_equal(old->pbt, def->pbt)))
        return "PBT rule (--pbt, --perturb)";
    if (old->best_step != def->best_step)
        return "best rule (--best)";
    if (json_array_size(old->objectives) != json_array_size(def->objectives) ||
        (json_array_size(def->objectives) && !json_equal(old->objectives, def->objectives)))
        return "objectives";
    /* part 0's trials, all of them: a prefix of them is another sweep */
    if (old->first_part_trials != json_array_size(def->trials))
        return "trials";
    for (size_t i = 0; i < json_array_size(def->trials); i++)
        if (!json_equal(json_array_get(old->trials, i), json_array_get(def->trials, i)))
            return "trials";
    return NULL;
}

/* ---- whose run a trial's run is ----------------------------------------------- */

static int bound_to(const json_t *o, const struct sr_sweep *sw, size_t trial)
{
    const json_t *name = json_object_get(o, "sweep"), *id = json_object_get(o, "id"),
                 *k = json_object_get(o, "trial");
    return json_is_string(name) && strcmp(json_string_value(name), sw->name) == 0 &&
           json_is_string(id) && strcmp(json_string_value(id), sw->id) == 0 && json_is_integer(k) &&
           json_integer_value(k) == (json_int_t)trial;
}

/* sr_sweep_run_owner; again: the run's SWEEP may be read once more (a
 * wrapper that binds the run may write it between our GET and our listing:
 * the listing then shows it, and reading it again tells whose it is). */
static int run_owner(struct sr_store *st, const struct sr_sweep *sw, size_t trial,
                     const char *run_id, int again)
{
    char key[SR_RUN_ID_MAX + 16], *buf = NULL;
    size_t len = 0;
    sr_key_run(key, sizeof(key), run_id, SR_KEY_SWEEP);
    int rc = sr_store_get(st, key, 4096, &buf, &len);
    if (rc == 0 || rc == -EFBIG) {
        json_t *o = rc == 0 ? json_loadb(buf, len, 0, NULL) : NULL;
        free(buf);
        const int ours = bound_to(o, sw, trial);
        const json_t *other = json_object_get(o, "sweep"), *k = json_object_get(o, "trial");
        char whose[200] = "an unreadable SWEEP record";
        if (json_is_string(other) && json_is_integer(k))
            snprintf(whose, sizeof(whose), "trial %" JSON_INTEGER_FORMAT " of sweep %.120s%s",
                     json_integer_value(k), json_string_value(other),
                     strcmp(json_string_value(other), sw->name) == 0 ? " as defined before" : "");
        json_decref(o);
        if (ours)
            return 0;
        return sr_errf(-EEXIST,
                       "run %s is not trial %zu of sweep %s: it records %s; not adopting it "
                       "(spotrun sweep delete removes a sweep's own runs)",
                       run_id, trial, sw->name, whose);
    }
    if (rc != -ENOENT)
        return rc;
    struct sr_strlist names;
    if ((rc = sr_store_list(st, run_id, &names)) < 0)
        return rc;
    const char *what = NULL;
    for (size_t i = 0; i < names.n && !what; i++)
        if (!sr_key_is_lease(names.v[i]))
            what = names.v[i];
    char held[64];
    snprintf(held, sizeof(held), "%s", what ? what : "");
    sr_strlist_free(&names);
    if (!what)
        return 1;
    if (again && strcmp(held, "SWEEP") == 0)
        return run_owner(st, sw, trial, run_id, 0);
    return sr_errf(-EEXIST,
                   "run %s is not trial %zu of sweep %s: it holds %s but records no sweep (a run "
                   "made before the sweep, or by hand); not adopting it: define the sweep under "
                   "another name",
                   run_id, trial, sw->name, held);
}

int sr_sweep_run_owner(struct sr_store *st, const struct sr_sweep *sw, size_t trial,
                       const char *run_id)
{
    return run_owner(st, sw, trial, run_id, 1);
}

int sr_sweep_bind_run(struct sr_store *st, const struct sr_sweep *sw, size_t trial,
                      const char *run_id)
{
    int rc = sr_sweep_run_owner(st, sw, trial, run_id);
    if (rc != 1)
        return rc;
    json_t *o = json_pack("{s:i,s:s,s:s,s:I}", "format", SR_SWEEP_FORMAT, "sweep", sw->name, "id",
                          sw->id, "trial", (json_int_t)trial);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s)
        return -ENOMEM;
    char key[SR_RUN_ID_MAX + 16];
    sr_key_run(key, sizeof(key), run_id, SR_KEY_SWEEP);
    rc = sr_store_put_if(st, key, s, strlen(s), NULL, NULL);
    free(s);
    if (rc == -EEXIST) /* another node of the trial bound it first: whose? */
        rc = sr_sweep_run_owner(st, sw, trial, run_id);
    return rc == 1 ? -EAGAIN : rc;
}

/* -ENOTEMPTY naming some runs "<name>-<K>" that def's trials would adopt. */
static int refuse_foreign_runs(struct sr_store *st, const struct sr_sweep *def)
{
    struct sr_strlist runs;
    int rc = sr_ckpt_list_runs(st, &runs);
    if (rc < 0)
        return rc;
    char some[400] = "";
    size_t n = 0, used = 0;
    for (size_t i = 0; i < runs.n && rc == 0; i++) {
        const long k = sr_sweep_trial_of(def->name, runs.v[i]);
        if (k < 0)
            continue;
        rc = sr_sweep_run_owner(st, def, (size_t)k, runs.v[i]);
        if (rc == -EEXIST) {
            if (n++ < 5 && used < sizeof(some))
                used += (size_t)snprintf(some + used, sizeof(some) - used, "%s%s",
                                         n > 1 ? ", " : "", runs.v[i]);
            rc = 0;
        } else if (rc > 0) {
            rc = 0;
        }
    }
    sr_strlist_free(&runs);
    if (rc < 0 || n == 0)
        return rc;
    return sr_errf(-ENOTEMPTY,
                   "%s already holds %zu run%s named %s-<K> that sweep %s would adopt as its "
                   "trials (%s%s): choose another sweep name",
                   sr_store_url(st), n, n == 1 ? "" : "s", def->name, def->name, some,
                   n > 5 ? ", ..." : "");
}

static void new_id(char *buf, size_t len)
{
    uint64_t r[2] = {0, 0};
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        r[0] = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        r[1] = (uint64_t)getpid();
    }
    snprintf(buf, len, "%016" PRIx64 "%016" PRIx64, r[0], r[1]);
}

int sr_sweep_create(struct sr_store *st, const struct sr_sweep *def)
{
    int rc = check_new(def);
    if (rc < 0)
        return rc;
    for (int tries = 0; tries < 2; tries++) {
        struct sr_sweep old;
        rc = sr_sweep_read(st, def->name, &old);
        if (rc == 0) {
            const char *what = differs(&old, def);
            sr_sweep_free(&old);
            if (what)
                return sr_errf(
                    -EEXIST,
                    "sweep %s already exists in %s with a different definition (different "
                    "%s); choose another name, or --add trials to it",
                    def->name, sr_store_url(st), what);
            return 1;
        }
        if (rc != -ENOENT)
            return rc;
        struct sr_sweep fresh = *def;
        new_id(fresh.id, sizeof(fresh.id));
        if ((rc = refuse_foreign_runs(st, &fresh)) < 0)
            return rc;
        json_t *fields =
            json_pack("{s:s,s:O,s:o,s:o,s:O}", "id", fresh.id, "params", def->params, "command",
                      def->command ? json_incref(def->command) : json_array(), "spec",
                      def->spec ? json_incref(def->spec) : json_object(), "trials", def->trials);
        if (fields && json_object_size(def->labels))
            json_object_set(fields, "labels", def->labels);
        if (fields && def->early_stop)
            json_object_set(fields, "early_stop", def->early_stop);
        if (fields && def->pbt)
            json_object_set(fields, "pbt", def->pbt);
        if (fields && def->best_step) /* absent: "final" */
            json_object_set_new(fields, "best", json_string("best-step"));
        if (fields && json_array_size(def->objectives))
            json_object_set(fields, "objectives", def->objectives);
        rc = fields ? put_part(st, def->name, 0, fields) : -ENOMEM;
        json_decref(fields);
        if (rc != -EEXIST)
            return rc;
        /* another init won the race: compare with what it wrote */
    }
    return rc;
}

int sr_sweep_add(struct sr_store *st, const struct sr_sweep *more, size_t *first)
{
    return sr_sweep_add_at(st, more, SIZE_MAX, first);
}

int sr_sweep_add_at(struct sr_store *st, const struct sr_sweep *more, size_t at, size_t *first)
{
    int rc = check_new(more);
    if (rc < 0)
        return rc;
    for (int tries = 0; tries < 20; tries++) {
        struct sr_sweep old;
        rc = sr_sweep_read(st, more->name, &old);
        if (rc < 0)
            return rc;
        const int same = json_equal(old.params, more->params);
        /* no command: the stored one; another command would be dropped */
        const int same_cmd = !more->command || json_array_size(more->command) == 0 ||
                             json_equal(old.command, more->command);
        const size_t have = sr_sweep_count(&old);
        const unsigned part = old.parts;
        sr_sweep_free(&old);
        if (!same)
            return sr_errf(-EEXIST,
                           "sweep %s: --add must give the same parameters as the sweep's "
                           "(see `spotrun sweep show %s`)",
                           more->name, more->name);
        if (!same_cmd)
            return sr_errf(-EEXIST,
                           "sweep %s: --add cannot change the sweep's command (every trial runs "
                           "the one stored with it): leave the command out, or define a new "
                           "sweep",
                           more->name);
        if (at != SIZE_MAX && have != at)
            return sr_errf(-ESTALE,
                           "sweep %s has %zu trials, not %zu: nothing added (another writer may "
                           "have added trials: read the sweep again)",
                           more->name, have, at);
        if (have + json_array_size(more->trials) > SR_SWEEP_TRIALS_MAX)
            return sr_errf(-EINVAL, "sweep %s: at most %d trials", more->name, SR_SWEEP_TRIALS_MAX);
        json_t *fields =
            json_pack("{s:o,s:I,s:O}", "spec", more->spec ? json_incref(more->spec) : json_null(),
                      "first_trial", (json_int_t)have, "trials", more->trials);
        rc = fields ? put_part(st, more->name, part, fields) : -ENOMEM;
        json_decref(fields);
        if (rc == 0)
            *first = have;
        if (rc != -EEXIST)
            return rc;
        /* another --add took this part number: read again */
    }
    return rc;
}

/* ---- commands and run ids ------------------------------------------------- */

void sr_sweep_argv_free(char **argv)
{
    for (size_t i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

/* One argument with its placeholders replaced (malloc'd), or NULL with a
 * message. */
static char *expand_one(const struct sr_sweep *sw, size_t trial, const char *s)
{
    size_t cap = strlen(s) + 64, n = 0;
    char *out = malloc(cap);
    while (out && *s) {
        const char *piece = s;
        size_t len = 1;
        char pname[SR_SWEEP_PARAM_NAME_MAX + 2];
        if ((s[0] == '{' && s[1] == '{') || (s[0] == '}' && s[1] == '}')) {
            s += 2;
        } else if (s[0] == '{') {
            const char *end = strchr(s, '}');
            const size_t k = end ? (size_t)(end - s - 1) : 0;
            if (!end || k == 0 || k >= sizeof(pname)) {
                sr_errf(-EINVAL, "unclosed or empty placeholder in \"%s\" (write {{ for a brace)",
                        s);
                free(out);
                return NULL;
            }
            memcpy(pname, s + 1, k);
            pname[k] = '\0';
            piece = sr_sweep_value(sw, trial, pname);
            if (!piece) {
                sr_errf(-EINVAL, "unknown placeholder {%s}: sweep %s's parameters are %s", pname,
                        sw->name, "listed by `spotrun sweep show`");
                free(out);
                return NULL;
            }
            len = strlen(piece);
            s = end + 1;
        } else if (s[0] == '}') {
            sr_errf(-EINVAL, "stray '}' in \"%s\" (write }} for a brace)", s);
            free(out);
            return NULL;
        } else {
            s++;
        }
        if (n + len + 1 > cap) {
            cap = 2 * (n + len + 1);
            char *bigger = realloc(out, cap);
            if (!bigger) {
                free(out);
                return NULL;
            }
            out = bigger;
        }
        memcpy(out + n, piece, len);
        n += len;
    }
    if (out)
        out[n] = '\0';
    return out;
}

int sr_sweep_expand(const struct sr_sweep *sw, size_t trial, char *const tmpl[], char ***out)
{
    size_t n = 0;
    while (tmpl[n])
        n++;
    char **argv = calloc(n + 1, sizeof(char *));
    if (!argv)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        argv[i] = expand_one(sw, trial, tmpl[i]);
        if (!argv[i]) {
            sr_sweep_argv_free(argv);
            return -EINVAL;
        }
    }
    *out = argv;
    return 0;
}

void sr_sweep_run_id(const char *name, size_t trial, char *buf, size_t len)
{
    snprintf(buf, len, "%s-%zu", name, trial);
}

/* A trial number as written in run ids and end marks: decimal digits, no
 * leading zero, below SR_SWEEP_TRIALS_MAX; -1 otherwise. */
static long trial_number(const char *d, size_t len)
{
    long k = 0;
    if (len == 0 || len > 6 || (d[0] == '0' && len > 1))
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (d[i] < '0' || d[i] > '9')
            return -1;
        k = 10 * k + (d[i] - '0');
    }
    return k < SR_SWEEP_TRIALS_MAX ? k : -1;
}

long sr_sweep_trial_of(const char *name, const char *run_id)
{
    const size_t n = strlen(name);
    if (strncmp(run_id, name, n) != 0 || run_id[n] != '-')
        return -1;
    return trial_number(run_id + n + 1, strlen(run_id + n + 1));
}

/* ---- end marks --------------------------------------------------------------- */

static const char *const end_names[] = {"", "done", "failed", "cancelled", "pruned"};
#define N_ENDS (sizeof(end_names) / sizeof(end_names[0]))

const char *sr_trial_end_name(enum sr_trial_end s)
{
    return (unsigned)s < N_ENDS ? end_names[s] : "";
}

static void end_key(char *buf, size_t len, const char *name, size_t trial, enum sr_trial_end s)
{
    sr_key_sweep(buf, len, name, SR_SWEEP_END "/%zu.%s", trial, end_names[s]);
}

int sr_sweep_mark_end(struct sr_store *st, const char *name, size_t trial,
                      const struct sr_trial_end_info *end)
{
    if (end->state == SR_TRIAL_OPEN || (unsigned)end->state >= N_ENDS)
        return -EINVAL;
    char key[256];
    end_key(key, sizeof(key), name, trial, end->state);
    json_t *o = json_pack("{s:i,s:I,s:s,s:i,s:s,s:I}", "format", SR_SWEEP_FORMAT, "trial",
                          (json_int_t)trial, "state", end_names[end->state], "exit_code",
                          end->exit_code, "host", end->host, "unix_ms", (json_int_t)end->unix_ms);
    if (o && end->cause[0])
        json_object_set_new(o, "cause", json_string(end->cause));
    if (o && end->by[0])
        json_object_set_new(o, "by", json_string(end->by));
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s)
        return -ENOMEM;
    int rc = sr_store_put_if(st, key, s, strlen(s), NULL, NULL);
    free(s);
    return rc == -EEXIST ? 0 : rc;
}

static int read_mark(struct sr_store *st, const char *name, size_t trial, enum sr_trial_end s,
                     struct sr_trial_end_info *end)
{
    char key[256], *buf = NULL;
    size_t len = 0;
    end_key(key, sizeof(key), name, trial, s);
    const int rc = sr_store_get(st, key, 64 << 10, &buf, &len);
    if (rc == -ENOENT || (rc < 0 && rc != -EFBIG))
        return rc;
    end->state = s; /* named by its key: ended, whatever its content */
    json_t *o = rc == 0 ? json_loadb(buf, len, 0, NULL) : NULL;
    free(buf);
    /* the details count only when the content is this mark's: its trial,
     * its state, an exit code that a process can have (0 when done) */
    const json_t *k = json_object_get(o, "trial"), *state = json_object_get(o, "state"),
                 *code = json_object_get(o, "exit_code");
    const json_int_t c = json_is_integer(code) ? json_integer_value(code) : -1;
    if (!json_is_integer(k) || json_integer_value(k) != (json_int_t)trial ||
        !json_is_string(state) || strcmp(json_string_value(state), end_names[s]) != 0 || c < 0 ||
        c > 255 || (s == SR_TRIAL_DONE && c != 0)) {
        json_decref(o);
        return sr_errf(-EBADMSG,
                       "%s: its trial, state or exit code is not its name's; only its name "
                       "is believed (trial %zu %s)",
                       key, trial, end_names[s]);
    }
    end->exit_code = (int)c;
    const json_t *v;
    if ((v = json_object_get(o, "unix_ms")) && json_is_integer(v) && json_integer_value(v) >= 0)
        end->unix_ms = json_integer_value(v);
    if ((v = json_object_get(o, "cause")) && json_is_string(v))
        sr_term_safe(json_string_value(v), end->cause, sizeof(end->cause)); /* sweep show */
    if ((v = json_object_get(o, "host")) && json_is_string(v))
        sr_term_safe(json_string_value(v), end->host, sizeof(end->host));
    if ((v = json_object_get(o, "by")) && json_is_string(v))
        sr_term_safe(json_string_value(v), end->by, sizeof(end->by));
    json_decref(o);
    return 0;
}

int sr_sweep_read_end(struct sr_store *st, const char *name, size_t trial,
                      struct sr_trial_end_info *end)
{
    memset(end, 0, sizeof(*end));
    int rc = -ENOENT;
    for (unsigned s = SR_TRIAL_DONE; s < N_ENDS && rc == -ENOENT; s++)
        rc = read_mark(st, name, trial, (enum sr_trial_end)s, end);
    return rc;
}

int sr_sweep_read_failed(struct sr_store *st, const char *name, size_t trial,
                         struct sr_trial_end_info *end)
{
    memset(end, 0, sizeof(*end));
    return read_mark(st, name, trial, SR_TRIAL_FAILED, end);
}

int sr_sweep_read_mark(struct sr_store *st, const char *name, size_t trial, enum sr_trial_end s,
                       struct sr_trial_end_info *end)
{
    memset(end, 0, sizeof(*end));
    if (s == SR_TRIAL_OPEN || (unsigned)s >= N_ENDS)
        return -EINVAL;
    return read_mark(st, name, trial, s, end);
}

int sr_sweep_clear_end(struct sr_store *st, const char *name, size_t trial)
{
    int rc = 0;
    for (unsigned s = SR_TRIAL_DONE; s < N_ENDS && rc == 0; s++) {
        char key[256];
        end_key(key, sizeof(key), name, trial, (enum sr_trial_end)s);
        rc = sr_store_delete(st, key);
    }
    return rc;
}

int sr_sweep_clear_mark(struct sr_store *st, const char *name, size_t trial, enum sr_trial_end s)
{
    if (s == SR_TRIAL_OPEN || (unsigned)s >= N_ENDS)
        return -EINVAL;
    char key[256];
    end_key(key, sizeof(key), name, trial, s);
    return sr_store_delete(st, key);
}

int sr_sweep_remove(struct sr_store *st, const char *name)
{
    if (!sr_sweep_name_valid(name))
        return -EINVAL;
    /* budget: sweep_budget.h; workers: sweep_workers.h; steer: sweep_steer.h;
     * view: sweep show's snapshots (runtime/record/sweepsnap.h) */
    const char *const dirs[] = {SR_SWEEP_DEF,     SR_SWEEP_END,   SR_SWEEP_BUDGET,
                                SR_SWEEP_WORKERS, SR_SWEEP_STEER, SR_SWEEP_VIEW};
    int rc = 0;
    for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]) && rc == 0; d++) {
        char prefix[256];
        sr_key_sweep(prefix, sizeof(prefix), name, "%s", dirs[d]);
        struct sr_strlist l;
        if ((rc = sr_store_list(st, prefix, &l)) < 0)
            break;
        /* part 0 first (the listing is sorted): the sweep is gone at once */
        for (size_t i = 0; i < l.n && rc == 0; i++) {
            char key[512];
            sr_key_join(key, sizeof(key), prefix, l.v[i]);
            rc = sr_store_delete(st, key);
        }
        sr_strlist_free(&l);
    }
    return rc == 0 ? sr_rung_remove_all(st, name) : rc;
}

int sr_sweep_list_ends(struct sr_store *st, const char *name, size_t n, unsigned char *state)
{
    if (n) /* a search space without trials yet passes no array */
        memset(state, SR_TRIAL_OPEN, n);
    struct sr_strlist l;
    const int rc = sr_list_sweep(st, name, SR_SWEEP_END, &l);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < l.n; i++) {
        const char *dot = strchr(l.v[i], '.');
        const long k = dot ? trial_number(l.v[i], (size_t)(dot - l.v[i])) : -1;
        if (k < 0 || (size_t)k >= n)
            continue;
        /* done wins: the job did succeed once; then the first in end_names */
        for (unsigned e = SR_TRIAL_DONE; e < N_ENDS; e++)
            if (strcmp(dot + 1, end_names[e]) == 0 && (state[k] == SR_TRIAL_OPEN || state[k] > e))
                state[k] = (unsigned char)e;
    }
    sr_strlist_free(&l);
    return 0;
}
