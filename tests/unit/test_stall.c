/*
 * test_stall.c - the stall watchdog's judgement (runtime/supervise/stall.h):
 * a job that never heartbeated is never judged, a fixed timeout counts from
 * the newest heartbeat, an attempt after one that heartbeated is judged
 * from its start with the start-up allowance, held time (a pending checkpoint request) is not
 * judged nor learned, and `auto` waits for enough heartbeats, then judges
 * at max(floor, factor x the longest gap seen), across attempts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "stall.h"

#define S INT64_C(1000)
#define MIN (60 * S)

static void test_off_never_judges(void **state)
{
    (void)state;
    struct sr_stall st;
    sr_stall_init(&st, 0, 0);
    sr_stall_attempt(&st, 0);
    sr_stall_beat(&st, 1 * S);
    assert_int_equal(sr_stall_deadline(&st), 0);
    assert_false(sr_stall_due(&st, 1000 * MIN));
}

static void test_never_heartbeated_is_never_judged(void **state)
{
    (void)state;
    struct sr_stall st;
    sr_stall_init(&st, 5 * S, 0);
    sr_stall_attempt(&st, 0);
    assert_int_equal(sr_stall_timeout(&st), 0);
    assert_false(sr_stall_due(&st, 1000 * MIN));
    sr_stall_hold(&st, 10 * S); /* held time alone is no heartbeat */
    assert_false(sr_stall_due(&st, 1000 * MIN));
}

static void test_fixed_timeout_counts_from_the_newest_heartbeat(void **state)
{
    (void)state;
    struct sr_stall st;
    sr_stall_init(&st, 5 * S, 0);
    sr_stall_attempt(&st, 0);
    sr_stall_beat(&st, 10 * S);
    assert_int_equal(sr_stall_deadline(&st), 15 * S);
    assert_false(sr_stall_due(&st, 14 * S));
    sr_stall_beat(&st, 13 * S);
    assert_false(sr_stall_due(&st, 17 * S));
    assert_true(sr_stall_due(&st, 18 * S));
    sr_stall_beat(&st, 12 * S); /* an older heartbeat read late changes nothing */
    assert_int_equal(sr_stall_deadline(&st), 18 * S);
}

static void test_a_later_attempt_is_judged_from_its_start(void **state)
{
    (void)state;
    struct sr_stall st;
    char buf[128];
    sr_stall_init(&st, 5 * S, 0);
    sr_stall_attempt(&st, 0);
    assert_false(sr_stall_in_startup(&st)); /* the run never heartbeated: left alone */
    sr_stall_beat(&st, 1 * S);
    sr_stall_attempt(&st, 100 * S); /* restarted: hangs before its first heartbeat */
    assert_true(sr_stall_in_startup(&st));
    assert_int_equal(sr_stall_timeout(&st), SR_STALL_STARTUP_FLOOR_MS);
    assert_false(sr_stall_due(&st, 100 * S + SR_STALL_STARTUP_FLOOR_MS - 1));
    assert_true(sr_stall_due(&st, 100 * S + SR_STALL_STARTUP_FLOOR_MS));
    sr_stall_describe_startup(&st, buf, sizeof(buf));
    assert_string_equal(buf, "5m00s (the floor)");
    /* Its first heartbeat: the timeout counts from it again. */
    sr_stall_beat(&st, 101 * S);
    assert_false(sr_stall_in_startup(&st));
    assert_int_equal(sr_stall_deadline(&st), 106 * S);
}

