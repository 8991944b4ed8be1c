/*
 * test_s3.c - the pure parts of the S3 client: part sizing, retry
 * classification and backoff, error mapping, XML parsing, credential files,
 * the SPOTRUN_S3_* settings.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "s3.h"
#include "log.h"
#include "s3_creds.h"
#include "store.h"

#define MIB (1024ull * 1024ull)

static void part_size_respects_minimum_and_part_count(void **state)
{
    (void)state;
    assert_int_equal(sr_s3_part_size(100 * MIB, 1 * MIB), 5 * MIB); /* 5 MiB floor */
    assert_int_equal(sr_s3_part_size(100 * MIB, 16 * MIB), 16 * MIB);
    /* 1 TiB at 16 MiB would be 65,536 parts: raised to stay under 10,000. */
    const uint64_t tib = 1024ull * 1024 * MIB;
    const uint64_t ps = sr_s3_part_size(tib, 16 * MIB);
    assert_true((tib + ps - 1) / ps <= 10000);
    assert_int_equal(ps % MIB, 0);
    /* 5 TiB, S3's largest object, still fits. */
    const uint64_t ps5 = sr_s3_part_size(5 * tib, 16 * MIB);
    assert_true((5 * tib + ps5 - 1) / ps5 <= 10000);
    assert_true(ps5 <= 5ull * 1024 * MIB);
}

static void transport_failures_and_5xx_are_retried(void **state)
{
    (void)state;
    assert_int_equal(sr_s3_classify(CURLE_COULDNT_CONNECT, 0, ""), SR_S3_RETRY);
    assert_int_equal(sr_s3_classify(CURLE_OPERATION_TIMEDOUT, 0, ""), SR_S3_RETRY);
    assert_int_equal(sr_s3_classify(CURLE_RECV_ERROR, 0, ""), SR_S3_RETRY);
    assert_int_equal(sr_s3_classify(CURLE_SEND_ERROR, 0, ""), SR_S3_RETRY);
    assert_int_equal(sr_s3_classify(CURLE_OK, 503, "SlowDown"), SR_S3_RETRY);
    assert_int_equal(sr_s3_classify(CURLE_OK, 500, "InternalError"), SR_S3_RETRY);
    assert_int_equal(sr_s3_classify(CURLE_OK, 429, ""), SR_S3_RETRY);
    assert_int_equal(sr_s3_classify(CURLE_OK, 400, "RequestTimeout"), SR_S3_RETRY);
}

static void client_errors_fail_at_once(void **state)
{
    (void)state;
    assert_int_equal(sr_s3_classify(CURLE_OK, 200, ""), SR_S3_OK);
    assert_int_equal(sr_s3_classify(CURLE_OK, 206, ""), SR_S3_OK);
    assert_int_equal(sr_s3_classify(CURLE_OK, 403, "SignatureDoesNotMatch"), SR_S3_FAIL);
    assert_int_equal(sr_s3_classify(CURLE_OK, 404, "NoSuchKey"), SR_S3_FAIL);
    assert_int_equal(sr_s3_classify(CURLE_OK, 400, "InvalidArgument"), SR_S3_FAIL);
    assert_int_equal(sr_s3_classify(CURLE_URL_MALFORMAT, 0, ""), SR_S3_FAIL);
}

static void errors_map_to_errno_and_hint(void **state)
{
    (void)state;
    const char *hint;
    assert_int_equal(sr_s3_errno(403, "SignatureDoesNotMatch", &hint), -EACCES);
    assert_non_null(strstr(hint, "AWS_SECRET_ACCESS_KEY"));
    assert_int_equal(sr_s3_errno(403, "InvalidAccessKeyId", &hint), -EACCES);
    assert_non_null(strstr(hint, "AWS_ACCESS_KEY_ID"));
    assert_int_equal(sr_s3_errno(403, "RequestTimeTooSkewed", &hint), -EACCES);
    assert_non_null(strstr(hint, "clock"));
    assert_int_equal(sr_s3_errno(404, "NoSuchBucket", &hint), -ENXIO); /* not a missing key */
    assert_non_null(strstr(hint, "bucket does not exist"));
    assert_int_equal(sr_s3_errno(404, "", &hint), -ENOENT);
    assert_int_equal(sr_s3_errno(503, "SlowDown", &hint), -ECONNRESET);
    assert_int_equal(sr_s3_curl_errno(CURLE_COULDNT_CONNECT), -ECONNREFUSED);
    assert_int_equal(sr_s3_curl_errno(CURLE_OPERATION_TIMEDOUT), -ETIMEDOUT);
    assert_int_equal(sr_s3_curl_errno(CURLE_COULDNT_RESOLVE_HOST), -EHOSTUNREACH);
}

