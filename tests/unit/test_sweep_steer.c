/*
 * test_sweep_steer.c - a sweep's steering (runtime/sweep/sweep_steer.h): the
 * fold of the history (cancel then retry, pause then resume, the last
 * priority wins, trials past the sweep ignored), objects that are not
 * steering actions left out, racing writers both landing with consecutive
 * numbers, and who and when recorded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "log.h"
#include "sweep.h"
#include "sweep_steer.h"

static struct sr_steer_entry act(unsigned seq, enum sr_steer_action a, long *trials, size_t n)
{
    return (struct sr_steer_entry){.seq = seq, .action = a, .trials = trials, .n_trials = n};
}

/* Cancel, retry and cancel again: the last word on each trial stands. */
static void test_fold_cancel_retry(void **state)
{
    (void)state;
    long a[] = {1, 3}, b[] = {3}, c[] = {1, 7, 99};
    const struct sr_steer_entry log[] = {
        act(0, SR_STEER_CANCEL, a, 2),
        act(1, SR_STEER_RETRY, b, 1),
        act(2, SR_STEER_RETRY, c, 3), /* 99: past the sweep, ignored */
        act(3, SR_STEER_CANCEL, c, 3),
    };
    struct sr_steer_state s;
    assert_int_equal(sr_steer_fold(log, 4, 8, &s), 0);
    assert_int_equal(s.n_log, 4);
    for (size_t k = 0; k < 8; k++)
        assert_int_equal(sr_steer_cancelled(&s, k), k == 1 || k == 7);
    assert_int_equal(sr_steer_cancelled(&s, 99), 0); /* out of range: never */
    assert_int_equal(s.paused, 0);
    sr_steer_free(&s); /* the log is the caller's: not freed */
    assert_int_equal(log[0].n_trials, 2);
}

/* Pause, pause --stop, resume: the pause in force is the last one, and
 * resume ends it whatever it was. */
static void test_fold_pause_resume(void **state)
{
    (void)state;
    struct sr_steer_entry log[] = {act(0, SR_STEER_PAUSE, NULL, 0), act(1, SR_STEER_PAUSE, NULL, 0),
                                   act(2, SR_STEER_RESUME, NULL, 0)};
    log[1].stop = 1;
    struct sr_steer_state s;
    assert_int_equal(sr_steer_fold(log, 1, 4, &s), 0);
    assert_true(s.paused);
    assert_false(s.pause_stop);
    assert_ptr_equal(s.paused_by, &log[0]);
    sr_steer_free(&s);
    assert_int_equal(sr_steer_fold(log, 2, 4, &s), 0);
    assert_true(s.paused && s.pause_stop);
    assert_ptr_equal(s.paused_by, &log[1]);
    sr_steer_free(&s);
    assert_int_equal(sr_steer_fold(log, 3, 4, &s), 0);
    assert_false(s.paused || s.pause_stop);
    assert_null(s.paused_by);
    sr_steer_free(&s);
}

/* Priorities: 0 unless set, the last setting of a trial wins. */
static void test_fold_priority(void **state)
{
    (void)state;
    long a[] = {0, 2}, b[] = {2};
    struct sr_steer_entry log[] = {act(0, SR_STEER_PRIORITY, a, 2),
                                   act(1, SR_STEER_PRIORITY, b, 1)};
    log[0].priority = 5;
    log[1].priority = -3;
    struct sr_steer_state s;
    assert_int_equal(sr_steer_fold(log, 2, 3, &s), 0);
    assert_int_equal(sr_steer_priority(&s, 0), 5);
    assert_int_equal(sr_steer_priority(&s, 1), 0);
    assert_int_equal(sr_steer_priority(&s, 2), -3);
    assert_int_equal(sr_steer_priority(&s, 3), 0);
    sr_steer_free(&s);
}

/* Objects are believed only when they are this sweep's action with this
 * number; anything else is not a steering action. */
