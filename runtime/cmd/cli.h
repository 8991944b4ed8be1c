/*
 * cli.h - what the subcommands share: the command table's entry and the
 * one preamble every command starts with (options, --help, operands, the
 * store), the option table (every flag has a SPOTRUN_* environment twin,
 * shown in --help; flags win over the environment; every number goes
 * through units.h's strict parsers) and the work directory layout on this
 * node. Exit codes: common/exits.h.
 */
#ifndef SPOTRUN_CLI_H
#define SPOTRUN_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "exits.h"
#include "fsutil.h"
#include "store.h"
#include "summary.h"

enum sr_opt_type {
    SR_OPT_FLAG,
    SR_OPT_STR,
    SR_OPT_DURATION,
    SR_OPT_SIZE,
    SR_OPT_UINT,
    SR_OPT_STEP,  /* a training step: 0..INT64_MAX (leave the default at -1) */
    SR_OPT_PRICE, /* a non-negative decimal; "" is 0 (no price) */
    SR_OPT_MULTI  /* a string, repeatable: appended to a struct sr_optlist */
};

/* The values of a repeatable option (SR_OPT_MULTI), in the order given. */
#define SR_OPTLIST_MAX 64
struct sr_optlist {
    const char *v[SR_OPTLIST_MAX];
    size_t n;
};

struct sr_opt {
    const char *name; /* long name without "--" */
    int short_name;   /* 0 = none */
    const char *env;  /* SPOTRUN_* twin, NULL = none */
    enum sr_opt_type type;
    /* int*, const char**, int64_t* (ms), uint64_t*, uint64_t*, int64_t*, double*,
     * struct sr_optlist* */
    void *dst;
    const char *metavar; /* "DURATION" */
    const char *help;
};

/* Options every command takes (append with SR_OPTS_COMMON). */
struct sr_common {
    const char *store;
    int quiet, verbose, help;
};
extern struct sr_common sr_common;
#define SR_OPTS_COMMON                                                                              \
    {"store",                                                                                       \
     0,                                                                                             \
     "SPOTRUN_STORE",                                                                               \
     SR_OPT_STR,                                                                                    \
     &sr_common.store,                                                                              \
     "URL",                                                                                         \
     "checkpoint store: a path, file:///path, s3://bucket/prefix or "                               \
     "az://account/container/prefix"},                                                              \
        {"quiet",          'q',  "SPOTRUN_QUIET",           SR_OPT_FLAG,                            \
         &sr_common.quiet, NULL, "only warnings and errors"},                                       \
        {"verbose", 'v', "SPOTRUN_VERBOSE", SR_OPT_FLAG, &sr_common.verbose, NULL, "debug output"}, \
        {"help", 'h', NULL, SR_OPT_FLAG, &sr_common.help, NULL, "show this help"},                  \
    {                                                                                               \
        NULL, 0, NULL, 0, NULL, NULL, NULL                                                          \
    }

/* A subcommand as main.c's table describes it (git's shape: one table, one
 * signature). The preamble, sr_cmd_start(), does what the flags say. */
enum {
    SR_CMD_NEEDS_STORE = 1 << 0,     /* open the store (--store) before the command runs */
    SR_CMD_RUN_OPERAND = 1 << 1,     /* the first operand is a run id: checked */
    SR_CMD_STOP_AT_OPERAND = 1 << 2, /* options end at the first operand (`run -- cmd`) */
    SR_CMD_STORE_EXISTS = 1 << 3,    /* with NEEDS_STORE: never creates a store */
    /* with NEEDS_STORE and STORE_EXISTS: a reader (ls, show, stats, pull, sweep
     * show...): works on a store it may only read (sr_store_open_reader) */
    SR_CMD_READER = 1 << 4,
};
#define SR_CMD_ANY_OPS (-1) /* max_ops: the command checks its operands itself */

