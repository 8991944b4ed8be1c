/*
 * test_history.c - the numbers `spotrun show`, `report` and the metrics
 * file derive from event logs (runtime/record/history.h): lost work, percentiles,
 * states, preemptions by source, failures by cause, instance time, cost,
 * and the metrics text. Event lines are synthetic, written as events.c
 * writes them.
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

#include "fsutil.h"
#include "histutil.h"
#include "history.h"
#include "units.h"
#include "metrics.h"
#include "summary.h"
#include "testutil.h"

#define T0 1700000000000LL /* unix ms of the first event */

/* attempt 0: starts at 0, checkpoint 1 staged at 10 s (durable at 11 s),
 * crashes at 25 s -> lost 15 s; restart.
 * attempt 1: resumes at 26 s, checkpoint 2 staged at 40 s (durable 42 s),
 * notice at 50 s, checkpoint 3 staged at 51 s (durable 53 s), exit at
 * 54 s -> lost 3 s; preempted.
 * attempt 2 (another node, after 6 s queued): starts at 60 s, done at 70 s. */
static void scenario(struct sr_history *h)
{
    EV(h, 0, 0, "start", ",\"host\":\"a\",\"resumed\":false,\"seq\":0,\"step\":-1");
    EV(h, 10000, 0, "staged",
       ",\"seq\":1,\"step\":100,\"raw_bytes\":1000,\"stored_bytes\":100,"
       "\"seconds\":0.5");
    EV(h, 11000, 0, "persisted",
       ",\"seq\":1,\"step\":100,\"raw_bytes\":1000,\"stored_bytes\":100,"
       "\"seconds\":1.0");
    EV(h, 25000, 0, "exit", ",\"code\":3");
    EV(h, 25001, 0, "restart", ",\"restart\":1,\"delay_ms\":1000");
    EV(h, 26000, 1, "restore", ",\"seq\":1,\"step\":100,\"raw_bytes\":1000,\"seconds\":0.1");
    EV(h, 26100, 1, "start", ",\"host\":\"a\",\"resumed\":true,\"seq\":1,\"step\":100");
    EV(h, 40000, 1, "staged",
       ",\"seq\":2,\"step\":200,\"raw_bytes\":1000,\"stored_bytes\":200,"
       "\"seconds\":1.5");
    EV(h, 42000, 1, "persisted",
       ",\"seq\":2,\"step\":200,\"raw_bytes\":1000,\"stored_bytes\":200,"
       "\"seconds\":2.0");
    EV(h, 50000, 1, "notice", ",\"source\":\"aws\",\"ms_left\":120000");
    EV(h, 50001, 1, "request", ",\"reason\":\"notice\"");
    EV(h, 51000, 1, "staged",
       ",\"seq\":3,\"step\":250,\"raw_bytes\":1000,\"stored_bytes\":200,"
       "\"seconds\":2.5");
    EV(h, 53000, 1, "persisted",
       ",\"seq\":3,\"step\":250,\"raw_bytes\":1000,\"stored_bytes\":200,"
       "\"seconds\":3.0");
    EV(h, 54000, 1, "exit", ",\"code\":143,\"signal\":\"TERM\"");
    EV(h, 54001, 1, "preempted", ",\"durable_seq\":3");
    EV(h, 60000, 2, "start", ",\"host\":\"b\",\"resumed\":true,\"seq\":3,\"step\":250");
    EV(h, 69000, 2, "exit", ",\"code\":0");
    EV(h, 70000, 2, "done", "");
    sr_hist_derive(h);
}

static void lost_work_is_since_the_newest_durable_checkpoint(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    scenario(&h);
    assert_int_equal(h.n_att, 3);
    assert_int_equal(h.att[0].end, SR_END_CRASHED);
    assert_int_equal(h.att[0].lost_ms, 15000); /* 25 s crash - 10 s staged */
    assert_int_equal(h.att[1].end, SR_END_PREEMPTED);
    assert_int_equal(h.att[1].lost_ms, 3000); /* 54 s exit - 51 s staged */
    assert_int_equal(h.att[2].end, SR_END_DONE);
    assert_int_equal(h.att[2].lost_ms, 0);
    assert_int_equal(h.lost_ms, 18000);
    sr_hist_free(&h);
}

static void lost_work_never_counts_an_earlier_attempt(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    /* Resumed from a checkpoint staged in attempt 0, crashed before saving:
     * only attempt 1's own time is lost again. */
    EV(&h, 0, 0, "start", "");
    EV(&h, 5000, 0, "staged", ",\"seq\":1,\"seconds\":0.1");
    EV(&h, 5100, 0, "persisted", ",\"seq\":1,\"seconds\":0.1");
    EV(&h, 9000, 0, "exit", ",\"code\":1");
    EV(&h, 9001, 0, "restart", "");
    EV(&h, 10000, 1, "start", ",\"resumed\":true,\"seq\":1");
    EV(&h, 17000, 1, "exit", ",\"code\":1");
    sr_hist_derive(&h);
    assert_int_equal(h.att[0].lost_ms, 4000);
    assert_int_equal(h.att[1].lost_ms, 7000);
    assert_int_equal(h.att[1].end, SR_END_FAILED);
    assert_int_equal(h.state, SR_STATE_FAILED);
    assert_int_equal(h.failures, 2);
    sr_hist_free(&h);
}

static void a_crash_without_any_checkpoint_loses_the_whole_attempt(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 0, 0, "start", "");
    EV(&h, 8000, 0, "exit", ",\"code\":137,\"signal\":\"KILL\"");
    EV(&h, 8001, 0, "restart", "");
    EV(&h, 9000, 1, "start", "");
    sr_hist_derive(&h);
    assert_int_equal(h.att[0].lost_ms, 8000);
    assert_int_equal(h.state, SR_STATE_RUNNING);
    assert_int_equal(h.n_causes, 1);
    assert_string_equal(h.by_cause[0].name, "SIGKILL");
    sr_hist_free(&h);
}

#define STAGED                                                                                     \
    "{\"event\":\"staged\",\"time\":\"x\",\"unix_ms\":%lld,\"attempt\":%d,\"seq\":%d,"             \
    "\"seconds\":0.1,\"state_ms\":%lld}"

/* Lost work counts from when the state was taken (the staged event's
 * state_ms: the job's commit call, or the newest mtime of a directory
 * committed as it stands), not from its staging; a state_ms after the
 * staging is not believed. */
