/*
 * test_events.c - the run's event log (storage/run/events.h): a log's flush
 * hook is that log's own, set by whoever opened it (the supervisor, from its
 * configuration), never a process-wide one; the kinds of events are one
 * table (event_kinds.h) that the writer, the reader and docs/events.md
 * agree on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "event_kinds.h"
#include "events.h"
#include "history.h"
#include "fsutil.h"
#include "store.h"
#include "testutil.h"

struct heard {
    int calls;
    uint32_t attempt;
    size_t len;
    char last[512];
};

static void hear(void *ctx, uint32_t attempt, int node, const char *log, size_t len, size_t stored)
{
    struct heard *h = ctx;
    (void)node;
    (void)stored;
    h->calls++;
    h->attempt = attempt;
    h->len = len;
    snprintf(h->last, sizeof(h->last), "%.*s", (int)len, log);
}

static void test_each_log_tells_its_own_hook_only(void **state)
{
    (void)state;
    char *root = tu_scratch("events-hook");
    struct sr_store *st = NULL;
    assert_int_equal(sr_store_open(root, &st), 0);
    struct sr_events *a = NULL, *b = NULL;
    assert_int_equal(sr_events_open(&a, st, "r1", 0), 0);
    assert_int_equal(sr_events_open(&b, st, "r2", 3), 0);
    struct heard ha = {0}, hb = {0};
    sr_events_on_flush(a, hear, &ha);
    sr_events_on_flush(b, hear, &hb);

    sr_events_emit(a, "request", NULL);
    assert_int_equal(sr_events_flush(a), 0);
    assert_int_equal(ha.calls, 1);
    assert_int_equal(ha.attempt, 0);
    assert_non_null(strstr(ha.last, "\"event\":\"request\""));
    assert_int_equal(hb.calls, 0); /* r2's hook heard nothing of r1's log */

    sr_events_emit(b, "done", NULL);
    assert_int_equal(sr_events_flush(b), 0);
    assert_int_equal(hb.calls, 1);
    assert_int_equal(hb.attempt, 3);
    assert_null(strstr(hb.last, "request"));
    assert_int_equal(ha.calls, 1);

    /* Cleared: the log is still written, its hook no longer told. */
    sr_events_on_flush(a, NULL, NULL);
    sr_events_emit(a, "done", NULL);
    assert_int_equal(sr_events_flush(a), 0);
    assert_int_equal(ha.calls, 1);
    char *text = tu_read_text(root, "r1/events/000000.jsonl");
    assert_non_null(strstr(text, "\"event\":\"done\""));
    free(text);

    sr_events_close(a);
    sr_events_close(b);
    sr_store_close(st);
    sr_rmtree(root);
    free(root);
}

static void test_each_kind_has_one_name_both_ways(void **state)
{
    (void)state;
    assert_int_equal(sr_event_kind_of(NULL), SR_EV_UNKNOWN);
    assert_int_equal(sr_event_kind_of("no_such_event"), SR_EV_UNKNOWN);
    assert_string_equal(sr_event_name(SR_EV_UNKNOWN), "");
    assert_string_equal(sr_event_name(SR_EV_COUNT), "");
    for (int k = 1; k < SR_EV_COUNT; k++) {
        const char *name = sr_event_name((enum sr_event_kind)k);
        assert_true(*name);
        assert_int_equal(sr_event_kind_of(name), k); /* no two kinds share a name */
    }
    assert_string_equal(sr_event_name(SR_EV_START), "start");
    assert_int_equal(sr_event_kind_of("metric_summary"), SR_EV_METRIC_SUMMARY);
}

/* The kinds docs/events.md's table names, one "| `name` |" row each. */
static size_t documented_kinds(char names[][32], size_t max)
{
    const char *src = getenv("SRCDIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/docs/events.md", src && *src ? src : ".");
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[8192];
    size_t n = 0;
    int in_table = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "| event | when |", 16) == 0)
            in_table = 1;
        else if (in_table && line[0] != '|')
            break;
        else if (in_table && strncmp(line, "| `", 3) == 0 && n < max)
            sscanf(line, "| `%31[a-z_]`", names[n++]);
    }
    fclose(f);
    return n;
}

static void test_the_docs_table_names_every_kind_written(void **state)
{
    (void)state;
    char names[64][32];
    const size_t n = documented_kinds(names, 64);
    for (size_t i = 0; i < n; i++)
        if (sr_event_kind_of(names[i]) == SR_EV_UNKNOWN)
            fail_msg("docs/events.md documents \"%s\", which event_kinds.h does not name",
                     names[i]);
    /* gpu_live is told to the metrics file, never logged: not a row. */
    assert_int_equal(n, SR_EV_COUNT - 2);
}

/* The reader takes its kinds from the same table: a "withdrawn" cancels the
 * attempt's notice, so the attempt that then exits 1 failed. */
static void test_the_reader_folds_by_the_table(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    char line[256];
    const enum sr_event_kind seq[] = {SR_EV_START, SR_EV_NOTICE, SR_EV_WITHDRAWN, SR_EV_EXIT};
    for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
        snprintf(line, sizeof(line),
                 "{\"event\":\"%s\",\"unix_ms\":%zu,\"attempt\":0,\"code\":1,"
                 "\"source\":\"aws\"}",
                 sr_event_name(seq[i]), 1000 + i);
        assert_int_equal(sr_hist_add_line(&h, line, strlen(line)), 0);
    }
    sr_hist_derive(&h);
    assert_int_equal(h.n_att, 1);
    assert_int_equal(h.att[0].notice_ms, 0);
    assert_int_equal(h.att[0].end, SR_END_FAILED);
    sr_hist_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_log_tells_its_own_hook_only),
        cmocka_unit_test(test_each_kind_has_one_name_both_ways),
        cmocka_unit_test(test_the_docs_table_names_every_kind_written),
        cmocka_unit_test(test_the_reader_folds_by_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
