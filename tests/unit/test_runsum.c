/*
 * test_runsum.c - a run's summary (runtime/record/runsum.h): what a history
 * says per attempt, the round trip through its JSON, hostile
 * summaries rejected field by field, and load_all reading summaries from a
 * file store, falling back to the event logs when one is missing, invalid
 * or stale.
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
#include <unistd.h>

#include "histutil.h"
#include "history.h"
#include "runsum.h"
#include "runsum_int.h"
#include "store.h"

#define T0 1700000000000LL

/* attempt 0 on a p3 in us-east-1a: checkpoint staged at 10 s, crash at
 * 25 s (lost 15 s); attempt 1: notice at 50 s, preempted at 54 s after a
 * checkpoint staged at 51 s (lost 3 s); attempt 2: still running. */
static void scenario(struct sr_history *h)
{
    EV(h, 0, 0, "start",
       ",\"host\":\"a\",\"cloud\":\"aws\",\"instance_type\":\"p3.2xlarge\",\"zone\":"
       "\"us-east-1a\",\"price_per_hour\":0.9,\"labels\":{\"team\":\"nlp\"}");
    EV(h, 10000, 0, "staged", ",\"seq\":1,\"step\":100,\"seconds\":0.5");
    EV(h, 11000, 0, "persisted", ",\"seq\":1,\"step\":100,\"seconds\":1.0");
    EV(h, 20000, 0, "gpu",
       ",\"samples\":20,\"devices\":2,\"util_mean\":44.5,\"util_p50\":40,\"util_p95\":100,"
       "\"idle_share\":0.25,\"mem_used_max\":1000,\"power_mean_w\":150");
    EV(h, 25000, 0, "exit", ",\"code\":3");
    EV(h, 25001, 0, "restart", ",\"restart\":1");
    EV(h, 26100, 1, "start", ",\"host\":\"a\",\"resumed\":true,\"seq\":1,\"step\":100");
    EV(h, 40000, 1, "staged", ",\"seq\":2,\"step\":200,\"seconds\":1.5");
    EV(h, 50000, 1, "notice", ",\"source\":\"aws\",\"ms_left\":120000");
    EV(h, 51000, 1, "staged", ",\"seq\":3,\"step\":250,\"seconds\":2.5");
    EV(h, 53000, 1, "persisted", ",\"seq\":3,\"step\":250,\"seconds\":3.0");
    EV(h, 54000, 1, "exit", ",\"code\":143,\"signal\":\"TERM\"");
    EV(h, 54001, 1, "preempted", ",\"durable_seq\":3");
    EV(h, 60000, 2, "start",
       ",\"host\":\"b\",\"resumed\":true,\"seq\":3,\"labels\":{\"team\":\"nlp\",\"user\":\"ana\"}");
    EV(h, 65000, 2, "staged", ",\"seq\":4,\"step\":300,\"seconds\":0.25");
    sr_hist_derive(h);
}

static void the_summary_says_what_the_history_says_per_attempt(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    scenario(&h);
    struct sr_runsum r;
    assert_int_equal(sr_runsum_from_history(&h, "run-a", &r), 0);
    assert_string_equal(r.run, "run-a");
    assert_int_equal(r.state, SR_STATE_RUNNING);
    assert_int_equal(r.labels.n, 2);
    assert_int_equal(r.n_att, 3);
    const struct sr_runsum_attempt *a = r.att;
    assert_int_equal(a[0].cause, SR_CAUSE_CRASHED);
    assert_string_equal(a[0].instance_type, "p3.2xlarge");
    assert_string_equal(a[0].zone, "us-east-1a");
    assert_string_equal(a[0].cloud, "aws");
    assert_true(a[0].price_per_hour == 0.9);
    assert_int_equal(a[0].lost_ms, 15000);
    assert_int_equal(a[0].start_ms, T0);
    assert_int_equal(a[0].end_ms, T0 + 25000);
    assert_int_equal(a[0].gpus, 2);
    assert_int_equal(a[0].gpu_samples, 20);
    assert_true(a[0].gpu_util_mean == 44.5);
    assert_true(a[0].stage_seconds == 0.5);
    assert_int_equal(a[1].cause, SR_CAUSE_PREEMPTED);
    assert_int_equal(a[1].lost_ms, 3000);
    assert_int_equal(a[1].notices, 1);
    assert_true(a[1].stage_seconds == 4.0);
    assert_int_equal(a[2].cause, SR_CAUSE_NONE); /* open: up to its last event */
    assert_int_equal(a[2].end_ms, T0 + 65000);
    assert_int_equal(a[2].nodes, 1);
    sr_runsum_free(&r);
    sr_hist_free(&h);
}

