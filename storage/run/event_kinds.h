/*
 * event_kinds.h - THE table of every kind of event a run's log holds, as one
 * X-macro shared by the writers (events.c checks each emitted kind against
 * it) and the reader (runtime/record/history.c dispatches on it). Each row:
 * the enum's suffix, the "event" name as written, what it says (the fields
 * are docs/events.md's; test_event_kinds checks that table names the same
 * kinds). A new kind is a row here first.
 */
#ifndef SPOTRUN_EVENT_KINDS_H
#define SPOTRUN_EVENT_KINDS_H

#define SR_EVENT_KINDS(X)                                                                          \
    X(RESTORE, "restore", "a checkpoint was restored before the start")                            \
    X(START, "start", "the job was started")                                                       \
    X(PLACEMENT, "placement", "where the attempt runs, as the cloud says")                         \
    X(REQUEST, "request", "the checkpoint signal was sent")                                        \
    X(INTERVAL, "interval", "--every auto chose the request interval")                             \
    X(STAGED, "staged", "a commit was packed to local disk")                                       \
    X(COMMIT_FAILED, "commit_failed", "a commit failed; the previous checkpoint stands")           \
    X(PERSISTED, "persisted", "the checkpoint is durable")                                         \
    X(NOTICE, "notice", "a preemption notice arrived")                                             \
    X(WITHDRAWN, "withdrawn", "a cloud notice was cancelled")                                      \
    X(DEADLINE, "deadline", "a stop's deadline came earlier")                                      \
    X(REBALANCE, "rebalance", "an early warning")                                                  \
    X(LIMIT, "limit", "a time limit or budget was reached")                                        \
    X(GPU, "gpu", "GPU utilization of the attempt so far")                                         \
    X(EXIT, "exit", "the job exited")                                                              \
    X(HEARTBEAT, "heartbeat", "the attempt's first heartbeat")                                     \
    X(STALLED, "stalled", "the job made no progress for the stall timeout")                        \
    X(RESTART, "restart", "the job will be restarted")                                             \
    X(LOST_WORK, "lost_work", "the job exited during a notice without its commit")                 \
    X(PREEMPTED, "preempted", "the wrapper stops with exit 75 after a notice")                     \
    X(LEASE_LOST, "lease_lost", "another wrapper took the run's lease over")                       \
    X(ACK, "ack", "an Azure notice was acknowledged")                                              \
    X(DONE, "done", "the job finished; the run is DONE")                                           \
    X(ALIVE, "alive", "the wrapper's keep-alive")                                                  \
    X(NODE_DONE, "node_done", "multi-node: this node's job finished, another's not yet")           \
    X(SET, "set", "multi-node: a checkpoint is complete on every node")                            \
    X(DEAF, "deaf", "the job does not listen for checkpoint requests")                             \
    X(NOT_COMMITTED, "not_committed", "a save in flight at the job's end was not committed")       \
    X(METRIC, "metric", "the job reported a value")                                                \
    X(METRIC_SUMMARY, "metric_summary", "a metric's values not written one by one")                \
    X(GPU_LIVE, "gpu_live", "the live GPU gauges (told, never logged)")

enum sr_event_kind {
    SR_EV_UNKNOWN = 0, /* a kind this table does not name: readers skip it */
#define SR_EV_ENUM(id, name, what) SR_EV_##id,
    SR_EVENT_KINDS(SR_EV_ENUM)
#undef SR_EV_ENUM
        SR_EV_COUNT
};

/* The kind named `name` (NULL too): SR_EV_UNKNOWN when the table has none. */
enum sr_event_kind sr_event_kind_of(const char *name);
/* The name a kind is written as; "" for SR_EV_UNKNOWN or out of range. */
const char *sr_event_name(enum sr_event_kind k);

#endif
