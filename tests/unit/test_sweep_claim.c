/*
 * test_sweep_claim.c - which open trial a `sweep work` worker claims next
 * (runtime/sweep/sweep_claim.h): the order (priority first, then a trial
 * that ran before over a fresh one, then by index; only free trials) and
 * the listing of the trials that ran before in a file store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "sweep_claim.h"

#define T(f, p, s)                                                                                 \
    {                                                                                              \
        .free = (f), .priority = (p), .started = (s)                                               \
    }

static void test_fresh_trials_by_index(void **state)
{
    (void)state;
    const struct sr_claim_trial t[] = {T(0, 0, 0), T(1, 0, 0), T(1, 0, 0), T(1, 0, 0)};
    long out[4];
    assert_int_equal(sr_claim_order(t, 4, out, 4), 3);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 2);
    assert_int_equal(out[2], 3);
    assert_int_equal(sr_claim_order(t, 4, out, 2), 2); /* at most cap */
    assert_int_equal(sr_claim_order(t, 1, out, 4), 0); /* none free */
    assert_int_equal(sr_claim_order(t, 0, out, 4), 0);
}

static void test_a_trial_that_ran_before_first(void **state)
{
    (void)state;
    /* trial 7 was preempted (it ran before): it alone is claimed, however
     * many fresh trials come before it */
    struct sr_claim_trial t[8];
    for (size_t k = 0; k < 8; k++)
        t[k] = (struct sr_claim_trial)T(1, 0, k == 7);
    long out[4];
    assert_int_equal(sr_claim_order(t, 8, out, 4), 1);
    assert_int_equal(out[0], 7);
    /* two that ran before: both, by index, and no fresh one */
    t[5].started = 1;
    assert_int_equal(sr_claim_order(t, 8, out, 4), 2);
    assert_int_equal(out[0], 5);
    assert_int_equal(out[1], 7);
    /* one that ran before but is not free (held, ended, cancelled) does not count */
    t[5].free = t[7].free = 0;
    assert_int_equal(sr_claim_order(t, 8, out, 4), 4);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[3], 3);
}

static void test_priority_before_ran_before(void **state)
{
    (void)state;
    /* a higher priority wins over a trial that ran before; within a
     * priority, ran before first */
    const struct sr_claim_trial t[] = {T(1, 0, 1), T(1, 5, 0), T(1, 5, 0), T(1, 5, 1), T(1, -1, 1)};
    long out[4];
    assert_int_equal(sr_claim_order(t, 5, out, 4), 1);
    assert_int_equal(out[0], 3);
    const struct sr_claim_trial u[] = {T(1, 0, 1), T(1, 5, 0), T(1, 5, 0), T(0, 5, 1)};
    assert_int_equal(sr_claim_order(u, 4, out, 4), 2);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 2);
    const struct sr_claim_trial v[] = {T(1, LONG_MIN, 0), T(1, LONG_MIN, 1)};
    assert_int_equal(sr_claim_order(v, 2, out, 4), 1);
    assert_int_equal(out[0], 1);
}

static void put(struct sr_store *st, const char *key)
{
    assert_int_equal(sr_store_put(st, key, "{}", 2), 0);
}

static void test_listing_what_ran_before(void **state)
{
    (void)state;
    struct tu_store fs;
    tu_store_open(&fs, "sweep_claim");
    struct sr_store *st = fs.st;
    unsigned char started[12];
    memset(started, 7, sizeof(started));
    /* no summaries at all: nothing ran */
    assert_int_equal(sr_claim_list_started(st, "lr", 12, started), 0);
    for (size_t k = 0; k < 12; k++)
        assert_int_equal(started[k], 0);
    put(st, "summaries/lr-3.json");
    put(st, "summaries/lr-10.json");
    put(st, "summaries/lr-99.json");    /* beyond the sweep's trials */
    put(st, "summaries/lr-x-4.json");   /* another sweep's (lr-x) */
    put(st, "summaries/lr-05.json");    /* not a trial's run id */
    put(st, "summaries/lr-6.json.tmp"); /* not a summary */
    put(st, "summaries/other-1.json");
    assert_int_equal(sr_claim_list_started(st, "lr", 12, started), 0);
    for (size_t k = 0; k < 12; k++)
        if (started[k] != (k == 3 || k == 10))
            fail_msg("trial %zu: started %d", k, started[k]);
    assert_int_equal(sr_claim_list_started(st, "lr-x", 12, started), 0);
    for (size_t k = 0; k < 12; k++)
        assert_int_equal(started[k], k == 4);
    tu_store_close(&fs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_trials_by_index),
        cmocka_unit_test(test_a_trial_that_ran_before_first),
        cmocka_unit_test(test_priority_before_ran_before),
        cmocka_unit_test(test_listing_what_ran_before),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
