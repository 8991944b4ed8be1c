/*
 * test_manifest.c - MANIFEST.json round trip and strict parsing
 * (storage/run/manifest.h, schema in docs/store.md).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framelist.h"
#include "log.h"
#include "manifest.h"

#define SUM "xxh3-128:0123456789abcdef0123456789abcdef"

static struct sr_manifest sample(void)
{
    struct sr_manifest m;
    memset(&m, 0, sizeof(m));
    m.format = SR_MANIFEST_FORMAT;
    snprintf(m.run_id, sizeof(m.run_id), "exp-42.a_b");
    m.seq = 7;
    m.step = 1200;
    m.created = 1796216400; /* 2026-12-02T13:00:00Z */
    snprintf(m.host, sizeof(m.host), "node-3");
    m.attempt = 2;
    m.raw_bytes = 10240;
    m.stored_bytes = 777;
    m.files = 3;
    m.frames = 1;
    m.frame_size = 4u << 20;
    m.level = 3;
    snprintf(m.checksum, sizeof(m.checksum), "%s", SUM);
    m.stage_seconds = 0.25;
    return m;
}

/* The sample as a jansson object, to be mutated by a test. */
static json_t *sample_json(void)
{
    struct sr_manifest m = sample();
    char *s;
    size_t len;
    assert_int_equal(sr_manifest_to_json(&m, &s, &len), 0);
    json_t *o = json_loadb(s, len, 0, NULL);
    assert_non_null(o);
    free(s);
    return o;
}

/* Parses o; returns the code and leaves the message in sr_strerror(). */
static int parse_json(json_t *o, struct sr_manifest *m)
{
    char *s = json_dumps(o, 0);
    assert_non_null(s);
    sr_err_clear();
    int rc = sr_manifest_parse(s, strlen(s), m);
    free(s);
    return rc;
}

static void round_trip_keeps_every_field(void **state)
{
    (void)state;
    struct sr_manifest m = sample(), back;
    char *s;
    size_t len;
    assert_int_equal(sr_manifest_to_json(&m, &s, &len), 0);
    assert_int_equal(s[len - 1], '\n');
    assert_non_null(strstr(s, "\"created_at\": \"2026-12-02T13:00:00Z\""));
    assert_non_null(strstr(s, "\"codec\": \"tar+zstd-seekable\""));
    assert_int_equal(sr_manifest_parse(s, len, &back), 0);
    free(s);
    assert_int_equal(back.format, 1);
    assert_string_equal(back.run_id, m.run_id);
    assert_int_equal(back.seq, 7);
    assert_int_equal(back.step, 1200);
    assert_int_equal(back.created, m.created);
    assert_string_equal(back.host, "node-3");
    assert_int_equal(back.attempt, 2);
    assert_int_equal(back.raw_bytes, 10240);
    assert_int_equal(back.stored_bytes, 777);
    assert_int_equal(back.files, 3);
    assert_int_equal(back.frames, 1);
    assert_int_equal(back.frame_size, 4u << 20);
    assert_int_equal(back.level, 3);
    assert_string_equal(back.checksum, SUM);
    assert_true(back.stage_seconds > 0.24 && back.stage_seconds < 0.26);
}

static void unknown_step_is_written_as_null(void **state)
{
    (void)state;
    struct sr_manifest m = sample(), back;
    m.step = -1;
    char *s;
    size_t len;
    assert_int_equal(sr_manifest_to_json(&m, &s, &len), 0);
    assert_non_null(strstr(s, "\"step\": null"));
    assert_int_equal(sr_manifest_parse(s, len, &back), 0);
    assert_int_equal(back.step, -1);
    free(s);
}

static const char *required[] = {
    "format",  "run_id",    "seq",          "step",          "created", "host",
    "attempt", "raw_bytes", "stored_bytes", "files",         "frames",  "frame_size",
    "level",   "codec",     "checksum",     "stage_seconds",
};

static void each_missing_field_is_named(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(required) / sizeof(*required); i++) {
        json_t *o = sample_json();
        json_object_del(o, required[i]);
        struct sr_manifest m;
        assert_int_equal(parse_json(o, &m), -EBADMSG);
        char want[64];
        snprintf(want, sizeof(want), "field \"%s\"", required[i]);
        if (!strstr(sr_strerror(-EBADMSG), want))
            fail_msg("missing %s: message \"%s\"", required[i], sr_strerror(-EBADMSG));
        json_decref(o);
    }
}

