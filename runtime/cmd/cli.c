/*
 * cli.c - the commands' preamble, option tables and local paths shared by
 * the subcommands (see cli.h).
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <xxhash.h>

#include "dirmark.h"
#include "fsutil.h"
#include "log.h"
#include "labels.h"
#include "manifest.h"
#include "prices.h"
#include "runsum.h"
#include "stats.h"
#include "units.h"

struct sr_common sr_common;

static int set_value(const struct sr_opt *o, const char *val)
{
    int64_t i;
    switch (o->type) {
    case SR_OPT_FLAG:
        if (!val || !*val || strcmp(val, "1") == 0 || strcmp(val, "true") == 0 ||
            strcmp(val, "yes") == 0)
            *(int *)o->dst = 1;
        else if (strcmp(val, "0") == 0 || strcmp(val, "false") == 0 || strcmp(val, "no") == 0)
            *(int *)o->dst = 0;
        else
            return -EINVAL;
        return 0;
    case SR_OPT_STR:
        *(const char **)o->dst = val;
        return 0;
    case SR_OPT_DURATION:
        return sr_parse_duration_ms(val, (int64_t *)o->dst);
    case SR_OPT_SIZE:
        return sr_parse_size(val, (uint64_t *)o->dst);
    case SR_OPT_UINT:
        if (sr_parse_int(val, 0, INT32_MAX, &i) < 0)
            return -EINVAL;
        *(uint64_t *)o->dst = (uint64_t)i;
        return 0;
    case SR_OPT_STEP:
        return sr_parse_int(val, 0, INT64_MAX, (int64_t *)o->dst);
    case SR_OPT_PRICE:
        if (!*val) {
            *(double *)o->dst = 0;
            return 0;
        }
        return sr_parse_decimal(val, (double *)o->dst);
    case SR_OPT_MULTI: {
        struct sr_optlist *l = o->dst;
        if (l->n == SR_OPTLIST_MAX)
            return -EINVAL;
        l->v[l->n++] = val;
        return 0;
    }
    }
    return -EINVAL;
}

/* Optimal string alignment distance of a and b (short words: the command
 * line's), capped at 9. */
static int edit_distance(const char *a, const char *b)
{
    enum { MAXW = 40 };
    const size_t la = strlen(a), lb = strlen(b);
    if (la >= MAXW || lb >= MAXW)
        return 9;
    int d[MAXW + 1][MAXW + 1];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            const int cost = a[i - 1] != b[j - 1];
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb] > 9 ? 9 : d[la][lb];
}

const char *sr_did_you_mean(const char *word, const char *const *cands, size_t n)
{
    const int max = strlen(word) <= 4 ? 1 : 2;
    const char *best = NULL;
    int best_d = max + 1, ties = 0;
    for (size_t i = 0; i < n; i++) {
        const int d = edit_distance(word, cands[i]);
        if (d < best_d)
            best = cands[i], best_d = d, ties = 0;
        else if (d == best_d)
            ties++;
    }
    return best && !ties ? best : NULL;
}

/* " (did you mean --NAME?)" for an unknown long option, or "". */
static void option_hint(const struct sr_opt *opts, const char *bad, char *out, size_t len)
{
    out[0] = '\0';
    if (strncmp(bad, "--", 2) != 0)
        return;
    char word[64];
    snprintf(word, sizeof(word), "%.*s", (int)strcspn(bad + 2, "="), bad + 2);
    const char *names[64];
    size_t n = 0;
    for (const struct sr_opt *o = opts; o->name && n < 64; o++)
        names[n++] = o->name;
    const char *m = sr_did_you_mean(word, names, n);
    if (m)
        snprintf(out, len, "; did you mean --%s?", m);
}

static const char *type_hint(enum sr_opt_type t)
{
    switch (t) {
    case SR_OPT_DURATION:
        return " (a duration like 30s, 10m, 1h)";
    case SR_OPT_SIZE:
        return " (a size like 512M, 4GiB)";
    case SR_OPT_UINT:
    case SR_OPT_STEP:
        return " (a non-negative integer)";
    case SR_OPT_PRICE:
        return " (a price like 0.92)";
    default:
        return "";
    }
}

