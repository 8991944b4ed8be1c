/*
 * units.h - parsing of the values users type: durations ("90s", "10m",
 * "1h30m", "250ms", a bare number = seconds), sizes ("4M", "512KiB", "1G",
 * a bare number = bytes) and plain integers. Each returns 0 or -EINVAL;
 * the caller names the flag in its message.
 */
#ifndef SPOTRUN_UNITS_H
#define SPOTRUN_UNITS_H

#include <stddef.h>
#include <stdint.h>

int sr_parse_duration_ms(const char *s, int64_t *ms);
int sr_parse_size(const char *s, uint64_t *bytes);
/* Decimal digits only (a leading '-' when min < 0): no blanks, '+', hex,
 * exponent or trailing bytes; out of [min, max] is -EINVAL. */
int sr_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);
/* A non-negative decimal ("0.92", "3", ".5"): no sign, exponent, hex, inf
 * or nan. Durations and sizes use the same number syntax. */
int sr_parse_decimal(const char *s, double *out);
/* A finite signed decimal with an optional exponent ("-0.31", "1e-5", a
 * metric's value): still no blanks, hex, inf, nan or trailing bytes. */
int sr_parse_real(const char *s, double *out);

/* "1.5 GiB", "12.0 MiB", "512 B" */
void sr_format_size(uint64_t bytes, char *buf, size_t len);
/* "2m05s", "1.2s", "350ms" */
void sr_format_duration_ms(int64_t ms, char *buf, size_t len);

/* A training step, "-" when unknown (< 0). */
void sr_format_step(int64_t step, char *buf, size_t len);

/* Monotonic and wall clocks in milliseconds. */
int64_t sr_now_ms(void);
int64_t sr_wall_ms(void);

/* Nearest-rank percentile (p in 0..100) of v[0..n); sorts v. 0 when n = 0.
 * The one statistic both `show` (stage p50) and --every auto (the cost of
 * a commit) use, so that they agree. */
double sr_percentile(double *v, size_t n, double p);

#endif