static void a_summary_survives_the_round_trip_through_json(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    scenario(&h);
    struct sr_runsum r, back;
    assert_int_equal(sr_runsum_from_history(&h, "run-a", &r), 0);
    json_t *o = sr_runsum_to_json(&r);
    assert_non_null(o);
    char *text = json_dumps(o, JSON_COMPACT);
    assert_int_equal(sr_runsum_parse(text, strlen(text), &back), 0);
    assert_string_equal(back.run, r.run);
    assert_int_equal(back.state, r.state);
    assert_int_equal(back.labels.n, r.labels.n);
    assert_int_equal(back.n_att, r.n_att);
    for (size_t i = 0; i < r.n_att; i++)
        assert_memory_equal(&back.att[i], &r.att[i], sizeof(r.att[i]));
    assert_int_equal(back.from_logs, 0);
    free(text);
    json_decref(o);
    sr_runsum_free(&back);
    sr_runsum_free(&r);
    sr_hist_free(&h);
}

/* A good summary with one attempt whose field key is replaced by value
 * (raw JSON), or the top-level key when top. */
static int parse_with(int top, const char *key, const char *value)
{
    json_t *att = json_pack(
        "{s:i, s:i, s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:i, s:f, s:i, s:i, s:f, s:f, s:f, s:i, "
        "s:i}",
        "attempt", 0, "nodes", 1, "host", "a", "cloud", "aws", "instance_type", "p3", "zone", "z",
        "start_ms", (json_int_t)T0, "end_ms", (json_int_t)T0 + 1000, "cause", "crashed", "lost_ms",
        10, "price_per_hour", 1.0, "gpus", 1, "gpu_samples", 3, "gpu_util_mean", 50.0,
        "gpu_idle_share", 0.5, "stage_seconds", 1.0, "notices", 0, "log_bytes", 1234);
    json_t *o = json_pack("{s:i, s:s, s:s, s:{s:s}, s:[o]}", "version", SR_RUNSUM_VERSION, "run",
                          "run-a", "state", "failed", "labels", "team", "nlp", "attempts", att);
    assert_non_null(o);
    if (key) {
        json_t *v = json_loads(value, JSON_DECODE_ANY, NULL);
        json_t *where = top ? o : json_array_get(json_object_get(o, "attempts"), 0);
        if (v)
            json_object_set_new(where, key, v);
        else
            json_object_del(where, key); /* value NULL: the field is missing */
    }
    /* A digest that matches what was changed (the bounds are tested), but
     * for a test of the digest itself. */
    char digest[17];
    assert_int_equal(sr_runsum_digest(o, digest), 0);
    if (!key || strcmp(key, "digest") != 0)
        json_object_set_new(o, "digest", json_string(digest));
    struct sr_runsum r;
    const int rc = sr_runsum_from_json(o, &r);
    if (rc == 0)
        assert_int_equal(r.n_att, 1);
    else
        assert_int_equal(r.n_att, 0);
    sr_runsum_free(&r);
    json_decref(o);
    return rc;
}

