/*
 * test_notice.c - the documents the cloud metadata services send, as the
 * notice watchers read them (runtime/notice/notice_parse.h): AWS instance-action
 * and rebalance JSON, Azure Scheduled Events with RFC 1123 NotBefore, their
 * dates, and malformed or hostile inputs, which are refused, never guessed;
 * and the watcher's queue to the supervisor, which never drops a notice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "notice.h"
#include "notice_int.h"
#include "notice_parse.h"

#define JAN_5_2015_18_02 1420480920000LL /* 2015-01-05T18:02:00Z */

static void rfc3339_dates_as_aws_writes_them(void **state)
{
    (void)state;
    int64_t ms;
    assert_int_equal(sr_parse_rfc3339("2015-01-05T18:02:00Z", &ms), 0);
    assert_int_equal(ms, JAN_5_2015_18_02);
    assert_int_equal(sr_parse_rfc3339("2015-01-05T18:02:00.250Z", &ms), 0);
    assert_int_equal(ms, JAN_5_2015_18_02 + 250);
    assert_int_equal(sr_parse_rfc3339("2015-01-05T19:02:00+01:00", &ms), 0);
    assert_int_equal(ms, JAN_5_2015_18_02);
}

static void rfc3339_rejects_what_is_not_a_whole_date(void **state)
{
    (void)state;
    int64_t ms = 7;
    const char *bad[] = {"",
                         "2015-01-05",
                         "2015-01-05T18:02:00",
                         "2015-01-05T18:02:00Zjunk",
                         "2015-01-05T18:02:00+1",
                         "2015-01-05T18:02:00.Z",
                         "yesterday"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sr_parse_rfc3339(bad[i], &ms), -EINVAL);
    assert_int_equal(sr_parse_rfc3339(NULL, &ms), -EINVAL);
    assert_int_equal(ms, 7);
}

static void rfc1123_dates_as_azure_writes_not_before(void **state)
{
    (void)state;
    int64_t ms;
    assert_int_equal(sr_parse_rfc1123("Mon, 05 Jan 2015 18:02:00 GMT", &ms), 0);
    assert_int_equal(ms, JAN_5_2015_18_02);
    assert_int_equal(sr_parse_rfc1123("Mon, 19 Sep 2016 18:29:47 GMT", &ms), 0);
    assert_int_equal(ms, 1474309787000LL);
    assert_int_equal(sr_parse_rfc1123("Mon, 19 Sep 2016 18:29:47", &ms), -EINVAL);
    assert_int_equal(sr_parse_rfc1123("2016-09-19T18:29:47Z", &ms), -EINVAL);
    assert_int_equal(sr_parse_rfc1123("Mon, 19 Sep 2016 18:29:47 GMT+", &ms), -EINVAL);
}

static void aws_instance_action(void **state)
{
    (void)state;
    struct sr_aws_action a;
    const char *doc = "{\"action\": \"terminate\", \"time\": \"2015-01-05T18:02:00Z\"}";
    assert_int_equal(sr_aws_parse_action(doc, strlen(doc), &a), 0);
    assert_string_equal(a.action, "terminate");
    assert_string_equal(a.time, "2015-01-05T18:02:00Z");
    assert_int_equal(a.time_ms, JAN_5_2015_18_02);
    const char *stop = "{\"action\":\"stop\",\"time\":\"2015-01-05T18:02:00Z\",\"extra\":[1]}";
    assert_int_equal(sr_aws_parse_action(stop, strlen(stop), &a), 0);
    assert_string_equal(a.action, "stop");
}

