/*
 * test_outcome.c - how an attempt ended (runtime/outcome/outcome.h), as a table:
 * every combination of the stop spotrun was making, the job's status, OOM,
 * group, restarts left, stall budget and hopelessness, checked against the
 * rules the record keeps (a stop spotrun made is never a success; 75 and
 * 124 only from spotrun's own decisions; the reader's cause from the log
 * equals the writer's), then the rows issue reports named, then the
 * exit-code table of docs/cli.md against the codes the table gives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outcome.h"
#include "sweep.h"

static const int codes[] = {0, 1, 3, 75, 124, 126, 127, 128 + SIGKILL, 128 + SIGTERM};
#define N_CODES (sizeof(codes) / sizeof(codes[0]))

/* The stop the log records for an attempt this decision ended: the group's
 * stop of a failing node is recorded as a notice from a peer. */
static enum sr_stop recorded_stop(const struct sr_end_facts *f)
{
    if (f->stop == SR_STOP_NONE && f->multinode && f->group_stopping && f->code != 0)
        return SR_STOP_NOTICE;
    return f->stop;
}

static void check_row(const struct sr_end_facts *f)
{
    struct sr_end e;
    memset(&e, 0x5a, sizeof(e));
    sr_attempt_end(f, &e);
    /* a stop spotrun made is never a success */
    if (f->stop != SR_STOP_NONE)
        assert_false(e.done);
    if (e.done) {
        assert_int_equal(f->code, 0);
        assert_int_equal(e.exit_code, 0);
        assert_int_equal(e.next, SR_NEXT_END);
        assert_int_equal(e.cause, SR_CAUSE_DONE);
    }
    /* 75 and 124 come only from spotrun's own decisions */
    if (e.next != SR_NEXT_RESTART && e.exit_code == 75)
        assert_true(e.next == SR_NEXT_STOP && (f->stop == SR_STOP_NOTICE || f->multinode) &&
                    !e.gave_up);
    if (e.next != SR_NEXT_RESTART && e.exit_code == 124)
        assert_true(f->stop == SR_STOP_LIMIT && e.next == SR_NEXT_STOP);
    if (e.gave_up) {
        assert_int_equal(e.next, SR_NEXT_END);
        assert_int_equal(e.end, SR_END_FAILED);
        assert_int_not_equal(e.exit_code, 0);
        assert_int_not_equal(e.exit_code, 75);
        assert_int_not_equal(e.exit_code, 124);
    }
    if (e.next == SR_NEXT_RESTART) {
        assert_true(f->restarts_left > 0 && !e.done && !e.gave_up);
        assert_true(f->stop == SR_STOP_STALL || !f->hopeless);
        assert_true(f->stop == SR_STOP_NONE || f->stop == SR_STOP_STALL);
    }
    if (f->stop == SR_STOP_NONE && f->code != 0 && !(f->multinode && f->group_stopping))
        assert_int_equal(e.next == SR_NEXT_RESTART, f->restarts_left > 0 && !f->hopeless);
    if (e.next == SR_NEXT_END && !e.done && e.cause != SR_CAUSE_STALLED)
        assert_int_equal(e.exit_code, sr_end_failure_code(f->code));
    if (f->stop != SR_STOP_NONE && f->stop != SR_STOP_STALL)
        assert_int_equal(e.exit_code, sr_end_stop_code(f->stop, f->multinode));
    if (f->stop == SR_STOP_LIMIT) /* the limit's own cause, always a stop (124) */
        assert_int_equal(e.cause, f->limit);
    /* the reader names the cause the writer decided, from the log alone */
    assert_int_equal(e.cause, sr_end_cause(recorded_stop(f), f->limit, 1, f->code, f->oom));
}

