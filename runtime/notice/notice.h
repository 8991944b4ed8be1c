/*
 * notice.h - preemption notices from the cloud's metadata service: AWS
 * IMDSv2 (spot instance-action, rebalance recommendation), GCP metadata
 * (preempted, maintenance-event) and Azure Scheduled Events (Preempt,
 * Terminate), behind one interface the supervisor polls.
 *
 * DESIGN: the watcher runs on its own threads (one per watched key) and
 * never blocks the supervisor: detecting the cloud (--notice auto), the
 * slow first Azure call and GCP's long polls all happen there. Events are
 * queued (common/evq.h: never dropped; the same event again is merged, the
 * earliest deadline kept; a full queue makes the watcher wait) and
 * announced on a pipe (sr_notice_fd()); the supervisor drains them with
 * sr_notice_take(). Each HTTP transfer runs in
 * a curl multi handle that sr_notice_stop() wakes, so stopping never waits
 * for a long poll or a dead endpoint. Malformed or oversized answers are
 * warnings, never fatal; a watcher that cannot reach its service keeps
 * retrying at the poll interval and says so once.
 *
 * Placement: once the cloud is known (given, or detected by --notice auto),
 * one more thread asks its metadata service, once and bounded, where this
 * instance runs (instance type, zone, region); sr_notice_placement() gives
 * the answer, and the notice pipe is written when it arrives.
 *
 * Times: deadline_ms is on the monotonic clock of sr_now_ms() (the
 * supervisor's timers); deadline_wall_ms is the provider's wall time.
 */
#ifndef SPOTRUN_NOTICE_H
#define SPOTRUN_NOTICE_H

#include <stdint.h>

enum sr_cloud { SR_CLOUD_NONE, SR_CLOUD_AUTO, SR_CLOUD_AWS, SR_CLOUD_GCP, SR_CLOUD_AZURE };

enum sr_notice_kind {
    SR_NOTICE_PREEMPT,   /* the machine goes away at the deadline */
    SR_NOTICE_REBALANCE, /* an early warning: checkpoint, keep running */
    SR_NOTICE_WITHDRAWN, /* the notice with this id was cancelled */
};

struct sr_notice_config {
    enum sr_cloud cloud;
    const char *aws_url, *gcp_url, *azure_url; /* base URLs; NULL = the real service */
    int64_t poll_ms;                           /* AWS and Azure polling interval */
    const char *cache_path; /* where --notice auto keeps its answer; NULL = none */
};

/* Where this instance runs, as its metadata service says ("" = unknown):
 * each value a word of [A-Za-z0-9._/:+-], at most 63 (see instance.h). */
struct sr_placement {
    char cloud[8]; /* "aws", "gcp", "azure" */
    char instance_type[64], zone[64], region[64];
};

struct sr_notice_event {
    enum sr_notice_kind kind;
    char source[16];          /* "aws", "gcp", "azure" */
    char what[96];            /* human-readable: "spot instance-action terminate" */
    char id[128];             /* the provider's event id (Azure EventId), for ack / withdrawal */
    int needs_ack;            /* Azure: acknowledge with sr_notice_ack() once durable */
    int64_t deadline_ms;      /* monotonic; 0 for a rebalance or a withdrawal */
    int64_t deadline_wall_ms; /* unix ms as announced */
};

/* "auto", "aws", "gcp", "azure", "none" -> 0, else -EINVAL. */
int sr_cloud_parse(const char *name, enum sr_cloud *out);
const char *sr_cloud_name(enum sr_cloud c);

struct sr_notice;

/* Starts watching (nothing for SR_CLOUD_NONE: *out is NULL, and every
 * function below takes NULL). Returns 0 or -errno. */
int sr_notice_start(const struct sr_notice_config *cfg, struct sr_notice **out);
/* Readable when events are queued; -1 for NULL. */
int sr_notice_fd(const struct sr_notice *n);
/* 1 and fills ev when an event was queued, else 0. */
int sr_notice_take(struct sr_notice *n, struct sr_notice_event *ev);
/* 1 and fills out once the placement is known (at least one field), else
 * 0 (not yet, never, or n is NULL). Thread-safe; never blocks. */
int sr_notice_placement(struct sr_notice *n, struct sr_placement *out);
/* Acknowledges ev to its provider (Azure StartRequests), blocking at most a
 * few seconds. 0, or -errno with a message (sr_strerror). */
int sr_notice_ack(struct sr_notice *n, const struct sr_notice_event *ev);
/* Stops and joins the watcher threads (promptly), frees n. */
void sr_notice_stop(struct sr_notice *n);

/* 0 when url can be a metadata endpoint (--aws-imds, --gcp-metadata,
 * --azure-metadata): http:// or https://, a host, a port 1..65535 when one
 * is written (never an empty one: "http://127.0.0.1:" is not port 80);
 * else -EINVAL and why (e.g. "an empty port"). */
int sr_notice_url_check(const char *url, char *why, size_t len);

#endif