static void lost_work_counts_from_when_the_state_was_taken(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 0, 0, "start", "");
    /* --settle: written at 2 s, quiet until 6 s */
    tu_hist_add(&h, STAGED, T0 + 6000, 0, 1, T0 + 2000);
    EV(&h, 6100, 0, "persisted", ",\"seq\":1,\"seconds\":0.1");
    EV(&h, 9000, 0, "exit", ",\"code\":1");
    EV(&h, 9001, 0, "restart", "");
    EV(&h, 10000, 1, "start", ",\"resumed\":true,\"seq\":1");
    /* a clock that disagrees: its staging stands */
    tu_hist_add(&h, STAGED, T0 + 12000, 1, 2, T0 + 99000);
    EV(&h, 12100, 1, "persisted", ",\"seq\":2,\"seconds\":0.1");
    EV(&h, 15000, 1, "exit", ",\"code\":1");
    sr_hist_derive(&h);
    assert_int_equal(h.att[0].lost_ms, 7000); /* 9 s - 2 s, not 9 s - 6 s */
    assert_int_equal(h.att[1].lost_ms, 3000);
    assert_int_equal(h.lost_ms, 10000);
    sr_hist_free(&h);
}

/* The work of an attempt a sweep pruned or cancelled is no loss: its own
 * figure, by cause. */
static void pruned_and_cancelled_work_is_not_lost(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 0, 0, "start", "");
    EV(&h, 1000, 0, "staged", ",\"seq\":1,\"seconds\":0.1");
    EV(&h, 1100, 0, "persisted", ",\"seq\":1,\"seconds\":0.1");
    EV(&h, 4000, 0, "limit", ",\"cause\":\"pruned\",\"what\":\"sweep\",\"limit\":2");
    EV(&h, 5000, 0, "exit", ",\"code\":0");
    sr_hist_derive(&h);
    assert_int_equal(h.att[0].cause, SR_CAUSE_PRUNED);
    assert_int_equal(h.att[0].lost_ms, 0);
    assert_int_equal(h.att[0].dropped_ms, 5000);
    assert_int_equal(h.lost_ms, 0);
    assert_int_equal(h.pruned_ms, 5000);
    assert_int_equal(h.cancelled_ms, 0);
    EV(&h, 6000, 1, "start", ",\"resumed\":true,\"seq\":1");
    EV(&h, 8000, 1, "limit", ",\"cause\":\"cancelled\",\"what\":\"sweep\"");
    EV(&h, 9000, 1, "exit", ",\"code\":0");
    sr_hist_derive(&h);
    assert_int_equal(h.att[1].cause, SR_CAUSE_CANCELLED);
    assert_int_equal(h.lost_ms, 0);
    assert_int_equal(h.pruned_ms, 5000);
    assert_int_equal(h.cancelled_ms, 3000);
    sr_hist_free(&h);
}

static void states_sources_and_checkpoint_stats(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    scenario(&h);
    assert_int_equal(h.state, SR_STATE_DONE);
    assert_int_equal(h.preemptions, 1);
    assert_int_equal(h.n_sources, 1);
    assert_string_equal(h.by_source[0].name, "aws");
    assert_int_equal(h.failures, 1);
    assert_string_equal(h.by_cause[0].name, "exit 3");
    assert_int_equal(h.restarts, 1);
    assert_int_equal(h.staged, 3);
    assert_int_equal(h.durable, 3);
    assert_true(h.stage_p50 == 1.5 && h.stage_max == 2.5);
    assert_true(h.persist_p50 == 2.0 && h.persist_max == 3.0);
    assert_int_equal(h.raw_bytes, 3000);
    assert_int_equal(h.stored_bytes, 500);
    assert_int_equal(h.last_durable_ms, T0 + 53000);
    sr_hist_free(&h);
}

static void instance_time_queue_time_and_cost(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    scenario(&h);
    /* Sessions: attempts 0-1 (one wrapper, 0..54.001 s), attempt 2 (60..70 s). */
    assert_int_equal(h.sessions, 2);
    assert_int_equal(h.wall_ms, 70000);
    assert_int_equal(h.instance_ms, 54001 + 10000);
    assert_int_equal(h.queued_ms, 70000 - 64001);
    const struct sr_hist_prices p = {.spot_per_hour = 3.6, .on_demand_per_hour = 36.0};
    double spot, od;
    sr_hist_cost(&h, &p, &spot, &od);
    assert_float_equal(spot, 64.001 / 3600.0 * 3.6, 1e-12);
    assert_float_equal(od, 64.001 / 3600.0 * 36.0, 1e-12);
    sr_hist_free(&h);
}

static void a_preempted_run_is_preempted_until_resumed(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 0, 0, "start", "");
    EV(&h, 1000, 0, "notice", ",\"source\":\"signal:SIGTERM\",\"ms_left\":25000");
    EV(&h, 2000, 0, "exit", ",\"code\":143,\"signal\":\"TERM\"");
    EV(&h, 2001, 0, "preempted", ",\"durable_seq\":0");
    sr_hist_derive(&h);
    assert_int_equal(h.state, SR_STATE_PREEMPTED);
    assert_string_equal(h.by_source[0].name, "signal:SIGTERM");
    assert_int_equal(h.att[0].lost_ms, 2000); /* nothing durable: all of it */
    /* An attempt whose log stops without an end, followed by another: vanished. */
    EV(&h, 5000, 1, "start", "");
    EV(&h, 6000, 1, "staged", ",\"seq\":1,\"seconds\":0.2");
    EV(&h, 9000, 2, "start", "");
    sr_hist_derive(&h);
    assert_int_equal(h.att[1].end, SR_END_VANISHED);
    assert_int_equal(h.att[1].lost_ms, 1000); /* staged at 6 s but never durable */
    assert_int_equal(h.state, SR_STATE_RUNNING);
    sr_hist_free(&h);
}

/* Only a notice is a preemption: a "preempted" line without a notice in its
 * attempt (older wrappers wrote one for a job that exited 75 by itself) is
 * the job's failure with its own code. */
static void a_job_exiting_75_by_itself_is_no_preemption(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 0, 0, "start", "");
    EV(&h, 2000, 0, "exit", ",\"code\":75");
    EV(&h, 2001, 0, "preempted", ",\"durable_seq\":0");
    sr_hist_derive(&h);
    assert_int_equal(h.att[0].end, SR_END_FAILED);
    assert_int_equal(h.state, SR_STATE_FAILED);
    assert_int_equal(h.preemptions, 0);
    assert_int_equal(h.failures, 1);
    assert_string_equal(h.by_cause[0].name, "exit 75");
    sr_hist_free(&h);
}