static void error_bodies_parse(void **state)
{
    (void)state;
    const char *xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchBucket</Code>"
                      "<Message>The specified bucket &amp; such does not exist</Message>"
                      "<BucketName>x</BucketName></Error>";
    char code[64], msg[128];
    assert_int_equal(sr_s3_parse_error(xml, strlen(xml), code, sizeof(code), msg, sizeof(msg)), 0);
    assert_string_equal(code, "NoSuchBucket");
    assert_string_equal(msg, "The specified bucket & such does not exist");
    assert_int_equal(
        sr_s3_parse_error("<html>502</html>", 16, code, sizeof(code), msg, sizeof(msg)), -EBADMSG);
    assert_string_equal(code, "");
    assert_int_equal(sr_s3_parse_error("<Error><Code>", 13, code, sizeof(code), msg, sizeof(msg)),
                     -EBADMSG);
}

static void list_pages_parse_keys_and_prefixes(void **state)
{
    (void)state;
    const char *xml = "<?xml version=\"1.0\"?><ListBucketResult "
                      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                      "<Name>b</Name><Prefix>p/run/</Prefix><IsTruncated>true</IsTruncated>"
                      "<NextContinuationToken>tok+/=</NextContinuationToken>"
                      "<Contents><Key>p/run/DONE</Key><Size>3</Size></Contents>"
                      "<CommonPrefixes><Prefix>p/run/ckpt/</Prefix></CommonPrefixes>"
                      "<CommonPrefixes><Prefix>p/run/events/</Prefix></CommonPrefixes>"
                      "</ListBucketResult>";
    struct sr_strlist l = {0};
    int truncated = 0;
    char token[64];
    assert_int_equal(
        sr_s3_parse_list(xml, strlen(xml), "p/run/", &l, &truncated, token, sizeof(token)), 0);
    assert_int_equal(truncated, 1);
    assert_string_equal(token, "tok+/=");
    assert_int_equal(l.n, 3);
    assert_string_equal(l.v[0], "DONE");
    assert_string_equal(l.v[1], "ckpt");
    assert_string_equal(l.v[2], "events");
    sr_strlist_free(&l);
    const char *bad = "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>";
    assert_int_equal(sr_s3_parse_list(bad, strlen(bad), "", &l, &truncated, token, sizeof(token)),
                     -EBADMSG);
}

