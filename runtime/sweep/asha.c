/*
 * asha.c - a sweep's early-stopping rule (see asha.h).
 */
#include "asha.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

static int metric_valid(const char *m, size_t len)
{
    if (len == 0 || len > SR_ASHA_METRIC_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-", m[i]) ||
            !m[i])
            return 0;
    return 1;
}

/* One "key=N" option of the spec. */
static int option(void *ctx, const char *opt, size_t len, char *err, size_t errlen)
{
    struct sr_asha *a = ctx;
    char buf[64];
    if (len >= sizeof(buf)) {
        snprintf(err, errlen, "\"%.*s\" is not an option (grace=N, eta=K, max=M, patient)", 40,
                 opt);
        return -EINVAL;
    }
    memcpy(buf, opt, len);
    buf[len] = '\0';
    if (strcmp(buf, "patient") == 0) {
        a->patient = 1;
        return 0;
    }
    char *eq = strchr(buf, '=');
    int64_t v = 0;
    int64_t *field = NULL, lo = 1;
    if (eq) {
        *eq = '\0';
        field = strcmp(buf, "grace") == 0 ? &a->grace
                : strcmp(buf, "eta") == 0 ? &a->eta
                : strcmp(buf, "max") == 0 ? &a->max
                                          : NULL;
        lo = strcmp(buf, "eta") == 0 ? 2 : 1;
    }
    if (!field) {
        snprintf(err, errlen, "\"%s\" is not an option (grace=N, eta=K, max=M, patient)", buf);
        return -EINVAL;
    }
    if (sr_parse_int(eq + 1, lo, SR_ASHA_STEP_MAX, &v) < 0) {
        snprintf(err, errlen, "%s=\"%s\" is not an integer >= %" PRId64, buf, eq + 1, lo);
        return -EINVAL;
    }
    *field = v;
    return 0;
}

int sr_metric_mode_parse(const char *spec, char metric[SR_ASHA_METRIC_MAX + 1], int *maximize,
                         char *err, size_t errlen)
{
    const size_t first = strcspn(spec, ",");
    const char *colon = NULL;
    for (const char *p = spec; p < spec + first; p++)
        if (*p == ':')
            colon = p;
    if (!colon) {
        snprintf(err, errlen, "it needs METRIC:min or METRIC:max first");
        return -EINVAL;
    }
    const size_t mlen = (size_t)(colon - spec), modelen = first - mlen - 1;
    if (!metric_valid(spec, mlen)) {
        snprintf(err, errlen, "\"%.*s\" is not a metric name ([A-Za-z0-9_.:-], at most %d)",
                 (int)(mlen > 80 ? 80 : mlen), spec, SR_ASHA_METRIC_MAX);
        return -EINVAL;
    }
    if (!(modelen == 3 &&
          (strncmp(colon + 1, "min", 3) == 0 || strncmp(colon + 1, "max", 3) == 0))) {
        snprintf(err, errlen, "the mode \"%.*s\" is not min or max",
                 (int)(modelen > 40 ? 40 : modelen), colon + 1);
        return -EINVAL;
    }
    memcpy(metric, spec, mlen);
    metric[mlen] = '\0';
    *maximize = colon[1] == 'm' && colon[2] == 'a';
    return (int)first;
}

int sr_rule_parse(const char *spec, char metric[SR_ASHA_METRIC_MAX + 1], int *maximize,
                  sr_rule_option_fn each, void *ctx, char *err, size_t errlen)
{
    const int first = sr_metric_mode_parse(spec, metric, maximize, err, errlen);
    if (first < 0)
        return first;
    for (const char *p = spec + first; *p;) {
        p++; /* the comma */
        const size_t len = strcspn(p, ",");
        if (each(ctx, p, len, err, errlen) < 0)
            return -EINVAL;
        p += len;
    }
    return 0;
}

int sr_asha_parse(const char *spec, struct sr_asha *out, char *err, size_t errlen)
{
    *out = (struct sr_asha){.grace = 1, .eta = 3};
    const int rc = sr_rule_parse(spec, out->metric, &out->maximize, option, out, err, errlen);
    if (rc < 0)
        return rc;
    if (out->max && out->max < out->grace) {
        snprintf(err, errlen, "max=%" PRId64 " is below grace=%" PRId64 " (no rung)", out->max,
                 out->grace);
        return -EINVAL;
    }
    return 0;
}