static void each_wrongly_typed_field_is_named(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(required) / sizeof(*required); i++) {
        json_t *o = sample_json();
        /* Strings get a number, everything else gets a string. */
        json_t *v =
            json_is_string(json_object_get(o, required[i])) ? json_integer(5) : json_string("5");
        json_object_set_new(o, required[i], v);
        struct sr_manifest m;
        assert_int_equal(parse_json(o, &m), -EBADMSG);
        char want[64];
        snprintf(want, sizeof(want), "field \"%s\"", required[i]);
        if (!strstr(sr_strerror(-EBADMSG), want))
            fail_msg("wrong type %s: message \"%s\"", required[i], sr_strerror(-EBADMSG));
        json_decref(o);
    }
}

struct bad_value {
    const char *field;
    const char *json; /* the value, as JSON text */
};

static void out_of_range_values_are_rejected(void **state)
{
    (void)state;
    static const struct bad_value bad[] = {
        {"seq", "0"},
        {"seq", "-3"},
        {"seq", "1.5"},
        {"step", "-1"},
        {"created", "-5"},
        {"attempt", "-1"},
        {"attempt", "4294967296"},
        {"raw_bytes", "-1"},
        {"stored_bytes", "-1"},
        {"files", "-2"},
        {"frames", "4294967296"},
        {"frame_size", "0"},
        {"level", "23"},
        {"format", "0"},
        {"stage_seconds", "-0.5"},
        {"run_id", "\"../etc\""},
        {"run_id", "\"\""},
        {"host", "\"" /* 256 x */
                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\""},
        {"codec", "\"tar+gzip\""},
        {"checksum", "\"xxh3-128:0123\""},
        {"checksum", "\"xxh3-128:0123456789ABCDEF0123456789abcdef\""},
        {"checksum", "\"sha256:0123456789abcdef0123456789abcdef\""},
        {"checksum", "\"xxh3-128:0123456789abcdef0123456789abcdef0\""},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        json_t *o = sample_json();
        json_t *v = json_loads(bad[i].json, JSON_DECODE_ANY, NULL);
        assert_non_null(v);
        json_object_set_new(o, bad[i].field, v);
        struct sr_manifest m;
        int rc = parse_json(o, &m);
        char want[64];
        snprintf(want, sizeof(want), "\"%s\"", bad[i].field);
        if (rc != -EBADMSG || !strstr(sr_strerror(rc), want))
            fail_msg("%s = %s: rc %d, message \"%s\"", bad[i].field, bad[i].json, rc,
                     sr_strerror(rc));
        json_decref(o);
    }
}

static void seq_message_says_what_is_expected(void **state)
{
    (void)state;
    json_t *o = sample_json();
    json_object_set_new(o, "seq", json_integer(0));
    struct sr_manifest m;
    assert_int_equal(parse_json(o, &m), -EBADMSG);
    assert_string_equal(sr_strerror(-EBADMSG),
                        "manifest: field \"seq\" must be a positive integer");
    json_decref(o);
}

static void unknown_fields_are_ignored(void **state)
{
    (void)state;
    json_t *o = sample_json();
    json_object_set_new(o, "instance_type", json_string("p5.48xlarge"));
    json_object_set_new(o, "future", json_pack("{s:[i,i]}", "x", 1, 2));
    struct sr_manifest m;
    assert_int_equal(parse_json(o, &m), 0);
    assert_int_equal(m.seq, 7);
    json_decref(o);
}

static void future_format_is_refused(void **state)
{
    (void)state;
    json_t *o = sample_json();
    json_object_set_new(o, "format", json_integer(SR_MANIFEST_FORMAT + 1));
    struct sr_manifest m;
    assert_int_equal(parse_json(o, &m), -EBADMSG);
    assert_non_null(strstr(sr_strerror(-EBADMSG), "upgrade spotrun"));
    json_decref(o);
}

static void garbage_is_refused(void **state)
{
    (void)state;
    struct sr_manifest m;
    const char *inputs[] = {"", "{", "[]", "null", "{\"format\":1,\"format\":1}"};
    for (size_t i = 0; i < sizeof(inputs) / sizeof(*inputs); i++)
        assert_int_equal(sr_manifest_parse(inputs[i], strlen(inputs[i]), &m), -EBADMSG);
    /* Only the given length is read: a valid manifest cut short is refused. */
    json_t *o = sample_json();
    char *s = json_dumps(o, 0);
    assert_int_equal(sr_manifest_parse(s, strlen(s) - 1, &m), -EBADMSG);
    free(s);
    json_decref(o);
}

