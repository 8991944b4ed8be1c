/*
 * test_gpu_stats.c - GPU utilization statistics (runtime/supervise/
 * gpu_stats.h): mean, nearest-rank p50/p95, idle share, memory and power
 * over every sample of every device; CUDA_VISIBLE_DEVICES as CUDA reads it
 * (nvml.h); and the history's reading of "gpu" events, where a tampered
 * number drops the event instead of printing nonsense (history.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "gpu_stats.h"
#include "history.h"
#include "nvml.h"

static void add_all(struct sr_gpu_stats *s, const unsigned *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sr_gpu_stats_add(s, v[i], 1000 + i, 100.0 + (double)i);
}

static void test_no_samples_say_nothing(void **state)
{
    (void)state;
    struct sr_gpu_stats s;
    sr_gpu_stats_reset(&s);
    struct sr_gpu_summary g;
    sr_gpu_stats_summary(&s, 2, &g);
    assert_int_equal(g.samples, 0);
    assert_true(g.util_mean == 0 && g.util_p50 == 0 && g.util_p95 == 0 && g.idle_share == 0);
    assert_true(g.power_mean_w < 0);
}

/* The trace t0780 uses: 6 x 0, 2 x 3, 4 x 40, 4 x 80, 4 x 100. */
static void test_mean_percentiles_and_idle_share_by_hand(void **state)
{
    (void)state;
    const unsigned v[] = {100, 0, 40, 80,  0, 3,  100, 40, 0,   80,
                          0,   3, 40, 100, 0, 80, 40,  0,  100, 80};
    struct sr_gpu_stats s;
    sr_gpu_stats_reset(&s);
    add_all(&s, v, 20);
    struct sr_gpu_summary g;
    sr_gpu_stats_summary(&s, 1, &g);
    assert_int_equal(g.samples, 20);
    assert_int_equal(g.devices, 1);
    assert_true(g.util_mean > 44.299 && g.util_mean < 44.301); /* 886 / 20 */
    assert_true(g.util_p50 == 40);    /* rank 10 of 20: the 10th smallest */
    assert_true(g.util_p95 == 100);   /* rank 19 */
    assert_true(g.idle_share == 0.4); /* 8 of 20 under 5 % */
    assert_int_equal(g.mem_used_max, 1019);
    assert_true(g.power_mean_w > 109.49 && g.power_mean_w < 109.51); /* 100..119 */
}

static void test_nearest_rank_edges(void **state)
{
    (void)state;
    struct sr_gpu_stats s;
    sr_gpu_stats_reset(&s);
    sr_gpu_stats_add(&s, 7, 0, -1);
    assert_true(sr_gpu_stats_percentile(&s, 0) == 7);
    assert_true(sr_gpu_stats_percentile(&s, 50) == 7);
    assert_true(sr_gpu_stats_percentile(&s, 100) == 7);
    sr_gpu_stats_add(&s, 9, 0, -1);
    assert_true(sr_gpu_stats_percentile(&s, 50) == 7); /* rank 1 of 2 */
    assert_true(sr_gpu_stats_percentile(&s, 51) == 9);
    for (int i = 0; i < 98; i++)          /* 100 samples: 7, 9, then 98 x 100 */
        sr_gpu_stats_add(&s, 250, 0, -1); /* above 100 counts as 100 */
    assert_true(sr_gpu_stats_percentile(&s, 1) == 7);
    assert_true(sr_gpu_stats_percentile(&s, 2) == 9);
    assert_true(sr_gpu_stats_percentile(&s, 3) == 100);
    struct sr_gpu_summary g;
    sr_gpu_stats_summary(&s, 1, &g);
    assert_true(g.power_mean_w < 0); /* no power reading at all */
    assert_true(g.idle_share == 0);
}

static void test_threshold_of_idle_is_5_percent(void **state)
{
    (void)state;
    struct sr_gpu_stats s;
    sr_gpu_stats_reset(&s);
    sr_gpu_stats_add(&s, 4, 0, -1);
    sr_gpu_stats_add(&s, 5, 0, -1);
    struct sr_gpu_summary g;
    sr_gpu_stats_summary(&s, 1, &g);
    assert_true(g.idle_share == 0.5);
}

static void test_cuda_visible_devices_as_cuda_reads_it(void **state)
{
    (void)state;
    struct sr_cvd_entry e[8];
    assert_int_equal(sr_cvd_parse("", e, 8), 0);
    assert_int_equal(sr_cvd_parse("-1", e, 8), 0);
    assert_int_equal(sr_cvd_parse("2, 0", e, 8), 2);
    assert_int_equal(e[0].kind, SR_CVD_INDEX);
    assert_int_equal(e[0].index, 2);
    assert_int_equal(e[1].index, 0);
    /* the list ends at the first entry that is not a device */
    assert_int_equal(sr_cvd_parse("1,-1,0", e, 8), 1);
    assert_int_equal(sr_cvd_parse("1,x,0", e, 8), 1);
    assert_int_equal(sr_cvd_parse("GPU-abc,MIG-def,3", e, 8), 3);
    assert_int_equal(e[0].kind, SR_CVD_UUID);
    assert_string_equal(e[0].uuid, "GPU-abc");
    assert_int_equal(e[1].kind, SR_CVD_MIG);
    assert_int_equal(e[2].kind, SR_CVD_INDEX);
    assert_int_equal(sr_cvd_parse("0,1,2", e, 2), 2); /* at most cap */
}

