/*
 * test_log.c - error messages tied to their codes (common/log.h): a
 * message explains the code it was recorded with and no other, so a
 * handled failure's message never turns up beside a later, different
 * error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "log.h"

static void test_message_explains_its_code(void **state)
{
    (void)state;
    assert_int_equal(sr_errf(-ENOENT, "run \"x\" has no checkpoint"), -ENOENT);
    assert_string_equal(sr_strerror(-ENOENT), "run \"x\" has no checkpoint");
}

static void test_handled_failure_does_not_explain_another(void **state)
{
    (void)state;
    /* a lookup that found nothing, handled by its caller ... */
    (void)sr_errf(-ENOENT, "no such object: runs/a/SUMMARY.json");
    /* ... then a raw -errno from elsewhere: its own text, not the stale one */
    assert_string_equal(sr_strerror(-EIO), strerror(EIO));
    assert_string_equal(sr_strerror(-ENOSPC), strerror(ENOSPC));
    /* the message still stands for its own code until replaced */
    assert_string_equal(sr_strerror(-ENOENT), "no such object: runs/a/SUMMARY.json");
    (void)sr_errf(-EACCES, "store refused the key");
    assert_string_equal(sr_strerror(-ENOENT), strerror(ENOENT));
    assert_string_equal(sr_strerror(-EACCES), "store refused the key");
}

static void test_clear_forgets(void **state)
{
    (void)state;
    (void)sr_errf(-EPROTO, "not an S3 answer");
    assert_int_equal(sr_err_code(), -EPROTO); /* what to restore it with (store_s3_put.c) */
    sr_err_clear();
    assert_int_equal(sr_err_code(), 0);
    assert_string_equal(sr_strerror(-EPROTO), strerror(EPROTO));
}

static void *other_thread(void *arg)
{
    (void)arg;
    /* this thread recorded nothing: the main thread's message is not ours */
    return (void *)(strcmp(sr_strerror(-ETIMEDOUT), strerror(ETIMEDOUT)) == 0 ? "ok" : NULL);
}

static void test_messages_are_per_thread(void **state)
{
    (void)state;
    (void)sr_errf(-ETIMEDOUT, "the store did not answer in 30 s");
    pthread_t t;
    void *res = NULL;
    assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
    assert_int_equal(pthread_join(t, &res), 0);
    assert_non_null(res);
    assert_string_equal(sr_strerror(-ETIMEDOUT), "the store did not answer in 30 s");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message_explains_its_code),
        cmocka_unit_test(test_handled_failure_does_not_explain_another),
        cmocka_unit_test(test_clear_forgets),
        cmocka_unit_test(test_messages_are_per_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
