/*
 * test_labels.c - a run's labels (runtime/record/labels.h): what a user may
 * write after --label, the clear error for what they may not, the order
 * and replacement rules, SPOTRUN_LABELS lists, ls --label matching, and
 * labels read back from a tampered store (dropped, never printed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "labels.h"

static void test_valid_labels_are_kept_sorted_and_replaced(void **state)
{
    (void)state;
    struct sr_labels l = {0};
    char err[256];
    assert_int_equal(sr_labels_add(&l, "user=ana", err, sizeof(err)), 0);
    assert_int_equal(sr_labels_add(&l, "team=nlp", err, sizeof(err)), 0);
    assert_int_equal(sr_labels_add(&l, "team=vision", err, sizeof(err)), 0);
    assert_int_equal(sr_labels_add(&l, "exp.v2=lr-3e-4_b", err, sizeof(err)), 0);
    char buf[256];
    sr_labels_format(&l, buf, sizeof(buf));
    assert_string_equal(buf, "exp.v2=lr-3e-4_b, team=vision, user=ana");
    assert_string_equal(sr_labels_get(&l, "team"), "vision");
    assert_null(sr_labels_get(&l, "zone"));
}

static void expect_bad(const char *kv, const char *why)
{
    struct sr_labels l = {0};
    char err[256] = "";
    assert_int_equal(sr_labels_add(&l, kv, err, sizeof(err)), -EINVAL);
    assert_int_equal(l.n, 0);
    assert_non_null(strstr(err, why));
}

static void test_bad_labels_say_what_is_wrong(void **state)
{
    (void)state;
    expect_bad("team", "a label is KEY=VALUE");
    expect_bad("Team=nlp", "a key is 1 to 63");
    expect_bad("=nlp", "a key is 1 to 63");
    expect_bad("_x=nlp", "starts with a letter or a digit");
    expect_bad("team=", "a value is 1 to 63");
    expect_bad("team=a b", "a value is 1 to 63");
    expect_bad("team=a,b", "a value is 1 to 63");
    expect_bad("team=\"x\"", "a value is 1 to 63");
    expect_bad("zone=x", "stats groups by on its own");
    expect_bad("week=49", "stats groups by on its own");
    char longkey[80];
    memset(longkey, 'k', 64);
    strcpy(longkey + 64, "=v");
    expect_bad(longkey, "a key is 1 to 63");
}

static void test_at_most_sixteen_labels(void **state)
{
    (void)state;
    struct sr_labels l = {0};
    char err[256], kv[32];
    for (int i = 0; i < SR_LABELS_MAX; i++) {
        snprintf(kv, sizeof(kv), "k%02d=v", i);
        assert_int_equal(sr_labels_add(&l, kv, err, sizeof(err)), 0);
    }
    assert_int_equal(sr_labels_add(&l, "k00=again", err, sizeof(err)), 0); /* replaces */
    assert_int_equal(sr_labels_add(&l, "more=x", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "more than 16 labels"));
}

static void test_a_list_as_spotrun_labels_gives_it(void **state)
{
    (void)state;
    struct sr_labels l = {0};
    char err[256];
    assert_int_equal(sr_labels_add_list(&l, " team=nlp , user=ana,,", err, sizeof(err)), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(sr_labels_get(&l, "user"), "ana");
    assert_int_equal(sr_labels_add_list(&l, "", err, sizeof(err)), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(sr_labels_add_list(&l, "ok=1,bad", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "\"bad\""));
}

static void test_match_needs_every_wanted_label(void **state)
{
    (void)state;
    struct sr_labels l = {0}, want = {0};
    char err[256];
    sr_labels_add_list(&l, "team=nlp,user=ana", err, sizeof(err));
    assert_true(sr_labels_match(&l, &want));
    sr_labels_add(&want, "team=nlp", err, sizeof(err));
    assert_true(sr_labels_match(&l, &want));
    sr_labels_add(&want, "user=bo", err, sizeof(err));
    assert_false(sr_labels_match(&l, &want));
}

static void test_labels_from_the_store_drop_what_breaks_the_rules(void **state)
{
    (void)state;
    json_t *o = json_pack("{s:s,s:s,s:i,s:s,s:s}", "team", "nlp", "Bad", "x", "n", 3, "zone",
                          "us-east-1a", "user", "a\nb");
    struct sr_labels l = {0};
    assert_int_equal(sr_labels_from_json(&l, o), 4);
    assert_int_equal(l.n, 1);
    json_t *back = sr_labels_to_json(&l);
    char *s = json_dumps(back, JSON_COMPACT);
    assert_string_equal(s, "{\"team\":\"nlp\"}");
    free(s);
    json_decref(back);
    json_decref(o);
}

/* The run's labels are those of the newest attempt that gave any. */
static void test_history_takes_the_newest_attempts_labels(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    const char *lines[] = {
        "{\"event\":\"start\",\"unix_ms\":3000,\"attempt\":2,\"labels\":{\"team\":\"cv\"}}",
        "{\"event\":\"start\",\"unix_ms\":1000,\"attempt\":1,\"labels\":{\"team\":\"nlp\"}}",
        "{\"event\":\"start\",\"unix_ms\":5000,\"attempt\":3}",
    };
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(sr_hist_add_line(&h, lines[i], strlen(lines[i])), 0);
    sr_hist_derive(&h);
    assert_string_equal(sr_labels_get(&h.labels, "team"), "cv");
    sr_hist_free(&h);
    assert_int_equal(h.labels.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_labels_are_kept_sorted_and_replaced),
        cmocka_unit_test(test_bad_labels_say_what_is_wrong),
        cmocka_unit_test(test_at_most_sixteen_labels),
        cmocka_unit_test(test_a_list_as_spotrun_labels_gives_it),
        cmocka_unit_test(test_match_needs_every_wanted_label),
        cmocka_unit_test(test_labels_from_the_store_drop_what_breaks_the_rules),
        cmocka_unit_test(test_history_takes_the_newest_attempts_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