struct sr_cmd {
    const char *name;
    int (*fn)(const struct sr_cmd *cmd, int argc, char **argv);
    const char *summary;       /* its line in `spotrun --help` */
    const char *usage, *about; /* `spotrun NAME --help` */
    int min_ops, max_ops;
    unsigned flags;
};

/* What the preamble hands the command. */
struct sr_cmd_ctx {
    char **ops;          /* the operands, NULL-terminated */
    struct sr_store *st; /* open with SR_CMD_NEEDS_STORE (the command closes it), else NULL */
};

/* The one preamble of every command: applies the environment, then argv,
 * to opts; answers --help from the table's usage and about; checks the
 * operand count and the run id; opens the store. -1 when the command goes
 * on, else the exit code to return (0 after --help; a usage error has
 * printed "spotrun CMD: ..."). */
int sr_cmd_start(const struct sr_cmd *cmd, const struct sr_opt *opts, int argc, char **argv,
                 struct sr_cmd_ctx *ctx);

/* After a reader (SR_CMD_READER) ran, with its exit code rc: when a write
 * to its stdout failed because the pipe's reader went away (`spotrun ls
 * --json | head -c 100`), it dies of SIGPIPE, quietly, as cat, ls and git do (the shell
 * says 141; SIGPIPE is ignored while a command runs, for `run`'s sake);
 * else rc. */
int sr_cmd_finish(const struct sr_cmd *cmd, int rc);
/* A group of sub-commands (quota, sweep: each named "GROUP SUB"). Without
 * a SUB, or with --help or -h, its usage: head, then each SUB (padded to
 * width) with its summary, then tail; on stdout and 0 when asked, else on
 * stderr and SR_EX_USAGE. Else it runs the SUB argv[1] names as a command
 * of its own (argv[1] its argv[0]): its exit code; -1 when none is named
 * so (the caller says so). */
int sr_cmd_group(const struct sr_cmd *subs, size_t n, int width, const char *head, const char *tail,
                 int argc, char **argv);
/* 1 when stdout is a pipe whose reader closed it. */
int sr_stdout_gone(void);

/* Did you mean: the candidate (of n) closest to word by edit distance
 * (insertions, deletions, substitutions, swaps of neighbours), when it is
 * close enough to be a typo (at most 1 edit for up to 4 letters, 2 for
 * longer words) and the only one that close; else NULL. */
const char *sr_did_you_mean(const char *word, const char *const *cands, size_t n);

/* Opens the store named by --store / SPOTRUN_STORE / the default:
 * SR_OPEN_CREATE makes a missing file store; SR_OPEN_EXISTING finds a
 * missing one an error ("no store at ...", -ENOENT) and creates nothing;
 * SR_OPEN_READER too, and opens a file store it may not write read-only
 * (store.h, sr_store_open_reader). */
enum sr_open_mode { SR_OPEN_CREATE, SR_OPEN_EXISTING, SR_OPEN_READER };
int sr_open_store(struct sr_store **st, enum sr_open_mode mode);

/* Local per-run working directory: <work-root>/<run-id>, where work-root is
 * $SPOTRUN_WORK_DIR or ${XDG_CACHE_HOME:-$HOME/.cache}/spotrun. */
int sr_work_root(const char *override, char *buf, size_t len);
/* Control socket path for a run dir: <run dir>/control.sock, or, when that
 * exceeds the sun_path limit, a short name for the run in a directory only
 * this user can write to (the work root, $XDG_RUNTIME_DIR, or a verified
 * private ${TMPDIR:-/tmp}/spotrun-UID). 0, or -errno with a message when no
 * safe short path exists. */
int sr_control_path(const char *run_dir, char *buf, size_t len);

/* Pushes dir as the next checkpoint of cfg's run (push, run --adopt);
 * *m receives its manifest. 0 or -errno with a message. */
struct sr_commits_config;
struct sr_manifest;
int sr_push_dir(const struct sr_commits_config *cfg, const char *dir, int64_t step,
                struct sr_manifest *m);