static void aws_malformed_documents_are_refused(void **state)
{
    (void)state;
    struct sr_aws_action a;
    const char *bad[] = {
        "",
        "{\"action\": \"terminate\", \"time\": ",
        "[]",
        "{\"action\": 5, \"time\": \"2015-01-05T18:02:00Z\"}",
        "{\"action\": \"terminate\"}",
        "{\"action\": \"terminate\", \"time\": \"soon\"}",
        "{\"action\": \"terminate\", \"action\": \"stop\", \"time\": \"2015-01-05T18:02:00Z\"}",
        "{\"action\": \"a-very-long-action-name-indeed\", \"time\": \"2015-01-05T18:02:00Z\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sr_aws_parse_action(bad[i], strlen(bad[i]), &a), -EBADMSG);
    assert_int_equal(sr_aws_parse_action(NULL, 0, &a), -EBADMSG);
}

static void aws_rebalance(void **state)
{
    (void)state;
    int64_t ms;
    const char *doc = "{\"noticeTime\": \"2015-01-05T18:02:00Z\"}";
    assert_int_equal(sr_aws_parse_rebalance(doc, strlen(doc), &ms), 0);
    assert_int_equal(ms, JAN_5_2015_18_02);
    assert_int_equal(sr_aws_parse_rebalance("{}", 2, &ms), -EBADMSG);
    assert_int_equal(sr_aws_parse_rebalance("nope", 4, &ms), -EBADMSG);
}

static const char azure_doc[] =
    "{\"DocumentIncarnation\": 4, \"Events\": ["
    " {\"EventId\": \"A\", \"EventType\": \"Preempt\", \"ResourceType\": \"VirtualMachine\","
    "  \"Resources\": [\"other-vm\", \"My-VM\"], \"EventStatus\": \"Scheduled\","
    "  \"NotBefore\": \"Mon, 05 Jan 2015 18:02:00 GMT\", \"EventSource\": \"Platform\"},"
    " {\"EventId\": \"B\", \"EventType\": \"Reboot\", \"Resources\": [\"my-vm\"],"
    "  \"EventStatus\": \"Scheduled\", \"NotBefore\": \"Mon, 05 Jan 2015 18:02:00 GMT\"},"
    " {\"EventId\": \"C\", \"EventType\": \"Terminate\", \"Resources\": [\"other-vm\"],"
    "  \"EventStatus\": \"Scheduled\", \"NotBefore\": \"Mon, 05 Jan 2015 18:02:00 GMT\"},"
    " {\"EventId\": \"D\", \"EventType\": \"Terminate\", \"Resources\": [\"my-vm\"],"
    "  \"EventStatus\": \"Started\", \"NotBefore\": \"\"},"
    " {\"EventType\": \"Preempt\", \"Resources\": [\"my-vm\"]},"
    " 17]}";

static void azure_events_for_this_vm(void **state)
{
    (void)state;
    struct sr_azure_event ev[8];
    size_t n;
    assert_int_equal(sr_azure_parse_events(azure_doc, strlen(azure_doc), "my-vm", ev, 8, &n), 0);
    assert_int_equal(n, 2); /* A (name compared without case) and D; not B, C or the broken */
    assert_string_equal(ev[0].id, "A");
    assert_string_equal(ev[0].type, "Preempt");
    assert_string_equal(ev[0].status, "Scheduled");
    assert_int_equal(ev[0].not_before_ms, JAN_5_2015_18_02);
    assert_string_equal(ev[1].id, "D");
    assert_int_equal(ev[1].not_before_ms, 0); /* started: no time left */
}

static void azure_without_a_vm_name_every_event_counts(void **state)
{
    (void)state;
    struct sr_azure_event ev[8];
    size_t n;
    assert_int_equal(sr_azure_parse_events(azure_doc, strlen(azure_doc), NULL, ev, 8, &n), 0);
    assert_int_equal(n, 3); /* A, C, D */
    assert_int_equal(sr_azure_parse_events(azure_doc, strlen(azure_doc), "", ev, 1, &n), 0);
    assert_int_equal(n, 1); /* bounded by max */
}

static void azure_unreadable_not_before_keeps_the_event(void **state)
{
    (void)state;
    const char *doc = "{\"Events\": [{\"EventId\": \"E\", \"EventType\": \"Preempt\","
                      " \"Resources\": [\"vm\"], \"NotBefore\": \"next tuesday\"}]}";
    struct sr_azure_event ev[2];
    size_t n;
    assert_int_equal(sr_azure_parse_events(doc, strlen(doc), "vm", ev, 2, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].not_before_ms, -1);
    assert_string_equal(ev[0].status, "");
    /* A date before 1970 is no deadline either (not a negative time). */
    const char *old = "{\"Events\": [{\"EventId\": \"E\", \"EventType\": \"Preempt\","
                      " \"Resources\": [\"vm\"],"
                      " \"NotBefore\": \"Mon, 19 Sep 0252 18:29:47 GMT\"}]}";
    assert_int_equal(sr_azure_parse_events(old, strlen(old), "vm", ev, 2, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].not_before_ms, -1);
}

static void azure_malformed_documents_are_refused(void **state)
{
    (void)state;
    struct sr_azure_event ev[2];
    size_t n = 9;
    const char *bad[] = {"", "{\"Events\": ", "[]", "{\"Events\": \"none\"}", "{}", "null"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(sr_azure_parse_events(bad[i], strlen(bad[i]), "vm", ev, 2, &n), -EBADMSG);
        assert_int_equal(n, 0);
    }
    const char empty[] = "{\"DocumentIncarnation\": 1, \"Events\": []}";
    assert_int_equal(sr_azure_parse_events(empty, strlen(empty), "vm", ev, 2, &n), 0);
    assert_int_equal(n, 0);
}

static void azure_hostile_ids_do_not_overflow(void **state)
{
    (void)state;
    char doc[2048], id[600];
    memset(id, 'x', sizeof(id) - 1);
    id[sizeof(id) - 1] = '\0';
    snprintf(doc, sizeof(doc),
             "{\"Events\": [{\"EventId\": \"%s\", \"EventType\": \"Preempt\", \"Resources\": "
             "[\"vm\"]}]}",
             id);
    struct sr_azure_event ev[2];
    size_t n;
    assert_int_equal(sr_azure_parse_events(doc, strlen(doc), "vm", ev, 2, &n), 0);
    assert_int_equal(n, 0); /* an id too long to acknowledge is skipped */
}

static void notice_source_names(void **state)
{
    (void)state;
    enum sr_cloud c;
    assert_int_equal(sr_cloud_parse("auto", &c), 0);
    assert_int_equal(c, SR_CLOUD_AUTO);
    assert_int_equal(sr_cloud_parse("AWS", &c), 0);
    assert_int_equal(c, SR_CLOUD_AWS);
    assert_int_equal(sr_cloud_parse("none", &c), 0);
    assert_int_equal(c, SR_CLOUD_NONE);
    assert_int_equal(sr_cloud_parse("ibm", &c), -EINVAL);
    assert_int_equal(sr_cloud_parse(NULL, &c), -EINVAL);
    assert_string_equal(sr_cloud_name(SR_CLOUD_AZURE), "azure");
}

static void none_starts_nothing(void **state)
{
    (void)state;
    const struct sr_notice_config cfg = {.cloud = SR_CLOUD_NONE};
    struct sr_notice *n = (struct sr_notice *)1;
    struct sr_notice_event ev;
    assert_int_equal(sr_notice_start(&cfg, &n), 0);
    assert_null(n);
    assert_int_equal(sr_notice_fd(n), -1);
    assert_int_equal(sr_notice_take(n, &ev), 0);
    sr_notice_stop(n);
}

static void stopping_an_unreachable_watcher_is_prompt(void **state)
{
    (void)state;
    /* Nothing listens on port 9 of localhost: the watcher retries; stop
     * must not wait for its timeouts. */
    const struct sr_notice_config cfg = {
        .cloud = SR_CLOUD_AZURE, .azure_url = "http://127.0.0.1:9", .poll_ms = 50};
    struct sr_notice *n;
    assert_int_equal(sr_notice_start(&cfg, &n), 0);
    assert_non_null(n);
    assert_true(sr_notice_fd(n) >= 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sr_notice_stop(n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 1500);
}

static void metadata_words_keep_the_last_path_component(void **state)
{
    (void)state;
    char w[64];
    const char *gcp = "projects/123456789012/zones/us-central1-a";
    assert_int_equal(sr_metadata_word(gcp, strlen(gcp), w, sizeof(w)), 0);
    assert_string_equal(w, "us-central1-a");
    assert_int_equal(sr_metadata_word("us-east-1a\r\n", 12, w, sizeof(w)), 0);
    assert_string_equal(w, "us-east-1a");
    assert_int_equal(sr_metadata_word("g5.xlarge", 9, w, sizeof(w)), 0);
    assert_string_equal(w, "g5.xlarge");
}

static void metadata_words_refuse_what_is_not_one(void **state)
{
    (void)state;
    char w[64] = "kept", big[10240];
    memset(big, 'a', sizeof(big));
    assert_int_equal(sr_metadata_word(big, sizeof(big), w, sizeof(w)), -EBADMSG);
    assert_int_equal(sr_metadata_word("us east", 7, w, sizeof(w)), -EBADMSG);
    assert_int_equal(sr_metadata_word("a\nb", 3, w, sizeof(w)), -EBADMSG);
    assert_int_equal(sr_metadata_word("a\0b", 3, w, sizeof(w)), -EBADMSG);
    assert_int_equal(sr_metadata_word("zones/", 6, w, sizeof(w)), -EBADMSG);
    assert_int_equal(sr_metadata_word("", 0, w, sizeof(w)), -EBADMSG);
    assert_int_equal(sr_metadata_word("<html>", 6, w, sizeof(w)), -EBADMSG);
    assert_int_equal(sr_metadata_word("abcdefgh", 8, w, 8), -EBADMSG); /* does not fit */
    assert_string_equal(w, "kept");
}

static void gcp_region_of_a_zone(void **state)
{
    (void)state;
    char r[64];
    assert_int_equal(sr_gcp_region_of("us-central1-a", r, sizeof(r)), 0);
    assert_string_equal(r, "us-central1");
    assert_int_equal(sr_gcp_region_of("europe-west4-b", r, sizeof(r)), 0);
    assert_string_equal(r, "europe-west4");
    assert_int_equal(sr_gcp_region_of("nodash", r, sizeof(r)), -EBADMSG);
    assert_int_equal(sr_gcp_region_of("trailing-", r, sizeof(r)), -EBADMSG);
}

static void azure_compute_document(void **state)
{
    (void)state;
    struct sr_placement p;
    const char *zoned = "{\"location\":\"eastus\",\"vmSize\":\"Standard_NC6s_v3\","
                        "\"zone\":\"1\",\"name\":\"vm\",\"tags\":\"\"}";
    assert_int_equal(sr_azure_parse_compute(zoned, strlen(zoned), &p), 0);
    assert_string_equal(p.instance_type, "Standard_NC6s_v3");
    assert_string_equal(p.zone, "eastus-1");
    assert_string_equal(p.region, "eastus");
    const char *flat = "{\"location\":\"westeurope\",\"vmSize\":\"Standard_D2s_v3\","
                       "\"zone\":\"\"}";
    assert_int_equal(sr_azure_parse_compute(flat, strlen(flat), &p), 0);
    assert_string_equal(p.zone, "westeurope"); /* no zones: its location */
    assert_string_equal(p.region, "westeurope");
}

static void azure_compute_hostile_fields_are_left_out(void **state)
{
    (void)state;
    struct sr_placement p;
    const char *bad = "{\"location\":\"east\\nus\",\"vmSize\":5,\"zone\":\"1 2\"}";
    assert_int_equal(sr_azure_parse_compute(bad, strlen(bad), &p), 0);
    assert_string_equal(p.instance_type, "");
    assert_string_equal(p.zone, "");
    assert_string_equal(p.region, "");
    const char *zone_bad = "{\"location\":\"eastus\",\"zone\":[1]}";
    assert_int_equal(sr_azure_parse_compute(zone_bad, strlen(zone_bad), &p), 0);
    assert_string_equal(p.region, "eastus");
    assert_string_equal(p.zone, "");
    assert_int_equal(sr_azure_parse_compute("[]", 2, &p), -EBADMSG);
    assert_int_equal(sr_azure_parse_compute("{\"vmSize\":", 10, &p), -EBADMSG);
}

static void no_placement_without_a_watcher(void **state)
{
    (void)state;
    struct sr_placement p;
    assert_int_equal(sr_notice_placement(NULL, &p), 0);
}

/* ---- the queue ---------------------------------------------------------- */

#define FLOOD 200

static struct sr_notice *unreachable_watcher(void)
{
    const struct sr_notice_config cfg = {
        .cloud = SR_CLOUD_AZURE, .azure_url = "http://127.0.0.1:9", .poll_ms = 50};
    struct sr_notice *n;
    assert_int_equal(sr_notice_start(&cfg, &n), 0);
    assert_non_null(n);
    return n;
}

static struct sr_notice_event preempt(int id, int64_t deadline)
{
    struct sr_notice_event ev = {.kind = SR_NOTICE_PREEMPT, .deadline_ms = deadline};
    snprintf(ev.source, sizeof(ev.source), "azure");
    snprintf(ev.id, sizeof(ev.id), "event-%d", id);
    return ev;
}

static void *flood_distinct(void *arg)
{
    for (int i = 0; i < FLOOD; i++) {
        const struct sr_notice_event ev = preempt(i, 1000 + i);
        sr_notice_post(arg, &ev);
    }
    return NULL;
}

/* The supervisor's side: poll, take what is there. */
static int take_polled(struct sr_notice *n, struct sr_notice_event *ev)
{
    for (;;) {
        if (sr_notice_take(n, ev))
            return 1;
        struct pollfd p = {.fd = sr_notice_fd(n), .events = POLLIN};
        if (poll(&p, 1, 10000) <= 0)
            return 0;
    }
}

static void a_flood_of_notices_loses_none(void **state)
{
    (void)state;
    struct sr_notice *n = unreachable_watcher();
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, flood_distinct, n), 0);
    /* the supervisor is busy while the flood comes: the queue fills */
    struct timespec busy = {.tv_nsec = 200 * 1000 * 1000};
    nanosleep(&busy, NULL);
    for (int i = 0; i < FLOOD; i++) {
        struct sr_notice_event ev;
        assert_true(take_polled(n, &ev));
        char id[32];
        snprintf(id, sizeof(id), "event-%d", i);
        assert_string_equal(ev.id, id);
    }
    pthread_join(t, NULL);
    sr_notice_stop(n);
}