static void percentiles_use_the_nearest_rank(void **state)
{
    (void)state;
    double v[] = {5, 1, 4, 2, 3};
    assert_true(sr_percentile(v, 5, 50) == 3);
    assert_true(sr_percentile(v, 5, 100) == 5);
    assert_true(sr_percentile(v, 5, 0) == 1);
    double w[] = {4, 1, 3, 2};
    assert_true(sr_percentile(w, 4, 50) == 2);
    assert_true(sr_percentile(w, 4, 90) == 4);
    double one[] = {7};
    assert_true(sr_percentile(one, 1, 50) == 7);
    assert_true(sr_percentile(NULL, 0, 50) == 0);
}

static void bad_lines_are_refused_and_unknown_events_ignored(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    assert_int_equal(sr_hist_add_line(&h, "{\"event\":\"start\",", 18), -EBADMSG);
    assert_int_equal(sr_hist_add_line(&h, "[1,2]", 5), -EBADMSG);
    EV(&h, 0, 0, "something-new", ",\"x\":1");
    tu_hist_add(&h, "{\"event\":\"start\"}"); /* no time: ignored */
    sr_hist_derive(&h);
    assert_int_equal(h.n_att, 1);
    assert_int_equal(h.state, SR_STATE_RUNNING);
    sr_hist_free(&h);
}

/* A "placement" event says where an attempt ran; the user's
 * --instance-type (in the start) wins; tampered values are ignored. */
static void placement_events_say_where_each_attempt_ran(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 0, 0, "start", ",\"host\":\"a\"");
    EV(&h, 5, 0, "placement",
       ",\"cloud\":\"aws\",\"instance_type\":\"g5.xlarge\",\"zone\":\"us-east-1a\","
       "\"region\":\"us-east-1\"");
    EV(&h, 10, 1, "start", ",\"host\":\"b\",\"instance_type\":\"p4d.24xlarge\"");
    EV(&h, 15, 1, "placement",
       ",\"cloud\":\"aws\",\"instance_type\":\"g5.xlarge\",\"zone\":\"us-east-1b\"");
    EV(&h, 20, 2, "start", ",\"host\":\"c\"");
    EV(&h, 25, 2, "placement",
       ",\"cloud\":\"gcp\",\"instance_type\":\"a2 highgpu\",\"zone\":\"us\\ncentral1-a\","
       "\"region\":5");
    EV(&h, 30, 3, "start", ",\"host\":\"d\"");
    EV(&h, 35, 3, "placement", ",\"cloud\":\"evil\",\"zone\":\"us-east-1a\"");
    sr_hist_derive(&h);
    assert_int_equal(h.n_att, 4);
    assert_string_equal(h.att[0].cloud, "aws");
    assert_string_equal(h.att[0].instance_type, "g5.xlarge");
    assert_string_equal(h.att[0].zone, "us-east-1a");
    assert_string_equal(h.att[0].region, "us-east-1");
    assert_string_equal(h.att[1].instance_type, "p4d.24xlarge"); /* the user's */
    assert_string_equal(h.att[1].zone, "us-east-1b");
    assert_string_equal(h.att[1].region, "");
    assert_string_equal(h.att[2].cloud, "gcp");
    assert_string_equal(h.att[2].instance_type, "");
    assert_string_equal(h.att[2].zone, "");
    assert_string_equal(h.att[3].cloud, ""); /* not a cloud spotrun writes: nothing */
    assert_string_equal(h.att[3].zone, "");
    sr_hist_free(&h);
}

/* The newest "interval" event is the one show prints, whatever the order
 * of the lines; one without a sane interval is ignored. */
static void the_newest_interval_event_wins(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 5000, 1, "interval",
       ",\"source\":\"auto\",\"interval_ms\":4000,\"cost_ms\":500,\"cost_from\":"
       "\"measured\",\"mtbf_ms\":16000,\"mtbf_from\":\"history\"");
    EV(&h, 1000, 0, "interval",
       ",\"source\":\"auto\",\"interval_ms\":10000,\"cost_ms\":10000,\"cost_from\":"
       "\"prior\",\"mtbf_ms\":20000,\"mtbf_from\":\"prior\"");
    EV(&h, 9000, 1, "interval", ",\"interval_ms\":-5");
    sr_hist_derive(&h);
    assert_int_equal(h.interval.interval_ms, 4000);
    assert_int_equal(h.interval.cost_ms, 500);
    assert_int_equal(h.interval.mtbf_ms, 16000);
    assert_string_equal(h.interval.cost_from, "measured");
    assert_string_equal(h.interval.mtbf_from, "history");
    json_t *o = sr_summary_json(&h, &(struct sr_hist_prices){0});
    const json_t *iv = json_object_get(o, "checkpoint_interval");
    assert_true(json_real_value(json_object_get(iv, "seconds")) == 4.0);
    /* interval / 2 + cost */
    assert_true(json_real_value(json_object_get(iv, "expected_loss_seconds")) == 2.5);
    json_decref(o);
    sr_hist_free(&h);
}

static void metrics_text_has_the_counters(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    scenario(&h);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sr_metrics_render(f, "r1", &h, T0 + 80000);
    fclose(f);
    assert_non_null(strstr(buf, "# TYPE spotrun_preemptions_total counter\n"));
    assert_non_null(strstr(buf, "spotrun_preemptions_total{run=\"r1\"} 1\n"));
    assert_non_null(
        strstr(buf, "spotrun_preemptions_by_source_total{run=\"r1\",source=\"aws\"} 1\n"));
    assert_non_null(strstr(buf, "spotrun_restarts_total{run=\"r1\"} 1\n"));
    assert_non_null(strstr(buf, "spotrun_checkpoints_total{run=\"r1\",phase=\"durable\"} 3\n"));
    assert_non_null(strstr(buf, "spotrun_last_checkpoint_age_seconds{run=\"r1\"} 27\n"));
    assert_non_null(
        strstr(buf, "spotrun_checkpoint_stage_seconds_bucket{run=\"r1\",le=\"1\"} 1\n"));
    assert_non_null(
        strstr(buf, "spotrun_checkpoint_stage_seconds_bucket{run=\"r1\",le=\"+Inf\"} 3\n"));
    assert_non_null(strstr(buf, "spotrun_checkpoint_stage_seconds_sum{run=\"r1\"} 4.5\n"));
    free(buf);
    sr_hist_free(&h);
}

/* Metrics: the last value is the newest (by time; a later attempt's value
 * after a resume replaces an earlier one even at a lower step), the minimum
 * and maximum are over every value, and bad values are ignored. */
