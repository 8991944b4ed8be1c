/*
 * test_control.c - the control socket (runtime/supervise/control.h): a real listening
 * unix socket in a scratch directory, a client on its own thread, request
 * parsing, replies, stale-socket takeover and client-side errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control.h"
#include "fsutil.h"
#include "log.h"
#include "units.h"

struct fixture {
    char *dir;
    char sock[PATH_MAX];
    int lfd; /* listening socket, -1 when none */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->dir = tu_scratch("control");
    snprintf(f->sock, sizeof(f->sock), "%s/ctl.sock", f->dir);
    f->lfd = -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (f->lfd >= 0)
        close(f->lfd);
    sr_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void listen_ok(struct fixture *f)
{
    sr_err_clear();
    const int rc = sr_ctl_listen(f->sock, &f->lfd);
    if (rc != 0)
        fail_msg("sr_ctl_listen: %d %s", rc, sr_strerror(rc));
}

/* Accepts one connection within 5 s. */
static int accept_one(int lfd)
{
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 5000), 1);
    const int c = accept(lfd, NULL, NULL);
    assert_true(c >= 0);
    return c;
}

/* A client call on its own thread; the message is copied there because
 * sr_strerror() is per thread. */
struct call {
    const char *path, *request;
    int timeout_ms;
    int rc;
    char reply[256];
    char msg[512];
    pthread_t th;
};

static void *call_main(void *arg)
{
    struct call *c = arg;
    sr_err_clear();
    c->rc = sr_ctl_call(c->path, c->request, c->reply, sizeof(c->reply), c->timeout_ms);
    if (c->rc < 0)
        snprintf(c->msg, sizeof(c->msg), "%s", sr_strerror(c->rc));
    return NULL;
}

static void call_start(struct call *c, const char *path, const char *request)
{
    memset(c, 0, sizeof(*c));
    c->path = path;
    c->request = request;
    c->timeout_ms = 5000;
    assert_int_equal(pthread_create(&c->th, NULL, call_main, c), 0);
}

static void call_join(struct call *c)
{
    assert_int_equal(pthread_join(c->th, NULL), 0);
}

/* Full round trip: client sends request, the server parses it into *req
 * and replies reply; returns the client's rc and leaves its reply in c. */
static int round_trip(struct fixture *f, struct call *c, const char *request,
                      struct sr_ctl_req *req, const char *reply)
{
    call_start(c, f->sock, request);
    const int conn = accept_one(f->lfd);
    const int rc = sr_ctl_read_request(conn, req);
    if (reply)
        sr_ctl_reply(conn, "%s", reply);
    close(conn);
    call_join(c);
    return rc;
}

/* Parses request (a line, '\n' included) sent through a socketpair. */
static int parse(const char *line, struct sr_ctl_req *req)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(write(sv[0], line, strlen(line)), (ssize_t)strlen(line));
    shutdown(sv[0], SHUT_WR); /* the client has said all it will say */
    const int rc = sr_ctl_read_request(sv[1], req);
    close(sv[0]);
    close(sv[1]);
    return rc;
}

/* ---- round trips over the real socket ---- */

static void test_commit_reaches_server_and_reply_reaches_client(void **state)
{
    struct fixture *f = *state;
    listen_ok(f);
    struct call c;
    struct sr_ctl_req req;
    assert_int_equal(round_trip(f, &c, "COMMIT 42", &req, "OK 7"), 0);
    assert_int_equal(req.kind, SR_CTL_COMMIT);
    assert_int_equal(req.step, 42);
    assert_int_equal(c.rc, 0);
    assert_string_equal(c.reply, "OK 7");
}

static void test_error_reply_reaches_client_verbatim(void **state)
{
    struct fixture *f = *state;
    listen_ok(f);
    struct call c;
    struct sr_ctl_req req;
    assert_int_equal(round_trip(f, &c, "COMMIT -", &req, "ERR disk full"), 0);
    assert_int_equal(c.rc, 0);
    assert_string_equal(c.reply, "ERR disk full");
}

static void test_notify_round_trip(void **state)
{
    struct fixture *f = *state;
    listen_ok(f);
    struct call c;
    struct sr_ctl_req req;
    assert_int_equal(round_trip(f, &c, "NOTIFY 30000 aws", &req, "OK"), 0);
    assert_int_equal(req.kind, SR_CTL_NOTIFY);
    assert_int_equal(req.deadline_ms, 30000);
    assert_string_equal(req.source, "aws");
    assert_string_equal(c.reply, "OK");
}

