/*
 * control.h - the control channel between a running wrapper and the job
 * (and `spotrun notify`): a unix stream socket at $SPOTRUN_CONTROL, mode
 * 0600. One request line per connection, one reply line; a line with a
 * word more or less than its verb takes is refused ("ERR bad request"):
 *
 *   COMMIT <step|-> [pause_ms=N]\n -> "OK <seq>\n" once snapshotted (packed and
 *                                    stored after: durable later, or failed),
 *                                    or "ERR <msg>\n"
 *                                    (pause_ms: how long the job's training
 *                                    stopped for this checkpoint, when it
 *                                    saves in the background; --every auto's
 *                                    cost, see every.h)
 *   NOTIFY <deadline_ms> <source>\n -> "OK\n"
 *   STATUS\n                        -> "OK <json>\n" (run_id, state, attempt,
 *                                    pid, durable_seq, pending, failed: the
 *                                    seqs of the newest commits that failed
 *                                    after they were answered)
 *   METRIC <step|-> <name> <value>\n -> "OK\n" (a number the job reports:
 *                                    name [A-Za-z0-9_.:-]{1,64}, a finite
 *                                    value; recorded in the event log)
 *   REQUEST <reason> [pid]\n        -> "OK\n"   (the shim: the job itself got
 *                                    SIGTERM; reason "SIGTERM". A notice with
 *                                    --grace. Sent from a signal handler,
 *                                    which does not wait for the reply.)
 *
 * The server side never blocks the supervisor: accepted connections are
 * read as their bytes arrive (sr_ctl_conn_feed, from the supervisor's poll
 * loop), and one whose request line has not arrived within
 * SR_CTL_REQUEST_TIMEOUT_MS is dropped; replies are small.
 */
#ifndef SPOTRUN_CONTROL_H
#define SPOTRUN_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#define SR_CTL_REQUEST_TIMEOUT_MS 2000

enum sr_ctl_kind { SR_CTL_COMMIT, SR_CTL_NOTIFY, SR_CTL_STATUS, SR_CTL_REQUEST, SR_CTL_METRIC };

struct sr_ctl_req {
    enum sr_ctl_kind kind;
    int64_t step;        /* COMMIT; -1 = unknown */
    int64_t pause_ms;    /* COMMIT; -1 = not given */
    int64_t deadline_ms; /* NOTIFY; from now */
    char source[32];     /* NOTIFY; REQUEST: "job:<reason>" */
    int64_t pid;         /* REQUEST; 0 = not given */
    char name[65];       /* METRIC */
    double value;        /* METRIC */
};

/* An accepted connection whose request line is still arriving. */
struct sr_ctl_conn {
    int fd;        /* non-blocking; -1 = free slot */
    int64_t since; /* accepted at (sr_now_ms) */
    size_t used;
    char buf[256];
};

/* Binds path (replacing a stale socket). -EADDRINUSE when a live wrapper
 * already answers there. */
int sr_ctl_listen(const char *path, int *fd);
/* Reads and parses one request from an accepted connection (blocking, up
 * to SR_CTL_REQUEST_TIMEOUT_MS). */
int sr_ctl_read_request(int fd, struct sr_ctl_req *req);
/* Reads what has arrived on c->fd without blocking: 1 when the request line
 * is complete (parsed into req), 0 when more is to come, -errno when the
 * connection is bad (closed early, too long, malformed: -EINVAL). */
int sr_ctl_conn_feed(struct sr_ctl_conn *c, struct sr_ctl_req *req);
/* Writes one reply line (a '\n' is appended). Errors are ignored: the
 * client may be gone. */
/* A notice's source name: [A-Za-z0-9_.:-]{1,31} (logged, and shared with
 * the other nodes of a multi-node run). */
int sr_ctl_source_valid(const char *source);

void sr_ctl_reply(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Client: sends request (without '\n'), reads the reply line into reply.
 * timeout_ms < 0 waits forever. */
int sr_ctl_call(const char *path, const char *request, char *reply, size_t len, int timeout_ms);

#endif