static void metrics_fold_last_min_max_and_count(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 0, 0, "start", ",\"host\":\"a\"");
    EV(&h, 1000, 0, "metric", ",\"name\":\"loss\",\"value\":0.9,\"step\":10");
    EV(&h, 2000, 0, "metric", ",\"name\":\"loss\",\"value\":0.5,\"step\":20");
    EV(&h, 2000, 0, "metric", ",\"name\":\"acc\",\"value\":71");
    EV(&h, 3000, 0, "metric", ",\"name\":\"loss\",\"value\":0.3,\"step\":30");
    /* resumed from step 20: later in time, lower step, and it is the last */
    EV(&h, 9000, 1, "metric", ",\"name\":\"loss\",\"value\":0.45,\"step\":25");
    /* same millisecond: the higher step is the newer */
    EV(&h, 9500, 1, "metric", ",\"name\":\"acc\",\"value\":80,\"step\":26");
    EV(&h, 9500, 1, "metric", ",\"name\":\"acc\",\"value\":75,\"step\":25");
    /* ignored: no name, a string value, a name too long */
    EV(&h, 9600, 1, "metric", ",\"value\":1");
    EV(&h, 9600, 1, "metric", ",\"name\":\"loss\",\"value\":\"0.1\"");
    EV(&h, 9600, 1, "metric",
       ",\"name\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\","
       "\"value\":1");
    sr_hist_derive(&h);
    assert_int_equal(h.n_met, 2);
    const struct sr_hist_metric *loss = sr_hist_metric_find(&h, "loss");
    assert_non_null(loss);
    assert_int_equal(loss->count, 4);
    assert_true(loss->last == 0.45);
    assert_int_equal(loss->last_step, 25);
    assert_true(sr_hist_metric_best(loss, 0) == 0.3);
    assert_true(sr_hist_metric_best(loss, 1) == 0.9);
    const struct sr_hist_metric *acc = sr_hist_metric_find(&h, "acc");
    assert_non_null(acc);
    assert_int_equal(acc->count, 3);
    assert_true(acc->last == 80);
    assert_int_equal(acc->last_step, 26);
    assert_true(sr_hist_metric_best(acc, 1) == 80);
    assert_null(sr_hist_metric_find(&h, "nosuch"));
    /* metrics change nothing else: still one running attempt per index */
    assert_int_equal(h.n_att, 2);
    json_t *j = sr_summary_json(&h, &(struct sr_hist_prices){0});
    const json_t *jl = json_object_get(json_object_get(j, "metrics"), "loss");
    assert_true(json_real_value(json_object_get(jl, "min")) == 0.3);
    assert_int_equal(json_integer_value(json_object_get(jl, "last_step")), 25);
    json_decref(j);
    sr_hist_free(&h);
}

/* A metric_summary line (docs/events.md, "Metric volume") sums up the
 * values the writer thinned out: its count adds to the written lines',
 * its last, min and max fold in exactly; a hostile one changes nothing. */
static void metric_summaries_fold_the_thinned_values(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 0, 0, "start", ",\"host\":\"a\"");
    EV(&h, 1000, 0, "metric", ",\"name\":\"loss\",\"value\":0.9,\"step\":0");
    EV(&h, 2000, 0, "metric", ",\"name\":\"loss\",\"value\":0.8,\"step\":1");
    EV(&h, 9000, 0, "metric_summary",
       ",\"name\":\"loss\",\"count\":10,\"dropped\":8,\"last\":0.7,\"last_step\":9,"
       "\"min\":0.25,\"min_step\":5,\"max\":0.9,\"max_step\":0");
    /* hostile: min above max, a last outside them, a negative count */
    EV(&h, 9500, 0, "metric_summary",
       ",\"name\":\"loss\",\"dropped\":5,\"last\":0.1,\"min\":0.5,\"max\":0.2");
    EV(&h, 9500, 0, "metric_summary",
       ",\"name\":\"loss\",\"dropped\":5,\"last\":9,\"min\":0,\"max\":1");
    EV(&h, 9500, 0, "metric_summary",
       ",\"name\":\"loss\",\"dropped\":-5,\"last\":0.5,\"min\":0,\"max\":1");
    sr_hist_derive(&h);
    const struct sr_hist_metric *loss = sr_hist_metric_find(&h, "loss");
    assert_non_null(loss);
    assert_int_equal(loss->count, 10);
    assert_true(loss->last == 0.7);
    assert_int_equal(loss->last_step, 9);
    assert_true(sr_hist_metric_best(loss, 0) == 0.25);
    assert_int_equal(sr_hist_metric_best_step(loss, 0), 5);
    assert_true(sr_hist_metric_best(loss, 1) == 0.9);
    assert_int_equal(sr_hist_metric_best_step(loss, 1), 0);
    sr_hist_free(&h);
}

/* The direction convention (history.h): words of the name decide; a
 * loss-like word wins over an accuracy-like one; unknown names minimize. */
static void metric_direction_follows_the_name(void **state)
{
    (void)state;
    static const char *const up[] = {"acc", "val_acc", "accuracy", "top1_acc",       "eval.f1",
                                     "AUC", "bleu",    "reward",   "episode-return", "score",
                                     "mAP", "val:iou"};
    static const char *const down[] = {"loss",      "val_loss", "error",     "perplexity",
                                       "ppl",       "lr",       "accloss",   "acc_loss",
                                       "score_err", "x",        "train.mse", "wer"};
    for (size_t i = 0; i < sizeof(up) / sizeof(up[0]); i++)
        if (!sr_hist_metric_maximized(up[i]))
            fail_msg("%s should be maximized", up[i]);
    for (size_t i = 0; i < sizeof(down) / sizeof(down[0]); i++)
        if (sr_hist_metric_maximized(down[i]))
            fail_msg("%s should be minimized", down[i]);
}

static void the_best_keeps_the_step_it_was_first_reached_at(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    /* attempt 1's log is read first: the order must not matter */
    EV(&h, 9000, 1, "metric", ",\"name\":\"loss\",\"value\":0.2,\"step\":40");
    EV(&h, 1000, 0, "metric", ",\"name\":\"loss\",\"value\":0.9,\"step\":10");
    EV(&h, 2000, 0, "metric", ",\"name\":\"loss\",\"value\":0.2,\"step\":30");
    EV(&h, 3000, 0, "metric", ",\"name\":\"loss\",\"value\":0.5,\"step\":35");
    EV(&h, 3000, 0, "metric", ",\"name\":\"loss\",\"value\":0.1");
    sr_hist_derive(&h);
    const struct sr_hist_metric *m = sr_hist_metric_find(&h, "loss");
    assert_non_null(m);
    assert_true(sr_hist_metric_best(m, 0) == 0.1);
    assert_int_equal(sr_hist_metric_best_step(m, 0), -1); /* the best had no step */
    assert_int_equal(sr_hist_metric_best_step(m, 1), 10);
    assert_int_equal(m->n_pts, 0); /* no points without keep_points */
    sr_hist_free(&h);
    sr_hist_init(&h);
    EV(&h, 9000, 1, "metric", ",\"name\":\"loss\",\"value\":0.2,\"step\":40");
    EV(&h, 2000, 0, "metric", ",\"name\":\"loss\",\"value\":0.2,\"step\":30");
    m = sr_hist_metric_find(&h, "loss");
    assert_int_equal(sr_hist_metric_best_step(m, 0), 30);
    /* show's block and its JSON say the same */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sr_summary_print_metrics(f, &h);
    fclose(f);
    assert_string_equal(buf, "metrics:     loss  last 0.2 at step 40, best 0.2 at step 30 (min; "
                             "2 values)\n");
    free(buf);
    json_t *j = sr_summary_metric_json(m, 0, 0);
    assert_int_equal(json_integer_value(json_object_get(j, "best_step")), 30);
    assert_true(json_is_false(json_object_get(j, "maximize")));
    json_decref(j);
    sr_hist_free(&h);
}

