/*
 * test_quarantine.c - suspect checkpoints (storage/run/quarantine.h): which
 * ends of an attempt count against the checkpoint it restored, that two in
 * a row mark it, the reason said, what gc keeps, and the marks in a file
 * store (create-only, listed, read back, forgotten).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "quarantine.h"

/* The job exited with code by itself right after restoring seq, and had
 * talked to the wrapper. */
static struct sr_suspect_facts failed(uint64_t seq, int code)
{
    return (struct sr_suspect_facts){.restored_seq = seq, .attempt = 1, .code = code, .talked = 1};
}

static struct sr_suspect_facts crashed(uint64_t seq, int signo)
{
    struct sr_suspect_facts f = failed(seq, 128 + signo);
    f.signaled = 1;
    return f;
}

static void two_failures_after_one_restore_mark_it(void **state)
{
    (void)state;
    struct sr_suspect_row row = {0};
    struct sr_suspect_facts f = failed(4, 1);
    assert_int_equal(sr_suspect_judge(&row, &f), SR_SUSPECT_COUNTED);
    f.attempt = 2;
    assert_int_equal(sr_suspect_judge(&row, &f), SR_SUSPECT_MARK);
    assert_int_equal(row.seq, 4);
    assert_int_equal(row.attempts[0], 1);
    assert_int_equal(row.attempts[1], 2);
    char why[256];
    sr_suspect_reason(&row, why, sizeof(why));
    assert_string_equal(why, "job failed twice right after restoring it (exit 1, exit 1)");
}

static void crash_signals_count_and_are_named(void **state)
{
    (void)state;
    struct sr_suspect_row row = {0};
    struct sr_suspect_facts a = crashed(3, SIGSEGV), b = failed(3, 2);
    assert_int_equal(sr_suspect_judge(&row, &a), SR_SUSPECT_COUNTED);
    assert_int_equal(sr_suspect_judge(&row, &b), SR_SUSPECT_MARK);
    char why[256];
    sr_suspect_reason(&row, why, sizeof(why));
    assert_string_equal(why,
                        "job failed twice right after restoring it (killed by SIGSEGV, exit 2)");
}

static void another_checkpoint_starts_a_new_row(void **state)
{
    (void)state;
    struct sr_suspect_row row = {0};
    struct sr_suspect_facts a = failed(4, 1), b = failed(3, 1);
    assert_int_equal(sr_suspect_judge(&row, &a), SR_SUSPECT_COUNTED);
    assert_int_equal(sr_suspect_judge(&row, &b), SR_SUSPECT_COUNTED);
    assert_int_equal(row.seq, 3);
    assert_int_equal(sr_suspect_judge(&row, &b), SR_SUSPECT_MARK);
}

/* Each of these ends is not the checkpoint's failure, and ends the row. */
static void ends_that_do_not_count_break_the_row(void **state)
{
    (void)state;
    struct sr_suspect_facts not [12];
    size_t n = 0;
    not [n] = failed(0, 1), n++;                                /* a fresh start */
    not [n] = failed(4, 0), n++;                                /* it finished */
    not [n] = failed(4, 1), not [n].committed = 1, n++;         /* it committed first */
    not [n] = failed(4, 1), not [n].stop = SR_STOP_NOTICE, n++; /* a notice's stop */
    not [n] = failed(4, 75), not [n].stop = SR_STOP_LIMIT, n++; /* a limit's */
    not [n] = failed(4, 1), not [n].stop = SR_STOP_STALL, n++;  /* the watchdog's */
    not [n] = crashed(4, SIGKILL), not [n].oom = 1, n++;        /* out of memory */
    not [n] = crashed(4, SIGKILL), n++;                         /* killed from outside */
    not [n] = crashed(4, SIGTERM), n++;
    not [n] = failed(4, 143), n++;                      /* a shell's TERM-killed command */
    not [n] = failed(4, 127), not [n].talked = 0, n++;  /* a command that cannot run */
    not [n] = failed(4, 1), not [n].multinode = 1, n++; /* one node of a group */
    for (size_t i = 0; i < n; i++) {
        struct sr_suspect_row row = {0};
        struct sr_suspect_facts f = failed(4, 1);
        assert_int_equal(sr_suspect_judge(&row, &f), SR_SUSPECT_COUNTED);
        if (sr_suspect_judge(&row, &not [i]) != SR_SUSPECT_NOT)
            fail_msg("end %zu counted against the checkpoint", i);
        assert_int_equal(sr_suspect_judge(&row, &f), SR_SUSPECT_COUNTED); /* a new row */
    }
}

static void exit_127_after_talking_counts(void **state)
{
    (void)state;
    struct sr_suspect_row row = {0};
    struct sr_suspect_facts f = failed(2, 127);
    assert_int_equal(sr_suspect_judge(&row, &f), SR_SUSPECT_COUNTED);
    assert_int_equal(sr_suspect_judge(&row, &f), SR_SUSPECT_MARK);
}

