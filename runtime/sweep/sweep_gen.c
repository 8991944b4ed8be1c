/*
 * sweep_gen.c - trials from parameter specs: grids and seeded random search
 * (sweep.h, sr_sweep_generate).
 *
 * Random search is reproducible from its seed on any machine: the
 * generator is SplitMix64 (a fixed 64-bit recurrence, not the C library's
 * rand()), each draw is 53 bits scaled to [0, 1), and parameters draw in
 * the order given, trial by trial.
 *
 * An integer spec may take one option after its range: "int:LO,HI,step=S"
 * (LO, LO+S, ... HI; HI - LO a multiple of S) or "int:LO,HI,log" (uniform
 * in log space, 1 <= LO): Optuna's IntDistribution(step=, log=), which
 * refuses the two together too. "NAME=absent:" is a parameter a trial does
 * not have (an empty value: a conditional parameter its space left out).
 */
#include "sweep.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "termsafe.h"
#include "units.h"

enum kind { LIST, RANGE, UNIFORM, LOGUNIFORM, INT, CHOICE };

struct param {
    char name[SR_SWEEP_PARAM_NAME_MAX + 1];
    enum kind kind;
    json_t *values; /* LIST, CHOICE (and RANGE, expanded) */
    double lo, hi;  /* UNIFORM, LOGUNIFORM */
    int64_t ilo, ihi;
    int64_t step; /* INT: the values are ilo, ilo + step, ... ihi (1 = every integer) */
    int log;      /* INT: drawn uniform in log space (ilo >= 1, step 1) */
};

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double unit(uint64_t *state)
{
    return (double)(splitmix64(state) >> 11) * 0x1.0p-53;
}

/* "a,b,c" into an array of non-empty strings. */
static json_t *split_list(const char *s)
{
    json_t *a = json_array();
    while (a) {
        const size_t n = strcspn(s, ",");
        if (n == 0 || n > SR_SWEEP_VALUE_MAX) {
            json_decref(a);
            return NULL;
        }
        json_t *v = json_stringn(s, n);
        if (!v || sr_text_has_ctrl(json_string_value(v))) { /* sweep show prints it */
            json_decref(v);
            json_decref(a);
            return NULL;
        }
        json_array_append_new(a, v);
        if (!s[n])
            break;
        s += n + 1;
    }
    return a;
}

/* "LO,HI" as two reals (or integers) with LO <= HI. */
static int two_reals(const char *s, double *lo, double *hi)
{
    char a[64], b[64];
    const char *comma = strchr(s, ',');
    if (!comma || (size_t)(comma - s) >= sizeof(a) || strlen(comma + 1) >= sizeof(b))
        return -EINVAL;
    snprintf(a, sizeof(a), "%.*s", (int)(comma - s), s);
    snprintf(b, sizeof(b), "%s", comma + 1);
    if (sr_parse_real(a, lo) < 0 || sr_parse_real(b, hi) < 0 || !isfinite(*lo) || !isfinite(*hi) ||
        *lo > *hi)
        return -EINVAL;
    return 0;
}

static int two_ints(const char *s, const char *sep, int64_t *lo, int64_t *hi)
{
    char a[32], b[32];
    const char *at = strstr(s, sep);
    if (!at || (size_t)(at - s) >= sizeof(a) || strlen(at + strlen(sep)) >= sizeof(b))
        return -EINVAL;
    snprintf(a, sizeof(a), "%.*s", (int)(at - s), s);
    snprintf(b, sizeof(b), "%s", at + strlen(sep));
    const int64_t lim = INT64_C(1) << 52;
    if (sr_parse_int(a, -lim, lim, lo) < 0 || sr_parse_int(b, -lim, lim, hi) < 0 || *lo > *hi)
        return -EINVAL;
    return 0;
}

/* "LO,HI" or "LO,HI,step=S" or "LO,HI,log" of an int: spec. */
static int int_spec(const char *s, struct param *p)
{
    char range[80];
    const char *opt = strchr(s, ',');
    opt = opt ? strchr(opt + 1, ',') : NULL;
    const size_t n = opt ? (size_t)(opt - s) : strlen(s);
    if (n >= sizeof(range))
        return -EINVAL;
    snprintf(range, sizeof(range), "%.*s", (int)n, s);
    p->step = 1;
    if (two_ints(range, ",", &p->ilo, &p->ihi) < 0)
        return -EINVAL;
    if (!opt)
        return 0;
    opt++;
    if (strcmp(opt, "log") == 0) {
        p->log = 1;
        return p->ilo >= 1 ? 0 : -EINVAL;
    }
    if (strncmp(opt, "step=", 5) != 0 || sr_parse_int(opt + 5, 1, INT64_C(1) << 52, &p->step) < 0)
        return -EINVAL;
    return (p->ihi - p->ilo) % p->step == 0 ? 0 : -EINVAL;
}