static void kept_points_are_thinned_evenly_past_the_bound(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    h.keep_points = 1;
    const int n = 5 * SR_HIST_POINTS_MAX + 7;
    for (int i = 0; i < n; i++)
        tu_hist_add(&h,
                    "{\"event\":\"metric\",\"unix_ms\":%lld,\"attempt\":0,\"name\":\"loss\","
                    "\"value\":%d,\"step\":%d}",
                    (long long)(T0 + i), n - i, i);
    const struct sr_hist_metric *m = sr_hist_metric_find(&h, "loss");
    assert_int_equal(m->count, n);
    assert_true(m->n_pts <= SR_HIST_POINTS_MAX && m->n_pts > SR_HIST_POINTS_MAX / 2);
    /* evenly: every stride-th value from the first, in order */
    for (size_t k = 0; k < m->n_pts; k++) {
        assert_int_equal(m->pts[k].step, (int64_t)(k * m->stride));
        assert_int_equal(m->pts[k].index, k * m->stride);
    }
    assert_int_equal(m->stride, 8);
    sr_hist_free(&h); /* frees the points (ASan) */
}

/* A sweep's trial keeps fewer (points_max), thinned the same way; and
 * sr_hist_thin_points bounds all metrics together, halving the largest. */
static void points_max_and_a_bound_per_run(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    h.keep_points = 1;
    h.points_max = 16;
    for (int i = 0; i < 100; i++) {
        tu_hist_add(&h,
                    "{\"event\":\"metric\",\"unix_ms\":%lld,\"attempt\":0,\"name\":\"loss\","
                    "\"value\":%d,\"step\":%d}",
                    (long long)(T0 + i), 100 - i, i);
        if (i < 10)
            tu_hist_add(&h,
                        "{\"event\":\"metric\",\"unix_ms\":%lld,\"attempt\":0,\"name\":"
                        "\"acc\",\"value\":%d,\"step\":%d}",
                        (long long)(T0 + i), i, i);
    }
    const struct sr_hist_metric *loss = sr_hist_metric_find(&h, "loss");
    const struct sr_hist_metric *acc = sr_hist_metric_find(&h, "acc");
    assert_true(loss->n_pts <= 16 && loss->n_pts > 8);
    assert_int_equal(loss->stride, 8);
    for (size_t k = 0; k < loss->n_pts; k++)
        assert_int_equal(loss->pts[k].step, (int64_t)(k * loss->stride));
    assert_int_equal(acc->n_pts, 10);
    sr_hist_thin_points(&h, 16);
    assert_true(loss->n_pts + acc->n_pts <= 16);
    assert_int_equal(loss->n_pts, 7); /* 13 -> 7 */
    assert_int_equal(loss->stride, 16);
    assert_int_equal(acc->n_pts, 5); /* then the larger, 10 -> 5 */
    assert_int_equal(acc->stride, 2);
    for (size_t k = 0; k < loss->n_pts; k++)
        assert_int_equal(loss->pts[k].step, (int64_t)(k * loss->stride));
    sr_hist_free(&h);
}

/* The job's metrics in the Prometheus file; a name from a hostile log that
 * `spotrun metric` would refuse is left out, one it takes is kept as is. */
static void metrics_text_has_the_job_metrics_and_no_hostile_name(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 1000, 0, "start", "");
    EV(&h, 2000, 0, "metric", ",\"name\":\"loss\",\"value\":0.31,\"step\":900");
    EV(&h, 2000, 0, "metric", ",\"name\":\"val_acc\",\"value\":0.5,\"step\":900");
    EV(&h, 3000, 0, "metric", ",\"name\":\"val_acc\",\"value\":0.25");
    EV(&h, 3000, 0, "metric", ",\"name\":\"a\\\"b\\\\c\\nd\",\"value\":1");
    EV(&h, 3000, 0, "metric", ",\"name\":\"eval.top-1:x\",\"value\":2");
    sr_hist_derive(&h);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sr_metrics_render(f, "r1", &h, T0 + 5000);
    fclose(f);
    assert_non_null(strstr(buf, "# TYPE spotrun_job_metric gauge\n"));
    assert_non_null(strstr(buf, "spotrun_job_metric{run=\"r1\",name=\"loss\"} 0.31\n"));
    assert_non_null(strstr(buf, "spotrun_job_metric_step{run=\"r1\",name=\"loss\"} 900\n"));
    assert_non_null(strstr(buf, "spotrun_job_metric{run=\"r1\",name=\"val_acc\"} 0.25\n"));
    assert_null(strstr(buf, "spotrun_job_metric_step{run=\"r1\",name=\"val_acc\"}"));
    assert_non_null(strstr(buf, "spotrun_job_metric_best{run=\"r1\",name=\"val_acc\"} 0.5\n"));
    assert_null(strstr(buf, "name=\"a"));
    assert_non_null(strstr(buf, "spotrun_job_metric{run=\"r1\",name=\"eval.top-1:x\"} 2\n"));
    free(buf);
    sr_hist_free(&h);
}

/* The one vocabulary of attempt ends (docs/events.md): each attempt of a
 * log gets the cause the rule names, with its detail. */