static void test_socket_is_private_to_owner(void **state)
{
    struct fixture *f = *state;
    listen_ok(f);
    struct stat sb;
    assert_int_equal(stat(f->sock, &sb), 0);
    assert_true(S_ISSOCK(sb.st_mode));
    assert_int_equal(sb.st_mode & 0777, 0600);
}

static void test_second_listener_on_live_path_is_refused(void **state)
{
    struct fixture *f = *state;
    listen_ok(f);
    int fd2 = -1;
    sr_err_clear();
    const int rc = sr_ctl_listen(f->sock, &fd2);
    assert_int_equal(rc, -EADDRINUSE);
    assert_non_null(strstr(sr_strerror(rc), f->sock));
    assert_int_equal(fd2, -1);
}

static void test_refused_second_listener_leaves_first_one_working(void **state)
{
    struct fixture *f = *state;
    listen_ok(f);
    int fd2 = -1;
    assert_int_equal(sr_ctl_listen(f->sock, &fd2), -EADDRINUSE);
    /* The probe connection of the refused listener is still queued on the
     * first listener: accept and drop it first. */
    close(accept_one(f->lfd));
    struct call c;
    struct sr_ctl_req req;
    assert_int_equal(round_trip(f, &c, "COMMIT 1", &req, "OK 1"), 0);
    assert_int_equal(c.rc, 0);
    assert_string_equal(c.reply, "OK 1");
}

static void test_stale_socket_is_replaced(void **state)
{
    struct fixture *f = *state;
    listen_ok(f);
    close(f->lfd); /* the wrapper died; its socket file remains */
    f->lfd = -1;
    struct stat sb;
    assert_int_equal(stat(f->sock, &sb), 0);
    listen_ok(f);
    struct call c;
    struct sr_ctl_req req;
    assert_int_equal(round_trip(f, &c, "COMMIT 5", &req, "OK 2"), 0);
    assert_int_equal(req.step, 5);
    assert_string_equal(c.reply, "OK 2");
}

static void test_call_to_missing_socket_names_the_path(void **state)
{
    struct fixture *f = *state;
    char reply[64] = "";
    sr_err_clear();
    const int rc = sr_ctl_call(f->sock, "STATUS", reply, sizeof(reply), 1000);
    assert_true(rc < 0);
    assert_non_null(strstr(sr_strerror(rc), f->sock));
}

static void test_call_times_out_when_server_never_replies(void **state)
{
    struct fixture *f = *state;
    listen_ok(f);
    char reply[64] = "";
    sr_err_clear();
    const int64_t t0 = sr_now_ms();
    /* Nobody accepts: the kernel completes the connection, no reply comes. */
    const int rc = sr_ctl_call(f->sock, "COMMIT 3", reply, sizeof(reply), 200);
    const int64_t took = sr_now_ms() - t0;
    assert_int_equal(rc, -ETIMEDOUT);
    assert_non_null(strstr(sr_strerror(rc), f->sock));
    assert_true(took >= 190);
    assert_true(took < 2000);
}

static void test_call_fails_when_server_hangs_up_without_reply(void **state)
{
    struct fixture *f = *state;
    listen_ok(f);
    struct call c;
    struct sr_ctl_req req;
    assert_int_equal(round_trip(f, &c, "STATUS", &req, NULL), 0);
    assert_int_equal(req.kind, SR_CTL_STATUS);
    assert_true(c.rc < 0);
    assert_non_null(strstr(c.msg, f->sock));
}

static void test_call_refuses_over_long_request(void **state)
{
    struct fixture *f = *state;
    listen_ok(f);
    char request[400];
    memset(request, 'x', sizeof(request) - 1);
    memcpy(request, "NOTIFY 1 ", 9);
    request[sizeof(request) - 1] = '\0';
    char reply[64] = "";
    /* The server never answers: a request sent anyway would time out. */
    const int rc = sr_ctl_call(f->sock, request, reply, sizeof(reply), 200);
    assert_true(rc < 0);
    assert_int_not_equal(rc, -ETIMEDOUT);
}