static void run_id_validation(void **state)
{
    (void)state;
    char longest[SR_RUN_ID_MAX + 2];
    memset(longest, 'a', SR_RUN_ID_MAX);
    longest[SR_RUN_ID_MAX] = '\0';
    assert_true(sr_manifest_run_id_valid(longest));
    longest[SR_RUN_ID_MAX] = 'a';
    longest[SR_RUN_ID_MAX + 1] = '\0';
    assert_false(sr_manifest_run_id_valid(longest));

    const char *good[] = {"a", "run1", "exp-42.a_b", "A.B-C_D", "0", "_x"};
    const char *bad[] = {"", ".", "..", ".hidden", "-x", "a/b", "a b", "a\\b", "é", "a:b", "ckpt*"};
    for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
        if (!sr_manifest_run_id_valid(good[i]))
            fail_msg("\"%s\" should be valid", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        if (sr_manifest_run_id_valid(bad[i]))
            fail_msg("\"%s\" should be invalid", bad[i]);
    assert_false(sr_manifest_run_id_valid(NULL));
}

/* parses a one-frame list naming object `name` for m */
static int parse_one(const struct sr_manifest *m, const char *name)
{
    char buf[512];
    snprintf(buf, sizeof(buf),
             "{\"objects\": [\"%s\"], \"frame_list\": [[0, 0, 10, 100, "
             "\"0123456789abcdef0123456789abcdef\"]]}",
             name);
    struct sr_frame_list l;
    sr_err_clear();
    const int rc = sr_frame_list_parse(buf, strlen(buf), m, &l);
    if (rc == 0) {
        char again[64];
        sr_frame_object_name(again, sizeof(again), &l, 0);
        assert_string_equal(again, name); /* the name is exactly what is written */
        sr_frame_list_free(&l);
    }
    return rc;
}

/* A checkpoint's list names only data objects of this run no newer than
 * it; a multi-node part's only its own rank's parts (of its own seq only
 * its own epoch). Anything else makes the checkpoint bad. */
static void frame_list_objects_are_checked(void **state)
{
    (void)state;
    struct sr_manifest m = {.seq = 7, .frames = 1, .raw_bytes = 100};
    snprintf(m.run_id, sizeof(m.run_id), "r");
    assert_int_equal(parse_one(&m, "ckpt/0000000007/data.tar.zst"), 0);
    assert_int_equal(parse_one(&m, "ckpt/0000000003/data.tar.zst"), 0);
    const char *const bad_data[] = {
        "ckpt/0000000008/data.tar.zst",  /* newer */
        "ckpt/0000000000/data.tar.zst",  /* seq 0 */
        "ckpt/000000003/data.tar.zst",   /* 9 digits */
        "ckpt/0000000003/data.tar.zstx", /* trailing */
        "../other/ckpt/0000000003/data.tar.zst",
        "ckpt/0000000003/part-0-e1.tar.zst", /* a part in a plain list */
    };
    for (size_t i = 0; i < sizeof(bad_data) / sizeof(*bad_data); i++)
        if (parse_one(&m, bad_data[i]) != -EBADMSG)
            fail_msg("\"%s\" should be refused", bad_data[i]);
    m.nodes = 2;
    m.is_part = 1;
    m.node_rank = 1;
    m.epoch = 4;
    assert_int_equal(parse_one(&m, "ckpt/0000000007/part-1-e4.tar.zst"), 0);
    assert_int_equal(parse_one(&m, "ckpt/0000000005/part-1-e2.tar.zst"), 0);
    const char *const bad_part[] = {
        "ckpt/0000000005/part-0-e2.tar.zst",  /* another rank's */
        "ckpt/0000000007/part-1-e3.tar.zst",  /* own seq, another owner's */
        "ckpt/0000000008/part-1-e4.tar.zst",  /* newer */
        "ckpt/0000000005/part-1-e0.tar.zst",  /* epoch 0 */
        "ckpt/0000000005/part-1-e02.tar.zst", /* not as written */
        "ckpt/0000000005/part-01-e2.tar.zst",
        "ckpt/0000000005/part-1-e2.tar.zst/x",
        "ckpt/0000000005/part-1-e2.json",
        "ckpt/0000000005/data.tar.zst", /* the set's, not a part */
    };
    for (size_t i = 0; i < sizeof(bad_part) / sizeof(*bad_part); i++)
        if (parse_one(&m, bad_part[i]) != -EBADMSG)
            fail_msg("\"%s\" should be refused in a part's list", bad_part[i]);
}

/* A set's "full" and "archive_bytes" (only shown): kept through a round
 * trip; absent (a set written before parts could be deltas) or malformed,
 * the set counts as full. */
static void set_kind_round_trips_and_defaults_to_full(void **state)
{
    (void)state;
    struct sr_manifest m = sample(), back;
    m.nodes = 2;
    m.part_epoch[0] = m.part_epoch[1] = 1;
    m.full = 0;
    m.archive_bytes = 5000;
    char *s;
    size_t len;
    assert_int_equal(sr_manifest_to_json(&m, &s, &len), 0);
    assert_int_equal(sr_manifest_parse(s, len, &back), 0);
    free(s);
    assert_int_equal(back.nodes, 2);
    assert_false(back.full);
    assert_int_equal(back.archive_bytes, 5000);

    assert_int_equal(sr_manifest_to_json(&m, &s, &len), 0);
    json_t *o = json_loadb(s, len, 0, NULL);
    free(s);
    json_object_del(o, "full");
    json_object_del(o, "archive_bytes");
    assert_int_equal(parse_json(o, &back), 0);
    assert_true(back.full);
    assert_int_equal(back.archive_bytes, 0);
    json_object_set_new(o, "full", json_string("no"));
    json_object_set_new(o, "archive_bytes", json_integer(-3));
    assert_int_equal(parse_json(o, &back), 0);
    assert_true(back.full);
    json_object_set_new(o, "full", json_false());
    assert_int_equal(parse_json(o, &back), 0);
    assert_false(back.full);
    assert_int_equal(back.archive_bytes, 0); /* a bad size is not shown */
    json_decref(o);
}

/* A multi-node checkpoint's seq is its step + 1, named in 10 digits: a
 * larger one is never written, and one in the store is malformed. */
static void multi_node_seq_fits_its_key(void **state)
{
    (void)state;
    struct sr_manifest m = sample(), back;
    m.nodes = 2;
    m.is_part = 1;
    m.node_rank = 1;
    m.step = SR_SET_STEP_MAX;
    m.seq = SR_SEQ_MAX;
    char *s;
    size_t len;
    assert_int_equal(sr_manifest_to_json(&m, &s, &len), 0);
    assert_int_equal(sr_manifest_parse(s, len, &back), 0);
    free(s);
    assert_int_equal(back.step, SR_SET_STEP_MAX);
    m.step = INT64_C(1) << 53;
    m.seq = (UINT64_C(1) << 53) + 1;
    assert_int_equal(sr_manifest_to_json(&m, &s, &len), -EINVAL);
    assert_non_null(strstr(sr_strerror(-EINVAL), "the largest of a multi-node checkpoint"));
    m.nodes = 0; /* a single-node seq is a counter: not bounded here */
    m.is_part = 0;
    assert_int_equal(sr_manifest_to_json(&m, &s, &len), 0);
    json_t *o = json_loadb(s, len, 0, NULL);
    free(s);
    json_object_set_new(o, "nodes", json_integer(2));
    json_object_set_new(o, "node_rank", json_integer(0));
    assert_int_equal(parse_json(o, &back), -EBADMSG);
    assert_non_null(strstr(sr_strerror(-EBADMSG), "must be at most 9999999999"));
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_keeps_every_field),
        cmocka_unit_test(unknown_step_is_written_as_null),
        cmocka_unit_test(each_missing_field_is_named),
        cmocka_unit_test(each_wrongly_typed_field_is_named),
        cmocka_unit_test(out_of_range_values_are_rejected),
        cmocka_unit_test(seq_message_says_what_is_expected),
        cmocka_unit_test(unknown_fields_are_ignored),
        cmocka_unit_test(future_format_is_refused),
        cmocka_unit_test(garbage_is_refused),
        cmocka_unit_test(run_id_validation),
        cmocka_unit_test(frame_list_objects_are_checked),
        cmocka_unit_test(set_kind_round_trips_and_defaults_to_full),
        cmocka_unit_test(multi_node_seq_fits_its_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
