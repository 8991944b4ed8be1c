/*
 * test_svg.c - the pictures' numbers (runtime/views/svg.h): sr_svg_num
 * prints at most 4 significant digits (integers up to 1e9 whole), and
 * sr_svg_value does so for a parameter's value that is a decimal number,
 * leaving integers and words as given.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "svg.h"

static const char *num(double v)
{
    static char buf[64];
    sr_svg_num(v, buf, sizeof(buf));
    return buf;
}

static const char *value(const char *s)
{
    static char buf[64];
    sr_svg_value(s, buf, sizeof(buf));
    return buf;
}

static void numbers_have_at_most_4_significant_digits(void **state)
{
    (void)state;
    assert_string_equal(num(0.0007363055617), "0.0007363");
    assert_string_equal(num(0.135), "0.135");
    assert_string_equal(num(0.17500000001), "0.175");
    assert_string_equal(num(3.14159265), "3.142");
    assert_string_equal(num(-2.7182818), "-2.718");
    assert_string_equal(num(1234.5678), "1235");
    assert_string_equal(num(123456.7), "1.235e5");
    assert_string_equal(num(0.00001234567), "1.235e-5");
    assert_string_equal(num(1e-5), "1e-5");
    assert_string_equal(num(2.5e-12), "2.5e-12");
}

static void whole_numbers_print_whole(void **state)
{
    (void)state;
    assert_string_equal(num(0), "0");
    assert_string_equal(num(-0.0), "0");
    assert_string_equal(num(12000), "12000");
    assert_string_equal(num(-7), "-7");
    assert_string_equal(num(999999999), "999999999");
    assert_string_equal(num(1e12), "1e12");
    assert_string_equal(num(INFINITY), "inf");
    assert_string_equal(num(-INFINITY), "-inf");
    assert_string_equal(num(NAN), "nan");
}

static void a_parameter_value_is_shortened_only_when_a_decimal(void **state)
{
    (void)state;
    assert_string_equal(value("0.0007363055617"), "0.0007363");
    assert_string_equal(value("4.972634945986235e-05"), "4.973e-5");
    assert_string_equal(value("0.5"), "0.5");
    assert_string_equal(value("-0.31"), "-0.31");
    assert_string_equal(value("128"), "128");
    assert_string_equal(value("123456789012"), "123456789012"); /* an integer: as given */
    assert_string_equal(value("adamw"), "adamw");
    assert_string_equal(value("1e-3x"), "1e-3x");
    assert_string_equal(value(""), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(numbers_have_at_most_4_significant_digits),
        cmocka_unit_test(whole_numbers_print_whole),
        cmocka_unit_test(a_parameter_value_is_shortened_only_when_a_decimal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