static void a_hostile_summary_is_rejected(void **state)
{
    (void)state;
    assert_int_equal(parse_with(0, NULL, NULL), 0);
    static const struct {
        int top;
        const char *key, *value;
    } bad[] = {
        {1, "version", "1"}, /* no log sizes: stale */
        {1, "version", "2"}, /* lost work counted from staging, pruned work as lost: stale */
        {1, "version", "4"},
        {1, "version", "\"3\""},
        {1, "digest", NULL},
        {1, "digest", "\"0123456789abcdef\""},
        {1, "digest", "5"},
        {1, "run", "\"../x\""},
        {1, "run", "\"a\\u0001b\""},
        {1, "run", "null"},
        {1, "state", "\"exploded\""},
        {1, "labels", "[]"},
        {1, "labels", "{\"Team\":\"x\"}"},
        {1, "labels", "{\"team\":\"a b\"}"},
        {1, "attempts", "{}"},
        {1, "attempts", "[1]"},
        {1, "attempts", "[{}]"},
        {0, "attempt", "-1"},
        {0, "attempt", "1000000"},
        {0, "attempt", "\"0\""},
        {0, "nodes", "0"},
        {0, "host", "\"a\\nb\""},
        {0, "host", "\"a\\u0000b\""},
        {0, "host", "5"},
        {0, "zone",
         "\"" /* 64 bytes: one too many */
         "0123456789012345678901234567890123456789012345678901234567890123\""},
        {0, "start_ms", "-1"},
        {0, "start_ms", "253402300800000"},
        {0, "start_ms", "1.5"},
        {0, "end_ms", "1699999999999"}, /* before its start: a negative duration */
        {0, "end_ms", "9223372036854775807"},
        {0, "cause", "\"abducted\""},
        {0, "cause", "null"},
        {0, "lost_ms", "-5"},
        {0, "price_per_hour", "-1"},
        {0, "price_per_hour", "1e300"},
        {0, "gpus", "-1"},
        {0, "gpu_samples", "18446744073709551615"},
        {0, "gpu_util_mean", "101"},
        {0, "gpu_idle_share", "1.5"},
        {0, "stage_seconds", "-0.5"},
        {0, "notices", "true"},
        {0, "log_bytes", "-1"},
        {0, "log_bytes", "1.5"},
        {0, "log_bytes", NULL},
        {0, "host", NULL},
        {0, "end_ms", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const int rc = parse_with(bad[i].top, bad[i].key, bad[i].value);
        if (rc != -EBADMSG)
            fail_msg("%s = %s accepted", bad[i].key, bad[i].value ? bad[i].value : "(missing)");
    }
    struct sr_runsum r;
    assert_int_equal(sr_runsum_parse("garbage", 7, &r), -EBADMSG);
    assert_int_equal(sr_runsum_parse("[]", 2, &r), -EBADMSG);
    assert_int_equal(sr_runsum_parse("{\"version\":1,\"version\":1}", 26, &r), -EBADMSG);
}

/* A host with a tab, and a host of multi-byte characters cut by the
 * history's fixed-size copy, still make a summary that reads back; a zone
 * that is not a word is dropped by the history (placement rules). */
static void odd_strings_from_the_logs_still_round_trip(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    char wide[300] = "";
    for (int i = 0; i < 70; i++)
        strcat(wide, "\u00e9"); /* é: 2 bytes each, cut inside one at 127 */
    tu_hist_add(&h,
                "{\"event\":\"start\",\"unix_ms\":%lld,\"attempt\":0,\"host\":\"a\\tb\","
                "\"zone\":\"%s\"}",
                (long long)T0, wide);
    tu_hist_add(&h, "{\"event\":\"start\",\"unix_ms\":%lld,\"attempt\":1,\"host\":\"%s\"}",
                (long long)T0 + 1000, wide);
    sr_hist_derive(&h);
    struct sr_runsum r, back;
    assert_int_equal(sr_runsum_from_history(&h, "odd", &r), 0);
    assert_int_equal(r.n_att, 2);
    assert_string_equal(r.att[0].host, "a?b");
    assert_string_equal(r.att[0].zone, "");
    assert_int_equal(strlen(r.att[1].host), 126);
    json_t *o = sr_runsum_to_json(&r);
    assert_non_null(o);
    assert_int_equal(sr_runsum_from_json(o, &back), 0);
    assert_string_equal(back.att[0].host, r.att[0].host);
    assert_string_equal(back.att[1].host, r.att[1].host);
    json_decref(o);
    sr_runsum_free(&back);
    sr_runsum_free(&r);
    sr_hist_free(&h);
}

static void out_of_order_or_repeated_attempts_are_rejected(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    scenario(&h);
    struct sr_runsum r;
    assert_int_equal(sr_runsum_from_history(&h, "run-a", &r), 0);
    r.att[2].attempt = 1;
    json_t *o = sr_runsum_to_json(&r);
    struct sr_runsum back;
    assert_int_equal(sr_runsum_from_json(o, &back), -EBADMSG);
    json_decref(o);
    sr_runsum_free(&r);
    sr_hist_free(&h);
}

/* ---- load_all on a file store ------------------------------------------------ */

static char root[512];

static void put(struct sr_store *st, const char *key, const char *text)
{
    assert_int_equal(sr_store_put(st, key, text, strlen(text)), 0);
}

static void put_log(struct sr_store *st, const char *run, int att, int64_t t, const char *tail)
{
    char key[256], text[1024];
    snprintf(key, sizeof(key), "%s/events/%06d.jsonl", run, att);
    snprintf(text, sizeof(text),
             "{\"event\":\"start\",\"unix_ms\":%lld,\"attempt\":%d,\"instance_type\":\"g5\"}\n"
             "%s",
             (long long)t, att, tail);
    put(st, key, text);
}

/* The summary load_all would compute from run's logs, written as its
 * summaries/<run>.json, with instance_type replaced by it (so a test can tell
 * which one was read). */
static void put_summary(struct sr_store *st, const char *run, const char *it)
{
    struct sr_history h;
    sr_hist_init(&h);
    assert_int_equal(sr_hist_load(st, run, &h), 0);
    struct sr_runsum r;
    assert_int_equal(sr_runsum_from_history(&h, run, &r), 0);
    for (size_t i = 0; i < r.n_att; i++) {
        snprintf(r.att[i].instance_type, sizeof(r.att[i].instance_type), "%s", it);
        char key[256];
        snprintf(key, sizeof(key), "%s/events/%06u.jsonl", run, r.att[i].attempt);
        assert_int_equal(sr_store_size(st, key, &r.att[i].log_bytes), 0);
    }
    json_t *o = sr_runsum_to_json(&r);
    char *text = json_dumps(o, JSON_COMPACT);
    char key[256];
    snprintf(key, sizeof(key), "summaries/%s.json", run);
    put(st, key, text);
    free(text);
    json_decref(o);
    sr_runsum_free(&r);
    sr_hist_free(&h);
}

static const struct sr_runsum *find(const struct sr_runsum *v, size_t n, const char *run)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].run, run) == 0)
            return &v[i];
    fail_msg("run %s missing", run);
    return NULL;
}