static void each_end_has_its_cause(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    /* 0: a job exit 3, restarted -> crashed (exit 3) */
    EV(&h, 0, 0, "start", "");
    EV(&h, 1000, 0, "exit", ",\"code\":3");
    EV(&h, 1001, 0, "restart", ",\"restart\":1");
    /* 1: killed by SIGKILL while its cgroup's oom_kill rose -> oom */
    EV(&h, 2000, 1, "start", "");
    EV(&h, 3000, 1, "exit", ",\"code\":137,\"signal\":\"KILL\",\"oom\":true");
    EV(&h, 3001, 1, "restart", ",\"restart\":2");
    /* 2: SIGKILL without "oom" -> crashed, nothing guessed */
    EV(&h, 4000, 2, "start", "");
    EV(&h, 5000, 2, "exit", ",\"code\":137,\"signal\":\"KILL\"");
    EV(&h, 5001, 2, "restart", ",\"restart\":3");
    /* 3: the hang watchdog stopped it, then a restart -> stalled */
    EV(&h, 6000, 3, "start", "");
    EV(&h, 7000, 3, "stalled",
       ",\"since_ms\":600000,\"timeout_ms\":600000,\"procs\":[{\"pid\":7,\"comm\":\"python\","
       "\"state\":\"S\",\"wchan\":\"futex\",\"cpu_ms\":0}]");
    EV(&h, 7100, 3, "exit", ",\"code\":137,\"signal\":\"KILL\"");
    EV(&h, 7101, 3, "restart", ",\"restart\":4");
    /* 4: the wrapper died (no end, a later attempt) -> vanished */
    EV(&h, 8000, 4, "start", "");
    /* 5: a notice, then preempted -> preempted (aws) */
    EV(&h, 9000, 5, "start", "");
    EV(&h, 9500, 5, "notice", ",\"source\":\"aws\",\"ms_left\":120000");
    EV(&h, 9900, 5, "exit", ",\"code\":0");
    EV(&h, 9901, 5, "preempted", ",\"durable_seq\":0");
    /* 6: another wrapper took the lease -> lease-lost */
    EV(&h, 10000, 6, "start", "");
    EV(&h, 10500, 6, "lease_lost", ",\"reason\":\"epoch 3 is newer\"");
    EV(&h, 10600, 6, "exit", ",\"code\":143,\"signal\":\"TERM\"");
    /* 7: an attempt time limit -> time-limit */
    EV(&h, 11000, 7, "start", "");
    EV(&h, 12000, 7, "limit",
       ",\"cause\":\"time-limit\",\"what\":\"attempt\",\"limit\":3600000,\"used\":3600500");
    EV(&h, 12500, 7, "exit", ",\"code\":0");
    /* 8: a sweep budget -> budget */
    EV(&h, 13000, 8, "start", "");
    EV(&h, 14000, 8, "limit", ",\"cause\":\"budget\",\"what\":\"sweep\",\"limit\":5,\"used\":5.25");
    EV(&h, 14500, 8, "exit", ",\"code\":1");
    /* 9: done */
    EV(&h, 15000, 9, "start", "");
    EV(&h, 16000, 9, "exit", ",\"code\":0");
    EV(&h, 16001, 9, "done", "");
    sr_hist_derive(&h);
    assert_int_equal(h.n_att, 10);
    static const enum sr_hist_cause want[] = {
        SR_CAUSE_CRASHED,  SR_CAUSE_OOM,       SR_CAUSE_CRASHED,    SR_CAUSE_STALLED,
        SR_CAUSE_VANISHED, SR_CAUSE_PREEMPTED, SR_CAUSE_LEASE_LOST, SR_CAUSE_TIME_LIMIT,
        SR_CAUSE_BUDGET,   SR_CAUSE_DONE};
    for (size_t i = 0; i < 10; i++)
        assert_int_equal(h.att[i].cause, want[i]);
    assert_string_equal(h.att[0].cause_detail, "exit 3");
    assert_string_equal(h.att[1].cause_detail, "SIGKILL, signal 9");
    assert_string_equal(h.att[2].cause_detail, "SIGKILL, signal 9");
    assert_string_equal(h.att[3].cause_detail, "no progress for 10m00s, stall timeout 10m00s");
    assert_string_equal(h.att[5].cause_detail, "aws");
    assert_string_equal(h.att[6].cause_detail, "another wrapper took the run over");
    assert_string_equal(h.att[7].cause_detail, "attempt time limit 1h00m reached, used 1h00m");
    assert_string_equal(h.att[8].cause_detail, "sweep budget $5.00 reached, used $5.25");
    assert_string_equal(h.att[9].cause_detail, "");
    /* the old outcome keeps its meaning next to the cause */
    assert_int_equal(h.att[1].end, SR_END_CRASHED);
    assert_int_equal(h.att[6].end, SR_END_SUPERSEDED);
    assert_string_equal(sr_hist_cause_name(h.att[7].cause), "time-limit");
    assert_string_equal(sr_hist_cause_name(h.att[6].cause), "lease-lost");
    assert_int_equal(h.ends[SR_CAUSE_CRASHED], 2);
    assert_int_equal(h.ends[SR_CAUSE_OOM], 1);
    assert_int_equal(h.ends[SR_CAUSE_NONE], 0);
    assert_ptr_equal(sr_hist_last_ended(&h), &h.att[9]);
    sr_hist_free(&h);
}

/* A last attempt without an end is running: no cause yet, even after a
 * "stalled" or "limit" line (the wrapper is stopping it now); a final
 * failed exit is crashed, with what it was. */
static void a_running_attempt_has_no_cause_yet(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 0, 0, "start", "");
    EV(&h, 1000, 0, "exit", ",\"code\":2");
    EV(&h, 1001, 0, "restart", ",\"restart\":1");
    EV(&h, 2000, 1, "start", "");
    EV(&h, 3000, 1, "limit", ",\"cause\":\"time-limit\",\"what\":\"run\",\"limit\":1,\"used\":2");
    sr_hist_derive(&h);
    assert_int_equal(h.att[1].cause, SR_CAUSE_NONE);
    assert_string_equal(sr_hist_cause_name(h.att[1].cause), "");
    assert_ptr_equal(sr_hist_last_ended(&h), &h.att[0]);
    sr_hist_free(&h);

    sr_hist_init(&h);
    EV(&h, 0, 0, "start", "");
    EV(&h, 1000, 0, "exit", ",\"code\":9");
    sr_hist_derive(&h);
    assert_int_equal(h.att[0].end, SR_END_FAILED);
    assert_int_equal(h.att[0].cause, SR_CAUSE_CRASHED);
    assert_string_equal(h.att[0].cause_detail, "exit 9");
    /* an unknown limit cause or a tampered "what" is read as no limit / "run" */
    EV(&h, 2000, 1, "start", "");
    EV(&h, 2100, 1, "limit", ",\"cause\":\"moon-phase\"");
    EV(&h, 2200, 1, "exit", ",\"code\":1");
    EV(&h, 3000, 2, "start", "");
    EV(&h, 3100, 2, "limit", ",\"cause\":\"budget\",\"what\":\"\\u001b[31m\",\"limit\":-4");
    EV(&h, 3200, 2, "exit", ",\"code\":1");
    sr_hist_derive(&h);
    assert_int_equal(h.att[1].cause, SR_CAUSE_CRASHED);
    assert_int_equal(h.att[2].cause, SR_CAUSE_BUDGET);
    assert_string_equal(h.att[2].cause_detail, "run budget $0.00 reached, used $0.00");
    sr_hist_free(&h);
}