static void a_repeated_notice_is_one_with_its_earliest_deadline(void **state)
{
    (void)state;
    struct sr_notice *n = unreachable_watcher();
    for (int i = 0; i < FLOOD; i++) {
        const struct sr_notice_event ev = preempt(7, 90000 - (i % 50) * 1000);
        sr_notice_post(n, &ev);
    }
    struct sr_notice_event ev;
    assert_true(sr_notice_take(n, &ev));
    assert_string_equal(ev.id, "event-7");
    assert_int_equal(ev.deadline_ms, 90000 - 49 * 1000);
    assert_false(sr_notice_take(n, &ev));
    sr_notice_stop(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rfc3339_dates_as_aws_writes_them),
        cmocka_unit_test(rfc3339_rejects_what_is_not_a_whole_date),
        cmocka_unit_test(rfc1123_dates_as_azure_writes_not_before),
        cmocka_unit_test(aws_instance_action),
        cmocka_unit_test(aws_malformed_documents_are_refused),
        cmocka_unit_test(aws_rebalance),
        cmocka_unit_test(azure_events_for_this_vm),
        cmocka_unit_test(azure_without_a_vm_name_every_event_counts),
        cmocka_unit_test(azure_unreadable_not_before_keeps_the_event),
        cmocka_unit_test(azure_malformed_documents_are_refused),
        cmocka_unit_test(azure_hostile_ids_do_not_overflow),
        cmocka_unit_test(notice_source_names),
        cmocka_unit_test(none_starts_nothing),
        cmocka_unit_test(stopping_an_unreachable_watcher_is_prompt),
        cmocka_unit_test(metadata_words_keep_the_last_path_component),
        cmocka_unit_test(metadata_words_refuse_what_is_not_one),
        cmocka_unit_test(gcp_region_of_a_zone),
        cmocka_unit_test(azure_compute_document),
        cmocka_unit_test(azure_compute_hostile_fields_are_left_out),
        cmocka_unit_test(no_placement_without_a_watcher),
        cmocka_unit_test(a_flood_of_notices_loses_none),
        cmocka_unit_test(a_repeated_notice_is_one_with_its_earliest_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