static void a_marked_row_starts_over(void **state)
{
    (void)state;
    struct sr_suspect_row row = {0};
    struct sr_suspect_facts f = failed(4, 1);
    sr_suspect_judge(&row, &f);
    assert_int_equal(sr_suspect_judge(&row, &f), SR_SUSPECT_MARK);
    assert_int_equal(sr_suspect_judge(&row, &f), SR_SUSPECT_COUNTED);
}

/* A list of complete checkpoints seq 1..n, oldest first. */
static struct sr_ckpt_list seqs(struct sr_manifest *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = (struct sr_manifest){.seq = i + 1};
    return (struct sr_ckpt_list){.v = v, .n = n};
}

static void gc_keeps_the_newest_trusted_ones(void **state)
{
    (void)state;
    struct sr_manifest v[5];
    const struct sr_ckpt_list l = seqs(v, 5);
    const struct sr_suspect_set none = {0};
    assert_int_equal(sr_suspect_gc_drop(&l, &none, 2), 3); /* no marks: as before */
    assert_int_equal(sr_suspect_gc_drop(&l, &none, 9), 0);
    uint64_t five[] = {5};
    const struct sr_suspect_set newest = {.seq = five, .n = 1};
    assert_int_equal(sr_suspect_gc_drop(&l, &newest, 1), 3); /* 4 and the suspect 5 stay */
    assert_int_equal(sr_suspect_gc_drop(&l, &newest, 2), 2);
    uint64_t all_but_one[] = {2, 3, 4, 5};
    const struct sr_suspect_set most = {.seq = all_but_one, .n = 4};
    assert_int_equal(sr_suspect_gc_drop(&l, &most, 1), 0); /* 1 is the only trusted one */
    assert_int_equal(sr_suspect_gc_drop(&l, &most, 2), 0); /* fewer than 2 trusted: all stay */
    uint64_t old[] = {1};
    const struct sr_suspect_set oldest = {.seq = old, .n = 1};
    assert_int_equal(sr_suspect_gc_drop(&l, &oldest, 4), 1); /* the suspect 1 is older */
    assert_int_equal(sr_suspect_gc_drop(&l, &oldest, 5), 0);
    assert_int_equal(sr_suspect_gc_drop(&l, &oldest, 3), 2);
}

static void marks_in_a_store(void **state)
{
    (void)state;
    struct tu_store fs;
    tu_store_open(&fs, "quarantine");
    struct sr_store *st = fs.st;
    struct sr_suspect_set set;
    assert_int_equal(sr_suspect_list(st, "r1", &set), 0);
    assert_int_equal(set.n, 0);
    struct sr_suspect_mark mk;
    assert_int_equal(sr_suspect_load(st, "r1", 7, &mk), -ENOENT);

    struct sr_suspect_row row = {.seq = 7, .n = 2, .attempts = {3, 4}, .codes = {1, 1}};
    assert_int_equal(sr_suspect_put(st, "r1", 700, &row), 0);
    row.codes[1] = 9;
    assert_int_equal(sr_suspect_put(st, "r1", 700, &row), 0); /* create-only: the first stands */
    assert_int_equal(sr_suspect_load(st, "r1", 7, &mk), 0);
    assert_int_equal(mk.step, 700);
    assert_string_equal(mk.reason, "job failed twice right after restoring it (exit 1, exit 1)");
    assert_true(mk.host[0] && mk.time[0]);

    /* A name that is not a mark is not one. */
    char junk[PATH_MAX + 32];
    snprintf(junk, sizeof(junk), "%s/r1/suspect/notes.txt", fs.root);
    assert_int_equal(sr_write_file_atomic(junk, "x", 1), 0);
    assert_int_equal(sr_suspect_list(st, "r1", &set), 0);
    assert_int_equal(set.n, 1);
    assert_int_equal(set.seq[0], 7);
    assert_true(sr_suspect_has(&set, 7));
    assert_false(sr_suspect_has(&set, 6));
    sr_suspect_set_free(&set);

    assert_int_equal(sr_suspect_forget(st, "r1", 7), 0);
    assert_int_equal(sr_suspect_forget(st, "r1", 7), 0);
    assert_int_equal(sr_suspect_load(st, "r1", 7, &mk), -ENOENT);
    tu_store_close(&fs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_failures_after_one_restore_mark_it),
        cmocka_unit_test(crash_signals_count_and_are_named),
        cmocka_unit_test(another_checkpoint_starts_a_new_row),
        cmocka_unit_test(ends_that_do_not_count_break_the_row),
        cmocka_unit_test(exit_127_after_talking_counts),
        cmocka_unit_test(a_marked_row_starts_over),
        cmocka_unit_test(gc_keeps_the_newest_trusted_ones),
        cmocka_unit_test(marks_in_a_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