static int apply_env(const char *cmd, const struct sr_opt *opts)
{
    for (const struct sr_opt *o = opts; o->name; o++) {
        const char *v = o->env ? getenv(o->env) : NULL;
        if (!v || !*v)
            continue;
        if (set_value(o, v) < 0) {
            fprintf(stderr, "spotrun %s: invalid %s=\"%s\"%s\n", cmd, o->env, v,
                    type_hint(o->type));
            return SR_EX_USAGE;
        }
    }
    return 0;
}

/* Applies the environment, then argv. With stop_at_operand, parsing stops
 * at the first operand (for `run -- cmd`). Returns 0 and sets *first to
 * the index of the first operand, or prints "spotrun CMD: ..." and returns
 * SR_EX_USAGE. */
static int opts_parse(const char *cmd, const struct sr_opt *opts, int argc, char **argv,
                      int stop_at_operand, int *first)
{
    int rc = apply_env(cmd, opts);
    if (rc)
        return rc;
    struct option lo[64];
    char so[160] = "";
    size_t n = 0, sn = 0;
    so[sn++] = stop_at_operand ? '+' : '-';
    so[sn++] = ':';
    for (const struct sr_opt *o = opts; o->name && n < 63; o++, n++) {
        lo[n] = (struct option){o->name, o->type == SR_OPT_FLAG ? no_argument : required_argument,
                                NULL, 256 + (int)n};
        if (o->short_name) {
            so[sn++] = (char)o->short_name;
            if (o->type != SR_OPT_FLAG)
                so[sn++] = ':';
        }
    }
    lo[n] = (struct option){0, 0, 0, 0};
    so[sn] = '\0';
    /* With "-" every operand comes back as option 1: collect them in order
     * at the front so *first indexes them (GNU permutation, portably). */
    int nops = 0;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, so, lo, NULL)) != -1;) {
        const struct sr_opt *o = NULL;
        if (c == 1) {
            argv[++nops] = optarg;
            continue;
        }
        if (c == '?' || c == ':') {
            const char *bad = argv[optind - 1];
            char hint[96] = "";
            if (c == '?')
                option_hint(opts, bad, hint, sizeof(hint));
            fprintf(stderr, "spotrun %s: %s %s%s (see spotrun %s --help)\n", cmd,
                    c == ':' ? "missing value for" : "unknown option", bad, hint, cmd);
            return SR_EX_USAGE;
        }
        if (c >= 256)
            o = &opts[c - 256];
        for (const struct sr_opt *p = opts; !o && p->name; p++)
            if (p->short_name == c)
                o = p;
        if (!o || set_value(o, o->type == SR_OPT_FLAG ? NULL : optarg) < 0) {
            fprintf(stderr, "spotrun %s: invalid value \"%s\" for --%s%s\n", cmd,
                    optarg ? optarg : "", o ? o->name : "?", o ? type_hint(o->type) : "");
            return SR_EX_USAGE;
        }
    }
    /* Remaining arguments (after "--" or the first operand) follow the
     * collected operands. */
    for (int i = optind; i < argc; i++)
        argv[++nops] = argv[i];
    argv[nops + 1] = NULL;
    *first = 1;
    if (sr_common.quiet)
        sr_verbosity = SR_WARN;
    if (sr_common.verbose)
        sr_verbosity = SR_DEBUG;
    return 0;
}

static void opts_help(FILE *f, const char *usage, const char *about, const struct sr_opt *opts)
{
    fprintf(f, "usage: %s\n\n%s\n\noptions (environment twin in brackets):\n", usage, about);
    for (const struct sr_opt *o = opts; o->name; o++) {
        char left[64];
        if (o->short_name)
            snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->name,
                     o->metavar ? " " : "", o->metavar ? o->metavar : "");
        else
            snprintf(left, sizeof(left), "    --%s%s%s", o->name, o->metavar ? " " : "",
                     o->metavar ? o->metavar : "");
        fprintf(f, "  %-28s %s%s%s%s\n", left, o->help, o->env ? " [" : "", o->env ? o->env : "",
                o->env ? "]" : "");
    }
}

