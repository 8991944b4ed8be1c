/*
 * fuzz_notice.c - libFuzzer target: the cloud metadata parsers of
 * runtime/notice/notice_parse.c (AWS spot/instance-action and rebalance, Azure
 * Scheduled Events, the RFC 3339 and RFC 1123 dates, the placement words
 * and Azure's compute document). Every input goes to
 * every parser, so a seed of one shape also explores the others. Any input
 * is either refused or yields values that hold together: strings inside
 * their fields, a date that parses back to the same instant, no more events
 * than asked for; never a crash, a hang or a leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "notice_parse.h"

#define MAX_EVENTS 4

static void check_str(const char *s, size_t cap)
{
    if (memchr(s, '\0', cap) == NULL)
        abort(); /* a field we filled must be terminated inside it */
}

static void check_azure(const char *body, size_t len, const char *vm)
{
    struct sr_azure_event ev[MAX_EVENTS];
    size_t n = 0;
    if (sr_azure_parse_events(body, len, vm, ev, MAX_EVENTS, &n) != 0) {
        if (n != 0)
            abort(); /* a refused document reports no events */
        return;
    }
    if (n > MAX_EVENTS)
        abort();
    for (size_t i = 0; i < n; i++) {
        check_str(ev[i].id, sizeof(ev[i].id));
        check_str(ev[i].type, sizeof(ev[i].type));
        check_str(ev[i].status, sizeof(ev[i].status));
        if (strcmp(ev[i].type, "Preempt") != 0 && strcmp(ev[i].type, "Terminate") != 0)
            abort(); /* only the events that stop the VM are reported */
        if (ev[i].not_before_ms < -1)
            abort(); /* 0 (started), -1 (unreadable) or a time after 1970 */
    }
}

/* A placement value we kept is a word: [A-Za-z0-9._:+-], at most 63. */
static void check_word(const char *w, size_t cap)
{
    check_str(w, cap);
    if (strlen(w) > 63 || strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                    "0123456789._:+-") != strlen(w))
        abort();
}

static void check_placement(const char *body, size_t len)
{
    char w[64];
    if (sr_metadata_word(body, len, w, sizeof(w)) == 0)
        check_word(w, sizeof(w));
    struct sr_placement p;
    if (sr_azure_parse_compute(body, len, &p) == 0) {
        check_word(p.instance_type, sizeof(p.instance_type));
        check_word(p.zone, sizeof(p.zone));
        check_word(p.region, sizeof(p.region));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;

    struct sr_aws_action a;
    if (sr_aws_parse_action(body, size, &a) == 0) {
        check_str(a.action, sizeof(a.action));
        check_str(a.time, sizeof(a.time));
        int64_t again = 0;
        if (sr_parse_rfc3339(a.time, &again) != 0 || again != a.time_ms)
            abort(); /* the time we kept is the time we read */
    }

    int64_t ms = 0;
    (void)sr_aws_parse_rebalance(body, size, &ms);

    check_azure(body, size, NULL);
    check_azure(body, size, "spotrun-test-vm");
    check_placement(body, size);

    /* The date parsers take C strings: the input up to its first NUL. */
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    (void)sr_parse_rfc3339(s, &ms);
    (void)sr_parse_rfc1123(s, &ms);
    free(s);
    return 0;
}