static int parse_spec(const char *spec, struct param *p)
{
    memset(p, 0, sizeof(*p));
    const char *eq = strchr(spec, '=');
    if (!eq || (size_t)(eq - spec) > SR_SWEEP_PARAM_NAME_MAX)
        return sr_errf(-EINVAL,
                       "invalid --param \"%s\" (NAME=VALUES, e.g. lr=1e-4,3e-4 or "
                       "seed=0..3)",
                       spec);
    snprintf(p->name, sizeof(p->name), "%.*s", (int)(eq - spec), spec);
    if (!sr_sweep_param_name_valid(p->name))
        return sr_errf(-EINVAL,
                       "invalid parameter name \"%s\" in --param \"%s\" (letters, "
                       "digits and _, not starting with a digit)",
                       p->name, spec);
    const char *v = eq + 1;
    if (strncmp(v, "absent:", 7) == 0) { /* a trial without it: the empty value */
        if (v[7])
            return sr_errf(-EINVAL, "invalid --param \"%s\" (absent: takes no value)", spec);
        p->kind = LIST;
        p->values = json_pack("[s]", "");
        return p->values ? 0 : -ENOMEM;
    }
    static const struct {
        const char *prefix;
        enum kind kind;
    } kinds[] = {
        {"uniform:", UNIFORM}, {"loguniform:", LOGUNIFORM}, {"int:", INT}, {"choice:", CHOICE}};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        const size_t n = strlen(kinds[i].prefix);
        if (strncmp(v, kinds[i].prefix, n) != 0)
            continue;
        p->kind = kinds[i].kind;
        v += n;
        int rc = 0;
        if (p->kind == UNIFORM || p->kind == LOGUNIFORM)
            rc = two_reals(v, &p->lo, &p->hi);
        if (rc == 0 && p->kind == LOGUNIFORM && p->lo <= 0)
            rc = -EINVAL;
        if (p->kind == INT)
            rc = int_spec(v, p);
        if (p->kind == CHOICE)
            rc = (p->values = split_list(v)) ? 0 : -EINVAL;
        if (rc < 0)
            return sr_errf(-EINVAL, "invalid --param \"%s\" (%s)", spec,
                           p->kind == CHOICE ? "choice:a,b,c"
                           : p->kind == INT
                               ? "int:LO,HI with integers LO <= HI, optionally ,step=S (S >= 1 "
                                 "dividing HI - LO) or ,log (LO >= 1), not both"
                           : p->kind == LOGUNIFORM ? "loguniform:LO,HI with 0 < LO <= HI"
                                                   : "uniform:LO,HI with LO <= HI");
        return 0;
    }
    if (strstr(v, "..")) {
        p->kind = RANGE;
        if (two_ints(v, "..", &p->ilo, &p->ihi) < 0 || p->ihi - p->ilo >= SR_SWEEP_TRIALS_MAX)
            return sr_errf(-EINVAL,
                           "invalid --param \"%s\" (a range is A..B with integers A <= B, "
                           "at most %d values)",
                           spec, SR_SWEEP_TRIALS_MAX);
        p->values = json_array();
        for (int64_t k = p->ilo; k <= p->ihi; k++) {
            char buf[32];
            snprintf(buf, sizeof(buf), "%" PRId64, k);
            json_array_append_new(p->values, json_string(buf));
        }
        return 0;
    }
    p->kind = LIST;
    if (!(p->values = split_list(v)))
        return sr_errf(-EINVAL,
                       "invalid --param \"%s\" (values a,b,c: none empty, UTF-8 without "
                       "control characters, each at most %d bytes)",
                       spec, SR_SWEEP_VALUE_MAX);
    return 0;
}

/* x in [lo, hi] as written: 6 significant digits, or as many as it takes
 * for the value written to stay in the range (a narrow range would round
 * out of it), 17 at most (exact). */
static void real_in_range(double x, double lo, double hi, char *buf, size_t len)
{
    x = x < lo ? lo : x > hi ? hi : x;
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, x);
        const double back = strtod(buf, NULL);
        if (back >= lo && back <= hi)
            return;
    }
}

static json_t *draw(const struct param *p, uint64_t *state)
{
    char buf[64];
    const double u = unit(state);
    switch (p->kind) {
    case UNIFORM: /* (1-u)lo + u hi: hi - lo would overflow for -1e308,1e308 */
        real_in_range((1 - u) * p->lo + u * p->hi, p->lo, p->hi, buf, sizeof(buf));
        break;
    case LOGUNIFORM:
        real_in_range(exp((1 - u) * log(p->lo) + u * log(p->hi)), p->lo, p->hi, buf, sizeof(buf));
        break;
    case INT: {
        int64_t k;
        if (p->log) { /* as Optuna draws one: log-uniform over [LO-0.5, HI+0.5], rounded */
            const double lo = log((double)p->ilo - 0.5), hi = log((double)p->ihi + 0.5);
            k = (int64_t)llround(exp((1 - u) * lo + u * hi));
            k = k < p->ilo ? p->ilo : k;
        } else {
            const double span = (double)((p->ihi - p->ilo) / p->step) + 1;
            k = p->ilo + p->step * (int64_t)floor(u * span);
        }
        snprintf(buf, sizeof(buf), "%" PRId64, k > p->ihi ? p->ihi : k);
        break;
    }
    default: { /* a list, a range or a choice: one of its values */
        const size_t n = json_array_size(p->values);
        size_t i = (size_t)floor(u * (double)n);
        return json_incref(json_array_get(p->values, i < n ? i : n - 1));
    }
    }
    return json_string(buf);
}