/* A last attempt without an end is running until its wrapper is known
 * gone (a takeable lease): then it vanished, and its work is lost. */
static void a_gone_wrapper_leaves_a_vanished_attempt(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 0, 0, "start", "");
    EV(&h, 4000, 0, "metric", ",\"name\":\"loss\",\"value\":1");
    sr_hist_derive(&h);
    assert_int_equal(h.att[0].cause, SR_CAUSE_NONE);
    assert_int_equal(h.lost_ms, 0);
    sr_hist_last_is_gone(&h);
    assert_int_equal(h.att[0].end, SR_END_VANISHED);
    assert_int_equal(h.att[0].cause, SR_CAUSE_VANISHED);
    assert_int_equal(h.att[0].lost_ms, 4000);
    assert_int_equal(h.ends[SR_CAUSE_VANISHED], 1);
    sr_hist_free(&h);
}

/* The wrapper's keep-alive bounds an attempt that has no end event: it
 * ended at its newest "alive", its hours count up to there, and once its
 * wrapper is known gone the run is vanished, never running. */
static void a_keepalive_ends_an_attempt_without_an_end(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 0, 0, "start", ",\"host\":\"a\",\"price_per_hour\":3600");
    EV(&h, 60000, 0, "alive", "");
    EV(&h, 120000, 0, "alive", "");
    sr_hist_derive(&h);
    assert_int_equal(h.state, SR_STATE_RUNNING);
    assert_int_equal(h.instance_ms, 120000);
    sr_hist_last_is_gone(&h);
    assert_int_equal(h.att[0].cause, SR_CAUSE_VANISHED);
    assert_int_equal(h.att[0].end_ms, T0 + 120000);
    assert_int_equal(h.att[0].lost_ms, 120000);
    assert_int_equal(h.instance_ms, 120000);
    assert_int_equal(h.state, SR_STATE_VANISHED);
    assert_string_equal(sr_hist_state_name(h.state), "vanished");
    /* An earlier vanished attempt ends at its own newest keep-alive. */
    EV(&h, 200000, 1, "start", ",\"host\":\"a\"");
    EV(&h, 230000, 1, "alive", "");
    sr_hist_derive(&h);
    assert_int_equal(h.att[0].end_ms, T0 + 120000);
    assert_int_equal(h.att[0].end, SR_END_VANISHED);
    assert_int_equal(h.instance_ms, 150000);
    sr_hist_free(&h);
}

/* show's attempt lines and summary, --json and the metrics file carry the
 * causes. */
static void views_print_the_causes(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 0, 0, "start", ",\"host\":\"a\"");
    EV(&h, 1000, 0, "exit", ",\"code\":137,\"signal\":\"KILL\",\"oom\":true");
    EV(&h, 1001, 0, "restart", ",\"restart\":1");
    EV(&h, 2000, 1, "start", ",\"host\":\"a\"");
    EV(&h, 2500, 1, "stalled", ",\"since_ms\":5000,\"timeout_ms\":5000");
    EV(&h, 3000, 1, "exit", ",\"code\":143,\"signal\":\"TERM\"");
    sr_hist_derive(&h);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    sr_summary_print_attempts(f, &h);
    const struct sr_hist_prices p = {0};
    sr_summary_print(f, &h, &p);
    sr_metrics_render(f, "r", &h, T0 + 4000);
    fclose(f);
    assert_non_null(strstr(buf, ": oom (SIGKILL, signal 9), lost 1.0s\n"));
    assert_non_null(strstr(buf, ": stalled (no progress for 5.0s, stall timeout 5.0s), lost 1.0s; "
                                "not restarted\n"));
    assert_non_null(strstr(buf, "causes:      1 oom, 1 stalled\n"));
    assert_non_null(strstr(buf, "spotrun_attempt_ends_total{run=\"r\",cause=\"oom\"} 1\n"));
    assert_non_null(strstr(buf, "spotrun_attempt_ends_total{run=\"r\",cause=\"stalled\"} 1\n"));
    assert_non_null(strstr(buf, "spotrun_attempt_ends_total{run=\"r\",cause=\"lease-lost\"} 0\n"));
    free(buf);
    json_t *j = sr_summary_json(&h, &p), *a = sr_summary_attempts_json(&h);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "causes"), "oom")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "causes"), "done")), 0);
    assert_string_equal(json_string_value(json_object_get(j, "last_cause")), "stalled");
    const json_t *a0 = json_array_get(a, 0);
    assert_string_equal(json_string_value(json_object_get(a0, "cause")), "oom");
    assert_string_equal(json_string_value(json_object_get(a0, "cause_detail")),
                        "SIGKILL, signal 9");
    assert_string_equal(json_string_value(json_object_get(a0, "outcome")), "crashed");
    json_decref(j);
    json_decref(a);
    sr_hist_free(&h);
}

/* --stall-timeout: every "stalled" event of every attempt counts (run
 * compares the count with --max-restarts, across wrappers). */
static void stalls_are_counted_over_every_attempt(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 0, 0, "start", ",\"host\":\"a\",\"resumed\":false,\"seq\":0,\"step\":-1");
    EV(&h, 9000, 0, "stalled", ",\"since_ms\":5000,\"timeout_ms\":5000,\"procs\":[]");
    EV(&h, 9500, 0, "exit", ",\"code\":143,\"signal\":\"TERM\"");
    EV(&h, 9501, 0, "restart", ",\"restart\":1,\"delay_ms\":1000");
    EV(&h, 11000, 1, "start", ",\"host\":\"a\",\"resumed\":false,\"seq\":0,\"step\":-1");
    EV(&h, 19000, 1, "stalled", ",\"since_ms\":5000,\"timeout_ms\":5000,\"procs\":[]");
    EV(&h, 19500, 1, "exit", ",\"code\":143,\"signal\":\"TERM\"");
    sr_hist_derive(&h);
    assert_int_equal(sr_hist_stalls(&h), 2);
    sr_hist_free(&h);
    sr_hist_init(&h);
    scenario(&h);
    assert_int_equal(sr_hist_stalls(&h), 0);
    sr_hist_free(&h);
}

/* "commit_failed" events: counted over every attempt; the newest one's
 * facts are shown (control characters from the store never reach the
 * terminal), with the checkpoint that stood. */
