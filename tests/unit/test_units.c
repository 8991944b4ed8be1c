/*
 * test_units.c - the values users type and the values spotrun prints
 * (common/units.h): durations, sizes, bounded integers, and their
 * human-readable formatting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "units.h"

static int64_t duration_ok(const char *s)
{
    int64_t ms = -12345;
    const int rc = sr_parse_duration_ms(s, &ms);
    if (rc != 0)
        fail_msg("sr_parse_duration_ms(\"%s\") = %d", s, rc);
    return ms;
}

static void duration_rejected(const char *s)
{
    int64_t ms = -12345;
    const int rc = sr_parse_duration_ms(s, &ms);
    if (rc != -EINVAL)
        fail_msg("sr_parse_duration_ms(\"%s\") = %d (ms %lld), want -EINVAL", s ? s : "NULL", rc,
                 (long long)ms);
    assert_int_equal(ms, -12345); /* untouched */
}

static uint64_t size_ok(const char *s)
{
    uint64_t b = 12345;
    const int rc = sr_parse_size(s, &b);
    if (rc != 0)
        fail_msg("sr_parse_size(\"%s\") = %d", s, rc);
    return b;
}

static void size_rejected(const char *s)
{
    uint64_t b = 12345;
    const int rc = sr_parse_size(s, &b);
    if (rc != -EINVAL)
        fail_msg("sr_parse_size(\"%s\") = %d (bytes %llu), want -EINVAL", s, rc,
                 (unsigned long long)b);
    assert_int_equal(b, 12345); /* untouched */
}

/* ---- durations ---- */

static void test_duration_seconds(void **state)
{
    (void)state;
    assert_int_equal(duration_ok("90s"), 90000);
}

static void test_duration_minutes(void **state)
{
    (void)state;
    assert_int_equal(duration_ok("10m"), 600000);
}

static void test_duration_hours_and_minutes_combined(void **state)
{
    (void)state;
    assert_int_equal(duration_ok("1h30m"), 5400000);
}

static void test_duration_milliseconds(void **state)
{
    (void)state;
    assert_int_equal(duration_ok("250ms"), 250);
}

static void test_duration_fractional_seconds(void **state)
{
    (void)state;
    assert_int_equal(duration_ok("1.5s"), 1500);
}

static void test_duration_bare_number_is_seconds(void **state)
{
    (void)state;
    assert_int_equal(duration_ok("45"), 45000);
}

static void test_duration_days(void **state)
{
    (void)state;
    assert_int_equal(duration_ok("2d"), 172800000);
}

static void test_duration_long_unit_names_and_case(void **state)
{
    (void)state;
    assert_int_equal(duration_ok("2min"), 120000);
    assert_int_equal(duration_ok("3sec"), 3000);
    assert_int_equal(duration_ok("5M"), 300000);
}

static void test_duration_zero(void **state)
{
    (void)state;
    assert_int_equal(duration_ok("0s"), 0);
}

static void test_duration_rejects_empty(void **state)
{
    (void)state;
    duration_rejected("");
}

static void test_duration_rejects_null(void **state)
{
    (void)state;
    duration_rejected(NULL);
}

static void test_duration_rejects_unknown_unit(void **state)
{
    (void)state;
    duration_rejected("10x");
}

static void test_duration_rejects_negative(void **state)
{
    (void)state;
    duration_rejected("-1s");
}

static void test_duration_rejects_negative_later_component(void **state)
{
    (void)state;
    duration_rejected("1h-30m");
}

static void test_duration_rejects_unit_without_number(void **state)
{
    (void)state;
    duration_rejected("s");
}

static void test_duration_rejects_space_before_unit(void **state)
{
    (void)state;
    duration_rejected("10 m");
}

static void test_duration_rejects_trailing_garbage_after_bare_number(void **state)
{
    (void)state;
    duration_rejected("10s5!");
}

static void test_duration_rejects_huge_value(void **state)
{
    (void)state;
    duration_rejected("1e20d");
}

static void test_duration_rejects_not_a_number(void **state)
{
    (void)state;
    duration_rejected("nan");
    duration_rejected("nans");
}

/* ---- sizes ---- */

static void test_size_mebibytes_short_suffix(void **state)
{
    (void)state;
    assert_int_equal(size_ok("4M"), 4ull << 20);
}

static void test_size_kibibytes_long_suffix(void **state)
{
    (void)state;
    assert_int_equal(size_ok("512KiB"), 512ull << 10);
}

static void test_size_gibibytes(void **state)
{
    (void)state;
    assert_int_equal(size_ok("1G"), 1ull << 30);
}

static void test_size_fractional_gibibytes(void **state)
{
    (void)state;
    assert_int_equal(size_ok("1.5GiB"), 3ull << 29);
}

