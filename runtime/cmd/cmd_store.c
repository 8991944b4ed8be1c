/*
 * cmd_store.c - the commands that work on the store alone: ls, show, pull,
 * push, gc. None of them needs a running wrapper.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "checkpointer.h"
#include "cli.h"
#include "fsutil.h"
#include "events.h"
#include "eventsview.h"
#include "history.h"
#include "labels.h"
#include "keeper.h"
#include "lease.h"
#include "parts.h"
#include "log.h"
#include "quarantine.h"
#include "summary.h"
#include "termsafe.h"
#include "units.h"

static void fmt_time(int64_t unix_s, char *buf, size_t len)
{
    const time_t t = (time_t)unix_s;
    struct tm tm;
    /* A manifest's time is the store's word: absurd ones print as unknown. */
    if (unix_s < 0 || unix_s > SR_TIME_MAX_MS / 1000 || !localtime_r(&t, &tm) ||
        !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, len, "-");
}

static const char *ckpt_kind(const struct sr_manifest *m)
{
    return sr_manifest_is_delta(m) ? "delta" : "full";
}

/* The suspect marks of a run's checkpoints (storage/run/quarantine.h),
 * read once for show: a failed listing shows none (said once). */
static void suspects_of(struct sr_store *st, const char *run, struct sr_suspect_set *out)
{
    const int rc = sr_suspect_list(st, run, out);
    if (rc < 0) {
        sr_warn("cannot read which checkpoints of %s are suspect: %s", run, sr_strerror(rc));
        sr_err_clear();
    }
}

/* "job failed twice right after restoring it (exit 1, exit 1)", safe for
 * a terminal; "" when seq is not suspect. */
static const char *suspect_reason(struct sr_store *st, const char *run,
                                  const struct sr_suspect_set *bad, uint64_t seq, char *buf,
                                  size_t len)
{
    if (!sr_suspect_has(bad, seq))
        return "";
    struct sr_suspect_mark mk;
    if (sr_suspect_load(st, run, seq, &mk) < 0 || !mk.reason[0]) {
        sr_err_clear();
        snprintf(buf, len, "marked suspect (its mark is unreadable)");
        return buf;
    }
    return sr_term_safe(mk.reason, buf, len);
}

static json_t *suspect_json(struct sr_store *st, const char *run, const struct sr_suspect_set *bad,
                            uint64_t seq)
{
    if (!sr_suspect_has(bad, seq))
        return json_null();
    struct sr_suspect_mark mk;
    if (sr_suspect_load(st, run, seq, &mk) < 0) {
        sr_err_clear();
        return json_pack("{s:s}", "reason", "marked suspect (its mark is unreadable)");
    }
    return json_pack("{s:s,s:s,s:s}", "reason", mk.reason, "host", mk.host, "time", mk.time);
}

static json_t *manifest_json(const struct sr_manifest *m)
{
    char when[32];
    sr_format_iso_ms(m->created * 1000, when, sizeof(when));
    const uint64_t archive = sr_manifest_archive_bytes(m);
    json_t *o = json_pack(
        "{s:I,s:o,s:I,s:I,s:I,s:I,s:s,s:o,s:I,s:f,s:s,s:s,s:I}", "seq", (json_int_t)m->seq, "step",
        m->step >= 0 ? json_integer(m->step) : json_null(), "raw_bytes", (json_int_t)m->raw_bytes,
        "stored_bytes", (json_int_t)m->stored_bytes, "archive_bytes", (json_int_t)archive,
        "uploaded_bytes", (json_int_t)m->stored_bytes, "kind", ckpt_kind(m), "ratio",
        archive ? json_real((double)m->raw_bytes / (double)archive) : json_null(), "files",
        (json_int_t)m->files, "stage_seconds", m->stage_seconds, "created", when, "host", m->host,
        "attempt", (json_int_t)m->attempt);
    if (o && m->epoch)
        json_object_set_new(o, "epoch", json_integer((json_int_t)m->epoch));
    if (o && m->nodes > 0) /* a multi-node set: one part per node */
        json_object_set_new(o, "nodes", json_integer((json_int_t)m->nodes));
    return o;
}

/* push and gc write a run, so they take its lease as `run` does, keep it
 * renewed while they work (a push of a big directory outlasts a ttl), and
 * give it back: they never race a wrapper that is running the run. 0 or an
 * exit code. */
struct held {
    struct sr_lease *lease;
    struct sr_keeper *keeper;
};

static int hold_run(struct sr_store *st, const char *run, struct held *out)
{
    memset(out, 0, sizeof(*out));
    int rc = sr_keeper_take(st, run, 60, 0, "not changing it while a wrapper runs it", &out->lease);
    if (rc != 0)
        return rc;
    rc = sr_keeper_start(out->lease, &out->keeper);
    if (rc < 0)
        sr_warn("the lease will not be renewed: %s", sr_strerror(rc));
    return 0;
}

