/*
 * units.c - value parsing and formatting (see units.h).
 */
#include "units.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* The one parser of every number a user types (flags, their environment
 * twins, durations, sizes, prices): plain decimal digits only. strtoll and
 * strtod alone would also take leading blanks, a '+', hex ("0x1p3"),
 * exponents ("1e99"), "inf" and "nan". */
int sr_parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s || !*s)
        return -EINVAL;
    const char *d = s[0] == '-' && min < 0 ? s + 1 : s;
    if (*d < '0' || *d > '9')
        return -EINVAL;
    char *end;
    errno = 0;
    const long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -EINVAL;
    *out = v;
    return 0;
}

/* A non-negative decimal at s: digits, optionally '.' and more digits (or
 * '.' and digits); *end is where it stops. */
static int parse_decimal_prefix(const char *s, double *v, const char **end)
{
    size_t n = 0, digits = 0;
    while (s[n] >= '0' && s[n] <= '9')
        n++, digits++;
    if (s[n] == '.')
        for (n++; s[n] >= '0' && s[n] <= '9'; n++)
            digits++;
    if (digits == 0 || n >= 64)
        return -EINVAL;
    char buf[64];
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    *v = strtod(buf, NULL);
    if (errno || !isfinite(*v))
        return -EINVAL;
    *end = s + n;
    return 0;
}

int sr_parse_decimal(const char *s, double *out)
{
    const char *end;
    if (!s || parse_decimal_prefix(s, out, &end) < 0 || *end)
        return -EINVAL;
    return 0;
}

int sr_parse_real(const char *s, double *out)
{
    if (!s)
        return -EINVAL;
    const char *p = s + (*s == '-' || *s == '+');
    size_t digits = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        digits++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            digits++;
    if (digits == 0)
        return -EINVAL;
    if (*p == 'e' || *p == 'E') {
        p += 1 + (p[1] == '-' || p[1] == '+');
        if (*p < '0' || *p > '9')
            return -EINVAL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p)
        return -EINVAL;
    errno = 0;
    const double v = strtod(s, NULL);
    if (errno == ERANGE || !isfinite(v))
        return -EINVAL;
    *out = v;
    return 0;
}

static int64_t unit_ms(const char *u, size_t n)
{
    static const struct {
        const char *name;
        int64_t ms;
    } units[] = {{"ms", 1},      {"s", 1000},    {"sec", 1000},  {"m", 60000},
                 {"min", 60000}, {"h", 3600000}, {"d", 86400000}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strlen(units[i].name) == n && strncasecmp(u, units[i].name, n) == 0)
            return units[i].ms;
    return -1;
}

int sr_parse_duration_ms(const char *s, int64_t *ms)
{
    if (!s || !*s)
        return -EINVAL;
    double total = 0;
    const char *p = s;
    while (*p) {
        const char *end;
        double v;
        if (parse_decimal_prefix(p, &v, &end) < 0)
            return -EINVAL;
        p = end;
        size_t n = 0;
        while (p[n] && ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z')))
            n++;
        if (n == 0) {
            if (*p)
                return -EINVAL;
            total += v * 1000; /* a bare number is seconds */
            break;
        }
        const int64_t u = unit_ms(p, n);
        if (u < 0)
            return -EINVAL;
        total += v * (double)u;
        p += n;
    }
    if (total > 1e15)
        return -EINVAL;
    *ms = (int64_t)(total + 0.5);
    return 0;
}

int sr_parse_size(const char *s, uint64_t *bytes)
{
    if (!s || !*s)
        return -EINVAL;
    const char *end;
    double v;
    if (parse_decimal_prefix(s, &v, &end) < 0)
        return -EINVAL;
    double mul = 1;
    if (*end) {
        static const char letters[] = "KMGTP";
        const char *l = strchr(letters, end[0] & ~0x20);
        if (!l || *l == '\0') /* ' ' & ~0x20 is NUL: strchr finds the terminator */
            return -EINVAL;
        const char *rest = end + 1;
        /* K, KB, KiB all mean 1024^n: a checkpoint tool speaks binary units. */
        if (*rest == 'i' || *rest == 'I')
            rest++;
        if (*rest == 'B' || *rest == 'b')
            rest++;
        if (*rest)
            return -EINVAL;
        for (long i = 0; i <= l - letters; i++)
            mul *= 1024;
    }
    const double total = v * mul;
    if (total > 9.0e18)
        return -EINVAL;
    *bytes = (uint64_t)total;
    return 0;
}

void sr_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    size_t i = 0;
    while (v >= 1024 && i + 1 < sizeof(names) / sizeof(names[0])) {
        v /= 1024;
        i++;
    }
    if (i == 0)
        snprintf(buf, len, "%" PRIu64 " B", bytes);
    else
        snprintf(buf, len, "%.1f %s", v, names[i]);
}

void sr_format_duration_ms(int64_t ms, char *buf, size_t len)
{
    if (ms < 1000)
        snprintf(buf, len, "%" PRId64 "ms", ms);
    else if (ms < 60000)
        snprintf(buf, len, "%.1fs", (double)ms / 1000);
    else if (ms < 3600000)
        snprintf(buf, len, "%" PRId64 "m%02" PRId64 "s", ms / 60000, (ms / 1000) % 60);
    else
        snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m", ms / 3600000, (ms / 60000) % 60);
}

void sr_format_step(int64_t step, char *buf, size_t len)
{
    if (step < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%" PRId64, step);
}

static int64_t clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t sr_now_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

int64_t sr_wall_ms(void)
{
    return clock_ms(CLOCK_REALTIME);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sr_percentile(double *v, size_t n, double p)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof(*v), cmp_double);
    /* Nearest rank: the smallest value with at least p% of values <= it. */
    double rank = ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    if (rank > (double)n)
        rank = (double)n;
    return v[(size_t)rank - 1];
}