static void load_all_reads_summaries_and_falls_back_to_the_logs(void **state)
{
    (void)state;
    const char *tmp = getenv("SPOTRUN_TEST_TMP");
    snprintf(root, sizeof(root), "%s/runsum-%d", tmp ? tmp : "/tmp", (int)getpid());
    struct sr_store *st;
    assert_int_equal(sr_store_open(root, &st), 0);
    const char *exit0 = "{\"event\":\"exit\",\"unix_ms\":1700000009000,\"attempt\":0,\"code\":1}\n";
    /* good: a summary that matches its logs is read (its instance type shows) */
    put_log(st, "good", 0, T0, exit0);
    put_log(st, "good", 1, T0 + 10000, "");
    put_summary(st, "good", "from-summary");
    /* nosum: no summary */
    put_log(st, "nosum", 0, T0, "");
    /* stale: the summary has attempt 0 only, the logs 0 and 1 */
    put_log(st, "stale", 0, T0, exit0);
    put_summary(st, "stale", "from-summary");
    put_log(st, "stale", 1, T0 + 10000, "");
    /* garbage, wrong types, huge numbers */
    put_log(st, "garbage", 0, T0, "");
    put(st, "summaries/garbage.json", "\x01\x02not json");
    put_log(st, "types", 0, T0, "");
    put(st, "summaries/types.json",
        "{\"version\":1,\"run\":\"types\",\"state\":\"running\","
        "\"labels\":{},\"attempts\":[{\"attempt\":\"0\"}]}");
    put_log(st, "huge", 0, T0, "");
    put_summary(st, "huge", "from-summary");
    char *buf;
    size_t len;
    assert_int_equal(sr_store_get(st, "summaries/huge.json", 1 << 20, &buf, &len), 0);
    char *p = strstr(buf, "\"end_ms\":");
    assert_non_null(p);
    char fixed[4096]; /* twenty digits more: past any integer */
    snprintf(fixed, sizeof(fixed), "%.*s99999999999999999999%s", (int)(p - buf + 9), buf, p + 9);
    put(st, "summaries/huge.json", fixed);
    free(buf);
    /* another run's summary copied here */
    put_log(st, "copied", 0, T0, "");
    assert_int_equal(sr_store_get(st, "summaries/good.json", 1 << 20, &buf, &len), 0);
    put(st, "summaries/copied.json", buf);
    free(buf);
    /* edited: another team's label, +100 h, 8 GPUs, a price of 999, its
     * logs unchanged (the digest left as it was) */
    put_log(st, "edited", 0, T0, exit0);
    put_summary(st, "edited", "from-summary");
    assert_int_equal(sr_store_get(st, "summaries/edited.json", 1 << 20, &buf, &len), 0);
    json_t *e = json_loads(buf, 0, NULL);
    free(buf);
    json_t *ea = json_array_get(json_object_get(e, "attempts"), 0);
    json_object_set_new(json_object_get(e, "labels"), "team", json_string("other"));
    json_object_set_new(
        ea, "end_ms", json_integer(json_integer_value(json_object_get(ea, "end_ms")) + 360000000));
    json_object_set_new(ea, "gpus", json_integer(8));
    json_object_set_new(ea, "price_per_hour", json_real(999));
    char *etext = json_dumps(e, JSON_COMPACT);
    put(st, "summaries/edited.json", etext);
    free(etext);
    json_decref(e);
    /* grown: the same attempts, but a log longer than the one folded */
    put_log(st, "grown", 0, T0, "");
    put_summary(st, "grown", "from-summary");
    put_log(st, "grown", 0, T0, exit0);
    /* done: DONE exists but the summary still says running */
    put_log(st, "done", 0, T0, "");
    put_summary(st, "done", "from-summary");
    put(st, "done/DONE", "");

    struct sr_runsum *v;
    size_t n;
    assert_int_equal(sr_runsum_load_all(st, "", &v, &n), 0);
    assert_int_equal(n, 10);
    for (size_t i = 1; i < n; i++)
        assert_true(strcmp(v[i - 1].run, v[i].run) < 0);
    const struct sr_runsum *r = find(v, n, "good");
    assert_int_equal(r->from_logs, 0);
    assert_int_equal(r->n_att, 2);
    assert_string_equal(r->att[0].instance_type, "from-summary");
    assert_int_equal(r->att[0].cause, SR_CAUSE_CRASHED);
    static const char *const fallback[] = {"nosum",  "stale", "garbage", "types", "huge",
                                           "copied", "done",  "edited",  "grown"};
    for (size_t i = 0; i < sizeof(fallback) / sizeof(fallback[0]); i++) {
        r = find(v, n, fallback[i]);
        if (!r->from_logs)
            fail_msg("%s: its summary was believed", fallback[i]);
        assert_true(r->n_att >= 1);
        assert_string_equal(r->att[0].instance_type, "g5");
    }
    assert_int_equal(find(v, n, "stale")->n_att, 2);
    assert_int_equal(find(v, n, "done")->state, SR_STATE_DONE);
    r = find(v, n, "edited"); /* the logs' truth */
    assert_int_equal(r->labels.n, 0);
    assert_int_equal(r->att[0].gpus, 0);
    assert_true(r->att[0].price_per_hour == 0);
    assert_int_equal(r->att[0].end_ms, 1700000009000);
    assert_int_equal(find(v, n, "grown")->att[0].cause, SR_CAUSE_CRASHED);
    for (size_t i = 0; i < n; i++)
        sr_runsum_free(&v[i]);
    free(v);

    assert_int_equal(sr_runsum_load_all(st, "st", &v, &n), 0); /* a prefix of run ids */
    assert_int_equal(n, 1);
    assert_string_equal(v[0].run, "stale");
    sr_runsum_free(&v[0]);
    free(v);
    sr_store_close(st);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

/* A snapshot may weigh what its listed runs can need: twice each listed
 * summary plus 1 KiB a run (and 16 more), never more than 1 GiB; a
 * summary of unknown size counts as the largest one read. */
static void snapshot_cap_follows_the_listed_runs(void **state)
{
    (void)state;
    struct sr_strlist l = {0};
    assert_int_equal(sr_runsnap_cap(&l), 16 * 1024);
    for (int i = 0; i < 1000; i++) {
        char run[16];
        snprintf(run, sizeof(run), "r%05d", i);
        assert_int_equal(sr_strlist_push_sized(&l, run, 1000), 0);
    }
    assert_int_equal(sr_runsnap_cap(&l), 1016 * 1024 + 1000 * 2000);
    assert_true(sr_runsnap_cap(&l) < 48u * 1000 * 1000);
    l.sizes[0] = SR_SIZE_UNKNOWN;
    assert_int_equal(sr_runsnap_cap(&l), 1016 * 1024 + 999 * 2000 + SR_RUNSUM_BYTES_MAX);
    for (size_t i = 0; i < l.n; i++)
        l.sizes[i] = SR_SIZE_UNKNOWN;
    assert_int_equal(sr_runsnap_cap(&l), 1024u << 20);
    sr_strlist_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_summary_says_what_the_history_says_per_attempt),
        cmocka_unit_test(a_summary_survives_the_round_trip_through_json),
        cmocka_unit_test(a_hostile_summary_is_rejected),
        cmocka_unit_test(odd_strings_from_the_logs_still_round_trip),
        cmocka_unit_test(out_of_order_or_repeated_attempts_are_rejected),
        cmocka_unit_test(load_all_reads_summaries_and_falls_back_to_the_logs),
        cmocka_unit_test(snapshot_cap_follows_the_listed_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