static void let_go(struct held *h)
{
    sr_keeper_stop(h->keeper);
    const int rc = sr_lease_release(h->lease);
    if (rc < 0)
        sr_warn("cannot release the lease (it expires on its own): %s", sr_strerror(rc));
    sr_lease_free(h->lease);
}

/* ls: one run, read (its checkpoints and its settled history), then
 * rendered as a JSON object or a table row. */
struct ls_row {
    const char *run;
    struct sr_ckpt_list l;
    struct sr_history h;
};

/* Reads a run into row; 0 when its labels do not match want (nothing to
 * free), 1 when it is to be shown (ls_row_free frees it). */
static int ls_read(struct sr_store *st, const char *run, const struct sr_labels *want,
                   struct ls_row *row)
{
    memset(row, 0, sizeof(*row));
    row->run = run;
    sr_ckpt_list(st, run, &row->l);
    sr_hist_init(&row->h);
    const int hrc = sr_hist_load(st, run, &row->h);
    if (hrc < 0)
        sr_warn("cannot read the event log of %s: %s", run, sr_strerror(hrc));
    if (!sr_labels_match(&row->h.labels, want)) { /* a run without history has none */
        sr_hist_free(&row->h);
        sr_ckpt_list_free(&row->l);
        return 0;
    }
    sr_hist_settle_last(st, run, &row->h);
    sr_hist_count_checkpoints(&row->h, row->l.n);
    return 1;
}

static void ls_row_free(struct ls_row *row)
{
    sr_hist_free(&row->h);
    sr_ckpt_list_free(&row->l);
}

static json_t *ls_row_json(const struct ls_row *row, const struct sr_view_opts *vo)
{
    const struct sr_ckpt_list *l = &row->l;
    json_t *o = json_pack("{s:s}", "run_id", row->run);
    json_object_update_missing_new(o, sr_summary_json(&row->h, &vo->prices));
    json_object_set_new(o, "checkpoint_count", json_integer((json_int_t)l->n));
    json_object_set_new(o, "newest", l->n ? manifest_json(&l->v[l->n - 1]) : json_null());
    return o;
}

/* The table's layout: RUN's width, and --long's METRICS column. */
struct ls_table {
    int idw;
    int long_ls;
    const struct sr_optlist *metric;
};

static void ls_print_header(const struct ls_table *t)
{
    printf("%-*s %-12s %-10s %5s %8s %10s %10s %4s %4s %4s %8s %9s  %-*s%s\n", t->idw, "RUN",
           "STATE", "CAUSE", "CKPTS", "NEWEST", "STEP", "SIZE", "ATT", "PRE", "FAIL", "LOST",
           "COST", t->long_ls ? 19 : 0, "CREATED", t->long_ls ? "  METRICS" : "");
}

static void ls_print_row(const struct ls_row *row, const struct ls_table *t,
                         const struct sr_view_opts *vo)
{
    const struct sr_history *h = &row->h;
    const struct sr_ckpt_list *l = &row->l;
    char lost[32], cost[32] = "-";
    sr_format_duration_ms(h->lost_ms, lost, sizeof(lost));
    double spot, od;
    struct sr_hist_prices price; /* the flag's, else the run's recorded one */
    sr_hist_view_prices(h, &vo->prices, &price);
    sr_hist_cost(h, &price, &spot, &od);
    if (price.spot_per_hour > 0)
        sr_format_money(spot, cost, sizeof(cost));
    char step[24] = "-", size[32] = "-", when[32] = "-", seq[24] = "-";
    if (l->n) {
        const struct sr_manifest *m = &l->v[l->n - 1];
        sr_format_step(m->step, step, sizeof(step));
        sr_format_size(m->stored_bytes, size, sizeof(size));
        fmt_time(m->created, when, sizeof(when));
        snprintf(seq, sizeof(seq), "%" PRIu64, m->seq);
    } else if (h->first_ms > 0) { /* no checkpoint yet: when the run began (its first event) */
        fmt_time(h->first_ms / 1000, when, sizeof(when));
    }
    char cell[256] = "";
    if (t->long_ls) /* --long's METRICS */
        sr_summary_metrics_cell(h, t->metric->v, t->metric->n, cell, sizeof(cell));
    /* CAUSE: why the newest ended attempt ended (docs/events.md) */
    const struct sr_hist_attempt *ended = sr_hist_last_ended(h);
    printf("%-*s %-12s %-10s %5zu %8s %10s %10s %4zu %4u %4u %8s %9s  %-*s%s%s\n", t->idw, row->run,
           sr_hist_state_name(h->state), ended ? sr_hist_cause_name(ended->cause) : "-", l->n, seq,
           step, size, h->n_att, h->preemptions, h->failures, lost, cost, t->long_ls ? 19 : 0, when,
           t->long_ls ? "  " : "", cell);
}

