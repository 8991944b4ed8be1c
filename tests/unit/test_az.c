/*
 * test_az.c - the pure parts of the Azure Blob client: the Shared Key
 * canonicalized resource (the documented examples), the string to sign and
 * its HMAC, connection strings, List Blobs pages, retry classification,
 * IMDS token answers, and the az:// URL checks.
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
#include <openssl/evp.h>

#include "az.h"
#include "log.h"
#include "store.h"

#define DEV_KEY                                                                                    \
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

/* "Authorize with Shared Key", "Shared Key format for 2009-09-19 and later":
 * the two CanonicalizedResource examples the documentation gives. */
static void canonicalized_resource_matches_the_documented_examples(void **state)
{
    (void)state;
    char out[512];
    assert_int_equal(sr_az_canon_resource("myaccount", "/mycontainer",
                                          "restype=container&comp=metadata", out, sizeof(out)),
                     0);
    assert_string_equal(out, "/myaccount/mycontainer\ncomp:metadata\nrestype:container");
    assert_int_equal(sr_az_canon_resource(
                         "myaccount", "/mycontainer",
                         "restype=container&comp=list&include=snapshots&include=metadata&include="
                         "uncommittedblobs",
                         out, sizeof(out)),
                     0);
    assert_string_equal(out, "/myaccount/mycontainer\ncomp:list\ninclude:metadata,snapshots,"
                             "uncommittedblobs\nrestype:container");
}

static void canonicalized_resource_decodes_values_and_keeps_the_emulator_path(void **state)
{
    (void)state;
    char out[512];
    /* Azurite's URL path starts with the account: it appears twice. */
    assert_int_equal(sr_az_canon_resource("devstoreaccount1", "/devstoreaccount1/c/a%20b",
                                          "blockid=YWJj%3D&comp=block", out, sizeof(out)),
                     0);
    assert_string_equal(out,
                        "/devstoreaccount1/devstoreaccount1/c/a%20b\nblockid:YWJj=\ncomp:block");
    assert_int_equal(sr_az_canon_resource("a", "/c", NULL, out, sizeof(out)), 0);
    assert_string_equal(out, "/a/c");
}

static void string_to_sign_has_the_documented_fields_in_order(void **state)
{
    (void)state;
    /* x-ms-* headers any case and order: lowercased and sorted. */
    const char *ms[] = {"x-ms-version:2021-08-06", "X-MS-Date:Sun, 06 Dec 2026 14:00:00 GMT",
                        "x-ms-blob-type:BlockBlob"};
    const struct sr_az_sts s = {
        .method = "PUT",
        .content_length = "11",
        .content_md5 = "",
        .content_type = "",
        .if_match = "",
        .if_none_match = "*",
        .range = "",
        .ms_headers = ms,
        .n_ms = 3,
        .canon_resource = "/devstoreaccount1/devstoreaccount1/ckpt/run/lease.json",
    };
    char sts[1024], sig[64];
    assert_int_equal(sr_az_string_to_sign(&s, sts, sizeof(sts)), 0);
    assert_string_equal(sts, "PUT\n\n\n11\n\n\n\n\n\n*\n\n\n"
                             "x-ms-blob-type:BlockBlob\n"
                             "x-ms-date:Sun, 06 Dec 2026 14:00:00 GMT\n"
                             "x-ms-version:2021-08-06\n"
                             "/devstoreaccount1/devstoreaccount1/ckpt/run/lease.json");
    /* The signature, computed independently (Python's hmac) with the
     * emulator's published key. */
    unsigned char key[64];
    const int kl = EVP_DecodeBlock(key, (const unsigned char *)DEV_KEY, (int)strlen(DEV_KEY));
    assert_int_equal(kl, 66);
    assert_int_equal(sr_az_hmac(key, 64, sts, sig, sizeof(sig)), 0);
    assert_string_equal(sig, "UP23dK7LBulSBOEdlMq0oUvoz5Dz/yFqP7JZCpntSY8=");
}

static void connection_strings_give_account_key_sas_and_endpoint(void **state)
{
    (void)state;
    struct sr_az_conn c;
    assert_int_equal(sr_az_parse_conn("DefaultEndpointsProtocol=https;AccountName=acct;"
                                      "AccountKey=abc=;EndpointSuffix=core.chinacloudapi.cn",
                                      &c),
                     0);
    assert_string_equal(c.account, "acct");
    assert_string_equal(c.key, "abc="); /* '=' inside a value kept */
    assert_string_equal(c.protocol, "https");
    assert_string_equal(c.suffix, "core.chinacloudapi.cn");
    assert_int_equal(
        sr_az_parse_conn("BlobEndpoint=http://h:1/a;SharedAccessSignature=sv=1&sig=x", &c), 0);
    assert_string_equal(c.endpoint, "http://h:1/a");
    assert_string_equal(c.sas, "sv=1&sig=x");
    assert_int_equal(sr_az_parse_conn("UseDevelopmentStorage=true", &c), 0);
    assert_string_equal(c.account, "devstoreaccount1");
    assert_string_equal(c.key, DEV_KEY);
    assert_string_equal(c.endpoint, "http://127.0.0.1:10000/devstoreaccount1");
    assert_int_equal(sr_az_parse_conn("garbage", &c), -EINVAL);
}

