/*
 * test_preload_manifest.c - the manifest's optional "gpu" field, which
 * records the GPU memory peaks the preload shim measured: written only when
 * known, read back exactly, and never a reason to refuse a manifest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "manifest.h"

static struct sr_manifest sample(void)
{
    struct sr_manifest m;
    memset(&m, 0, sizeof(m));
    m.format = SR_MANIFEST_FORMAT;
    strcpy(m.run_id, "gpu-run");
    m.seq = 3;
    m.step = 42;
    m.created = 1700000000;
    m.frame_size = 1 << 20;
    m.level = 3;
    strcpy(m.checksum, "xxh3-128:0123456789abcdef0123456789abcdef");
    return m;
}

static void gpu_peaks_round_trip(void **state)
{
    (void)state;
    struct sr_manifest m = sample(), back;
    m.gpu_devices = 2;
    m.gpu_peak[0] = 123456789;
    m.gpu_peak[1] = 1ULL << 40;
    char *json;
    size_t len;
    assert_int_equal(sr_manifest_to_json(&m, &json, &len), 0);
    assert_non_null(strstr(json, "\"peak_bytes\""));
    assert_int_equal(sr_manifest_parse(json, len, &back), 0);
    assert_int_equal(back.gpu_devices, 2);
    assert_true(back.gpu_peak[0] == 123456789);
    assert_true(back.gpu_peak[1] == 1ULL << 40);
    free(json);
}

static void no_gpu_no_field(void **state)
{
    (void)state;
    struct sr_manifest m = sample(), back;
    char *json;
    size_t len;
    assert_int_equal(sr_manifest_to_json(&m, &json, &len), 0);
    assert_null(strstr(json, "\"gpu\""));
    assert_int_equal(sr_manifest_parse(json, len, &back), 0);
    assert_int_equal(back.gpu_devices, 0);
    free(json);
}

static void malformed_gpu_is_ignored(void **state)
{
    (void)state;
    struct sr_manifest m = sample(), back;
    char *json;
    size_t len;
    assert_int_equal(sr_manifest_to_json(&m, &json, &len), 0);
    /* Splice a bad "gpu" value in front of the closing brace. */
    char *end = strrchr(json, '}');
    const char *bad = ", \"gpu\": {\"peak_bytes\": [\"lots\", -1]}\n}\n";
    char *edited = malloc(len + strlen(bad) + 1);
    memcpy(edited, json, (size_t)(end - json));
    strcpy(edited + (end - json), bad);
    assert_int_equal(sr_manifest_parse(edited, strlen(edited), &back), 0);
    assert_int_equal(back.gpu_devices, 0);
    free(edited);
    free(json);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_peaks_round_trip),
        cmocka_unit_test(no_gpu_no_field),
        cmocka_unit_test(malformed_gpu_is_ignored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