/* Whether a command may replace dir's contents with a checkpoint (run
 * --ckpt-dir, pull DIR): not when dir overlaps the file store or the work
 * root (unless ours: the run's own default directory), nor when it holds
 * files spotrun did not put there (dirmark.h; hint, when not NULL, is
 * added to that refusal: what else the user may do). ours may be
 * SR_TARGET_ADOPT: checked for overlaps, its files are fine. 0, or prints "spotrun CMD:
 * ..." naming the problem and returns the exit code (64 for a usage error). */
#define SR_TARGET_ADOPT 2 /* ours: the files dir holds are taken, not replaced */
int sr_check_target(const char *cmd, const char *what, const char *dir, int ours,
                    const struct sr_store *st, const char *work_root, const char *hint);

/* Options of the views (show, ls, report): --json and the prices, with
 * their SPOTRUN_* twins. */
struct sr_view_opts {
    int json;
    struct sr_hist_prices prices;
};
#define SR_PRICE_OPTS(v)                                                                           \
    {"price-per-hour",                                                                             \
     0,                                                                                            \
     "SPOTRUN_PRICE_PER_HOUR",                                                                     \
     SR_OPT_PRICE,                                                                                 \
     &(v)->prices.spot_per_hour,                                                                   \
     "PRICE",                                                                                      \
     "instance price per hour, for the cost"},                                                     \
    {                                                                                              \
        "on-demand-price-per-hour", 0, "SPOTRUN_ON_DEMAND_PRICE_PER_HOUR", SR_OPT_PRICE,           \
            &(v)->prices.on_demand_per_hour, "PRICE", "on-demand price per hour, for the saving"   \
    }
#define SR_VIEW_OPTS(v)                                                                            \
    {"json",                                                                                       \
     0,                                                                                            \
     "SPOTRUN_JSON",                                                                               \
     SR_OPT_FLAG,                                                                                  \
     &(v)->json,                                                                                   \
     NULL,                                                                                         \
     "print JSON (schema: docs/json-schema.md)"},                                                  \
        SR_PRICE_OPTS(v)

/* Prints "spotrun CMD: <message>" and the --help hint to stderr; returns
 * the usage exit code (64). */
__attribute__((format(printf, 2, 3))) int sr_usage_error(const char *cmd, const char *fmt, ...);

/* Checks SR_WINDOW_OPTS' --since, --until and --label into q (stats.h);
 * 0, or the usage exit code after sr_usage_error(cmd, ...). */
struct sr_stats_query;
int sr_window_parse(const char *cmd, const char *since, const char *until,
                    const struct sr_optlist *labels, struct sr_stats_query *q);

/* What the fleet's views (stats, plan, report --fleet) read: the price
 * table (--prices) and every run's summary under the prefix. */
struct sr_prices;
struct sr_runsum;
struct sr_fleet_input {
    struct sr_prices *tab;
    struct sr_runsum *runs;
    size_t n;
};
/* Loads the price table (when price_table is set: q->prices points at it)
 * and the runs; 0, or the exit code after a message naming cmd. Free in
 * with sr_fleet_input_free whatever it returned. */
int sr_fleet_load(const char *cmd, struct sr_store *st, const char *prefix, const char *price_table,
                  struct sr_stats_query *q, struct sr_fleet_input *in);
void sr_fleet_input_free(struct sr_fleet_input *in);

/* The window and filters of the fleet's views (stats, plan): --prefix,
 * --since, --until, --label. */