static void test_parse_refuses_what_is_not_an_action(void **state)
{
    (void)state;
    struct sr_steer_entry e;
    const char *good = "{\"sweep\":\"s\",\"seq\":4,\"action\":\"cancel\",\"trials\":[2,5],"
                       "\"by\":\"ann@h\\u001b[31m\",\"unix_ms\":7}";
    assert_int_equal(sr_steer_parse(good, strlen(good), "s", 4, &e), 0);
    assert_int_equal(e.action, SR_STEER_CANCEL);
    assert_int_equal(e.n_trials, 2);
    assert_int_equal(e.trials[1], 5);
    assert_int_equal(e.unix_ms, 7);
    assert_null(strchr(e.by, '\x1b')); /* terminal-safe */
    sr_steer_entry_free(&e);
    const char *bad[] = {
        "not json",
        "{\"sweep\":\"other\",\"seq\":4,\"action\":\"cancel\",\"trials\":[1]}",
        "{\"sweep\":\"s\",\"seq\":5,\"action\":\"cancel\",\"trials\":[1]}",
        "{\"sweep\":\"s\",\"seq\":4,\"action\":\"explode\"}",
        "{\"sweep\":\"s\",\"seq\":4,\"action\":\"cancel\",\"trials\":[]}",
        "{\"sweep\":\"s\",\"seq\":4,\"action\":\"cancel\",\"trials\":[-1]}",
        "{\"sweep\":\"s\",\"seq\":4,\"action\":\"retry\",\"trials\":[\"1\"]}",
        "{\"sweep\":\"s\",\"seq\":4,\"action\":\"priority\",\"trials\":[1]}",
        "{\"sweep\":\"s\",\"seq\":4,\"action\":\"priority\",\"trials\":[1],\"priority\":1e30}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sr_steer_parse(bad[i], strlen(bad[i]), "s", 4, &e), -EBADMSG);
}

/* Two writers racing (each lists before the other writes): both actions
 * land, with consecutive numbers; the store's fold is theirs, with who and
 * when. A stray object is left out and counted. */
static void test_store_history(void **state)
{
    struct tu_store *f = *state;
    struct sr_steer_state s;
    assert_int_equal(sr_steer_read(f->st, "sw", 4, &s), 0); /* none yet: empty */
    assert_int_equal(s.n_log, 0);
    assert_int_equal(s.next_seq, 0);
    assert_int_equal(sr_steer_grew(f->st, "sw", &s), 0);
    sr_steer_free(&s);
    long one[] = {1}, two[] = {2};
    struct sr_steer_entry a = act(0, SR_STEER_CANCEL, one, 1), b = act(0, SR_STEER_CANCEL, two, 1);
    unsigned sa = 99, sb = 99;
    /* b's writer took number 0 first: a's create-only put loses and goes on */
    const char *taken = "{\"sweep\":\"sw\",\"seq\":0,\"action\":\"pause\",\"by\":\"x@y\"}";
    assert_int_equal(
        sr_store_put_if(f->st, "sweeps/sw/steer/000000.json", taken, strlen(taken), NULL, NULL), 0);
    assert_int_equal(sr_steer_write(f->st, "sw", &a, &sa), 0);
    assert_int_equal(sr_steer_write(f->st, "sw", &b, &sb), 0);
    assert_int_equal(sa, 1);
    assert_int_equal(sb, 2);
    assert_non_null(strchr(a.by, '@'));
    assert_true(a.unix_ms > 0);
    const char *junk = "{}";
    assert_int_equal(
        sr_store_put_if(f->st, "sweeps/sw/steer/000003.json", junk, strlen(junk), NULL, NULL), 0);
    assert_int_equal(sr_steer_read(f->st, "sw", 4, &s), 0);
    assert_int_equal(s.n_log, 3);
    assert_int_equal(s.bad, 1);
    assert_true(s.paused);
    assert_true(sr_steer_cancelled(&s, 1) && sr_steer_cancelled(&s, 2));
    assert_false(sr_steer_cancelled(&s, 0));
    assert_string_equal(s.log[1].by, a.by);
    /* a poller's look: the next number after the newest listed (a bad one
     * too), which is not there until an action is written */
    assert_int_equal(s.next_seq, 4);
    assert_int_equal(sr_steer_grew(f->st, "sw", &s), 0);
    sr_err_clear();
    /* a poller's reread GETs only what is new: action 1 is not read again
     * (here rewritten behind its back, which create-only never allows) */
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/sweeps/sw/steer/000001.json", f->root);
    FILE *w = fopen(path, "w");
    assert_non_null(w);
    fputs("{\"sweep\":\"sw\",\"seq\":1,\"action\":\"retry\",\"trials\":[1]}", w);
    fclose(w);
    long three[] = {3};
    struct sr_steer_entry c = act(0, SR_STEER_CANCEL, three, 1);
    assert_int_equal(sr_steer_write(f->st, "sw", &c, NULL), 0);
    assert_int_equal(sr_steer_grew(f->st, "sw", &s), 1);
    struct sr_steer_state again, fresh;
    assert_int_equal(sr_steer_reread(f->st, "sw", 4, &s, &again), 0);
    assert_int_equal(again.n_log, 4);
    assert_int_equal(again.next_seq, 5);
    assert_int_equal(sr_steer_grew(f->st, "sw", &again), 0);
    assert_true(sr_steer_cancelled(&again, 1) && sr_steer_cancelled(&again, 3));
    assert_int_equal(sr_steer_read(f->st, "sw", 4, &fresh), 0); /* reads all: the rewrite */
    assert_false(sr_steer_cancelled(&fresh, 1));
    sr_err_clear();
    sr_steer_free(&fresh);
    sr_steer_free(&again);
    sr_steer_free(&s);
}

/* sweep delete takes the history with the sweep; an end mark of each new
 * state is named by it, listed and cleared one by one. */
static void test_marks_and_delete(void **state)
{
    struct tu_store *f = *state;
    struct sr_trial_end_info c = {.state = SR_TRIAL_CANCELLED, .exit_code = 124};
    snprintf(c.by, sizeof(c.by), "ann@h");
    struct sr_trial_end_info p = {.state = SR_TRIAL_PRUNED, .exit_code = 124};
    assert_int_equal(sr_sweep_mark_end(f->st, "sw", 1, &c), 0);
    assert_int_equal(sr_sweep_mark_end(f->st, "sw", 2, &p), 0);
    unsigned char ends[4];
    assert_int_equal(sr_sweep_list_ends(f->st, "sw", 4, ends), 0);
    assert_int_equal(ends[1], SR_TRIAL_CANCELLED);
    assert_int_equal(ends[2], SR_TRIAL_PRUNED);
    struct sr_trial_end_info got;
    assert_int_equal(sr_sweep_read_end(f->st, "sw", 1, &got), 0);
    assert_int_equal(got.state, SR_TRIAL_CANCELLED);
    assert_int_equal(got.exit_code, 124);
    assert_string_equal(got.by, "ann@h");
    assert_int_equal(sr_sweep_clear_mark(f->st, "sw", 1, SR_TRIAL_CANCELLED), 0);
    assert_int_equal(sr_sweep_list_ends(f->st, "sw", 4, ends), 0);
    assert_int_equal(ends[1], SR_TRIAL_OPEN);
    long one[] = {1};
    struct sr_steer_entry a = act(0, SR_STEER_CANCEL, one, 1);
    assert_int_equal(sr_steer_write(f->st, "sw", &a, NULL), 0);
    assert_int_equal(sr_sweep_remove(f->st, "sw"), 0);
    struct sr_steer_state s;
    assert_int_equal(sr_steer_read(f->st, "sw", 4, &s), 0);
    assert_int_equal(s.n_log, 0);
    sr_steer_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fold_cancel_retry),
        cmocka_unit_test(test_fold_pause_resume),
        cmocka_unit_test(test_fold_priority),
        cmocka_unit_test(test_parse_refuses_what_is_not_an_action),
        cmocka_unit_test_setup_teardown(test_store_history, tu_store_setup, tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_marks_and_delete, tu_store_setup, tu_store_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
