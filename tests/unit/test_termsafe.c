/*
 * test_termsafe.c - strings from the store made safe for a terminal
 * (common/termsafe.h): what is replaced, what is kept, and the predicate
 * the parsers refuse with.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "termsafe.h"

static void safe_is(const char *in, size_t size, const char *want)
{
    char buf[64];
    assert_true(size <= sizeof(buf));
    assert_ptr_equal(sr_term_safe(in, buf, size), buf);
    assert_string_equal(buf, want);
}

static void test_controls_become_question_marks(void **state)
{
    (void)state;
    safe_is("\x1b]0;owned\x07host", 64, "?]0;owned?host");
    safe_is("a\tb\nc\rd\x7f", 64, "a?b?c?d?");
    safe_is("\xc2\x9b"
            "31m",
            64,
            "?"
            "?"
            "31m"); /* U+009B CSI in UTF-8: both bytes */
    safe_is("\x9b"
            "31m",
            64, "?31m");                /* CSI as a raw 8-bit byte */
    safe_is("\xff\xc0\xaf", 64, "???"); /* invalid and overlong UTF-8 */
}

static void test_printable_text_is_kept(void **state)
{
    (void)state;
    safe_is("ip-10-0-0-1.ec2.internal", 64, "ip-10-0-0-1.ec2.internal");
    safe_is("h\xc3\xb4te \xe2\x82\xac \xf0\x9f\x9a\x80", 64,
            "h\xc3\xb4te \xe2\x82\xac \xf0\x9f\x9a\x80");
    safe_is(NULL, 8, "");
}

static void test_cut_never_splits_a_character(void **state)
{
    (void)state;
    safe_is("ab\xe2\x82\xac", 5, "ab"); /* the euro sign needs 3 bytes + NUL */
    safe_is("ab\xe2\x82\xac", 6, "ab\xe2\x82\xac");
    safe_is("abcdef", 4, "abc");
}

static void test_parsers_predicate(void **state)
{
    (void)state;
    assert_false(sr_text_has_ctrl("node-1 h\xc3\xb4te"));
    assert_false(sr_text_has_ctrl(""));
    assert_true(sr_text_has_ctrl("a\x1b[2J"));
    assert_true(sr_text_has_ctrl("bell\x07"));
    assert_true(sr_text_has_ctrl("tab\t"));
    assert_true(sr_text_has_ctrl("c1 \xc2\x9b"));
    assert_true(sr_text_has_ctrl("del\x7f"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_controls_become_question_marks),
        cmocka_unit_test(test_printable_text_is_kept),
        cmocka_unit_test(test_cut_never_splits_a_character),
        cmocka_unit_test(test_parsers_predicate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