static void test_every_combination_keeps_the_rules(void **state)
{
    (void)state;
    /* every cause a limit stop can have: a time limit, a budget, the
     * sweep's operator (cancel, pause --stop) and its early stopping */
    static const enum sr_hist_cause limits[] = {SR_CAUSE_TIME_LIMIT, SR_CAUSE_BUDGET,
                                                SR_CAUSE_CANCELLED,  SR_CAUSE_PAUSED,
                                                SR_CAUSE_PRUNED,     SR_CAUSE_EXPLOIT};
    unsigned rows = 0;
    for (int stop = SR_STOP_NONE; stop <= SR_STOP_LEASE; stop++)
        for (size_t c = 0; c < N_CODES; c++)
            for (int bits = 0; bits < 192; bits++)
                for (int left = 0; left <= 2; left++) {
                    const struct sr_end_facts f = {
                        .stop = (enum sr_stop)stop,
                        .limit = limits[bits >> 5],
                        .code = codes[c],
                        .signaled = codes[c] > 128,
                        .oom = bits & 1,
                        .multinode = (bits >> 1) & 1,
                        .group_stopping = (bits >> 2) & 1,
                        .stall_give_up = (bits >> 3) & 1,
                        .hopeless = (bits >> 4) & 1,
                        .restarts_left = left,
                    };
                    check_row(&f);
                    rows++;
                }
    assert_int_equal(rows, 5 * N_CODES * 192 * 3);
}

static struct sr_end decide(struct sr_end_facts f)
{
    struct sr_end e;
    sr_attempt_end(&f, &e);
    return e;
}

/* `trap 'exit 0' TERM` under --stall-timeout: restarted, and once the
 * stalls are too many, a failure with the status of the stop, never done. */
static void test_stalled_job_exiting_0_is_not_done(void **state)
{
    (void)state;
    struct sr_end e = decide((struct sr_end_facts){.stop = SR_STOP_STALL, .restarts_left = 2});
    assert_int_equal(e.next, SR_NEXT_RESTART);
    assert_int_equal(e.cause, SR_CAUSE_STALLED);
    assert_false(e.done);
    e = decide((struct sr_end_facts){.stop = SR_STOP_STALL, .stall_give_up = 1});
    assert_int_equal(e.next, SR_NEXT_END);
    assert_int_equal(e.exit_code, 128 + SIGTERM);
    assert_true(e.gave_up);
    assert_false(e.done);
    e = decide((struct sr_end_facts){
        .stop = SR_STOP_STALL, .stall_give_up = 1, .code = 137, .signaled = 1});
    assert_int_equal(e.exit_code, 137);
}

/* A job's own 75 or 124 past --max-restarts: exit 1, cause crashed. */
static void test_jobs_own_75_and_124_are_failures(void **state)
{
    (void)state;
    struct sr_end e = decide((struct sr_end_facts){.code = 75});
    assert_int_equal(e.exit_code, 1);
    assert_int_equal(e.cause, SR_CAUSE_CRASHED);
    assert_true(e.gave_up);
    e = decide((struct sr_end_facts){.code = 124});
    assert_int_equal(e.exit_code, 1);
    e = decide((struct sr_end_facts){.code = 3});
    assert_int_equal(e.exit_code, 3);
    e = decide((struct sr_end_facts){.code = 75, .restarts_left = 1});
    assert_int_equal(e.next, SR_NEXT_RESTART);
}

/* The job exits 0 while a notice or a limit stops it (it saved and left on
 * the request, or a SIGTERM handler said sys.exit(0)): the stop's code. */
static void test_exit_0_during_a_stop_is_the_stops(void **state)
{
    (void)state;
    struct sr_end e = decide((struct sr_end_facts){.stop = SR_STOP_NOTICE});
    assert_int_equal(e.exit_code, 75);
    assert_int_equal(e.cause, SR_CAUSE_PREEMPTED);
    assert_false(e.done);
    e = decide((struct sr_end_facts){.stop = SR_STOP_LIMIT, .limit = SR_CAUSE_BUDGET});
    assert_int_equal(e.exit_code, 124);
    assert_int_equal(e.cause, SR_CAUSE_BUDGET);
    /* pruned by the sweep's early stopping: a limit's stop, never done */
    e = decide((struct sr_end_facts){.stop = SR_STOP_LIMIT, .limit = SR_CAUSE_PRUNED});
    assert_int_equal(e.exit_code, 124);
    assert_int_equal(e.cause, SR_CAUSE_PRUNED);
    assert_false(e.done);
    assert_string_equal(sr_hist_cause_name(SR_CAUSE_PRUNED), "pruned");
    e = decide((struct sr_end_facts){.stop = SR_STOP_LEASE, .code = 143, .signaled = 1});
    assert_int_equal(e.exit_code, 73);
    assert_int_equal(e.cause, SR_CAUSE_LEASE_LOST);
}

