/*
 * test_layout.c - the store's key layout (storage/run/layout.h): each
 * builder gives the key docs/store.md shows, a key that does not fit is an
 * error and never a shorter key, the listing's parser recognises what the
 * builders make (and only that), and every name the layout uses appears in
 * docs/store.md's "Layout".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"

static void builders(void **state)
{
    (void)state;
    char k[128];
    assert_int_equal(sr_key_lease(k, sizeof(k), "r1", -1), 0);
    assert_string_equal(k, "r1/LEASE");
    assert_int_equal(sr_key_lease(k, sizeof(k), "r1", 3), 0);
    assert_string_equal(k, "r1/LEASE.3");
    assert_int_equal(sr_key_ckpt(k, sizeof(k), "r1", 42, SR_KEY_MANIFEST), 0);
    assert_string_equal(k, "r1/ckpt/0000000042/MANIFEST.json");
    assert_int_equal(sr_key_ckpt(k, sizeof(k), "r1", 7, NULL), 0);
    assert_string_equal(k, "r1/ckpt/0000000007");
    assert_int_equal(sr_key_event_log(k, sizeof(k), "r1", 3, -1), 0);
    assert_string_equal(k, "r1/events/000003.jsonl");
    assert_int_equal(sr_key_event_log(k, sizeof(k), "r1", 3, 2), 0);
    assert_string_equal(k, "r1/events/000003-n2.jsonl");
    assert_int_equal(sr_key_run(k, sizeof(k), "r1", SR_KEY_DONE), 0);
    assert_string_equal(k, "r1/DONE");
    assert_int_equal(sr_key_summaries(k, sizeof(k), "r1"), 0);
    assert_string_equal(k, "summaries/r1.json");
    assert_int_equal(sr_key_sweep(k, sizeof(k), "sw", SR_SWEEP_END "/%d.%s", 4, "done"), 0);
    assert_string_equal(k, "sweeps/sw/end/4.done");
    assert_int_equal(sr_key_sweep(k, sizeof(k), "sw", SR_SWEEP_DEF), 0);
    assert_string_equal(k, "sweeps/sw/def");
    assert_int_equal(sr_key_join(k, sizeof(k), "sweeps/sw/def", "000000.json"), 0);
    assert_string_equal(k, "sweeps/sw/def/000000.json");
}

/* A key that does not fit is refused whole, at every length short of it. */
static void too_long(void **state)
{
    (void)state;
    const char *want = "run-x/ckpt/0000000042/MANIFEST.json";
    char k[64];
    for (size_t len = 1; len <= strlen(want); len++)
        assert_int_equal(sr_key_ckpt(k, len, "run-x", 42, SR_KEY_MANIFEST), -ENAMETOOLONG);
    assert_int_equal(sr_key_ckpt(k, strlen(want) + 1, "run-x", 42, SR_KEY_MANIFEST), 0);
    assert_string_equal(k, want);
    for (size_t len = 1; len <= strlen("sweeps/sw/end/4.done"); len++)
        assert_int_equal(sr_key_sweep(k, len, "sw", SR_SWEEP_END "/%d.%s", 4, "done"),
                         -ENAMETOOLONG);
}

static void classify(void **state)
{
    (void)state;
    const char *name = NULL;
    assert_int_equal(sr_key_classify("events/000001.jsonl", &name), SR_OBJ_EVENT_LOG);
    assert_string_equal(name, "000001.jsonl");
    assert_int_equal(sr_key_classify("events/x/y", NULL), SR_OBJ_OTHER);
    assert_int_equal(sr_key_classify("events/", NULL), SR_OBJ_OTHER);
    assert_int_equal(sr_key_classify("DONE", NULL), SR_OBJ_DONE);
    assert_int_equal(sr_key_classify("DONE.x", NULL), SR_OBJ_OTHER);
    assert_int_equal(sr_key_classify("SUMMARY.json", NULL), SR_OBJ_OTHER); /* summaries/ only */
    assert_int_equal(sr_key_classify("LEASE", NULL), SR_OBJ_LEASE);
    assert_int_equal(sr_key_classify("LEASE.0", NULL), SR_OBJ_LEASE);
    assert_int_equal(sr_key_classify("LEASEX", NULL), SR_OBJ_OTHER);
    assert_int_equal(sr_key_classify("ckpt/0000000001/MANIFEST.json", NULL), SR_OBJ_OTHER);
}

/* What sr_key_event_log builds, sr_key_log_attempt reads back; nothing else. */
static void log_names(void **state)
{
    (void)state;
    char k[128];
    const uint32_t attempts[] = {0, 1, 99, 123456, 999999};
    for (size_t i = 0; i < sizeof(attempts) / sizeof(attempts[0]); i++)
        for (int node = -1; node < 12; node += 4) {
            assert_int_equal(sr_key_event_log(k, sizeof(k), "r", attempts[i], node), 0);
            const char *name = NULL;
            assert_int_equal(sr_key_classify(k + 2, &name), SR_OBJ_EVENT_LOG);
            int got = -7;
            assert_int_equal(sr_key_log_attempt(name, &got), attempts[i]);
            assert_int_equal(got, node);
        }
    const char *bad[] = {
        "",          ".jsonl",        "1.json",     "1.jsonl.tmp",      "x1.jsonl",
        "1-n.jsonl", "1-n1234.jsonl", "1-nx.jsonl", "1234567890.jsonl", "1-n1-n2.jsonl"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sr_key_log_attempt(bad[i], NULL), UINT32_MAX);
}

/* Every name of the layout is in docs/store.md's "Layout" section. */
static void documented(void **state)
{
    (void)state;
    const char *src = getenv("SRCDIR");
    assert_non_null(src);
    char path[4096];
    snprintf(path, sizeof(path), "%s/docs/store.md", src);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char doc[1 << 20];
    const size_t n = fread(doc, 1, sizeof(doc) - 1, f);
    fclose(f);
    doc[n] = '\0';
    const char *from = strstr(doc, "## Layout");
    assert_non_null(from);
    const char *to = strstr(from + 1, "\n## ");
    const size_t span = to ? (size_t)(to - from) : strlen(from);
    const char *names[] = {
        SR_KEY_LEASE "  ",     SR_KEY_DONE " ",          SR_KEY_CKPT "/<seq>/",
        SR_KEY_EVENTS "/",     SR_KEY_MANIFEST,          SR_KEY_DATA,
        SR_KEY_SUMMARIES "/",  SR_KEY_SWEEPS "/<name>/", SR_KEY_NOTICES "/",
        SR_KEY_NODES_DONE "/", SR_KEY_SWEEP " ",         SR_SWEEP_DEF "/",
        SR_SWEEP_END "/",      SR_SWEEP_BUDGET "/",      SR_SWEEP_WORKERS "/",
        SR_SWEEP_STEER "/",    SR_SWEEP_RUNGS "/",       SR_KEY_SUSPECT "/<seq>.json"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        int found = 0;
        for (const char *p = from; !found && (p = strstr(p, names[i])) && p < from + span; p++)
            found = 1;
        if (!found)
            fail_msg("docs/store.md's Layout does not name \"%s\"", names[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(builders),  cmocka_unit_test(too_long),   cmocka_unit_test(classify),
        cmocka_unit_test(log_names), cmocka_unit_test(documented),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