int sr_cmd_start(const struct sr_cmd *cmd, const struct sr_opt *opts, int argc, char **argv,
                 struct sr_cmd_ctx *ctx)
{
    ctx->ops = NULL;
    ctx->st = NULL;
    int first;
    const int rc =
        opts_parse(cmd->name, opts, argc, argv, (cmd->flags & SR_CMD_STOP_AT_OPERAND) != 0, &first);
    if (rc)
        return rc;
    if (sr_common.help) {
        opts_help(stdout, cmd->usage, cmd->about, opts);
        return 0;
    }
    ctx->ops = argv + first;
    int n = 0;
    while (ctx->ops[n])
        n++;
    if (n < cmd->min_ops || (cmd->max_ops != SR_CMD_ANY_OPS && n > cmd->max_ops)) {
        fprintf(stderr, "spotrun %s: %s (usage: %s)\n", cmd->name,
                n < cmd->min_ops ? "missing argument" : "too many arguments", cmd->usage);
        return SR_EX_USAGE;
    }
    if ((cmd->flags & SR_CMD_RUN_OPERAND) && n > 0 && !sr_manifest_run_id_valid(ctx->ops[0])) {
        fprintf(stderr, "spotrun %s: invalid run id \"%s\"\n", cmd->name, ctx->ops[0]);
        return SR_EX_USAGE;
    }
    if (cmd->flags & SR_CMD_NEEDS_STORE) {
        const enum sr_open_mode mode = !(cmd->flags & SR_CMD_STORE_EXISTS) ? SR_OPEN_CREATE
                                       : (cmd->flags & SR_CMD_READER)      ? SR_OPEN_READER
                                                                           : SR_OPEN_EXISTING;
        const int orc = sr_open_store(&ctx->st, mode);
        if (orc < 0)
            return sr_fail(orc, "cannot open the store");
    }
    return -1;
}

int sr_stdout_gone(void)
{
    struct pollfd p = {.fd = STDOUT_FILENO, .events = POLLOUT};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

static const char *sub_name(const struct sr_cmd *c)
{
    const char *sp = strchr(c->name, ' ');
    return sp ? sp + 1 : c->name;
}

int sr_cmd_group(const struct sr_cmd *subs, size_t n, int width, const char *head, const char *tail,
                 int argc, char **argv)
{
    const char *sub = argc > 1 ? argv[1] : NULL;
    if (!sub || strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) {
        FILE *f = sub ? stdout : stderr;
        fputs(head, f);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "  %-*s %s\n", width, sub_name(&subs[i]), subs[i].summary);
        fputs(tail, f);
        return sub ? 0 : SR_EX_USAGE;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(argv[1], sub_name(&subs[i])) == 0)
            return sr_cmd_finish(&subs[i], subs[i].fn(&subs[i], argc - 1, argv + 1));
    return -1;
}

int sr_cmd_finish(const struct sr_cmd *cmd, int rc)
{
    if (!(cmd->flags & SR_CMD_READER))
        return rc;
    /* a write failed (not merely a reader gone after the last one) */
    if ((fflush(stdout) == 0 && !ferror(stdout)) || !sr_stdout_gone())
        return rc;
    signal(SIGPIPE, SIG_DFL);
    raise(SIGPIPE);
    return 128 + SIGPIPE; /* not reached */
}

int sr_open_store(struct sr_store **st, enum sr_open_mode mode)
{
    char url[4096];
    if (sr_common.store && *sr_common.store) {
        snprintf(url, sizeof(url), "%s", sr_common.store);
    } else {
        const int rc = sr_store_default_url(url, sizeof(url));
        if (rc < 0)
            return sr_errf(rc, "no store given and no default (set --store or SPOTRUN_STORE)");
    }
    return mode == SR_OPEN_CREATE     ? sr_store_open(url, st)
           : mode == SR_OPEN_EXISTING ? sr_store_open_existing(url, st)
                                      : sr_store_open_reader(url, st);
}