static void test_size_bare_number_is_bytes(void **state)
{
    (void)state;
    assert_int_equal(size_ok("100"), 100);
}

static void test_size_suffix_is_case_insensitive_and_binary(void **state)
{
    (void)state;
    assert_int_equal(size_ok("2kb"), 2048);
    assert_int_equal(size_ok("3T"), 3ull << 40);
}

static void test_size_rejects_unknown_suffix(void **state)
{
    (void)state;
    size_rejected("4Q");
}

static void test_size_rejects_negative(void **state)
{
    (void)state;
    size_rejected("-1");
}

static void test_size_rejects_suffix_without_number(void **state)
{
    (void)state;
    size_rejected("M");
}

static void test_size_rejects_empty(void **state)
{
    (void)state;
    size_rejected("");
}

static void test_size_rejects_garbage_after_suffix(void **state)
{
    (void)state;
    size_rejected("4MiBx");
}

static void test_size_rejects_space_after_number(void **state)
{
    (void)state;
    size_rejected("4 ");
    size_rejected("4 B");
}

static void test_size_rejects_overflow(void **state)
{
    (void)state;
    size_rejected("100000P");
}

static void test_size_rejects_not_a_number(void **state)
{
    (void)state;
    size_rejected("nan");
}

/* ---- integers ---- */

static void test_int_in_range(void **state)
{
    (void)state;
    int64_t v = 0;
    assert_int_equal(sr_parse_int("42", 0, 100, &v), 0);
    assert_int_equal(v, 42);
}

static void test_int_negative_in_range(void **state)
{
    (void)state;
    int64_t v = 0;
    assert_int_equal(sr_parse_int("-5", -10, 10, &v), 0);
    assert_int_equal(v, -5);
}

