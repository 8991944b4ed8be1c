/*
 * test_restart.c - the restart policy (runtime/supervise/restart.h), one
 * test per rule of docs/runtime.md: the backoff, --max-restarts, the two
 * hopeless starts, the stalls counted across wrappers, a stalled node's
 * group requeued, a node failing inside its group's stop, and the stops
 * spotrun makes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <sys/wait.h>

#include "exits.h"
#include "restart.h"

#define EXIT_STATUS(c) ((c) << 8) /* a wait status: exited with code c */
#define SIGNAL_STATUS(n) (n)      /* a wait status: killed by signal n */

/* A job that failed with code by itself, on its first start, after it
 * talked to the wrapper (so that no hopeless rule applies). */
static struct sr_restart_facts failed(int code)
{
    return (struct sr_restart_facts){
        .end = {.stop = SR_STOP_NONE, .code = code},
        .status = EXIT_STATUS(code),
        .max_restarts = 3,
        .backoff_ms = 1000,
        .talked = 1,
        .ran_ms = 5000,
        .max_stalls = 3,
    };
}

/* The same job, silent: it never talked nor listened, and the run has no
 * checkpoint. */
static struct sr_restart_facts silent(int code)
{
    struct sr_restart_facts f = failed(code);
    f.talked = 0;
    return f;
}

static struct sr_restart decide(const struct sr_restart_facts *f)
{
    struct sr_restart r;
    sr_restart_decide(f, &r);
    return r;
}

static void test_backoff_doubles_up_to_a_minute(void **state)
{
    (void)state;
    static const int64_t want[] = {1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000};
    for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_int_equal(sr_restart_delay(1000, i), want[i]);
    assert_int_equal(sr_restart_delay(0, 5), 0); /* --backoff 0: at once */
    assert_int_equal(sr_restart_delay(90000, 0), SR_RESTART_MAX_BACKOFF_MS);
    struct sr_restart_facts f = failed(1);
    f.restarts = 2;
    const struct sr_restart r = decide(&f);
    assert_int_equal(r.what, SR_DO_RESTART);
    assert_int_equal(r.delay_ms, 4000);
}

static void test_failure_is_restarted_max_restarts_times(void **state)
{
    (void)state;
    struct sr_restart_facts f = failed(3);
    for (f.restarts = 0; f.restarts < 3; f.restarts++) {
        const struct sr_restart r = decide(&f);
        assert_int_equal(r.what, SR_DO_RESTART);
        assert_int_equal(r.end.cause, SR_CAUSE_CRASHED);
        assert_false(r.end.gave_up);
    }
    const struct sr_restart r = decide(&f);
    assert_int_equal(r.what, SR_DO_GIVE_UP);
    assert_int_equal(r.why, SR_WHY_MAX_RESTARTS);
    assert_int_equal(r.end.exit_code, 3); /* the job's own code */
    assert_true(r.end.gave_up);
    f = failed(128 + SIGSEGV);
    f.status = SIGNAL_STATUS(SIGSEGV);
    f.end.signaled = 1;
    f.restarts = 3;
    assert_int_equal(decide(&f).end.exit_code, 128 + SIGSEGV);
}

static void test_jobs_own_75_and_124_give_up_with_1(void **state)
{
    (void)state;
    const int own[] = {SR_EX_TEMPFAIL, SR_EX_LIMIT};
    for (int i = 0; i < 2; i++) {
        struct sr_restart_facts f = failed(own[i]);
        f.restarts = 3;
        const struct sr_restart r = decide(&f);
        assert_int_equal(r.what, SR_DO_GIVE_UP);
        assert_int_equal(r.end.exit_code, 1);
        assert_int_equal(r.end.cause, SR_CAUSE_CRASHED);
    }
}

static void test_max_restarts_0_never_restarts(void **state)
{
    (void)state;
    struct sr_restart_facts f = silent(127); /* hopeless too: --max-restarts says it first */
    f.max_restarts = 0;
    const struct sr_restart r = decide(&f);
    assert_int_equal(r.what, SR_DO_GIVE_UP);
    assert_int_equal(r.why, SR_WHY_MAX_RESTARTS);
    assert_int_equal(r.end.exit_code, 127);
}