int sr_work_root(const char *override, char *buf, size_t len)
{
    const char *v = override && *override ? override : getenv("SPOTRUN_WORK_DIR");
    int n;
    if (v && *v) {
        n = snprintf(buf, len, "%s", v);
    } else if (getenv("XDG_CACHE_HOME") && *getenv("XDG_CACHE_HOME")) {
        n = snprintf(buf, len, "%s/spotrun", getenv("XDG_CACHE_HOME"));
    } else if (getenv("HOME") && *getenv("HOME")) {
        n = snprintf(buf, len, "%s/.cache/spotrun", getenv("HOME"));
    } else {
        return sr_errf(-ENOENT, "no work directory: set SPOTRUN_WORK_DIR or HOME");
    }
    if (n < 0 || (size_t)n >= len)
        return sr_errf(-ENAMETOOLONG, "work directory path too long");
    return 0;
}

/* A directory only this user can create entries in: ours, not a symlink,
 * no access for group or others. */
static int private_dir(const char *dir)
{
    struct stat sb;
    return lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_uid == getuid() &&
           (sb.st_mode & 077) == 0;
}

int sr_control_path(const char *run_dir, char *buf, size_t len)
{
    struct sockaddr_un sa;
    const size_t max = sizeof(sa.sun_path);
    int n = snprintf(buf, len, "%s/control.sock", run_dir);
    if (n > 0 && (size_t)n < max && (size_t)n < len)
        return 0;
    /* Too long (a long run id, a deep work dir): a short name for the same
     * run, in a directory no other user can write to, so nobody can bind
     * the name first and block the run. The work root (the run dir's
     * parent) is the user's; then $XDG_RUNTIME_DIR; then a private
     * directory of this user in $TMPDIR or /tmp, never the shared /tmp
     * itself. */
    const unsigned long long h = (unsigned long long)XXH3_64bits(run_dir, strlen(run_dir));
    char root[PATH_MAX];
    sr_dirname(run_dir, root, sizeof(root));
    n = snprintf(buf, len, "%s/%016llx.sock", root, h);
    if (n > 0 && (size_t)n < max && (size_t)n < len)
        return 0;
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && *xdg == '/' && private_dir(xdg)) {
        n = snprintf(buf, len, "%s/spotrun-%016llx.sock", xdg, h);
        if (n > 0 && (size_t)n < max && (size_t)n < len)
            return 0;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/spotrun-%u", tmp && *tmp == '/' ? tmp : "/tmp",
             (unsigned)getuid());
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return sr_errf(-errno, "cannot create %s for the control socket: %s", dir, strerror(errno));
    n = snprintf(buf, len, "%s/%016llx.sock", dir, h);
    if (!private_dir(dir))
        return sr_errf(-EACCES,
                       "%s is not a private directory of this user (someone else made it, or "
                       "others may write to it): not putting the control socket there; set "
                       "XDG_RUNTIME_DIR or a shorter --work-dir",
                       dir);
    if (n < 0 || (size_t)n >= max || (size_t)n >= len)
        return sr_errf(-ENAMETOOLONG,
                       "no short enough path for the control socket: set a shorter --work-dir");
    return 0;
}

/* Whether the resolved directory rdir and path overlap (one holds the
 * other), saying so as "spotrun CMD: WHAT overlaps WHOSE SHOWN (one holds
 * the other)ADVICE"; *rc: path's resolution (0, or -errno). */
static int overlaps(const char *rdir, const char *path, int *rc, const char *cmd, const char *what,
                    const char *whose, const char *shown, const char *advice)
{
    char other[PATH_MAX];
    if ((*rc = sr_path_resolve(path, other, sizeof(other))) != 0 || !sr_paths_overlap(rdir, other))
        return 0;
    fprintf(stderr, "spotrun %s: %s overlaps %s%s (one holds the other)%s\n", cmd, what, whose,
            shown, advice);
    return 1;
}