/* ---- request parsing ---- */

static void test_commit_with_dash_has_unknown_step(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_int_equal(parse("COMMIT -\n", &req), 0);
    assert_int_equal(req.kind, SR_CTL_COMMIT);
    assert_int_equal(req.step, -1);
}

static void test_commit_step_zero(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_int_equal(parse("COMMIT 0\n", &req), 0);
    assert_int_equal(req.step, 0);
}

/* A background save reports how long training stopped (--every auto's
 * cost); without it the pause is unknown (-1). */
static void test_commit_carries_the_jobs_pause(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_int_equal(parse("COMMIT 7 pause_ms=312\n", &req), 0);
    assert_int_equal(req.step, 7);
    assert_int_equal(req.pause_ms, 312);
    assert_int_equal(parse("COMMIT - pause_ms=0\n", &req), 0);
    assert_int_equal(req.pause_ms, 0);
    assert_int_equal(parse("COMMIT 7\n", &req), 0);
    assert_int_equal(req.pause_ms, -1);
    assert_int_equal(parse("COMMIT 7 pause_ms=-1\n", &req), -EINVAL);
    assert_int_equal(parse("COMMIT 7 pause_ms=\n", &req), -EINVAL);
    assert_int_equal(parse("COMMIT 7 pause=3\n", &req), -EINVAL);
    assert_int_equal(parse("COMMIT 7 pause_ms=3 x\n", &req), -EINVAL);
}

static void test_notify_without_source_is_manual(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_int_equal(parse("NOTIFY 120000\n", &req), 0);
    assert_int_equal(req.kind, SR_CTL_NOTIFY);
    assert_int_equal(req.deadline_ms, 120000);
    assert_string_equal(req.source, "manual");
}

static void test_status_request(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_int_equal(parse("STATUS\n", &req), 0);
    assert_int_equal(req.kind, SR_CTL_STATUS);
}

static void test_commit_with_non_numeric_step_is_error(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_int_equal(parse("COMMIT abc\n", &req), -EINVAL);
}

static void test_commit_with_negative_step_is_error(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_int_equal(parse("COMMIT -3\n", &req), -EINVAL);
}

static void test_commit_without_step_is_error(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_int_equal(parse("COMMIT\n", &req), -EINVAL);
}

/* A word more than the verb takes, or a word longer than any field, is no
 * request: never read as its first part. */
static void test_extra_or_overlong_words_are_errors(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_int_equal(parse("COMMIT 1 extra\n", &req), -EINVAL);
    assert_int_equal(parse("STATUS now\n", &req), -EINVAL);
    assert_int_equal(parse("NOTIFY 1000 manual more\n", &req), -EINVAL);
    assert_int_equal(parse("NOTIFY 1000 a;b\n", &req), -EINVAL);
    assert_int_equal(parse("REQUEST SIGTERM 12 x\n", &req), -EINVAL);
    assert_int_equal(parse("METRIC - loss 1 2\n", &req), -EINVAL);
    assert_int_equal(
        parse(
            "COMMIT 100000000000000000000000000000000000000000000000000000000000000000000000000000"
            "000\n",
            &req),
        -EINVAL);
    assert_int_equal(parse("COMMIT  7 \n", &req), 0); /* spaces around words are fine */
    assert_int_equal(req.step, 7);
}

static void test_unknown_verb_is_error(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_int_equal(parse("BOGUS\n", &req), -EINVAL);
}

static void test_empty_line_is_error(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_int_equal(parse("\n", &req), -EINVAL);
}

static void test_notify_with_negative_deadline_is_error(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_int_equal(parse("NOTIFY -5 x\n", &req), -EINVAL);
}

static void test_notify_without_deadline_is_error(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_int_equal(parse("NOTIFY\n", &req), -EINVAL);
}

static void test_client_hanging_up_before_newline_is_error(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_true(parse("COMMIT 4", &req) < 0);
}

static void test_over_long_request_line_is_error(void **state)
{
    (void)state;
    char line[600];
    memset(line, 'A', sizeof(line) - 2);
    line[sizeof(line) - 2] = '\n';
    line[sizeof(line) - 1] = '\0';
    struct sr_ctl_req req;
    assert_true(parse(line, &req) < 0);
}

