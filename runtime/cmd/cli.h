/*
 * cli.h - what the subcommands share: the option table (every flag has a
 * SPOTRUN_* environment twin, shown in --help; flags win over the
 * environment) and the work directory layout on this node. Exit codes:
 * common/exits.h.
 */
#ifndef SPOTRUN_CLI_H
#define SPOTRUN_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "exits.h"
#include "fsutil.h"
#include "store.h"
#include "summary.h"

enum sr_opt_type { SR_OPT_FLAG, SR_OPT_STR, SR_OPT_DURATION, SR_OPT_SIZE, SR_OPT_UINT };

struct sr_opt {
    const char *name; /* long name without "--" */
    int short_name;   /* 0 = none */
    const char *env;  /* SPOTRUN_* twin, NULL = none */
    enum sr_opt_type type;
    void *dst;           /* int*, const char**, int64_t* (ms), uint64_t*, uint64_t* */
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
     "checkpoint store: a path, file:///path or s3://bucket/prefix"},                               \
        {"quiet",          'q',  "SPOTRUN_QUIET",           SR_OPT_FLAG,                            \
         &sr_common.quiet, NULL, "only warnings and errors"},                                       \
        {"verbose", 'v', "SPOTRUN_VERBOSE", SR_OPT_FLAG, &sr_common.verbose, NULL, "debug output"}, \
        {"help", 'h', NULL, SR_OPT_FLAG, &sr_common.help, NULL, "show this help"},                  \
    {                                                                                               \
        NULL, 0, NULL, 0, NULL, NULL, NULL                                                          \
    }

/* Applies the environment, then argv. With stop_at_operand, parsing stops
 * at the first operand (for `run -- cmd`). Returns 0 and sets *first to
 * the index of the first operand, or prints "spotrun CMD: ..." and returns
 * SR_EX_USAGE. */
int sr_opts_parse(const char *cmd, const struct sr_opt *opts, int argc, char **argv,
                  int stop_at_operand, int *first);
void sr_opts_help(FILE *f, const char *usage, const char *about, const struct sr_opt *opts);


/* Opens the store named by --store / SPOTRUN_STORE / the default. */
int sr_open_store(struct sr_store **st);

/* Local per-run working directory: <work-root>/<run-id>, where work-root is
 * $SPOTRUN_WORK_DIR or ${XDG_CACHE_HOME:-$HOME/.cache}/spotrun. */
int sr_work_root(const char *override, char *buf, size_t len);
/* Control socket path for a run dir: <run dir>/control.sock, or, when that
 * exceeds the sun_path limit, a short name for the run in a directory only
 * this user can write to (the work root, $XDG_RUNTIME_DIR, or a verified
 * private ${TMPDIR:-/tmp}/spotrun-UID). 0, or -errno with a message when no
 * safe short path exists. */
int sr_control_path(const char *run_dir, char *buf, size_t len);

/* Whether a command may replace dir's contents with a checkpoint (run
 * --ckpt-dir, pull DIR): not when dir overlaps the file store or the work
 * root (unless ours: the run's own default directory), nor when it holds
 * files spotrun did not put there (dirmark.h). 0, or prints "spotrun CMD:
 * ..." naming the problem and returns the exit code (64 for a usage error). */
int sr_check_target(const char *cmd, const char *what, const char *dir, int ours,
                    const struct sr_store *st, const char *work_root);

/* Options of the views (show, ls): --json and the prices, with their
 * SPOTRUN_* twins. Strings, parsed by sr_prices_parse(). */
struct sr_view_opts {
    int json;
    const char *price, *on_demand_price;
};
#define SR_PRICE_OPTS(v)                                                                           \
    {"price-per-hour",                                                                             \
     0,                                                                                            \
     "SPOTRUN_PRICE_PER_HOUR",                                                                     \
     SR_OPT_STR,                                                                                   \
     &(v)->price,                                                                                  \
     "PRICE",                                                                                      \
     "instance price per hour, for the cost"},                                                     \
    {                                                                                              \
        "on-demand-price-per-hour", 0, "SPOTRUN_ON_DEMAND_PRICE_PER_HOUR", SR_OPT_STR,             \
            &(v)->on_demand_price, "PRICE", "on-demand price per hour, for the saving"             \
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

/* Parses the prices of v; -EINVAL with a message naming the flag. */
int sr_prices_parse(const struct sr_view_opts *v, struct sr_hist_prices *p);

/* Subcommands. */
int sr_cmd_run(int argc, char **argv);
int sr_cmd_commit(int argc, char **argv);
int sr_cmd_notify(int argc, char **argv);
int sr_cmd_metric(int argc, char **argv);
int sr_cmd_ls(int argc, char **argv);
int sr_cmd_show(int argc, char **argv);
int sr_cmd_pull(int argc, char **argv);
int sr_cmd_push(int argc, char **argv);
int sr_cmd_gc(int argc, char **argv);
int sr_cmd_report(int argc, char **argv);

#endif