static void key_listing_parses(void **state)
{
    (void)state;
    /* A listing without a delimiter: whole keys below the store's root. */
    const char *xml =
        "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/"
        "doc/2006-03-01/\"><Contents><Key>p/sw-1/events/000000.jsonl</Key>"
        "<Size>4321</Size><ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag></Contents>"
        "<Contents><Key>p/sw-1/DONE</Key><Size>-5</Size></Contents>"
        "<Contents><Key>other/sw-2/LEASE</Key></Contents>"
        "<Contents><Key>p/</Key></Contents>"
        "<IsTruncated>false</IsTruncated></ListBucketResult>";
    struct sr_strlist l = {0};
    int truncated = 1;
    char token[64];
    assert_int_equal(
        sr_s3_parse_list_as(xml, strlen(xml), "p/", 1, &l, &truncated, token, sizeof(token)), 0);
    assert_int_equal(truncated, 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[0], "sw-1/events/000000.jsonl");
    assert_string_equal(l.v[1], "sw-1/DONE");
    /* each object's size, as the listing says it (a summary is checked
     * against them); a size that is not one is unknown */
    assert_int_equal(sr_strlist_size(&l, 0), 4321);
    assert_true(sr_strlist_size(&l, 1) == SR_SIZE_UNKNOWN);
    /* and its ETag without quotes (what says a summary changed) */
    assert_string_equal(sr_strlist_etag(&l, 0), "9b2cf535f27731c974343645a3985328");
    assert_null(sr_strlist_etag(&l, 1));
    sr_strlist_sort(&l);
    assert_string_equal(l.v[0], "sw-1/DONE");
    assert_true(sr_strlist_size(&l, 0) == SR_SIZE_UNKNOWN);
    assert_int_equal(sr_strlist_size(&l, 1), 4321);
    assert_null(sr_strlist_etag(&l, 0));
    assert_string_equal(sr_strlist_etag(&l, 1), "9b2cf535f27731c974343645a3985328");
    sr_strlist_drop_hidden(&l);
    assert_string_equal(sr_strlist_etag(&l, 1), "9b2cf535f27731c974343645a3985328");
    sr_strlist_free(&l);
}

static void upload_id_parses(void **state)
{
    (void)state;
    const char *xml = "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>"
                      "<UploadId>abc-123</UploadId></InitiateMultipartUploadResult>";
    char id[32];
    assert_int_equal(sr_s3_parse_upload_id(xml, strlen(xml), id, sizeof(id)), 0);
    assert_string_equal(id, "abc-123");
    assert_int_equal(sr_s3_parse_upload_id("<x/>", 4, id, sizeof(id)), -EBADMSG);
}

static void keys_escape_like_sigv4_wants(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(sr_url_escape("a/b c+d~e", 1, out, sizeof(out)), 0);
    assert_string_equal(out, "a/b%20c%2Bd~e");
    assert_int_equal(sr_url_escape("a/b", 0, out, sizeof(out)), 0);
    assert_string_equal(out, "a%2Fb");
    assert_int_equal(sr_url_escape("abcdef", 0, out, 4), -ENAMETOOLONG);
}

static void shared_files_parse(void **state)
{
    (void)state;
    const char *ini = "# comment\n[default]\naws_access_key_id = AKIADEFAULT\n"
                      "aws_secret_access_key=secretdefault \n\n"
                      "[profile ci]\n; other comment\n  region = eu-west-3\n"
                      "[ci]\naws_access_key_id = AKIACI\n";
    char v[64];
    assert_int_equal(sr_s3_ini_get(ini, "default", "aws_access_key_id", v, sizeof(v)), 0);
    assert_string_equal(v, "AKIADEFAULT");
    assert_int_equal(sr_s3_ini_get(ini, "default", "aws_secret_access_key", v, sizeof(v)), 0);
    assert_string_equal(v, "secretdefault");
    assert_int_equal(sr_s3_ini_get(ini, "profile ci", "region", v, sizeof(v)), 0);
    assert_string_equal(v, "eu-west-3");
    assert_int_equal(sr_s3_ini_get(ini, "ci", "aws_access_key_id", v, sizeof(v)), 0);
    assert_string_equal(v, "AKIACI");
    assert_int_equal(sr_s3_ini_get(ini, "ci", "region", v, sizeof(v)), -ENOENT);
    assert_int_equal(sr_s3_ini_get(ini, "nope", "aws_access_key_id", v, sizeof(v)), -ENOENT);

    /* Nested blocks of the config file ("s3 =" then indented lines). */
    const char *conf = "[default]\nregion = us-west-2\ns3 =\n    addressing_style = path\n"
                       "    max_concurrent_requests = 20\noutput = json\n"
                       "[profile p]\ns3 =\n  addressing_style = virtual\n";
    assert_int_equal(sr_s3_ini_get_nested(conf, "default", "s3", "addressing_style", v, sizeof(v)),
                     0);
    assert_string_equal(v, "path");
    assert_int_equal(
        sr_s3_ini_get_nested(conf, "profile p", "s3", "addressing_style", v, sizeof(v)), 0);
    assert_string_equal(v, "virtual");
    /* A nested key is not a top-level one, and the block ends at the
     * next unindented line. */
    assert_int_equal(sr_s3_ini_get(conf, "default", "addressing_style", v, sizeof(v)), -ENOENT);
    assert_int_equal(sr_s3_ini_get(conf, "default", "output", v, sizeof(v)), 0);
    assert_string_equal(v, "json");
    assert_int_equal(sr_s3_ini_get_nested(conf, "default", "s3", "output", v, sizeof(v)), -ENOENT);
}