static const char *const good =
    "{\"event\":\"gpu\",\"unix_ms\":1000,\"attempt\":0,\"samples\":20,\"devices\":2,"
    "\"util_mean\":44.3,\"util_p50\":40,\"util_p95\":100,\"idle_share\":0.4,"
    "\"mem_used_max\":1000000,\"power_mean_w\":150.5}";

static void test_history_reads_the_last_gpu_event(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    const char *first = "{\"event\":\"gpu\",\"unix_ms\":900,\"attempt\":0,\"samples\":5,"
                        "\"devices\":2,\"util_mean\":10,\"util_p50\":10,\"util_p95\":10,"
                        "\"idle_share\":0,\"mem_used_max\":10,\"power_mean_w\":null}";
    assert_int_equal(sr_hist_add_line(&h, first, strlen(first)), 0);
    assert_int_equal(sr_hist_add_line(&h, good, strlen(good)), 0);
    sr_hist_derive(&h);
    assert_int_equal(h.n_att, 1);
    const struct sr_hist_attempt *a = &h.att[0];
    assert_int_equal(a->gpu_samples, 20);
    assert_int_equal(a->gpu_devices, 2);
    assert_true(a->gpu_util_mean == 44.3 && a->gpu_util_p50 == 40 && a->gpu_util_p95 == 100);
    assert_true(a->gpu_idle_share == 0.4 && a->gpu_power_mean_w == 150.5);
    assert_int_equal(a->gpu_mem_used_max, 1000000);
    assert_int_equal(h.gpu_samples, 20);
    sr_hist_free(&h);
}

static void test_run_level_is_weighted_by_samples(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    const char *a0 = "{\"event\":\"gpu\",\"unix_ms\":1000,\"attempt\":0,\"samples\":30,"
                     "\"devices\":1,\"util_mean\":80,\"util_p50\":80,\"util_p95\":90,"
                     "\"idle_share\":0.1,\"mem_used_max\":1}";
    const char *a1 = "{\"event\":\"gpu\",\"unix_ms\":2000,\"attempt\":1,\"samples\":10,"
                     "\"devices\":1,\"util_mean\":0,\"util_p50\":0,\"util_p95\":0,"
                     "\"idle_share\":1,\"mem_used_max\":1}";
    sr_hist_add_line(&h, a0, strlen(a0));
    sr_hist_add_line(&h, a1, strlen(a1));
    sr_hist_derive(&h);
    assert_int_equal(h.gpu_samples, 40);
    assert_true(h.gpu_util_mean == 60);     /* (30 x 80 + 10 x 0) / 40 */
    assert_true(h.gpu_idle_share == 0.325); /* (3 + 10) / 40 */
    sr_hist_free(&h);
}

static void test_tampered_gpu_events_are_ignored(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "\"util_mean\":101",   "\"util_mean\":-1",      "\"util_p50\":\"40\"",
        "\"util_p95\":1e300",  "\"idle_share\":1.5",    "\"power_mean_w\":10001",
        "\"power_mean_w\":-3", "\"samples\":0",         "\"samples\":2.5",
        "\"samples\":1e12",    "\"devices\":0",         "\"devices\":65",
        "\"mem_used_max\":-1", "\"mem_used_max\":1e30", "\"util_p95\":30", /* below its p50 */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char line[512];
        /* the good event with that one field's value replaced */
        const char *key_end = strchr(bad[i], ':');
        char key[32];
        snprintf(key, sizeof(key), "%.*s", (int)(key_end - bad[i]), bad[i]);
        char base[512];
        snprintf(base, sizeof(base), "%s", good);
        char *k = strstr(base, key);
        assert_non_null(k);
        char *v_end = k + strlen(key) + 1;
        v_end += strcspn(v_end, ",}");
        snprintf(line, sizeof(line), "%.*s%s%s", (int)(k - base), base, bad[i], v_end);
        struct sr_history h;
        sr_hist_init(&h);
        assert_int_equal(sr_hist_add_line(&h, line, strlen(line)), 0);
        sr_hist_derive(&h);
        if (h.n_att != 1 || h.att[0].gpu_samples != 0 || h.gpu_samples != 0)
            fail_msg("accepted: %s", line);
        sr_hist_free(&h);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_samples_say_nothing),
        cmocka_unit_test(test_mean_percentiles_and_idle_share_by_hand),
        cmocka_unit_test(test_nearest_rank_edges),
        cmocka_unit_test(test_threshold_of_idle_is_5_percent),
        cmocka_unit_test(test_cuda_visible_devices_as_cuda_reads_it),
        cmocka_unit_test(test_history_reads_the_last_gpu_event),
        cmocka_unit_test(test_run_level_is_weighted_by_samples),
        cmocka_unit_test(test_tampered_gpu_events_are_ignored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