json_t *sr_asha_to_json(const struct sr_asha *a)
{
    json_t *o =
        json_pack("{s:s,s:s,s:I,s:I}", "metric", a->metric, "mode", a->maximize ? "max" : "min",
                  "grace", (json_int_t)a->grace, "eta", (json_int_t)a->eta);
    if (o && a->max > 0)
        json_object_set_new(o, "max", json_integer(a->max));
    if (o && a->patient)
        json_object_set_new(o, "patient", json_true());
    return o;
}

static int int_field(const json_t *o, const char *key, int64_t lo, int64_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo ||
        json_integer_value(v) > SR_ASHA_STEP_MAX)
        return -EBADMSG;
    *out = json_integer_value(v);
    return 0;
}

int sr_asha_from_json(const json_t *o, struct sr_asha *out)
{
    *out = (struct sr_asha){0};
    const char *m = json_string_value(json_object_get(o, "metric"));
    const char *mode = json_string_value(json_object_get(o, "mode"));
    if (!json_is_object(o) || !m || !mode || !metric_valid(m, strlen(m)) ||
        (strcmp(mode, "min") != 0 && strcmp(mode, "max") != 0) ||
        int_field(o, "grace", 1, &out->grace) < 0 || int_field(o, "eta", 2, &out->eta) < 0 ||
        (json_object_get(o, "max") && int_field(o, "max", out->grace, &out->max) < 0) ||
        (json_object_get(o, "patient") && !json_is_boolean(json_object_get(o, "patient"))))
        return -EBADMSG;
    out->patient = json_is_true(json_object_get(o, "patient"));
    snprintf(out->metric, sizeof(out->metric), "%s", m);
    out->maximize = strcmp(mode, "max") == 0;
    return 0;
}

void sr_asha_format(const struct sr_asha *a, char *buf, size_t len)
{
    const int n = snprintf(buf, len, "%s:%s,grace=%" PRId64 ",eta=%" PRId64, a->metric,
                           a->maximize ? "max" : "min", a->grace, a->eta);
    const int m = a->max > 0 && n > 0 && (size_t)n < len
                      ? snprintf(buf + n, len - (size_t)n, ",max=%" PRId64, a->max)
                      : 0;
    if (a->patient && n > 0 && m >= 0 && (size_t)(n + m) < len)
        snprintf(buf + n + m, len - (size_t)(n + m), ",patient");
}

size_t sr_asha_rungs(const struct sr_asha *a, int64_t *steps, size_t cap)
{
    const int64_t top = a->max > 0 ? a->max : SR_ASHA_STEP_MAX;
    size_t n = 0;
    if (a->grace < 1 || a->eta < 2)
        return 0;
    for (int64_t r = a->grace; r <= top && n < SR_ASHA_RUNGS_MAX; n++) {
        if (n < cap)
            steps[n] = r;
        if (r > top / a->eta)
            return n + 1;
        r *= a->eta;
    }
    return n;
}

int sr_asha_rung_of(const struct sr_asha *a, int64_t step)
{
    int64_t r[SR_ASHA_RUNGS_MAX];
    const size_t n = sr_asha_rungs(a, r, SR_ASHA_RUNGS_MAX);
    for (size_t k = 0; k < n; k++)
        if (r[k] == step)
            return (int)k;
    return -1;
}

int sr_asha_judges(const struct sr_asha *a, int64_t rung_step)
{
    return a->max <= 0 || rung_step < a->max;
}

int sr_asha_better(const struct sr_asha *a, double x, double y)
{
    if (isnan(x))
        return 0;
    if (isnan(y))
        return 1;
    return a->maximize ? x > y : x < y;
}

size_t sr_asha_keep(const struct sr_asha *a, size_t n)
{
    const size_t total = n + 1, keep = total / (size_t)a->eta;
    if (keep == 0) /* fewer than eta values: the best so far, or all (patient) */
        return a->patient ? total : 1;
    return keep;
}

int sr_asha_promote(const struct sr_asha *a, double value, const double *values, size_t n)
{
    const size_t keep = sr_asha_keep(a, n);
    size_t ahead = 0; /* values strictly better: ties share a place */
    for (size_t i = 0; i < n; i++)
        ahead += sr_asha_better(a, values[i], value);
    return ahead < keep;
}