/* docs/cli.md's table (## Exit codes of `spotrun run`) says what the table
 * above gives: a row for 0, 75, 124 and 73, and the job's code row says
 * that its own 75 and 124 become 1. */
/* A "limit" event's cause word names the limit both ways: a sweep's
 * operator stop is "cancelled" or "paused", its early stopping "pruned",
 * never a time limit. */
static void test_limit_causes_are_named_both_ways(void **state)
{
    (void)state;
    assert_string_equal(sr_hist_cause_name(SR_CAUSE_CANCELLED), "cancelled");
    assert_string_equal(sr_hist_cause_name(SR_CAUSE_PAUSED), "paused");
    assert_string_equal(sr_hist_cause_name(SR_CAUSE_PRUNED), "pruned");
    assert_string_equal(sr_hist_cause_name(SR_CAUSE_EXPLOIT), "exploit");
    assert_string_equal(sr_hist_cause_name(SR_CAUSE_QUOTA), "quota");
    for (int c = SR_CAUSE_NONE; c < SR_CAUSE_COUNT; c++) {
        const enum sr_hist_cause l = sr_limit_cause_of(sr_hist_cause_name((enum sr_hist_cause)c));
        const int is_limit = c == SR_CAUSE_TIME_LIMIT || c == SR_CAUSE_BUDGET ||
                             c == SR_CAUSE_CANCELLED || c == SR_CAUSE_PAUSED ||
                             c == SR_CAUSE_PRUNED || c == SR_CAUSE_EXPLOIT || c == SR_CAUSE_QUOTA;
        assert_int_equal(l, is_limit ? c : SR_CAUSE_NONE);
    }
    assert_int_equal(sr_limit_cause_of(NULL), SR_CAUSE_NONE);
    assert_int_equal(sr_limit_cause_of("cancel"), SR_CAUSE_NONE);
}

/* How a run ends, one table: each end's exit code is the one its stop
 * gives, its record is what the attempt-end table gives for that stop
 * (and the reader's cause is the writer's), 75 and 124 only from a stop
 * spotrun made (or a notice at the finish), the trial marks follow. */