static void test_startup_allowance_is_twice_the_longest_startup_seen(void **state)
{
    (void)state;
    struct sr_stall st;
    char buf[128];
    sr_stall_init(&st, 30 * S, 0);
    sr_stall_attempt(&st, 0);
    sr_stall_beat(&st, 4 * MIN); /* a slow first start: restoring 4 minutes */
    sr_stall_attempt(&st, 10 * MIN);
    assert_int_equal(sr_stall_startup(&st), SR_STALL_STARTUP_FACTOR * 4 * MIN);
    sr_stall_describe_startup(&st, buf, sizeof(buf));
    assert_string_equal(buf, "8m00s (2 x the longest start-up seen, 4m00s)");
    sr_stall_beat(&st, 10 * MIN + 10 * S); /* a quick one does not lower it */
    sr_stall_attempt(&st, 20 * MIN);
    assert_int_equal(sr_stall_deadline(&st), 20 * MIN + SR_STALL_STARTUP_FACTOR * 4 * MIN);
}

static void test_startup_allowance_is_at_least_the_timeout(void **state)
{
    (void)state;
    struct sr_stall st;
    char buf[128];
    sr_stall_init(&st, 20 * MIN, 0);
    sr_stall_prior(&st, 1 * S);
    sr_stall_attempt(&st, 0);
    assert_int_equal(sr_stall_timeout(&st), 20 * MIN);
    sr_stall_describe_startup(&st, buf, sizeof(buf));
    assert_string_equal(buf, "20m00s (the stall timeout)");
    /* auto: at least its floor, before it has learned any gap */
    sr_stall_init(&st, 0, 1);
    sr_stall_prior(&st, 0);
    sr_stall_attempt(&st, 0);
    assert_int_equal(sr_stall_timeout(&st), SR_STALL_AUTO_FLOOR_MS);
    assert_true(sr_stall_due(&st, SR_STALL_AUTO_FLOOR_MS));
}

static void test_an_earlier_wrapper_s_heartbeat_and_the_user_s_allowance(void **state)
{
    (void)state;
    struct sr_stall st;
    char buf[128];
    sr_stall_init(&st, 2 * S, 0);
    sr_stall_set_startup(&st, 3 * S);
    sr_stall_attempt(&st, 0);
    assert_false(sr_stall_due(&st, 1000 * MIN)); /* no history: never judged */
    sr_stall_prior(&st, 10 * MIN);               /* the rerun of a run that heartbeated */
    sr_stall_attempt(&st, 50 * S);
    assert_int_equal(sr_stall_deadline(&st), 53 * S); /* the user's, not 2 x 10 min */
    sr_stall_describe_startup(&st, buf, sizeof(buf));
    assert_string_equal(buf, "3.0s (--stall-startup)");
    /* Multi-node (no start-up judgement): only after the first heartbeat. */
    sr_stall_set_startup(&st, -1);
    sr_stall_attempt(&st, 100 * S);
    assert_false(sr_stall_in_startup(&st));
    assert_false(sr_stall_due(&st, 1000 * MIN));
    sr_stall_beat(&st, 101 * S);
    assert_int_equal(sr_stall_deadline(&st), 103 * S);
    /* Off stays off whatever the history says. */
    sr_stall_init(&st, 0, 0);
    sr_stall_prior(&st, 1 * S);
    sr_stall_attempt(&st, 0);
    assert_false(sr_stall_in_startup(&st));
    assert_false(sr_stall_due(&st, 1000 * MIN));
}

static void test_held_startup_moves_the_deadline_and_is_not_learned(void **state)
{
    (void)state;
    struct sr_stall st;
    sr_stall_init(&st, 5 * S, 0);
    sr_stall_prior(&st, 0);
    sr_stall_attempt(&st, 0);
    sr_stall_hold(&st, 6 * MIN); /* a notice during its start-up: held */
    assert_false(sr_stall_due(&st, 6 * MIN + SR_STALL_STARTUP_FLOOR_MS - 1));
    assert_true(sr_stall_due(&st, 6 * MIN + SR_STALL_STARTUP_FLOOR_MS));
    sr_stall_beat(&st, 7 * MIN);
    assert_int_equal(st.longest_startup_ms, 0); /* the held start-up was not learned */
    assert_int_equal(sr_stall_deadline(&st), 7 * MIN + 5 * S);
    sr_stall_attempt(&st, 10 * MIN);
    sr_stall_beat(&st, 10 * MIN + 3 * S); /* the first heartbeat of a start not held */
    assert_int_equal(st.longest_startup_ms, 3 * S);
}