static void metadata_credentials_parse(void **state)
{
    (void)state;
    const char *js = "{\"Code\":\"Success\",\"AccessKeyId\":\"ASIA1\",\"SecretAccessKey\":\"s\","
                     "\"Token\":\"t\",\"Expiration\":\"2026-12-02T13:00:00Z\"}";
    struct sr_s3_creds c;
    memset(&c, 0, sizeof(c));
    assert_int_equal(sr_s3_creds_parse_json(js, strlen(js), &c), 0);
    assert_string_equal(c.key_id, "ASIA1");
    assert_string_equal(c.secret, "s");
    assert_string_equal(c.token, "t");
    assert_int_equal(c.expires, 1796216400);
    assert_int_equal(sr_s3_creds_parse_json("{\"AccessKeyId\":\"x\"}", 19, &c), -EBADMSG);
    int64_t t;
    assert_int_equal(sr_s3_parse_time("2026-12-02T13:00:00.123+00:00", &t), 0);
    assert_int_equal(t, 1796216400);
    assert_int_equal(sr_s3_parse_time("yesterday", &t), -EBADMSG);
}

static const char *const settings_vars[] = {
    "SPOTRUN_S3_RETRIES",         "SPOTRUN_S3_RETRY_BASE_MS", "SPOTRUN_S3_CONNECT_TIMEOUT_MS",
    "SPOTRUN_S3_STALL_TIMEOUT_S", "SPOTRUN_S3_BUFFER_KB",     "SPOTRUN_S3_CONCURRENCY",
    "SPOTRUN_S3_PART_SIZE",       "SPOTRUN_S3_SINGLE_MAX",    "SPOTRUN_S3_RANGE_SIZE",
    "SPOTRUN_S3_ADDRESSING",      "SPOTRUN_S3_CA_BUNDLE",
};

static int unset_settings(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(settings_vars) / sizeof(settings_vars[0]); i++)
        unsetenv(settings_vars[i]);
    return 0;
}

static void settings_default_when_unset_or_empty(void **state)
{
    (void)state;
    setenv("SPOTRUN_S3_CONCURRENCY", "", 1); /* empty is unset */
    struct sr_s3_settings s;
    assert_int_equal(sr_s3_settings_read(&s), 0);
    assert_int_equal(s.retries, 5);
    assert_int_equal(s.retry_base_ms, 200);
    assert_int_equal(s.connect_timeout_ms, 5000);
    assert_int_equal(s.stall_s, 30);
    assert_int_equal(s.buffer_size, 512 << 10);
    assert_int_equal(s.concurrency, 8);
    assert_int_equal(s.part_size, 16 * MIB);
    assert_int_equal(s.single_max, 64 * MIB);
    assert_int_equal(s.range_size, 16 * MIB);
    assert_int_equal(s.addressing, SR_S3_ADDR_PROFILE);
    assert_string_equal(s.ca_bundle, "");
}