#define SR_WINDOW_OPTS(prefix, since, until, labels)                                               \
    {"prefix",                                                                                     \
     0,                                                                                            \
     "SPOTRUN_STATS_PREFIX",                                                                       \
     SR_OPT_STR,                                                                                   \
     (prefix),                                                                                     \
     "P",                                                                                          \
     "only runs whose id starts with P"},                                                          \
        {"since",                                                                                  \
         0,                                                                                        \
         "SPOTRUN_STATS_SINCE",                                                                    \
         SR_OPT_STR,                                                                               \
         (since),                                                                                  \
         "TIME",                                                                                   \
         "from this date or ISO time (UTC); attempts are clipped to the window"},                  \
        {"until",                                                                                  \
         0,                                                                                        \
         "SPOTRUN_STATS_UNTIL",                                                                    \
         SR_OPT_STR,                                                                               \
         (until),                                                                                  \
         "TIME",                                                                                   \
         "up to this ISO time, or the end of this date (UTC)"},                                    \
    {                                                                                              \
        "label", 0, NULL, SR_OPT_MULTI, (labels), "KEY=VALUE",                                     \
            "only runs with this label (repeatable: all of them)"                                  \
    }

/* Prints a JSON document (docs/json-schema.md) to stdout and frees it;
 * returns 0 or the exit code. */
int sr_print_json(json_t *o);

/* The pictures (report, sweep report): writes path atomically (a
 * temporary file renamed over it) with what write(f, ctx) prints; 0 or
 * -errno with a message. */
int sr_write_atomic(const char *path, void (*write)(FILE *f, void *ctx), void *ctx);
/* svg or html: --format when given, else the file name (.html, .htm).
 * 0 (svg), 1 (html), or SR_EX_USAGE after printing "spotrun CMD: ...". */
int sr_report_format(const char *cmd, const char *out, const char *format);

/* `report --fleet -o DIR` (cmd_report_fleet.c): the window and filters
 * (SR_WINDOW_OPTS), the prices and the plan's reserved price. */
struct sr_report_window {
    const char *prefix, *since, *until, *price_table;
    struct sr_optlist labels;
    struct sr_hist_prices prices;
    double reserved;
};
/* Writes DIR/index.html (views/fleetpage.h); 0 or the exit code after a
 * message. */
int sr_report_fleet(struct sr_store *st, const struct sr_report_window *w, const char *dir);

/* Subcommands (main.c's table). */
int sr_cmd_run(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_commit(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_notify(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_metric(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_ls(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_show(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_pull(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_export(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_push(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_gc(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_report(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_stats(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_plan(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_quota(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_approve(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_sweep(const struct sr_cmd *cmd, int argc, char **argv);
/* `sweep work` (sweep_work.c), dispatched by sr_cmd_sweep. */
int sr_cmd_sweep_work(const struct sr_cmd *cmd, int argc, char **argv);
/* `sweep show` and `sweep report` (cmd_sweep_view.c), dispatched by sr_cmd_sweep. */
int sr_cmd_sweep_show(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_sweep_report(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_sweep_export(const struct sr_cmd *cmd, int argc, char **argv);
/* cmd_sweep_steer.c: sweep cancel|retry|pause|resume|priority */
int sr_cmd_sweep_cancel(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_sweep_retry(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_sweep_pause(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_sweep_resume(const struct sr_cmd *cmd, int argc, char **argv);
int sr_cmd_sweep_priority(const struct sr_cmd *cmd, int argc, char **argv);
/* A `sweep work` worker's look at the steering before it claims (into
 * *state, replaced): 1 when the sweep is paused (said once per pause, with
 * *said) or its steering cannot be read (said; the last state stands, and
 * nothing is claimed on it), 0 when it may claim. A look that finds no
 * new action (sweep_steer.h's sr_steer_grew: one HEAD) lists nothing. */
struct sr_steer_state;
int sr_work_steer(struct sr_store *st, const char *name, size_t n, struct sr_steer_state *state,
                  int *said);

/* The shim, libspotrun.so, for the binary at self (run_main.c): 0 and its
 * path in out, or -ENOENT. */
int sr_find_preload(const char *self, char *out, size_t len);
/* `spotrun --version` (version.c): version, commit, libraries, shim. */
int sr_print_version(FILE *out);

#endif
