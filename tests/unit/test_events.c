/*
 * test_events.c - the run's event log (storage/run/events.h): a log's flush
 * hook is that log's own, set by whoever opened it (the supervisor, from its
 * configuration), never a process-wide one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "events.h"
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_log_tells_its_own_hook_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