/* ls's checks of its options: 0, or an exit code (said on stderr). */
static int ls_check(const struct sr_optlist *metric, const struct sr_optlist *label,
                    struct sr_labels *want)
{
    if (metric->n > 2) {
        fprintf(stderr, "spotrun ls: at most 2 --metric names (%zu given)\n", metric->n);
        return SR_EX_USAGE;
    }
    char err[256];
    for (size_t i = 0; i < label->n; i++)
        if (sr_labels_add(want, label->v[i], err, sizeof(err)) < 0) {
            fprintf(stderr, "spotrun ls: %s\n", err);
            return SR_EX_USAGE;
        }
    return 0;
}

/* Each run read, then rendered: the table, or --json's document. 0 or an
 * exit code. */
static int ls_list(struct sr_store *st, const struct sr_strlist *runs, const struct sr_labels *want,
                   const struct ls_table *t, const struct sr_view_opts *vo)
{
    json_t *jruns = vo->json ? json_array() : NULL;
    if (!vo->json)
        ls_print_header(t);
    for (size_t i = 0; i < runs->n; i++) {
        struct ls_row row;
        if (!ls_read(st, runs->v[i], want, &row))
            continue;
        if (jruns)
            json_array_append_new(jruns, ls_row_json(&row, vo));
        else
            ls_print_row(&row, t, vo);
        ls_row_free(&row);
    }
    if (!jruns)
        return 0;
    json_t *o = json_pack("{s:i,s:s,s:o}", "schema_version", SR_JSON_SCHEMA_VERSION, "store",
                          sr_store_url(st), "runs", jruns);
    return sr_print_json(o);
}