static void test_command_not_found_on_first_start_is_not_restarted(void **state)
{
    (void)state;
    const int codes[] = {126, 127};
    for (int i = 0; i < 2; i++) {
        struct sr_restart_facts f = silent(codes[i]);
        struct sr_restart r = decide(&f);
        assert_int_equal(r.what, SR_DO_GIVE_UP);
        assert_int_equal(r.why, SR_WHY_NOT_RUNNABLE);
        assert_int_equal(r.end.exit_code, codes[i]);
        /* restarted: it talked, listened, the run has a checkpoint, it is
         * a restart already, or a signal's 128+N */
        f.talked = 1;
        assert_int_equal(decide(&f).what, SR_DO_RESTART);
        f = silent(codes[i]), f.listened = 1;
        assert_int_equal(decide(&f).what, SR_DO_RESTART);
        f = silent(codes[i]), f.has_checkpoint = 1;
        assert_int_equal(decide(&f).what, SR_DO_RESTART);
        f = silent(codes[i]), f.restarts = 1;
        assert_int_equal(decide(&f).what, SR_DO_RESTART);
    }
    struct sr_restart_facts f = silent(1);
    assert_int_equal(decide(&f).what, SR_DO_RESTART); /* exit 1: one restart stays */
}

static void test_same_silent_failure_twice_is_not_restarted_again(void **state)
{
    (void)state;
    struct sr_restart_facts f = silent(1);
    struct sr_restart r = decide(&f);
    assert_int_equal(r.what, SR_DO_RESTART);
    assert_int_equal(r.first_silent_fail, EXIT_STATUS(1)); /* remembered */
    f.restarts = 1;
    f.first_silent_fail = r.first_silent_fail;
    r = decide(&f);
    assert_int_equal(r.what, SR_DO_GIVE_UP);
    assert_int_equal(r.why, SR_WHY_SAME_FAILURE);
    assert_int_equal(r.end.exit_code, 1);
    /* another status, a longer run, a word to the wrapper, a checkpoint:
     * restarted */
    struct sr_restart_facts g = f;
    g.status = EXIT_STATUS(2), g.end.code = 2;
    assert_int_equal(decide(&g).what, SR_DO_RESTART);
    g = f, g.ran_ms = SR_RESTART_SILENT_MS;
    assert_int_equal(decide(&g).what, SR_DO_RESTART);
    g = f, g.talked = 1;
    assert_int_equal(decide(&g).what, SR_DO_RESTART);
    g = f, g.has_checkpoint = 1;
    assert_int_equal(decide(&g).what, SR_DO_RESTART);
    /* a first start that was not silent is not remembered */
    g = silent(1), g.ran_ms = SR_RESTART_SILENT_MS + 1;
    assert_int_equal(decide(&g).first_silent_fail, 0);
    /* the third failure is --max-restarts' to judge */
    g = f, g.restarts = 2;
    assert_int_equal(decide(&g).what, SR_DO_RESTART);
    /* with one restart allowed, it is simply spent */
    g = f, g.max_restarts = 1;
    assert_int_equal(decide(&g).why, SR_WHY_MAX_RESTARTS);
}

static void test_exit_0_finishes_the_run(void **state)
{
    (void)state;
    struct sr_restart_facts f = silent(0);
    f.restarts = 3;
    const struct sr_restart r = decide(&f);
    assert_int_equal(r.what, SR_DO_FINISH);
    assert_true(r.end.done);
    assert_int_equal(r.end.exit_code, 0);
}

static void test_stalls_count_across_wrappers_toward_max_restarts(void **state)
{
    (void)state;
    struct sr_restart_facts f = failed(128 + SIGTERM);
    f.end.stop = SR_STOP_STALL;
    f.stalls = 3; /* this one and two of earlier wrappers */
    struct sr_restart r = decide(&f);
    assert_int_equal(r.what, SR_DO_RESTART);
    assert_int_equal(r.end.cause, SR_CAUSE_STALLED);
    f.stalls = 4;
    r = decide(&f);
    assert_int_equal(r.what, SR_DO_GIVE_UP);
    assert_int_equal(r.why, SR_WHY_STALLS);
    assert_int_equal(r.end.exit_code, 128 + SIGTERM);
    assert_int_equal(r.end.cause, SR_CAUSE_STALLED);
    /* this wrapper's restarts spent: the same */
    f.stalls = 1, f.restarts = 3;
    assert_int_equal(decide(&f).why, SR_WHY_STALLS);
    /* a job that exits 0 when stopped for a stall fails with the TERM's status */
    f.end.code = 0, f.status = 0;
    r = decide(&f);
    assert_false(r.end.done);
    assert_int_equal(r.end.exit_code, 128 + SIGTERM);
    /* during a notice the count does not judge it */
    f = failed(128 + SIGTERM), f.end.stop = SR_STOP_STALL, f.stalls = 9, f.in_notice = 1;
    assert_int_equal(decide(&f).what, SR_DO_RESTART);
    /* and a stall is never a hopeless start */
    f = silent(127), f.end.stop = SR_STOP_STALL, f.stalls = 1;
    assert_int_equal(decide(&f).what, SR_DO_RESTART);
}