static void test_int_bounds_are_inclusive(void **state)
{
    (void)state;
    int64_t v = 0;
    assert_int_equal(sr_parse_int("1", 1, 8, &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(sr_parse_int("8", 1, 8, &v), 0);
    assert_int_equal(v, 8);
}

static void test_int_rejects_below_min(void **state)
{
    (void)state;
    int64_t v = 99;
    assert_int_equal(sr_parse_int("0", 1, 8, &v), -EINVAL);
    assert_int_equal(v, 99);
}

static void test_int_rejects_above_max(void **state)
{
    (void)state;
    int64_t v = 99;
    assert_int_equal(sr_parse_int("9", 1, 8, &v), -EINVAL);
    assert_int_equal(v, 99);
}

static void test_int_full_int64_range(void **state)
{
    (void)state;
    int64_t v = 0;
    assert_int_equal(sr_parse_int("9223372036854775807", INT64_MIN, INT64_MAX, &v), 0);
    assert_true(v == INT64_MAX);
    assert_int_equal(sr_parse_int("-9223372036854775808", INT64_MIN, INT64_MAX, &v), 0);
    assert_true(v == INT64_MIN);
}

static void test_int_rejects_overflow(void **state)
{
    (void)state;
    int64_t v = 99;
    assert_int_equal(sr_parse_int("9223372036854775808", INT64_MIN, INT64_MAX, &v), -EINVAL);
    assert_int_equal(v, 99);
}

static void int_rejected(const char *s, int64_t min, int64_t max)
{
    int64_t v = 99;
    if (sr_parse_int(s, min, max, &v) != -EINVAL)
        fail_msg("sr_parse_int(\"%s\") accepted it (%lld)", s, (long long)v);
    assert_int_equal(v, 99);
}

static void test_int_is_strict_decimal(void **state)
{
    (void)state;
    const char *const bad[] = {"1 2",   " 12", "12 ", "+12", "1e99", "1e3", "0x10",
                               "12abc", "-",   "- 1", "\t1", "1.0",  "inf", "nan"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        int_rejected(bad[i], 0, INT64_MAX);
    int_rejected("-1", 0, INT64_MAX); /* a negative step where only >= 0 makes sense */
    int_rejected("99999999999999999999", 0, INT64_MAX);
    int64_t v = 0;
    assert_int_equal(sr_parse_int("-5", -10, 10, &v), 0);
    assert_int_equal(v, -5);
    assert_int_equal(sr_parse_int("007", 0, 10, &v), 0);
    assert_int_equal(v, 7);
}

static void test_duration_and_size_refuse_hex_exponent_inf(void **state)
{
    (void)state;
    const char *const bad[] = {"0x1p3", "0x10", "0x1p3s", "1e3", "1e3s",   "inf", "infs",
                               "nan",   "+5s",  " 5s",    "5s ", "1.5e1m", "."};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        duration_rejected(bad[i]);
        size_rejected(bad[i]);
    }
    assert_int_equal(duration_ok(".5s"), 500);
    assert_int_equal(size_ok("1.5K"), 1536);
}

static void test_decimal_is_strict(void **state)
{
    (void)state;
    double d = -1;
    assert_int_equal(sr_parse_decimal("0.92", &d), 0);
    assert_true(d > 0.919 && d < 0.921);
    const char *const bad[] = {"", "1e2", "0x1p3", "inf", "nan", "-1", "+1", " 1", "1 ", "1,5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (sr_parse_decimal(bad[i], &d) != -EINVAL)
            fail_msg("sr_parse_decimal(\"%s\") accepted it", bad[i]);
}

static void test_real_takes_sign_and_exponent_but_nothing_else(void **state)
{
    (void)state;
    double d = 0;
    assert_int_equal(sr_parse_real("-0.31", &d), 0);
    assert_true(d < -0.309 && d > -0.311);
    assert_int_equal(sr_parse_real("+1.5e-3", &d), 0);
    assert_true(d > 0.00149 && d < 0.00151);
    assert_int_equal(sr_parse_real("2E3", &d), 0);
    assert_true(d == 2000);
    assert_int_equal(sr_parse_real(".5", &d), 0);
    assert_int_equal(sr_parse_real("7.", &d), 0);
    const char *const bad[] = {"",    "-",      ".",     "1e", "1e+",  "0x1p3", "inf",
                               "nan", "-inf",   " 1",    "1 ", "\n1",  "1,5",   "1e999",
                               "--1", "1e-999", "12abc", "e5", "1.2.3"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (sr_parse_real(bad[i], &d) != -EINVAL)
            fail_msg("sr_parse_real(\"%s\") accepted it", bad[i]);
    assert_int_equal(sr_parse_real(NULL, &d), -EINVAL);
}

static void test_int_rejects_trailing_garbage(void **state)
{
    (void)state;
    int64_t v = 99;
    assert_int_equal(sr_parse_int("12abc", 0, 100, &v), -EINVAL);
    assert_int_equal(v, 99);
}

static void test_int_rejects_empty_and_non_numbers(void **state)
{
    (void)state;
    int64_t v = 99;
    assert_int_equal(sr_parse_int("", 0, 100, &v), -EINVAL);
    assert_int_equal(sr_parse_int("abc", 0, 100, &v), -EINVAL);
    assert_int_equal(sr_parse_int(NULL, 0, 100, &v), -EINVAL);
    assert_int_equal(v, 99);
}

/* ---- formatting ---- */

static const char *fmt_size(uint64_t b)
{
    static char buf[64];
    sr_format_size(b, buf, sizeof(buf));
    return buf;
}

static const char *fmt_dur(int64_t ms)
{
    static char buf[64];
    sr_format_duration_ms(ms, buf, sizeof(buf));
    return buf;
}

static void test_format_size_bytes(void **state)
{
    (void)state;
    assert_string_equal(fmt_size(0), "0 B");
    assert_string_equal(fmt_size(512), "512 B");
    assert_string_equal(fmt_size(1023), "1023 B");
}

static void test_format_size_kibibytes(void **state)
{
    (void)state;
    assert_string_equal(fmt_size(1024), "1.0 KiB");
    assert_string_equal(fmt_size(1536), "1.5 KiB");
}

static void test_format_size_mebibytes(void **state)
{
    (void)state;
    assert_string_equal(fmt_size(12ull << 20), "12.0 MiB");
}

static void test_format_size_gibibytes(void **state)
{
    (void)state;
    assert_string_equal(fmt_size(3ull << 29), "1.5 GiB");
}

static void test_format_size_largest_unit_is_pebibytes(void **state)
{
    (void)state;
    assert_string_equal(fmt_size(2048ull << 50), "2048.0 PiB");
}

static void test_format_size_truncates_to_buffer(void **state)
{
    (void)state;
    char buf[4];
    sr_format_size(1536, buf, sizeof(buf));
    assert_string_equal(buf, "1.5");
}

static void test_format_duration_milliseconds(void **state)
{
    (void)state;
    assert_string_equal(fmt_dur(0), "0ms");
    assert_string_equal(fmt_dur(350), "350ms");
    assert_string_equal(fmt_dur(999), "999ms");
}

static void test_format_duration_seconds_with_one_decimal(void **state)
{
    (void)state;
    assert_string_equal(fmt_dur(1000), "1.0s");
    assert_string_equal(fmt_dur(1200), "1.2s");
    assert_string_equal(fmt_dur(45000), "45.0s");
}

static void test_format_duration_minutes_and_padded_seconds(void **state)
{
    (void)state;
    assert_string_equal(fmt_dur(60000), "1m00s");
    assert_string_equal(fmt_dur(125000), "2m05s");
}

static void test_format_duration_hours_and_padded_minutes(void **state)
{
    (void)state;
    assert_string_equal(fmt_dur(3600000), "1h00m");
    assert_string_equal(fmt_dur(3600000 + 5 * 60000 + 59000), "1h05m");
    assert_string_equal(fmt_dur(50ll * 3600000), "50h00m");
}

static void test_format_duration_round_trips_through_parser(void **state)
{
    (void)state;
    assert_int_equal(duration_ok(fmt_dur(125000)), 125000);
    assert_int_equal(duration_ok(fmt_dur(350)), 350);
    assert_int_equal(duration_ok(fmt_dur(3600000)), 3600000);
}

static void test_monotonic_clock_does_not_go_backwards(void **state)
{
    (void)state;
    const int64_t a = sr_now_ms();
    const int64_t b = sr_now_ms();
    assert_true(b >= a);
    /* Wall clock: after 2020-01-01 in ms. */
    assert_true(sr_wall_ms() > 1577836800000ll);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duration_seconds),
        cmocka_unit_test(test_duration_minutes),
        cmocka_unit_test(test_duration_hours_and_minutes_combined),
        cmocka_unit_test(test_duration_milliseconds),
        cmocka_unit_test(test_duration_fractional_seconds),
        cmocka_unit_test(test_duration_bare_number_is_seconds),
        cmocka_unit_test(test_duration_days),
        cmocka_unit_test(test_duration_long_unit_names_and_case),
        cmocka_unit_test(test_duration_zero),
        cmocka_unit_test(test_duration_rejects_empty),
        cmocka_unit_test(test_duration_rejects_null),
        cmocka_unit_test(test_duration_rejects_unknown_unit),
        cmocka_unit_test(test_duration_rejects_negative),
        cmocka_unit_test(test_duration_rejects_negative_later_component),
        cmocka_unit_test(test_duration_rejects_unit_without_number),
        cmocka_unit_test(test_duration_rejects_space_before_unit),
        cmocka_unit_test(test_duration_rejects_trailing_garbage_after_bare_number),
        cmocka_unit_test(test_duration_rejects_huge_value),
        cmocka_unit_test(test_duration_rejects_not_a_number),
        cmocka_unit_test(test_size_mebibytes_short_suffix),
        cmocka_unit_test(test_size_kibibytes_long_suffix),
        cmocka_unit_test(test_size_gibibytes),
        cmocka_unit_test(test_size_fractional_gibibytes),
        cmocka_unit_test(test_size_bare_number_is_bytes),
        cmocka_unit_test(test_size_suffix_is_case_insensitive_and_binary),
        cmocka_unit_test(test_size_rejects_unknown_suffix),
        cmocka_unit_test(test_size_rejects_negative),
        cmocka_unit_test(test_size_rejects_suffix_without_number),
        cmocka_unit_test(test_size_rejects_empty),
        cmocka_unit_test(test_size_rejects_garbage_after_suffix),
        cmocka_unit_test(test_size_rejects_space_after_number),
        cmocka_unit_test(test_size_rejects_overflow),
        cmocka_unit_test(test_size_rejects_not_a_number),
        cmocka_unit_test(test_int_in_range),
        cmocka_unit_test(test_int_negative_in_range),
        cmocka_unit_test(test_int_bounds_are_inclusive),
        cmocka_unit_test(test_int_rejects_below_min),
        cmocka_unit_test(test_int_rejects_above_max),
        cmocka_unit_test(test_int_full_int64_range),
        cmocka_unit_test(test_int_rejects_overflow),
        cmocka_unit_test(test_int_rejects_trailing_garbage),
        cmocka_unit_test(test_int_is_strict_decimal),
        cmocka_unit_test(test_duration_and_size_refuse_hex_exponent_inf),
        cmocka_unit_test(test_decimal_is_strict),
        cmocka_unit_test(test_real_takes_sign_and_exponent_but_nothing_else),
        cmocka_unit_test(test_int_rejects_empty_and_non_numbers),
        cmocka_unit_test(test_format_size_bytes),
        cmocka_unit_test(test_format_size_kibibytes),
        cmocka_unit_test(test_format_size_mebibytes),
        cmocka_unit_test(test_format_size_gibibytes),
        cmocka_unit_test(test_format_size_largest_unit_is_pebibytes),
        cmocka_unit_test(test_format_size_truncates_to_buffer),
        cmocka_unit_test(test_format_duration_milliseconds),
        cmocka_unit_test(test_format_duration_seconds_with_one_decimal),
        cmocka_unit_test(test_format_duration_minutes_and_padded_seconds),
        cmocka_unit_test(test_format_duration_hours_and_padded_minutes),
        cmocka_unit_test(test_format_duration_round_trips_through_parser),
        cmocka_unit_test(test_monotonic_clock_does_not_go_backwards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
