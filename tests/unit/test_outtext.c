/*
 * test_outtext.c - the last lines of a job's output as kept in an "exit"
 * event (common/outtext.h): bounded, valid UTF-8, no control characters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "outtext.h"

static char *tail_of(const char *s, int cut)
{
    return sr_outtext_tail(s, strlen(s), cut, SR_TAIL_MAX_LINES, SR_TAIL_MAX_BYTES);
}

static void expect_tail(const char *in, int cut, const char *want)
{
    char *got = tail_of(in, cut);
    if (!want)
        assert_null(got);
    else
        assert_string_equal(got, want);
    free(got);
}

static void test_plain_lines_are_kept_without_the_last_newline(void **state)
{
    (void)state;
    expect_tail("epoch 1\nsimulated CUDA error\n\n", 0, "epoch 1\nsimulated CUDA error");
    expect_tail("", 0, NULL);
    expect_tail("\n\n\r\033[0m", 0, NULL);
}

static void test_controls_and_escapes_are_dropped(void **state)
{
    (void)state;
    expect_tail("\033[1;31mred\033[0m\tbell\a \033]0;title\a ok\x7f\x01", 0, "red bell  ok");
    /* a carriage return overwrites the line, as a terminal shows it */
    expect_tail("10%\r50%\r100%\r\ndone", 0, "100%\ndone");
}

static void test_invalid_utf8_becomes_question_marks(void **state)
{
    (void)state;
    expect_tail("caf\xc3\xa9 \xff\xfe \xed\xa0\x80 \xc2\x9b!", 0, "caf\xc3\xa9 ?? ??? !");
}

static void test_only_the_last_lines_and_bytes_are_kept(void **state)
{
    (void)state;
    char in[1024] = "";
    for (int i = 0; i < 30; i++)
        snprintf(in + strlen(in), sizeof(in) - strlen(in), "line %d\n", i);
    char *t = tail_of(in, 0);
    assert_non_null(t);
    assert_int_equal(strncmp(t, "line 10\n", 8), 0);
    assert_string_equal(strrchr(t, '\n'), "\nline 29");
    free(t);
    char *big = malloc(10000);
    memset(big, 'x', 10000);
    memcpy(big + 9000, "\xc3\xa9", 2); /* 9001 is inside it */
    t = sr_outtext_tail(big, 10000, 0, 20, 999);
    assert_int_equal(strlen(t), 998); /* never from inside a character */
    free(t);
    t = sr_outtext_tail(big + 9001, 999, 1, 20, 4096); /* starts inside a character */
    assert_int_equal(t[0], '?');
    free(t);
    free(big);
}

static void test_a_cut_first_line_is_dropped_when_others_follow(void **state)
{
    (void)state;
    expect_tail("ne 1\nline 2\n", 1, "line 2");
    expect_tail("only part of a line", 1, "only part of a line");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_lines_are_kept_without_the_last_newline),
        cmocka_unit_test(test_controls_and_escapes_are_dropped),
        cmocka_unit_test(test_invalid_utf8_becomes_question_marks),
        cmocka_unit_test(test_only_the_last_lines_and_bytes_are_kept),
        cmocka_unit_test(test_a_cut_first_line_is_dropped_when_others_follow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
