/*
 * cmd_report.c - `spotrun report RUN [-o run.svg|run.html|-]`: loads the run's
 * history and writes the timeline picture (runtime/views/report.c) to a
 * file, atomically, or to stdout (-o -, or no -o with stdout not a
 * terminal); on a terminal without -o it writes RUN.svg, as it always did.
 * `spotrun report --fleet -o DIR`: the fleet's page (cmd_report_fleet.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"
#include "manifest.h"
#include "report.h"

int sr_write_atomic(const char *path, void (*write)(FILE *f, void *ctx), void *ctx)
{
    char tmp[PATH_MAX];
    if (sr_pathf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) < 0)
        return -ENAMETOOLONG;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return sr_errf(-errno, "cannot write %s: %s", tmp, strerror(errno));
    write(f, ctx);
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        unlink(tmp);
        return sr_errf(-EIO, "cannot write %s", tmp);
    }
    if (rename(tmp, path) < 0) {
        const int e = errno;
        unlink(tmp);
        return sr_errf(-e, "cannot write %s: %s", path, strerror(e));
    }
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    const size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

int sr_report_format(const char *cmd, const char *out, const char *format)
{
    if (!format || !*format)
        return ends_with(out, ".html") || ends_with(out, ".htm");
    if (strcmp(format, "svg") != 0 && strcmp(format, "html") != 0) {
        fprintf(stderr, "spotrun %s: invalid value \"%s\" for --format (svg or html)\n", cmd,
                format);
        return SR_EX_USAGE;
    }
    return strcmp(format, "html") == 0;
}

struct run_picture {
    int html;
    const char *run_id;
    const struct sr_history *h;
    const struct sr_hist_prices *p;
};

static void write_run(FILE *f, void *ctx)
{
    const struct run_picture *r = ctx;
    if (r->html)
        sr_report_html(f, r->run_id, r->h, r->p);
    else
        sr_report_svg(f, r->run_id, r->h);
}

static int write_stdout(struct run_picture *pic)
{
    write_run(stdout, pic);
    if (fflush(stdout) != 0 || ferror(stdout))
        return sr_errf(-EIO, "cannot write the picture to stdout: %s", strerror(errno));
    return 0;
}

/* The first of the fleet's own flags on the command line (not from the
 * environment: SPOTRUN_STATS_SINCE set for stats does not stop a run's
 * report), or NULL; before the preamble, which reuses argv. */
static const char *fleet_flag(int argc, char **argv)
{
    static const char *const flags[] = {"--prefix", "--since",  "--until",
                                        "--label",  "--prices", "--reserved-price"};
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
            const size_t n = strlen(flags[k]);
            if (strncmp(argv[i], flags[k], n) == 0 && (!argv[i][n] || argv[i][n] == '='))
                return flags[k];
        }
    return NULL;
}

/* --fleet: -o DIR and no RUN; without it, RUN and none of the fleet's
 * flags. 0, or the exit code after a message. */
static int check_fleet(const char *cmd, int fleet, char **ops, const char *out, const char *flag)
{
    const char *why = NULL;
    flag = fleet ? NULL : flag;
    if (fleet && ops[0])
        why = "--fleet draws every run (--prefix, --label): give no RUN";
    else if (fleet && (!out || !*out || strcmp(out, "-") == 0))
        why = "--fleet writes a page: give -o DIR";
    else if (!fleet && !ops[0])
        why = "missing argument: RUN, or --fleet -o DIR";
    if (flag)
        fprintf(stderr, "spotrun %s: %s goes with --fleet (a run's report takes no window)\n", cmd,
                flag);
    else if (why)
        fprintf(stderr, "spotrun %s: %s\n", cmd, why);
    if (!why && !flag)
        return 0;
    fprintf(stderr, "(spotrun %s --help lists the options)\n", cmd);
    return SR_EX_USAGE;
}

int sr_cmd_report(const struct sr_cmd *cmd, int argc, char **argv)
{
    struct sr_report_window w = {0};
    const char *out = NULL, *format = NULL;
    int fleet = 0;
    const struct sr_opt opts[] = {
        {"output", 'o', "SPOTRUN_REPORT_OUTPUT", SR_OPT_STR, &out, "FILE",
         "where to write (- for stdout; default: stdout when it is not a terminal, else "
         "RUN.svg); .html gives a page; with --fleet, the page's directory"},
        {"format", 0, "SPOTRUN_REPORT_FORMAT", SR_OPT_STR, &format, "FORMAT",
         "svg or html (default: from the file name)"},
        {"fleet", 0, NULL, SR_OPT_FLAG, &fleet, NULL,
         "the fleet's page instead of one run's: DIR/index.html (docs/cost.md, \"Fleet page\")"},
        SR_WINDOW_OPTS(&w.prefix, &w.since, &w.until, &w.labels),
        {"prices", 0, "SPOTRUN_PRICES", SR_OPT_STR, &w.price_table, "FILE",
         "with --fleet, price table: instance_type spot on_demand per line (docs/runtime.md)"},
        {"reserved-price", 0, "SPOTRUN_RESERVED_PRICE", SR_OPT_PRICE, &w.reserved, "PRICE",
         "with --fleet, a reserved GPU's price per GPU-hour: the capacity plan's"},
        SR_PRICE_OPTS(&w),
        SR_OPTS_COMMON};
    struct sr_cmd_ctx ctx;
    const char *flag = fleet_flag(argc, argv);
    int code = sr_cmd_start(cmd, opts, argc, argv, &ctx);
    if (code >= 0)
        return code;
    if ((code = check_fleet(cmd->name, fleet, ctx.ops, out, flag)) == 0 && fleet)
        code = sr_report_fleet(ctx.st, &w, out);
    if (code != 0 || fleet) {
        sr_store_close(ctx.st);
        return code;
    }
    const char *run = ctx.ops[0];
    char def[300];
    snprintf(def, sizeof(def), "%s.svg", run);
    if (!out || !*out)
        out = isatty(STDOUT_FILENO) ? def : "-";
    const int to_stdout = strcmp(out, "-") == 0;
    const int html = sr_report_format(cmd->name, to_stdout ? "" : out, format);
    if (html == SR_EX_USAGE) {
        sr_store_close(ctx.st);
        return SR_EX_USAGE;
    }
    struct sr_history h;
    sr_hist_init(&h);
    h.keep_points = 1; /* the metric panel's curves */
    const int rc = sr_hist_load(ctx.st, run, &h);
    if (rc < 0) {
        code = sr_fail(rc, "cannot read the run's event log");
    } else if (h.n_att == 0) {
        fprintf(stderr, "spotrun report: no events of run \"%s\" in %s\n", run,
                sr_store_url(ctx.st));
        code = SR_EX_NOINPUT;
    } else {
        sr_hist_settle_last(ctx.st, run, &h);
        struct run_picture pic = {.html = html, .run_id = run, .h = &h, .p = &w.prices};
        code = to_stdout ? write_stdout(&pic) : sr_write_atomic(out, write_run, &pic);
        if (code < 0)
            code = sr_fail(code, "report");
        else if (!to_stdout)
            sr_info("wrote %s (%zu attempt(s))", out, h.n_att);
    }
    sr_hist_free(&h);
    sr_store_close(ctx.st);
    return code;
}
