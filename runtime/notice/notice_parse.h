/*
 * notice_parse.h - the pure parts of the cloud notice watchers: the JSON
 * documents and date formats of AWS IMDS and Azure Scheduled Events. No I/O
 * and no clocks, so the unit tests feed them documents and hostile inputs.
 * Every function returns 0 or -EBADMSG (malformed) / -EINVAL.
 */
#ifndef SPOTRUN_NOTICE_PARSE_H
#define SPOTRUN_NOTICE_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "notice.h"

/* RFC 3339 / ISO 8601 UTC as AWS writes it: "2015-01-05T18:02:00Z", also
 * with fractional seconds or a "+hh:mm" offset. Unix milliseconds. */
int sr_parse_rfc3339(const char *s, int64_t *unix_ms);
/* RFC 1123 as Azure writes NotBefore: "Mon, 19 Sep 2016 18:29:47 GMT". */
int sr_parse_rfc1123(const char *s, int64_t *unix_ms);

/* AWS spot/instance-action: {"action": "terminate"|"stop"|"hibernate",
 * "time": "2015-01-05T18:02:00Z"}. */
struct sr_aws_action {
    char action[16];
    char time[40]; /* as sent, identifies the notice */
    int64_t time_ms;
};
int sr_aws_parse_action(const char *body, size_t len, struct sr_aws_action *out);
/* AWS events/recommendations/rebalance: {"noticeTime": "..."}. */
int sr_aws_parse_rebalance(const char *body, size_t len, int64_t *notice_ms);

/* Azure scheduled events that matter to this VM: EventType Preempt or
 * Terminate whose Resources list vm_name (any resource when vm_name is NULL
 * or empty). Malformed entries are skipped; a malformed document is
 * -EBADMSG. */
struct sr_azure_event {
    char id[128];
    char type[16];         /* "Preempt", "Terminate" */
    char status[16];       /* "Scheduled", "Started" */
    int64_t not_before_ms; /* 0 when NotBefore is empty (started), -1 unreadable */
};
int sr_azure_parse_events(const char *body, size_t len, const char *vm_name,
                          struct sr_azure_event *ev, size_t max, size_t *n);

/* A metadata service's plain-text answer as one word: trailing blanks and
 * line ends cut, then its last path component (GCP answers resource paths:
 * "projects/123/zones/us-central1-a" -> "us-central1-a"). The word must be
 * of [A-Za-z0-9._:+-], 1 to 63 bytes and fit len; else -EBADMSG. */
int sr_metadata_word(const char *body, size_t len, char *buf, size_t buflen);
/* GCP's region of a zone: "us-central1-a" -> "us-central1". -EBADMSG when
 * the zone has no "-suffix". */
int sr_gcp_region_of(const char *zone, char *buf, size_t len);
/* Azure IMDS /metadata/instance/compute (JSON): vmSize -> instance_type,
 * location -> region, and the zone: "<location>-<zone>" ("eastus-1"), or
 * the location when the VM has no zone ("" in the document). A field that
 * is missing or not a word (see sr_metadata_word, no path cut) is left ""
 * in out; -EBADMSG when the document is not a JSON object. */
int sr_azure_parse_compute(const char *body, size_t len, struct sr_placement *out);

#endif
