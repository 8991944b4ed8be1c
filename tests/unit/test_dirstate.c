/*
 * test_dirstate.c - whether a commit carries the checkpoint directory
 * (runtime/supervise/dirstate.h): the directory is committed again after
 * the job exits when its newest commit failed or never happened, never
 * after SIGKILL, and never when the newest commit (durable or still
 * pending) carries it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>

#include "dirstate.h"

#define EXITED(code) ((code) << 8)
#define KILLED(sig) (sig)

static void test_restored_and_untouched_is_carried(void **state)
{
    (void)state;
    struct sr_dirstate d;
    sr_dirstate_reset(&d, 10);
    assert_false(sr_dirstate_due(&d, 10, 0));
    assert_int_equal(sr_dirstate_after_exit(&d, EXITED(0), 0, 10, 0), SR_FINAL_CARRIED);
}

static void test_changed_without_a_commit_is_due(void **state)
{
    (void)state;
    struct sr_dirstate d;
    sr_dirstate_reset(&d, 10);
    assert_true(sr_dirstate_due(&d, 11, 0));
    assert_int_equal(sr_dirstate_after_exit(&d, EXITED(143), 0, 11, 0), SR_FINAL_COMMIT);
    assert_int_equal(sr_dirstate_after_exit(&d, KILLED(SIGTERM), 0, 11, 0), SR_FINAL_COMMIT);
}

static void test_empty_is_never_due(void **state)
{
    (void)state;
    struct sr_dirstate d;
    sr_dirstate_reset(&d, 10);
    assert_false(sr_dirstate_due(&d, 0, 1));
    assert_int_equal(sr_dirstate_after_exit(&d, EXITED(0), 0, 0, 1), SR_FINAL_CARRIED);
}

static void test_pending_commit_carries_it(void **state)
{
    (void)state;
    struct sr_dirstate d;
    sr_dirstate_reset(&d, 10);
    sr_dirstate_submitted(&d, 20);
    assert_false(sr_dirstate_due(&d, 20, 0));
    sr_dirstate_result(&d, 20, 1);
    assert_false(sr_dirstate_due(&d, 20, 0));
}

static void test_committed_once_then_kept_writing_is_due(void **state)
{
    (void)state;
    struct sr_dirstate d;
    sr_dirstate_reset(&d, 10);
    sr_dirstate_submitted(&d, 20);
    sr_dirstate_result(&d, 20, 1);
    assert_int_equal(sr_dirstate_after_exit(&d, EXITED(0), 0, 21, 0), SR_FINAL_COMMIT);
}

static void test_failed_newest_commit_is_due(void **state)
{
    (void)state;
    struct sr_dirstate d;
    sr_dirstate_reset(&d, 10);
    sr_dirstate_submitted(&d, 20);
    sr_dirstate_result(&d, 20, 1);
    sr_dirstate_submitted(&d, 30);
    sr_dirstate_result(&d, 30, 0); /* torn, or the store refused it */
    assert_true(sr_dirstate_due(&d, 30, 0));
    /* back to what the newest durable one holds: nothing to commit */
    assert_false(sr_dirstate_due(&d, 20, 0));
}

static void test_older_failure_does_not_undo_a_newer_commit(void **state)
{
    (void)state;
    struct sr_dirstate d;
    sr_dirstate_reset(&d, 10);
    sr_dirstate_submitted(&d, 20);
    sr_dirstate_submitted(&d, 30);
    sr_dirstate_result(&d, 20, 0);
    assert_false(sr_dirstate_due(&d, 30, 0));
    sr_dirstate_result(&d, 30, 1);
    assert_false(sr_dirstate_due(&d, 30, 0));
}

static void test_never_after_sigkill_or_a_lost_lease(void **state)
{
    (void)state;
    struct sr_dirstate d;
    sr_dirstate_reset(&d, 10);
    assert_int_equal(sr_dirstate_after_exit(&d, KILLED(SIGKILL), 0, 11, 0), SR_FINAL_KILLED);
    assert_int_equal(sr_dirstate_after_exit(&d, EXITED(137), 0, 11, 0), SR_FINAL_KILLED);
    assert_int_equal(sr_dirstate_after_exit(&d, EXITED(0), 1, 11, 0), SR_FINAL_LEASE_LOST);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restored_and_untouched_is_carried),
        cmocka_unit_test(test_changed_without_a_commit_is_due),
        cmocka_unit_test(test_empty_is_never_due),
        cmocka_unit_test(test_pending_commit_carries_it),
        cmocka_unit_test(test_committed_once_then_kept_writing_is_due),
        cmocka_unit_test(test_failed_newest_commit_is_due),
        cmocka_unit_test(test_older_failure_does_not_undo_a_newer_commit),
        cmocka_unit_test(test_never_after_sigkill_or_a_lost_lease),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