static void test_held_time_moves_the_deadline_and_is_not_learned(void **state)
{
    (void)state;
    struct sr_stall st;
    sr_stall_init(&st, 0, 1);
    sr_stall_attempt(&st, 0);
    for (int i = 0; i <= SR_STALL_AUTO_MIN_GAPS; i++)
        sr_stall_beat(&st, i * S);
    const int64_t last = SR_STALL_AUTO_MIN_GAPS * S;
    /* A checkpoint request pending for an hour: held, then a heartbeat. */
    sr_stall_hold(&st, last + 60 * MIN);
    assert_false(sr_stall_due(&st, last + 60 * MIN + SR_STALL_AUTO_FLOOR_MS - 1));
    sr_stall_beat(&st, last + 60 * MIN + S);
    assert_int_equal(st.longest_gap_ms, 1 * S); /* the held hour was not learned */
    assert_int_equal(sr_stall_timeout(&st), SR_STALL_AUTO_FLOOR_MS);
}

/* The watchdog's loop as watchdog.c runs it: a poll holds the clock while
 * the job saves within its allowance; returns whether it held. */
static int poll_saving(struct sr_stall *st, int saving, int64_t t)
{
    const int held = sr_stall_saving(st, saving, t);
    if (held)
        sr_stall_hold(st, t);
    return held;
}

static void test_a_save_holds_for_its_allowance_only(void **state)
{
    (void)state;
    struct sr_stall st;
    sr_stall_init(&st, 10 * S, 0);
    sr_stall_attempt(&st, 0);
    sr_stall_beat(&st, 1 * S);
    /* The first save, nothing learned: held up to 30 min (5 x 10 s is less). */
    assert_int_equal(sr_stall_save_allowance(&st), SR_STALL_SAVE_FIRST_MS);
    assert_true(poll_saving(&st, 1, 2 * S));
    assert_true(poll_saving(&st, 1, 2 * S + SR_STALL_SAVE_FIRST_MS));
    assert_false(sr_stall_due(&st, 2 * S + SR_STALL_SAVE_FIRST_MS + 10 * S - 1));
    /* Past it, the job is judged again: stalled a timeout later. */
    assert_false(poll_saving(&st, 1, 2 * S + SR_STALL_SAVE_FIRST_MS + 1));
    assert_true(sr_stall_due(&st, 2 * S + SR_STALL_SAVE_FIRST_MS + 10 * S));
}

static void test_saves_seen_bound_the_next_one(void **state)
{
    (void)state;
    struct sr_stall st;
    sr_stall_init(&st, 10 * S, 0);
    sr_stall_attempt(&st, 0);
    sr_stall_beat(&st, 1 * S);
    /* A 4 s save, then heartbeats: learned. */
    assert_true(poll_saving(&st, 1, 2 * S));
    assert_true(poll_saving(&st, 1, 6 * S));
    assert_false(poll_saving(&st, 0, 6 * S));
    sr_stall_beat(&st, 7 * S);
    assert_int_equal(st.longest_save_ms, 4 * S);
    assert_int_equal(sr_stall_save_allowance(&st), 20 * S); /* 5 x 4 s */
    /* The next save hangs (a rank waits in a collective for a frozen one):
     * held for 20 s, then judged: stalled 10 s after the hold ended. */
    assert_true(poll_saving(&st, 1, 8 * S));
    assert_true(poll_saving(&st, 1, 28 * S));
    assert_false(poll_saving(&st, 1, 29 * S));
    assert_false(sr_stall_due(&st, 37 * S));
    assert_true(sr_stall_due(&st, 38 * S));
    /* A short save learned: the allowance is never below the timeout. */
    sr_stall_init(&st, 10 * S, 0);
    sr_stall_attempt(&st, 0);
    sr_stall_beat(&st, 1 * S);
    assert_true(poll_saving(&st, 1, 2 * S));
    assert_false(poll_saving(&st, 0, 2 * S + 100));
    assert_int_equal(sr_stall_save_allowance(&st), 10 * S);
    /* A commit 3 s after its request, which no poll saw: learned too. */
    sr_stall_saved(&st, 3 * S);
    assert_int_equal(sr_stall_save_allowance(&st), 15 * S);
}