int sr_cmd_ls(const struct sr_cmd *cmd, int argc, char **argv)
{
    struct sr_view_opts vo = {0};
    /* --long: a METRICS column, the last value of --metric's names (at
     * most 2), else of the first two metrics each run reported. */
    int long_ls = 0;
    struct sr_optlist metric = {0};
    struct sr_optlist label = {0};
    const struct sr_opt opts[] = {
        {"long", 'l', NULL, SR_OPT_FLAG, &long_ls, NULL,
         "add a METRICS column: the last value of the run's first two metrics"},
        {"metric", 0, NULL, SR_OPT_MULTI, &metric, "NAME",
         "with --long, show this metric (repeatable, at most 2; implies --long)"},
        {"label", 0, NULL, SR_OPT_MULTI, &label, "KEY=VALUE",
         "only the runs with this label (repeatable: all of them)"},
        SR_VIEW_OPTS(&vo),
        SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    struct sr_store *st = ctx.st;
    struct sr_labels want = {0};
    code = ls_check(&metric, &label, &want);
    if (code != 0) {
        sr_store_close(st);
        return code;
    }
    struct sr_strlist runs = {0};
    const int rc = sr_ckpt_list_runs(st, &runs);
    if (rc < 0) {
        code = sr_fail(rc, "cannot list the store");
    } else {
        /* RUN is as wide as the longest id (32 at least): the columns stay put */
        struct ls_table t = {32, long_ls || metric.n > 0, &metric};
        for (size_t i = 0; i < runs.n; i++)
            if (strlen(runs.v[i]) > (size_t)t.idw)
                t.idw = (int)strlen(runs.v[i]);
        code = ls_list(st, &runs, &want, &t, &vo);
    }
    sr_strlist_free(&runs);
    sr_store_close(st);
    return code < 0 ? 0 : code;
}

/* A lease (rank < 0: the run's LEASE, else LEASE.<rank>) as show --json
 * reports it; null when there is none (or it cannot be read: show is a
 * view, not a check). */
static json_t *lease_json(struct sr_store *st, const char *run, int rank)
{
    struct sr_lease_info in;
    if (sr_lease_read_rank(st, run, rank, &in) < 0) {
        sr_err_clear();
        return json_null();
    }
    const int64_t now = sr_wall_ms() / 1000;
    const char *state = in.released ? "released" : now < in.expires ? "held" : "expired";
    char expires[32];
    sr_format_iso_ms(in.expires * 1000, expires, sizeof(expires));
    return json_pack("{s:s,s:s,s:I,s:I,s:s,s:i}", "state", state, "host", in.host, "pid",
                     (json_int_t)in.pid, "epoch", (json_int_t)in.epoch, "expires", expires, "ttl",
                     in.ttl);
}

static uint64_t newest_seq(const struct sr_ckpt_list *l)
{
    uint64_t newest = 0;
    for (size_t i = 0; i < l->n; i++)
        newest = l->v[i].seq > newest ? l->v[i].seq : newest;
    return newest;
}

/* The newest attempt that recorded its local work dir; NULL when none did. */
static const struct sr_hist_attempt *work_attempt(const struct sr_history *h)
{
    for (size_t i = h->n_att; i-- > 0;)
        if (h->att[i].work_dir[0])
            return &h->att[i];
    return NULL;
}

/* The wrapper removes a done run's work dir unless --keep-work. */
static int work_removed(const struct sr_history *h, const struct sr_hist_attempt *a)
{
    return h->state == SR_STATE_DONE && !a->work_kept;
}

static json_t *work_dir_json(const struct sr_history *h)
{
    const struct sr_hist_attempt *a = work_attempt(h);
    if (!a)
        return json_null();
    return json_pack("{s:s,s:s,s:b,s:b}", "host", a->host, "path", a->work_dir, "kept",
                     a->work_kept, "removed", work_removed(h, a));
}

static void print_work_dir(const struct sr_history *h)
{
    const struct sr_hist_attempt *a = work_attempt(h);
    if (a)
        printf("work dir:    %s:%s%s\n", a->host, a->work_dir,
               a->work_kept         ? " (kept: --keep-work)"
               : work_removed(h, a) ? " (removed: the run is done)"
                                    : "");
}

static int print_show_json(struct sr_store *st, const char *run, const struct sr_history *h,
                           const struct sr_hist_prices *p, const struct sr_ckpt_list *l)
{
    json_t *o = json_pack("{s:i,s:s,s:s}", "schema_version", SR_JSON_SCHEMA_VERSION, "run_id", run,
                          "store", sr_store_url(st));
    json_object_update_missing_new(o, sr_summary_json(h, p));
    json_t *cks = json_array();
    struct sr_suspect_set bad = {0};
    suspects_of(st, run, &bad);
    for (size_t i = 0; i < l->n; i++) {
        json_t *c = manifest_json(&l->v[i]);
        json_object_set_new(c, "suspect", suspect_json(st, run, &bad, l->v[i].seq));
        json_array_append_new(cks, c);
    }
    sr_suspect_set_free(&bad);
    /* Peak GPU memory: the event log's when the shim reported one there,
     * else the newest manifest that recorded it (per device; the max here). */
    for (size_t i = l->n; !h->gpu_peak_bytes && i-- > 0;) {
        uint64_t peak = 0;
        for (uint32_t d = 0; d < l->v[i].gpu_devices; d++)
            peak = l->v[i].gpu_peak[d] > peak ? l->v[i].gpu_peak[d] : peak;
        if (peak) {
            json_object_set_new(o, "gpu_peak_bytes", json_integer((json_int_t)peak));
            break;
        }
    }
    json_object_set_new(o, "checkpoint_count", json_integer((json_int_t)l->n));
    struct sr_set_partial inc[8];
    const int ninc = sr_sets_incomplete(st, run, newest_seq(l), inc, 8);
    json_t *incomplete = json_array();
    for (int i = 0; i < ninc; i++)
        json_array_append_new(incomplete,
                              json_pack("{s:I,s:I,s:i}", "seq", (json_int_t)inc[i].seq, "step",
                                        (json_int_t)inc[i].seq - 1, "parts", (int)inc[i].parts));
    json_object_set_new(o, "incomplete", incomplete);
    json_object_set_new(o, "checkpoints", cks);
    json_object_set_new(o, "attempt_list", sr_summary_attempts_json(h));
    json_object_set_new(o, "lease", lease_json(st, run, -1));
    /* A multi-node group's nodes: one lease per rank (docs/multinode.md). */
    json_t *nl = json_array();
    int top = -1;
    if (sr_lease_count_ranks(st, run, &top) < 0)
        sr_err_clear();
    for (int r = 0; r <= top; r++) {
        json_t *x = lease_json(st, run, r);
        if (json_is_object(x)) {
            json_object_set_new(x, "node", json_integer(r));
            json_array_append_new(nl, x);
        } else {
            json_decref(x);
        }
    }
    json_object_set_new(o, "node_leases", nl);
    json_object_set_new(o, "work_dir", work_dir_json(h));
    return sr_print_json(o);
}

/* A "lease:" line of show: who owns the run (rank < 0) or that node of
 * its multi-node group now. */
static void print_lease_of(struct sr_store *st, const char *run, int rank)
{
    struct sr_lease_info in;
    if (sr_lease_read_rank(st, run, rank, &in) < 0) {
        sr_err_clear();
        return;
    }
    char node[32] = "", host[sizeof(in.host)];
    if (rank >= 0)
        snprintf(node, sizeof(node), "node %d ", rank);
    sr_term_safe(in.host, host, sizeof(host)); /* the parser refuses controls: belt and braces */
    const long long left = (long long)(in.expires - (int64_t)(sr_wall_ms() / 1000));
    if (in.released)
        printf("lease:       %sreleased by %s pid %ld (epoch %llu)\n", node, host, in.pid,
               (unsigned long long)in.epoch);
    else if (left > 0)
        printf("lease:       %sheld by %s pid %ld (epoch %llu, expires in %llds)\n", node, host,
               in.pid, (unsigned long long)in.epoch, left);
    else
        printf("lease:       %sexpired %llds ago (%s pid %ld, epoch %llu)\n", node, -left, host,
               in.pid, (unsigned long long)in.epoch);
}

/* Every lease of the run: LEASE, then each node's of a multi-node group. */
static void print_lease(struct sr_store *st, const char *run)
{
    print_lease_of(st, run, -1);
    int top = -1;
    if (sr_lease_count_ranks(st, run, &top) < 0)
        sr_err_clear();
    for (int r = 0; r <= top; r++)
        print_lease_of(st, run, r);
}

/* show --events [--attempt N]: the attempt's log, readably. */
static int show_events(struct sr_store *st, const char *run, int events, const char *attempt)
{
    uint32_t a = UINT32_MAX;
    if (attempt) {
        char *end = NULL;
        errno = 0;
        const unsigned long v = strtoul(attempt, &end, 10);
        if (!events || !*attempt || *end || errno || v > SR_ATTEMPT_MAX || attempt[0] == '-') {
            fprintf(stderr, "spotrun show: %s\n",
                    events ? "--attempt takes an attempt number (0, 1, ...)"
                           : "--attempt goes with --events");
            return SR_EX_USAGE;
        }
        a = (uint32_t)v;
    }
    const int rc = sr_events_print(stdout, st, run, a);
    if (rc == -ENOENT) {
        if (attempt)
            fprintf(stderr, "spotrun: show: run \"%s\" has no attempt %s in %s\n", run, attempt,
                    sr_store_url(st));
        else
            fprintf(stderr, "spotrun: show: no run \"%s\" in %s\n", run, sr_store_url(st));
        return SR_EX_NOINPUT;
    }
    return rc < 0 ? sr_fail(rc, "cannot read the store") : 0;
}

/* show: what it reads of a run, then renders (as text or --json). */
struct show_run {
    const char *run;
    struct sr_history h;
    struct sr_ckpt_list l;
    uint32_t attempts;
};

/* Reads the run; 0, or an exit code (said on stderr). show_free frees
 * what it read either way. */
static int show_read(struct sr_store *st, const char *run, struct show_run *r)
{
    memset(r, 0, sizeof(*r));
    r->run = run;
    sr_hist_init(&r->h);
    int rc = sr_ckpt_list(st, run, &r->l);
    if (rc == 0)
        rc = sr_events_next_attempt(st, run, &r->attempts);
    if (rc == 0)
        rc = sr_hist_load(st, run, &r->h);
    if (rc < 0)
        return sr_fail(rc, "cannot read the store");
    if (r->l.n == 0 && r->attempts == 0) {
        fprintf(stderr, "spotrun: show: no run \"%s\" in %s\n", run, sr_store_url(st));
        return SR_EX_NOINPUT;
    }
    sr_hist_settle_last(st, run, &r->h);
    sr_hist_count_checkpoints(&r->h, r->l.n);
    return 0;
}

static void show_free(struct show_run *r)
{
    sr_hist_free(&r->h);
    sr_ckpt_list_free(&r->l);
}

/* The checkpoints' table, a suspect one's reason under its row. */
static void show_ckpts(struct sr_store *st, const struct show_run *r)
{
    /* STORED and RATIO are of the whole archive (what a restore reads);
     * UPLOADED is what this checkpoint added to the store: less for a
     * delta, which references the frames an earlier one uploaded. */
    printf("%8s %10s %10s %10s %7s %10s %5s %6s %8s  %-19s  %s\n", "SEQ", "STEP", "RAW", "STORED",
           "RATIO", "UPLOADED", "KIND", "FILES", "STAGE", "CREATED", "HOST");
    struct sr_suspect_set bad = {0};
    suspects_of(st, r->run, &bad);
    for (size_t i = 0; i < r->l.n; i++) {
        const struct sr_manifest *m = &r->l.v[i];
        char step[24], raw[32], stored[32], up[32], when[32], nodes[24], host[sizeof(m->host)];
        const uint64_t archive = sr_manifest_archive_bytes(m);
        sr_format_step(m->step, step, sizeof(step));
        sr_format_size(m->raw_bytes, raw, sizeof(raw));
        sr_format_size(archive, stored, sizeof(stored));
        sr_format_size(m->stored_bytes, up, sizeof(up));
        fmt_time(m->created, when, sizeof(when));
        printf("%8" PRIu64 " %10s %10s %10s %6.2fx %10s %5s %6" PRIu64 " %7.2fs  %-19s  %s\n",
               m->seq, step, raw, stored, archive ? (double)m->raw_bytes / (double)archive : 0.0,
               up, ckpt_kind(m), m->files, m->stage_seconds, when,
               m->nodes ? (snprintf(nodes, sizeof(nodes), "%u nodes", m->nodes), nodes)
                        : sr_term_safe(m->host, host, sizeof(host)));
        char why[256];
        const char *reason = suspect_reason(st, r->run, &bad, m->seq, why, sizeof(why));
        if (*reason) /* never restored first (docs/runtime.md, "A bad checkpoint") */
            printf("%8s suspect: %s\n", "", reason);
    }
    sr_suspect_set_free(&bad);
    /* Multi-node steps whose parts are not all there: never restored. */
    struct sr_set_partial inc[8];
    const int ninc = sr_sets_incomplete(st, r->run, newest_seq(&r->l), inc, 8);
    for (int i = 0; i < ninc; i++)
        printf("%8" PRIu64 " %10" PRIu64 "  incomplete: %u node part(s), no manifest\n", inc[i].seq,
               inc[i].seq - 1, inc[i].parts);
}

/* Peak GPU memory (from the preload shim), as of the newest checkpoint
 * that recorded it: what a resume needs on the next instance. */
static void show_gpu_peak(const struct sr_ckpt_list *l)
{
    for (size_t i = l->n; i-- > 0;) {
        const struct sr_manifest *m = &l->v[i];
        if (!m->gpu_devices)
            continue;
        printf("\ngpu peak:   ");
        for (uint32_t d = 0; d < m->gpu_devices; d++) {
            char sz[32];
            sr_format_size(m->gpu_peak[d], sz, sizeof(sz));
            printf("%s dev%" PRIu32 " %s", d ? "," : "", d, sz);
        }
        printf("  (checkpoint %" PRIu64 ")\n", m->seq);
        break;
    }
}

/* The run as text: its header lines, summary, checkpoints, attempts. */
static void show_text(struct sr_store *st, const struct show_run *r, const struct sr_view_opts *vo)
{
    const struct sr_history *h = &r->h;
    printf("run:         %s\nstore:       %s\nstate:       %s\nattempts:    %" PRIu32
           "\ncheckpoints: %zu\n",
           r->run, sr_store_url(st), sr_hist_state_name(h->state), r->attempts, r->l.n);
    if (h->labels.n) {
        char labels[SR_LABELS_MAX * (2 * SR_LABEL_MAX + 3) + 1];
        sr_labels_format(&h->labels, labels, sizeof(labels));
        printf("labels:      %s\n", labels);
    }
    if (h->approved_by[0]) { /* a run above its quota's size (docs/cost.md) */
        char at[40] = "";
        const time_t s = (time_t)(h->approved_ms / 1000);
        struct tm tm;
        if (gmtime_r(&s, &tm))
            strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
        printf("approved:    by %s at %s\n", h->approved_by, at);
    }
    print_lease(st, r->run);
    print_work_dir(h);
    sr_summary_print(stdout, h, &vo->prices);
    putchar('\n');
    show_ckpts(st, r);
    show_gpu_peak(&r->l);
    if (h->n_att)
        putchar('\n');
    sr_summary_print_attempts(stdout, h);
}

int sr_cmd_show(const struct sr_cmd *cmd, int argc, char **argv)
{
    struct sr_view_opts vo = {0};
    int events = 0;
    const char *attempt = NULL;
    const struct sr_opt opts[] = {
        SR_VIEW_OPTS(&vo),
        {"events", 0, NULL, SR_OPT_FLAG, &events, NULL,
         "print an attempt's events, one per line (the newest attempt; --attempt N)"},
        {"attempt", 0, NULL, SR_OPT_STR, &attempt, "N", "--events: this attempt"},
        SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    struct sr_store *st = ctx.st;
    char **ops = ctx.ops;
    if (events || attempt) {
        code = show_events(st, ops[0], events, attempt);
        sr_store_close(st);
        return code;
    }
    struct show_run r;
    code = show_read(st, ops[0], &r);
    if (code == 0 && vo.json)
        code = print_show_json(st, ops[0], &r.h, &vo.prices, &r.l);
    else if (code == 0)
        show_text(st, &r, &vo);
    show_free(&r);
    sr_store_close(st);
    return code < 0 ? 0 : code;
}

int sr_cmd_pull(const struct sr_cmd *cmd, int argc, char **argv)
{
    uint64_t seq = 0, threads = 0;
    const struct sr_opt opts[] = {{"seq", 0, "SPOTRUN_PULL_SEQ", SR_OPT_UINT, &seq, "N",
                                   "restore this checkpoint (default: newest)"},
                                  {"threads", 0, "SPOTRUN_THREADS", SR_OPT_UINT, &threads, "N",
                                   "decompression threads (default: all CPUs)"},
                                  SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    struct sr_store *st = ctx.st;
    char **ops = ctx.ops;
    const char *dir = ops[1] ? ops[1] : ops[0];
    char root[PATH_MAX], what[PATH_MAX + 16];
    snprintf(what, sizeof(what), "DIR %s", dir);
    code = sr_check_target("pull", what, dir, 0, st,
                           sr_work_root(NULL, root, sizeof(root)) == 0 ? root : NULL, NULL);
    if (code != 0) {
        sr_store_close(st);
        return code;
    }
    struct sr_manifest m;
    const int64_t t0 = sr_now_ms();
    /* A multi-node checkpoint comes out whole: every node's part. */
    const struct sr_restore_opts ro = {.threads = (int)threads, .all_parts = 1};
    const int rc = sr_ckpt_restore_node(st, ops[0], seq, dir, &ro, &m);
    if (rc < 0) {
        code = sr_fail(rc, "pull");
    } else {
        char raw[32];
        sr_format_size(m.raw_bytes, raw, sizeof(raw));
        char step[24];
        sr_format_step(m.step, step, sizeof(step));
        sr_info("restored checkpoint %" PRIu64 " (step %s, %s) of %s into %s in %.1fs", m.seq, step,
                raw, ops[0], dir, (double)(sr_now_ms() - t0) / 1000.0);
        code = 0;
    }
    sr_store_close(st);
    return code;
}

int sr_cmd_export(const struct sr_cmd *cmd, int argc, char **argv)
{
    uint64_t seq = 0;
    const struct sr_opt opts[] = {{"seq", 0, "SPOTRUN_EXPORT_SEQ", SR_OPT_UINT, &seq, "N",
                                   "export this checkpoint (default: newest)"},
                                  SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    struct sr_store *st = ctx.st;
    char **ops = ctx.ops;
    struct sr_manifest m;
    const int64_t t0 = sr_now_ms();
    const int rc = sr_ckpt_export(st, ops[0], seq, ops[1], &m);
    if (rc == -EEXIST) {
        fprintf(stderr, "spotrun: export: %s exists (spotrun never replaces a file)\n", ops[1]);
        code = SR_EX_CANTCREAT;
    } else if (rc == -ENOTSUP) {
        /* A multi-node checkpoint is one part per node, not one archive:
         * the documented refusal, a usage error (never "internal"). */
        fprintf(stderr, "spotrun: export: %s\n", sr_strerror(rc));
        code = SR_EX_USAGE;
    } else if (rc < 0) {
        code = sr_fail(rc, "export");
    } else {
        char raw[32], step[24];
        sr_format_size(m.raw_bytes, raw, sizeof(raw));
        sr_format_step(m.step, step, sizeof(step));
        sr_info("exported checkpoint %" PRIu64 " (step %s, %s, %s) of %s to %s in %.1fs", m.seq,
                step, raw, ckpt_kind(&m), ops[0], ops[1], (double)(sr_now_ms() - t0) / 1000.0);
        code = 0;
    }
    sr_store_close(st);
    return code;
}

/* Pushes dir as run's next checkpoint (push, run --adopt): streamed into
 * an S3-like store, else staged in the work root's push/ spool (which
 * usually shares a filesystem with the default store, where /tmp is often
 * tmpfs) and persisted. */
int sr_push_dir(const struct sr_commits_config *cfg, const char *dir, int64_t step,
                struct sr_manifest *m)
{
    uint64_t seq = 0;
    int rc = sr_ckpt_next_seq(cfg->st, cfg->run_id, &seq);
    if (rc == 0 && sr_store_streams(cfg->st)) {
        /* s3: no local staging; the archive streams into the store as it
         * is compressed (DIR is not the job's live directory here), and
         * the manifest is written once the data object is complete. */
        return sr_commits_push_dir(cfg, dir, seq, step, m);
    }
    char root[PATH_MAX], spool[PATH_MAX + 16], tmp[PATH_MAX + 64];
    if (rc == 0)
        rc = sr_work_root(NULL, root, sizeof(root));
    if (rc == 0)
        rc = sr_pathf(spool, sizeof(spool), "%s/push", root);
    if (rc == 0)
        rc = sr_mkdirs(spool, 0700);
    if (rc == 0)
        rc = sr_pathf(tmp, sizeof(tmp), "%s/%d.tar.zst", spool, (int)getpid());
    if (rc == 0)
        rc = sr_commits_stage(cfg, dir, seq, step, tmp, m);
    if (rc == 0)
        rc = sr_commits_persist(cfg, m, tmp);
    free(m->staged_frames);
    m->staged_frames = NULL;
    unlink(tmp);
    return rc;
}

int sr_cmd_push(const struct sr_cmd *cmd, int argc, char **argv)
{
    int64_t step = -1;
    uint64_t keep = 0, threads = 0, level = 0, full_every = 0;
    const struct sr_opt opts[] = {
        {"step", 'n', "SPOTRUN_COMMIT_STEP", SR_OPT_STEP, &step, "N", "step to record"},
        {"keep", 'k', "SPOTRUN_KEEP", SR_OPT_UINT, &keep, "N", "then keep only the newest N"},
        {"threads", 0, "SPOTRUN_THREADS", SR_OPT_UINT, &threads, "N",
         "compression threads (default: all CPUs)"},
        {"level", 0, "SPOTRUN_LEVEL", SR_OPT_UINT, &level, "N", "zstd level (default 3)"},
        {"full-every", 0, "SPOTRUN_FULL_EVERY", SR_OPT_UINT, &full_every, "N",
         "upload one checkpoint in N in full, the others as deltas (default 10; 1: always full)"},
        SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    struct sr_store *st = ctx.st;
    char **ops = ctx.ops;
    struct held held;
    code = hold_run(st, ops[0], &held);
    if (code != 0) {
        sr_store_close(st);
        return code;
    }
    /* A pushed directory is one node's checkpoint: never the newest of a
     * multi-node run, whose nodes could not resume it (docs/multinode.md). */
    uint32_t nodes = 0;
    int rc = sr_run_nodes(st, ops[0], &nodes, NULL);
    if (rc < 0 || nodes > 1) {
        if (rc < 0)
            code = sr_fail(rc, "push");
        else
            code = (fprintf(stderr,
                            "spotrun: push: run %s is a multi-node run: a pushed directory would "
                            "be a single-node checkpoint its nodes cannot resume; push into "
                            "another run id, or start this one over (spotrun run --fresh)\n",
                            ops[0]),
                    SR_EX_USAGE);
        let_go(&held);
        sr_store_close(st);
        return code;
    }
    const struct sr_commits_config cfg = {.st = st,
                                          .run_id = ops[0],
                                          .keep = (unsigned)keep,
                                          .threads = (int)threads,
                                          .level = (int)level,
                                          .full_every = (unsigned)full_every,
                                          .lease = held.lease};
    struct sr_manifest m = {0};
    rc = sr_push_dir(&cfg, ops[1], step, &m);
    if (rc < 0) {
        code = sr_fail(rc, "push");
    } else {
        char raw[32], stored[32];
        sr_format_size(m.raw_bytes, raw, sizeof(raw));
        sr_format_size(m.stored_bytes, stored, sizeof(stored));
        sr_info("pushed %s as checkpoint %" PRIu64 " of %s: %s -> %s", ops[1], m.seq, ops[0], raw,
                stored);
        code = 0;
    }
    let_go(&held);
    sr_store_close(st);
    return code;
}

int sr_cmd_gc(const struct sr_cmd *cmd, int argc, char **argv)
{
    uint64_t keep = UINT64_MAX;
    const struct sr_opt opts[] = {{"keep", 'k', "SPOTRUN_KEEP", SR_OPT_UINT, &keep, "N",
                                   "checkpoints to keep (required, >= 1)"},
                                  SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    struct sr_store *st = ctx.st;
    char **ops = ctx.ops;
    if (keep == UINT64_MAX || keep == 0) {
        fprintf(stderr, "spotrun gc: --keep N (N >= 1) is required\n");
        sr_store_close(st);
        return SR_EX_USAGE;
    }
    /* Taking the lease writes LEASE: a typo must not create a phantom run. */
    struct sr_strlist names = {0};
    int rc = sr_store_list(st, ops[0], &names);
    const size_t found = names.n;
    sr_strlist_free(&names);
    if (rc < 0 || found == 0) {
        code =
            rc < 0
                ? sr_fail(rc, "gc")
                : (fprintf(stderr, "spotrun: gc: no run \"%s\" in %s\n", ops[0], sr_store_url(st)),
                   SR_EX_NOINPUT);
        sr_store_close(st);
        return code;
    }
    struct held held;
    code = hold_run(st, ops[0], &held);
    if (code != 0) {
        sr_store_close(st);
        return code;
    }
    unsigned deleted = 0, leftovers = 0;
    rc = sr_ckpt_gc_held(st, ops[0], (unsigned)keep, &deleted, &leftovers);
    if (rc < 0)
        code = sr_fail(rc, "gc");
    else {
        sr_info("deleted %u checkpoint(s) of %s, kept the newest %" PRIu64, deleted, ops[0], keep);
        if (leftovers)
            sr_info("deleted %u unfinished checkpoint upload(s) of an earlier owner of %s (data "
                    "without a manifest, newer than the newest checkpoint)",
                    leftovers, ops[0]);
        code = 0;
    }
    let_go(&held);
    sr_store_close(st);
    return code;
}