static void a_list_page_gives_names_sizes_and_the_next_marker(void **state)
{
    (void)state;
    const char *xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
                      "<EnumerationResults ServiceEndpoint=\"x\" ContainerName=\"c\">"
                      "<Prefix>p/run/</Prefix><Blobs>"
                      "<Blob><Name>p/run/lease.json</Name><Properties>"
                      "<Content-Length>42</Content-Length></Properties></Blob>"
                      "<BlobPrefix><Name>p/run/ckpt/</Name></BlobPrefix>"
                      "</Blobs><NextMarker>2!abc</NextMarker></EnumerationResults>";
    struct sr_strlist l = {0};
    char marker[64];
    assert_int_equal(sr_az_parse_list(xml, strlen(xml), "p/run/", 0, &l, marker, sizeof(marker)),
                     0);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[0], "lease.json");
    assert_string_equal(l.v[1], "ckpt");
    assert_string_equal(marker, "2!abc");
    sr_strlist_free(&l);
    assert_int_equal(sr_az_parse_list(xml, strlen(xml), "p/", 1, &l, marker, sizeof(marker)), 0);
    assert_string_equal(l.v[0], "run/lease.json");
    assert_int_equal(sr_strlist_size(&l, 0), 42);
    sr_strlist_free(&l);
    assert_int_equal(sr_az_parse_list("<Error/>", 8, "", 0, &l, marker, sizeof(marker)), -EBADMSG);
}

static void throttling_and_server_errors_are_retried(void **state)
{
    (void)state;
    assert_int_equal(sr_az_classify(CURLE_OK, 201), 0);
    assert_int_equal(sr_az_classify(CURLE_OK, 206), 0);
    assert_int_equal(sr_az_classify(CURLE_OK, 503), 1); /* ServerBusy */
    assert_int_equal(sr_az_classify(CURLE_OK, 500), 1);
    assert_int_equal(sr_az_classify(CURLE_OK, 429), 1);
    assert_int_equal(sr_az_classify(CURLE_COULDNT_CONNECT, 0), 1);
    assert_int_equal(sr_az_classify(CURLE_OK, 403), 2);
    assert_int_equal(sr_az_classify(CURLE_OK, 412), 2);
    assert_int_equal(sr_az_classify(CURLE_OK, 404), 2);
}

static void imds_token_answers_parse_with_either_expiry_form(void **state)
{
    (void)state;
    char tok[64];
    int64_t exp = 0;
    const char *a = "{\"access_token\":\"eyJ0\",\"expires_on\":\"1700000000\","
                    "\"resource\":\"https://storage.azure.com/\",\"token_type\":\"Bearer\"}";
    assert_int_equal(sr_az_parse_token(a, strlen(a), tok, sizeof(tok), &exp), 0);
    assert_string_equal(tok, "eyJ0");
    assert_int_equal(exp, 1700000000);
    const char *b = "{\"access_token\":\"t\",\"expires_on\":1700000001}";
    assert_int_equal(sr_az_parse_token(b, strlen(b), tok, sizeof(tok), &exp), 0);
    assert_int_equal(exp, 1700000001);
    assert_int_equal(sr_az_parse_token("{}", 2, tok, sizeof(tok), &exp), -EBADMSG);
}

static void bad_az_urls_say_what_an_az_url_looks_like(void **state)
{
    (void)state;
    struct sr_store *st = NULL;
    assert_int_equal(sr_store_open("az://Bad_Account/ckpt", &st), -EINVAL);
    assert_non_null(strstr(sr_strerror(-EINVAL), "want az://account/container/prefix"));
    assert_int_equal(sr_store_open("az://acct", &st), -EINVAL);
    assert_int_equal(sr_store_open("az://acct/c/../x", &st), -EINVAL);
}

static void mistyped_az_urls_name_the_url_meant(void **state)
{
    (void)state;
    const char *typos[][2] = {{"az:/acct/ckpt", "mistyped az://acct/ckpt"},
                              {"AZ://acct/ckpt", "mistyped az://acct/ckpt"},
                              {"az//acct/ckpt", "mistyped az://acct/ckpt"},
                              {"az:acct/ckpt", "mistyped az://acct/ckpt"}};
    for (size_t i = 0; i < sizeof(typos) / sizeof(typos[0]); i++) {
        struct sr_store *st = (void *)1;
        assert_int_equal(sr_store_open(typos[i][0], &st), -EINVAL);
        assert_null(st);
        assert_non_null(strstr(sr_strerror(-EINVAL), typos[i][1]));
    }
    struct sr_store *st = NULL;
    assert_int_equal(sr_store_open("gs://bucket", &st), -EINVAL);
    assert_non_null(strstr(sr_strerror(-EINVAL), "az://account/container/prefix"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(canonicalized_resource_matches_the_documented_examples),
        cmocka_unit_test(canonicalized_resource_decodes_values_and_keeps_the_emulator_path),
        cmocka_unit_test(string_to_sign_has_the_documented_fields_in_order),
        cmocka_unit_test(connection_strings_give_account_key_sas_and_endpoint),
        cmocka_unit_test(a_list_page_gives_names_sizes_and_the_next_marker),
        cmocka_unit_test(throttling_and_server_errors_are_retried),
        cmocka_unit_test(imds_token_answers_parse_with_either_expiry_form),
        cmocka_unit_test(bad_az_urls_say_what_an_az_url_looks_like),
        cmocka_unit_test(mistyped_az_urls_name_the_url_meant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