static void failed_commits_are_counted_and_the_newest_shown(void **state)
{
    (void)state;
    struct sr_history h;
    sr_hist_init(&h);
    EV(&h, 0, 0, "start", ",\"host\":\"a\"");
    EV(&h, 2000, 0, "commit_failed",
       ",\"phase\":\"persist\",\"seq\":2,\"step\":20,\"reason\":\"no space\",\"stands_seq\":1,"
       "\"stands_step\":10");
    EV(&h, 1000, 0, "commit_failed",
       ",\"phase\":\"stage\",\"seq\":1,\"step\":5,\"reason\":\"old\",\"stands_seq\":0");
    EV(&h, 3000, 0, "commit_failed",
       ",\"phase\":\"stage\",\"seq\":3,\"step\":30,\"reason\":\"log\\u001b[31m changed\","
       "\"stands_seq\":1,\"stands_step\":10");
    sr_hist_derive(&h);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    const struct sr_hist_prices p = {0};
    sr_summary_print(f, &h, &p);
    fclose(f);
    assert_non_null(strstr(buf, "commits:     3 failed; the newest (attempt 0, checkpoint 3, step "
                                "30) to stage: log?[31m changed; checkpoint 1 (step 10) stood\n"));
    free(buf);
    json_t *j = sr_summary_json(&h, &p);
    assert_int_equal(json_integer_value(json_object_get(j, "commit_failures")), 3);
    const json_t *c = json_object_get(j, "last_commit_failure");
    assert_string_equal(json_string_value(json_object_get(c, "phase")), "stage");
    assert_int_equal(json_integer_value(json_object_get(c, "stands_seq")), 1);
    json_decref(j);
    sr_hist_free(&h);
    sr_hist_init(&h); /* none: no line, null in --json */
    scenario(&h);
    f = open_memstream(&buf, &len);
    sr_summary_print(f, &h, &p);
    fclose(f);
    assert_null(strstr(buf, "commits:"));
    free(buf);
    j = sr_summary_json(&h, &p);
    assert_true(json_is_null(json_object_get(j, "last_commit_failure")));
    json_decref(j);
    sr_hist_free(&h);
}

/* A wrapper's start reads the run's history once (sr_hist_once) and each
 * step folds the same read: it says what sr_hist_load says, and a second
 * use does not read the store again. */
static void a_history_read_once_says_what_a_load_says(void **state)
{
    (void)state;
    char *root = tu_scratch("hist-once");
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/r/events", root);
    assert_int_equal(sr_mkdirs(dir, 0755), 0);
    const char *log0 = "{\"event\":\"start\",\"unix_ms\":1000,\"attempt\":0}\n"
                       "{\"event\":\"exit\",\"unix_ms\":61000,\"attempt\":0,\"code\":1}\n";
    const char *log1 = "{\"event\":\"start\",\"unix_ms\":70000,\"attempt\":1}\n"
                       "{\"event\":\"stalled\",\"unix_ms\":90000,\"attempt\":1}\n";
    tu_write_text(dir, "000000.jsonl", log0);
    tu_write_text(dir, "000001.jsonl", log1);
    struct sr_store *st = NULL;
    assert_int_equal(sr_store_open(root, &st), 0);
    struct sr_history h;
    sr_hist_init(&h);
    assert_int_equal(sr_hist_load(st, "r", &h), 0);

    struct sr_hist_once once;
    sr_hist_once_init(&once, st, "r");
    int rc = 1;
    const struct sr_history *o = sr_hist_once_get(&once, &rc);
    assert_int_equal(rc, 0);
    assert_non_null(o);
    assert_int_equal(o->n_att, h.n_att);
    assert_int_equal(o->n_att, 2);
    assert_int_equal(o->state, h.state);
    assert_int_equal(o->instance_ms, h.instance_ms);
    assert_int_equal(o->att[0].end, h.att[0].end);
    assert_int_equal(sr_hist_stalls(o), 1);
    const struct sr_hist_logs *l = sr_hist_once_logs(&once);
    assert_non_null(l);
    assert_int_equal(l->n, 2);
    assert_int_equal(l->v[0].attempt, 0);
    assert_int_equal(l->v[1].size, strlen(log1));

    /* The logs gone from the store: the second use is the first read's. */
    assert_int_equal(sr_rmtree(dir), 0);
    assert_ptr_equal(sr_hist_once_get(&once, &rc), o);
    assert_int_equal(o->n_att, 2);
    struct sr_history again;
    sr_hist_init(&again);
    sr_hist_from_logs(sr_hist_once_logs(&once), &again);
    assert_int_equal(again.n_att, 2);
    sr_hist_free(&again);

    sr_hist_once_free(&once);
    sr_hist_free(&h);
    sr_store_close(st);
    sr_rmtree(root);
    free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lost_work_is_since_the_newest_durable_checkpoint),
        cmocka_unit_test(lost_work_never_counts_an_earlier_attempt),
        cmocka_unit_test(a_crash_without_any_checkpoint_loses_the_whole_attempt),
        cmocka_unit_test(lost_work_counts_from_when_the_state_was_taken),
        cmocka_unit_test(pruned_and_cancelled_work_is_not_lost),
        cmocka_unit_test(states_sources_and_checkpoint_stats),
        cmocka_unit_test(instance_time_queue_time_and_cost),
        cmocka_unit_test(a_preempted_run_is_preempted_until_resumed),
        cmocka_unit_test(a_job_exiting_75_by_itself_is_no_preemption),
        cmocka_unit_test(percentiles_use_the_nearest_rank),
        cmocka_unit_test(bad_lines_are_refused_and_unknown_events_ignored),
        cmocka_unit_test(placement_events_say_where_each_attempt_ran),
        cmocka_unit_test(the_newest_interval_event_wins),
        cmocka_unit_test(metrics_text_has_the_counters),
        cmocka_unit_test(metrics_fold_last_min_max_and_count),
        cmocka_unit_test(metric_summaries_fold_the_thinned_values),
        cmocka_unit_test(metric_direction_follows_the_name),
        cmocka_unit_test(the_best_keeps_the_step_it_was_first_reached_at),
        cmocka_unit_test(kept_points_are_thinned_evenly_past_the_bound),
        cmocka_unit_test(points_max_and_a_bound_per_run),
        cmocka_unit_test(metrics_text_has_the_job_metrics_and_no_hostile_name),
        cmocka_unit_test(each_end_has_its_cause),
        cmocka_unit_test(a_running_attempt_has_no_cause_yet),
        cmocka_unit_test(a_gone_wrapper_leaves_a_vanished_attempt),
        cmocka_unit_test(a_keepalive_ends_an_attempt_without_an_end),
        cmocka_unit_test(views_print_the_causes),
        cmocka_unit_test(stalls_are_counted_over_every_attempt),
        cmocka_unit_test(failed_commits_are_counted_and_the_newest_shown),
        cmocka_unit_test(a_history_read_once_says_what_a_load_says),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