static void test_auto_waits_for_enough_heartbeats(void **state)
{
    (void)state;
    struct sr_stall st;
    sr_stall_init(&st, 0, 1);
    sr_stall_attempt(&st, 0);
    for (int i = 0; i < SR_STALL_AUTO_MIN_GAPS; i++) /* MIN_GAPS - 1 gaps */
        sr_stall_beat(&st, i * S);
    assert_int_equal(sr_stall_timeout(&st), 0);
    assert_false(sr_stall_due(&st, 1000 * MIN));
    char buf[128];
    sr_stall_describe(&st, buf, sizeof(buf));
    assert_non_null(strstr(buf, "learning"));
    sr_stall_beat(&st, SR_STALL_AUTO_MIN_GAPS * S);
    assert_int_equal(sr_stall_timeout(&st), SR_STALL_AUTO_FLOOR_MS);
}

static void test_auto_is_factor_times_the_longest_gap_above_the_floor(void **state)
{
    (void)state;
    struct sr_stall st;
    sr_stall_init(&st, 0, 1);
    sr_stall_attempt(&st, 0);
    int64_t t = 0;
    for (int i = 0; i < 10; i++)
        sr_stall_beat(&st, t += 2 * S);
    sr_stall_beat(&st, t += 4 * MIN); /* an evaluation every epoch */
    sr_stall_beat(&st, t += 2 * S);
    assert_int_equal(sr_stall_timeout(&st), SR_STALL_AUTO_FACTOR * 4 * MIN);
    assert_true(sr_stall_due(&st, t + SR_STALL_AUTO_FACTOR * 4 * MIN));
    assert_false(sr_stall_due(&st, t + SR_STALL_AUTO_FACTOR * 4 * MIN - 1));
    /* What was learned survives a restart; the new attempt is judged from
     * its start at the learned timeout, and the start-up is not a gap. */
    sr_stall_attempt(&st, t);
    assert_int_equal(sr_stall_startup(&st), SR_STALL_AUTO_FACTOR * 4 * MIN);
    assert_false(sr_stall_due(&st, t + SR_STALL_AUTO_FACTOR * 4 * MIN - 1));
    sr_stall_beat(&st, t + 15 * MIN);
    assert_int_equal(sr_stall_timeout(&st), SR_STALL_AUTO_FACTOR * 4 * MIN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_never_judges),
        cmocka_unit_test(test_never_heartbeated_is_never_judged),
        cmocka_unit_test(test_fixed_timeout_counts_from_the_newest_heartbeat),
        cmocka_unit_test(test_a_later_attempt_is_judged_from_its_start),
        cmocka_unit_test(test_startup_allowance_is_twice_the_longest_startup_seen),
        cmocka_unit_test(test_startup_allowance_is_at_least_the_timeout),
        cmocka_unit_test(test_an_earlier_wrapper_s_heartbeat_and_the_user_s_allowance),
        cmocka_unit_test(test_held_startup_moves_the_deadline_and_is_not_learned),
        cmocka_unit_test(test_held_time_moves_the_deadline_and_is_not_learned),
        cmocka_unit_test(test_a_save_holds_for_its_allowance_only),
        cmocka_unit_test(test_saves_seen_bound_the_next_one),
        cmocka_unit_test(test_auto_waits_for_enough_heartbeats),
        cmocka_unit_test(test_auto_is_factor_times_the_longest_gap_above_the_floor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