static void test_run_ends_follow_one_table(void **state)
{
    (void)state;
    for (int i = 0; i < SR_RUN_END_COUNT; i++) {
        const struct sr_run_end_row *row = sr_run_end_row((enum sr_run_end)i);
        assert_non_null(row->name);
        assert_true(row->name[0] != '\0');
        for (int j = 0; j < i; j++)
            assert_string_not_equal(row->name, sr_run_end_row((enum sr_run_end)j)->name);
        const int multinode = i == SR_RUN_GROUP_REQUEUE;
        if (row->stop != SR_STOP_NONE) {
            assert_int_equal(row->exit_code, sr_end_stop_code(row->stop, multinode));
            const struct sr_end_facts f = {.stop = row->stop,
                                           .limit = SR_CAUSE_BUDGET,
                                           .multinode = multinode,
                                           .restarts_left = 1};
            struct sr_end e;
            sr_attempt_end(&f, &e);
            assert_int_equal(e.end, row->record);
            assert_int_equal(e.exit_code, row->exit_code);
            assert_int_equal(e.cause, sr_end_cause(row->stop, SR_CAUSE_BUDGET, 1, 0, 0));
            assert_false(e.done);
            assert_int_equal(row->trial, SR_TRIAL_OPEN);
            continue;
        }
        if (row->record == SR_END_DONE) { /* the job exited 0 by itself */
            const struct sr_end_facts f = {.stop = SR_STOP_NONE, .code = 0};
            struct sr_end e;
            sr_attempt_end(&f, &e);
            assert_true(e.done);
            assert_int_equal(e.end, row->record);
            assert_int_equal(sr_end_cause(SR_STOP_NONE, SR_CAUSE_NONE, 1, 0, 0), SR_CAUSE_DONE);
            /* 75 only when a notice came as it finished; the trial is done
             * once every node's job is */
            assert_int_equal(row->exit_code, i == SR_RUN_DONE_NOTICE ? 75 : 0);
            assert_int_equal(row->trial, i == SR_RUN_NODE_DONE ? SR_TRIAL_OPEN : SR_TRIAL_DONE);
        }
    }
    /* failed: the job's code, as the attempt-end table gives it up */
    const struct sr_run_end_row *failed = sr_run_end_row(SR_RUN_FAILED);
    const struct sr_end_facts f = {.stop = SR_STOP_NONE, .code = 3, .restarts_left = 0};
    struct sr_end e;
    sr_attempt_end(&f, &e);
    assert_true(e.gave_up);
    assert_int_equal(e.end, failed->record);
    assert_int_equal(failed->exit_code, -1);
    assert_int_equal(failed->trial, SR_TRIAL_FAILED);
    assert_null(failed->event);
    /* the events the record reads an end from */
    assert_string_equal(sr_run_end_row(SR_RUN_DONE)->event, "done");
    assert_string_equal(sr_run_end_row(SR_RUN_NODE_DONE)->event, "node_done");
    assert_string_equal(sr_run_end_row(SR_RUN_PREEMPTED)->event, "preempted");
    /* spotrun's own failure is nobody's record, nor a trial's mark */
    assert_int_equal(sr_run_end_row(SR_RUN_ERROR)->record, SR_END_OPEN);
    assert_int_equal(sr_run_end_row(SR_RUN_ERROR)->trial, SR_TRIAL_OPEN);
}

static void test_cli_exit_table_follows(void **state)
{
    (void)state;
    const char *src = getenv("SRCDIR");
    if (!src)
        skip();
    char path[4096];
    snprintf(path, sizeof(path), "%s/docs/cli.md", src);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    static char text[1 << 20];
    const size_t n = fread(text, 1, sizeof(text) - 1, fp);
    fclose(fp);
    text[n] = '\0';
    const char *sec = strstr(text, "## Exit codes of `spotrun run`");
    assert_non_null(sec);
    const char *end = strstr(sec + 1, "\n## ");
    char table[8192];
    const size_t len = end ? (size_t)(end - sec) : strlen(sec);
    assert_true(len < sizeof(table));
    memcpy(table, sec, len);
    table[len] = '\0';
    char row[32];
    const int stops[] = {SR_STOP_NOTICE, SR_STOP_LIMIT, SR_STOP_LEASE};
    for (size_t i = 0; i < 3; i++) {
        snprintf(row, sizeof(row), "\n| %d |", sr_end_stop_code((enum sr_stop)stops[i], 0));
        assert_non_null(strstr(table, row));
    }
    assert_non_null(strstr(table, "\n| 0 |"));
    for (int i = 0; i < SR_RUN_END_COUNT; i++) { /* every run end's own code */
        const int code = sr_run_end_row((enum sr_run_end)i)->exit_code;
        snprintf(row, sizeof(row), "\n| %d |", code);
        if (code >= 0)
            assert_non_null(strstr(table, row));
    }
    snprintf(row, sizeof(row), "exit %d", sr_end_failure_code(75));
    assert_non_null(strstr(table, row));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_combination_keeps_the_rules),
        cmocka_unit_test(test_stalled_job_exiting_0_is_not_done),
        cmocka_unit_test(test_jobs_own_75_and_124_are_failures),
        cmocka_unit_test(test_exit_0_during_a_stop_is_the_stops),
        cmocka_unit_test(test_limit_causes_are_named_both_ways),
        cmocka_unit_test(test_run_ends_follow_one_table),
        cmocka_unit_test(test_cli_exit_table_follows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