static void settings_take_numbers_sizes_and_names(void **state)
{
    (void)state;
    setenv("SPOTRUN_S3_RETRIES", "0", 1);
    setenv("SPOTRUN_S3_RETRY_BASE_MS", "50", 1);
    setenv("SPOTRUN_S3_STALL_TIMEOUT_S", "2", 1);
    setenv("SPOTRUN_S3_BUFFER_KB", "0", 1); /* curl's own buffers */
    setenv("SPOTRUN_S3_CONCURRENCY", "1", 1);
    setenv("SPOTRUN_S3_PART_SIZE", "5M", 1);
    setenv("SPOTRUN_S3_SINGLE_MAX", "512KiB", 1);
    setenv("SPOTRUN_S3_RANGE_SIZE", "1G", 1);
    setenv("SPOTRUN_S3_ADDRESSING", "virtual", 1);
    setenv("SPOTRUN_S3_CA_BUNDLE", "/dev/null", 1);
    struct sr_s3_settings s;
    assert_int_equal(sr_s3_settings_read(&s), 0);
    assert_int_equal(s.retries, 0);
    assert_int_equal(s.retry_base_ms, 50);
    assert_int_equal(s.stall_s, 2);
    assert_int_equal(s.buffer_size, 0);
    assert_int_equal(s.concurrency, 1);
    assert_int_equal(s.part_size, 5 * MIB);
    assert_int_equal(s.single_max, 512 << 10);
    assert_int_equal(s.range_size, 1024 * MIB);
    assert_int_equal(s.addressing, SR_S3_ADDR_VIRTUAL);
    assert_string_equal(s.ca_bundle, "/dev/null");
}

/* A bad value is an error naming the variable, never a silent default. */
static void settings_refuse_bad_values_by_name(void **state)
{
    (void)state;
    static const struct {
        const char *var, *value;
    } bad[] = {
        {"SPOTRUN_S3_RETRIES", "five"},        {"SPOTRUN_S3_RETRIES", "-1"},
        {"SPOTRUN_S3_RETRY_BASE_MS", "200ms"}, {"SPOTRUN_S3_CONNECT_TIMEOUT_MS", " 5"},
        {"SPOTRUN_S3_STALL_TIMEOUT_S", "0"},   {"SPOTRUN_S3_BUFFER_KB", "1e3"},
        {"SPOTRUN_S3_CONCURRENCY", "0"},       {"SPOTRUN_S3_CONCURRENCY", "8x"},
        {"SPOTRUN_S3_PART_SIZE", "16Q"},       {"SPOTRUN_S3_SINGLE_MAX", "0"},
        {"SPOTRUN_S3_RANGE_SIZE", "6T"},       {"SPOTRUN_S3_ADDRESSING", "Path"},
    };
    struct sr_s3_settings s;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        unset_settings(NULL);
        setenv(bad[i].var, bad[i].value, 1);
        sr_err_clear();
        assert_int_equal(sr_s3_settings_read(&s), -EINVAL);
        assert_non_null(strstr(sr_strerror(-EINVAL), bad[i].var));
    }
    unset_settings(NULL);
    setenv("SPOTRUN_S3_CA_BUNDLE", "/nonexistent/ca.pem", 1);
    assert_int_equal(sr_s3_settings_read(&s), -ENOENT);
    assert_non_null(strstr(sr_strerror(-ENOENT), "SPOTRUN_S3_CA_BUNDLE"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(part_size_respects_minimum_and_part_count),
        cmocka_unit_test(transport_failures_and_5xx_are_retried),
        cmocka_unit_test(client_errors_fail_at_once),
        cmocka_unit_test(errors_map_to_errno_and_hint),
        cmocka_unit_test(error_bodies_parse),
        cmocka_unit_test(list_pages_parse_keys_and_prefixes),
        cmocka_unit_test(key_listing_parses),
        cmocka_unit_test(upload_id_parses),
        cmocka_unit_test(keys_escape_like_sigv4_wants),
        cmocka_unit_test(shared_files_parse),
        cmocka_unit_test(metadata_credentials_parse),
        cmocka_unit_test_setup_teardown(settings_default_when_unset_or_empty, unset_settings,
                                        unset_settings),
        cmocka_unit_test_setup_teardown(settings_take_numbers_sizes_and_names, unset_settings,
                                        unset_settings),
        cmocka_unit_test_setup_teardown(settings_refuse_bad_values_by_name, unset_settings,
                                        unset_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