static void test_stalled_node_requeues_its_group_until_max_stalls(void **state)
{
    (void)state;
    struct sr_restart_facts f = failed(128 + SIGTERM);
    f.end.stop = SR_STOP_STALL;
    f.end.multinode = 1;
    f.restarts = 3; /* a group does not restart in place: its own restarts do not count */
    f.stalls = 3;
    struct sr_restart r = decide(&f);
    assert_int_equal(r.what, SR_DO_REQUEUE_GROUP);
    assert_int_equal(r.end.exit_code, SR_EX_TEMPFAIL);
    assert_int_equal(r.end.cause, SR_CAUSE_STALLED);
    f.stalls = 4;
    r = decide(&f);
    assert_int_equal(r.what, SR_DO_GIVE_UP);
    assert_int_equal(r.why, SR_WHY_STALLS);
    assert_int_equal(r.end.exit_code, 128 + SIGTERM);
}

static void test_node_failing_in_its_groups_stop_joins_it(void **state)
{
    (void)state;
    struct sr_restart_facts f = silent(127); /* not judged hopeless: it is the stop */
    f.end.multinode = 1;
    f.end.group_stopping = 1;
    const struct sr_restart r = decide(&f);
    assert_int_equal(r.what, SR_DO_JOIN_STOP);
    assert_int_equal(r.why, SR_WHY_NONE);
    assert_int_equal(r.end.exit_code, SR_EX_TEMPFAIL);
    assert_int_equal(r.end.cause, SR_CAUSE_PREEMPTED);
    assert_int_equal(r.first_silent_fail, 0);
}

static void test_stops_spotrun_made_finish_with_their_code(void **state)
{
    (void)state;
    static const struct {
        enum sr_stop stop;
        enum sr_hist_cause limit, cause;
        int code;
    } rows[] = {
        {SR_STOP_NOTICE, SR_CAUSE_NONE, SR_CAUSE_PREEMPTED, SR_EX_TEMPFAIL},
        {SR_STOP_LIMIT, SR_CAUSE_BUDGET, SR_CAUSE_BUDGET, SR_EX_LIMIT},
        {SR_STOP_LEASE, SR_CAUSE_NONE, SR_CAUSE_LEASE_LOST, SR_EX_CANTCREAT},
    };
    const int job_codes[] = {0, 1, 127};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        for (size_t j = 0; j < 3; j++) {
            struct sr_restart_facts f = silent(job_codes[j]);
            f.end.stop = rows[i].stop;
            f.end.limit = rows[i].limit;
            f.restarts = 3; /* spent: a stop is never a give-up */
            const struct sr_restart r = decide(&f);
            assert_int_equal(r.what, SR_DO_FINISH_STOP);
            assert_int_equal(r.end.exit_code, rows[i].code);
            assert_int_equal(r.end.cause, rows[i].cause);
            assert_false(r.end.done);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff_doubles_up_to_a_minute),
        cmocka_unit_test(test_failure_is_restarted_max_restarts_times),
        cmocka_unit_test(test_jobs_own_75_and_124_give_up_with_1),
        cmocka_unit_test(test_max_restarts_0_never_restarts),
        cmocka_unit_test(test_command_not_found_on_first_start_is_not_restarted),
        cmocka_unit_test(test_same_silent_failure_twice_is_not_restarted_again),
        cmocka_unit_test(test_exit_0_finishes_the_run),
        cmocka_unit_test(test_stalls_count_across_wrappers_toward_max_restarts),
        cmocka_unit_test(test_stalled_node_requeues_its_group_until_max_stalls),
        cmocka_unit_test(test_node_failing_in_its_groups_stop_joins_it),
        cmocka_unit_test(test_stops_spotrun_made_finish_with_their_code),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