static int grid(struct param *ps, size_t n, json_t *trials)
{
    size_t total = 1;
    for (size_t i = 0; i < n; i++) {
        if (ps[i].kind != LIST && ps[i].kind != RANGE)
            return sr_errf(-EINVAL, "--param %s: a random parameter needs --random K", ps[i].name);
        total *= json_array_size(ps[i].values);
        if (total > SR_SWEEP_TRIALS_MAX)
            return sr_errf(-EINVAL, "the grid has more than %d trials", SR_SWEEP_TRIALS_MAX);
    }
    for (size_t t = 0; t < total; t++) {
        json_t *trial = json_object();
        size_t rest = t;
        for (size_t i = n; i-- > 0;) { /* the last parameter varies fastest */
            const size_t m = json_array_size(ps[i].values);
            json_object_set(trial, ps[i].name, json_array_get(ps[i].values, rest % m));
            rest /= m;
        }
        json_array_append_new(trials, trial);
    }
    return 0;
}

int sr_sweep_generate(const char *const specs[], size_t n, unsigned random, uint64_t seed,
                      struct sr_sweep *out)
{
    if (n == 0)
        return sr_errf(-EINVAL, "no --param given (e.g. --param lr=1e-4,3e-4 --param seed=0..3)");
    if (n > SR_SWEEP_PARAMS_MAX)
        return sr_errf(-EINVAL, "at most %d parameters", SR_SWEEP_PARAMS_MAX);
    const int search = random == SR_SWEEP_SEARCH;
    if (search)
        random = 0;
    if (random > SR_SWEEP_TRIALS_MAX)
        return sr_errf(-EINVAL, "--random: at most %d trials", SR_SWEEP_TRIALS_MAX);
    struct param *ps = calloc(n, sizeof(*ps));
    if (!ps)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = parse_spec(specs[i], &ps[i]);
        for (size_t j = 0; j < i && rc == 0; j++)
            if (strcasecmp(ps[i].name, ps[j].name) == 0)
                rc = sr_errf(-EINVAL,
                             "parameter %s given twice (names are compared ignoring "
                             "case: they become SPOTRUN_PARAM_<NAME>)",
                             ps[i].name);
    }
    json_t *params = json_array(), *trials = json_array(), *given = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(params, json_string(ps[i].name));
        json_array_append_new(given, json_string(specs[i]));
    }
    if (rc == 0 && random == 0 && !search)
        rc = grid(ps, n, trials);
    uint64_t state = seed;
    for (unsigned t = 0; rc == 0 && t < random; t++) {
        json_t *trial = json_object();
        for (size_t i = 0; i < n; i++)
            json_object_set_new(trial, ps[i].name, draw(&ps[i], &state));
        json_array_append_new(trials, trial);
    }
    for (size_t i = 0; i < n; i++)
        json_decref(ps[i].values);
    free(ps);
    if (rc < 0) {
        json_decref(params);
        json_decref(trials);
        json_decref(given);
        return rc;
    }
    out->params = params;
    out->trials = trials;
    out->spec = json_pack("{s:o,s:i,s:I}", "param", given, "random", (int)random, "seed",
                          (json_int_t)(seed & INT64_MAX));
    if (search) /* only the driver's trials: none now */
        json_object_set_new(out->spec, "search", json_true());
    return 0;
}

/* ---- PBT's explore (pbt.h) ---------------------------------------------- */

static int numeric_kind(const struct param *p)
{
    return p->kind == UNIFORM || p->kind == LOGUNIFORM || p->kind == INT;
}

int sr_sweep_explore(const char *spec, const char *value, const double *factors, size_t nfactors,
                     double resample, uint64_t *state, char *out, size_t len)
{
    struct param p;
    int rc = parse_spec(spec, &p);
    if (rc < 0)
        return rc;
    const double u = unit(state);
    double x = 0;
    if (!numeric_kind(&p) || nfactors == 0 || u < resample || !value ||
        sr_parse_real(value, &x) < 0 || !isfinite(x)) {
        json_t *v = draw(&p, state);
        snprintf(out, len, "%s", v ? json_string_value(v) : "");
        json_decref(v);
        json_decref(p.values);
        return v ? 0 : -ENOMEM;
    }
    size_t i = (size_t)floor(unit(state) * (double)nfactors);
    x *= factors[i < nfactors ? i : nfactors - 1];
    if (p.kind == INT) {
        const double lo = (double)p.ilo, hi = (double)p.ihi;
        x = x < lo ? lo : x > hi ? hi : x;
        int64_t k = p.ilo + p.step * (int64_t)llround((x - lo) / (double)p.step);
        snprintf(out, len, "%" PRId64, k > p.ihi ? p.ihi : k < p.ilo ? p.ilo : k);
    } else {
        real_in_range(x, p.lo, p.hi, out, len);
    }
    json_decref(p.values);
    return 0;
}