int sr_check_target(const char *cmd, const char *what, const char *dir, int ours,
                    const struct sr_store *st, const char *work_root, const char *hint)
{
    char rdir[PATH_MAX];
    int rc = sr_path_resolve(dir, rdir, sizeof(rdir));
    if (rc < 0)
        goto fail;
    const char *url = st ? sr_store_url(st) : NULL;
    if (url && strncmp(url, "file://", 7) == 0 &&
        overlaps(rdir, url + 7, &rc, cmd, what, "the store ", url,
                 ": replacing it would delete checkpoints; choose a directory outside the store"))
        return SR_EX_USAGE;
    if (ours != 1 && work_root &&
        overlaps(rdir, work_root, &rc, cmd, what, "spotrun's work dir ", work_root,
                 "; choose a directory outside it"))
        return SR_EX_USAGE;
    if (rc == 0 && (rc = sr_dir_check_replace(dir, ours != 0, what)) == 0)
        return 0;
fail:
    fprintf(stderr, "spotrun %s: %s%s\n", cmd, sr_strerror(rc), rc == -EEXIST && hint ? hint : "");
    return rc == -EEXIST || rc == -ENOTDIR ? SR_EX_USAGE : sr_exit_code(rc);
}

/* Prints a JSON document (docs/json-schema.md); returns the exit code. */
int sr_print_json(json_t *o)
{
    const int rc =
        o ? json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10))
          : -1;
    json_decref(o);
    if (rc < 0 && sr_stdout_gone())
        return SR_EX_IOERR; /* the reader went away: nothing to say (sr_cmd_finish) */
    if (rc < 0)
        return sr_fail(-ENOMEM, "cannot print JSON");
    putchar('\n');
    return 0;
}

int sr_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "spotrun %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(spotrun %s --help lists the options)\n", cmd);
    va_end(ap);
    return SR_EX_USAGE;
}

int sr_window_parse(const char *cmd, const char *since, const char *until,
                    const struct sr_optlist *labels, struct sr_stats_query *q)
{
    char err[512];
    if (since && *since && sr_stats_parse_time(since, 0, &q->since_ms) < 0)
        return sr_usage_error(cmd,
                              "bad --since \"%s\": give a date (2026-12-01) or an ISO time "
                              "(2026-12-01T08:00:00Z)",
                              since);
    if (until && *until && sr_stats_parse_time(until, 1, &q->until_ms) < 0)
        return sr_usage_error(cmd,
                              "bad --until \"%s\": give a date (2026-12-07, the whole day) or "
                              "an ISO time (2026-12-07T18:00:00Z)",
                              until);
    if (q->since_ms && q->until_ms && q->since_ms >= q->until_ms)
        return sr_usage_error(cmd, "--since %s is not before --until %s", since, until);
    for (size_t i = 0; i < labels->n; i++)
        if (sr_labels_add(&q->want, labels->v[i], err, sizeof(err)) < 0)
            return sr_usage_error(cmd, "--label: %s", err);
    return 0;
}

int sr_fleet_load(const char *cmd, struct sr_store *st, const char *prefix, const char *price_table,
                  struct sr_stats_query *q, struct sr_fleet_input *in)
{
    memset(in, 0, sizeof(*in));
    if (price_table && *price_table) {
        if (!(in->tab = calloc(1, sizeof(*in->tab))))
            return sr_fail(-ENOMEM, cmd);
        const int rc = sr_prices_load(price_table, in->tab);
        if (rc < 0)
            return sr_usage_error(cmd, "--prices: %s", sr_strerror(rc));
        q->prices = in->tab;
    }
    const int rc = sr_runsum_load_all(st, prefix && *prefix ? prefix : NULL, &in->runs, &in->n);
    return rc < 0 ? sr_fail(rc, "cannot list the store") : 0;
}

void sr_fleet_input_free(struct sr_fleet_input *in)
{
    for (size_t i = 0; i < in->n; i++)
        sr_runsum_free(&in->runs[i]);
    free(in->runs);
    if (in->tab)
        sr_prices_free(in->tab);
    free(in->tab);
    memset(in, 0, sizeof(*in));
}