static void test_metric_with_step(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_int_equal(parse("METRIC 120 loss 0.25\n", &req), 0);
    assert_int_equal(req.kind, SR_CTL_METRIC);
    assert_int_equal(req.step, 120);
    assert_string_equal(req.name, "loss");
    assert_true(req.value == 0.25);
}

static void test_metric_without_step(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    assert_int_equal(parse("METRIC - val.acc:top-1 -1e3\n", &req), 0);
    assert_int_equal(req.step, -1);
    assert_string_equal(req.name, "val.acc:top-1");
    assert_true(req.value == -1000.0);
}

static void test_metric_refuses_bad_names_and_values(void **state)
{
    (void)state;
    struct sr_ctl_req req;
    static const char *const bad[] = {
        "METRIC - loss nan\n",
        "METRIC - loss inf\n",
        "METRIC - loss 0x1p3\n",
        "METRIC - loss 1e999\n",
        "METRIC - loss 1.5x\n",
        "METRIC - lo$s 1\n",
        "METRIC - loss\n",
        "METRIC x loss 1\n",
        "METRIC - loss 1 extra\n",
        ("METRIC - "
         "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn 1\n"),
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(parse(bad[i], &req), -EINVAL);
}

/* The supervisor's reader: bytes that trickle in are gathered without
 * blocking; a silent client never blocks it. */
static void test_conn_feed_gathers_a_line_without_blocking(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    struct sr_ctl_conn c = {.fd = sv[1]};
    struct sr_ctl_req req;
    assert_int_equal(sr_ctl_conn_feed(&c, &req), 0); /* nothing yet: no wait */
    assert_int_equal(write(sv[0], "COMM", 4), 4);
    assert_int_equal(sr_ctl_conn_feed(&c, &req), 0);
    assert_int_equal(write(sv[0], "IT 7\n", 5), 5);
    assert_int_equal(sr_ctl_conn_feed(&c, &req), 1);
    assert_int_equal(req.kind, SR_CTL_COMMIT);
    assert_int_equal(req.step, 7);
    close(sv[0]);
    close(sv[1]);
}

static void test_conn_feed_reports_hangup_and_garbage(void **state)
{
    (void)state;
    int sv[2];
    struct sr_ctl_req req;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    struct sr_ctl_conn c = {.fd = sv[1]};
    assert_int_equal(write(sv[0], "STAT", 4), 4);
    close(sv[0]);
    assert_int_equal(sr_ctl_conn_feed(&c, &req), -ECONNRESET);
    close(sv[1]);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    c = (struct sr_ctl_conn){.fd = sv[1]};
    assert_int_equal(write(sv[0], "HELLO\n", 6), 6);
    assert_int_equal(sr_ctl_conn_feed(&c, &req), -EINVAL);
    close(sv[0]);
    close(sv[1]);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_commit_reaches_server_and_reply_reaches_client),
        T(test_error_reply_reaches_client_verbatim),
        T(test_notify_round_trip),
        T(test_socket_is_private_to_owner),
        T(test_second_listener_on_live_path_is_refused),
        T(test_refused_second_listener_leaves_first_one_working),
        T(test_stale_socket_is_replaced),
        T(test_call_to_missing_socket_names_the_path),
        T(test_call_times_out_when_server_never_replies),
        T(test_call_fails_when_server_hangs_up_without_reply),
        T(test_call_refuses_over_long_request),
        T(test_commit_with_dash_has_unknown_step),
        T(test_commit_step_zero),
        T(test_commit_carries_the_jobs_pause),
        T(test_notify_without_source_is_manual),
        T(test_status_request),
        T(test_commit_with_non_numeric_step_is_error),
        T(test_commit_with_negative_step_is_error),
        T(test_commit_without_step_is_error),
        T(test_extra_or_overlong_words_are_errors),
        T(test_unknown_verb_is_error),
        T(test_empty_line_is_error),
        T(test_notify_with_negative_deadline_is_error),
        T(test_notify_without_deadline_is_error),
        T(test_client_hanging_up_before_newline_is_error),
        T(test_over_long_request_line_is_error),
        T(test_metric_with_step),
        T(test_metric_without_step),
        T(test_metric_refuses_bad_names_and_values),
        T(test_conn_feed_gathers_a_line_without_blocking),
        T(test_conn_feed_reports_hangup_and_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
