/*
 * main.c - the spotrun command: one table of subcommands with one
 * signature (git's shape). The table says what each one is (its --help
 * text, its operands) and what it needs before it runs (the store, a run
 * id); each subcommand starts with the one preamble, sr_cmd_start(), and
 * returns the process's exit code.
 */
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define STORE SR_CMD_NEEDS_STORE
#define RUN_OP SR_CMD_RUN_OPERAND
#define ANY SR_CMD_ANY_OPS
#define READS (SR_CMD_NEEDS_STORE | SR_CMD_STORE_EXISTS) /* never creates a store */
#define READER (READS | SR_CMD_READER) /* never writes it: works on a read-only one */

/* name, fn, summary; usage and about (its --help); operands min, max;
 * what the preamble does before fn (cli.h). */
static const struct sr_cmd commands[] = {
    {"run", sr_cmd_run, "run a job under spotrun: resume, restart, checkpoint on preemption",
     "spotrun run [options] -- command [args...]",
     "Runs the command, resumes it from its newest checkpoint, restarts it after\n"
     "crashes, and checkpoints it before a preemption (exit 75: requeue me).\n"
     "At a time limit or budget (--time-limit, --attempt-time-limit, --max-cost)\n"
     "it checkpoints the job the same way, stops it and exits 124 (do not requeue).",
     0, ANY, SR_CMD_STOP_AT_OPERAND},
    {"commit", sr_cmd_commit, "(inside the job) publish $SPOTRUN_CKPT_DIR as a checkpoint",
     "spotrun commit [--step N]",
     "Publishes $SPOTRUN_CKPT_DIR as a complete checkpoint. Returns once the\n"
     "directory is staged; the job may overwrite it right after.",
     0, ANY, 0},
    {"notify", sr_cmd_notify, "deliver a preemption notice to a running wrapper",
     "spotrun notify [--deadline 30s] [--run-id ID]",
     "Delivers a preemption notice to a running wrapper: it asks the job for a\n"
     "checkpoint, makes it durable, stops the job and exits 75.",
     0, ANY, 0},
    {"metric", sr_cmd_metric, "(inside the job) record metrics: loss=0.31 acc=0.91",
     "spotrun metric [--step N] NAME=VALUE...",
     "Records numbers the job reports (loss=0.31 acc=0.91) in the run's event\n"
     "log, where `show`, `ls` and sweeps read them.",
     0, ANY, 0},
    {"ls", sr_cmd_ls, "list the runs in the store", "spotrun ls",
     "Lists the runs in the store: state, newest checkpoint, attempts,\n"
     "preemptions, failures, lost work and cost (a sweep at a glance).",
     0, 0, READER},
    {"show", sr_cmd_show, "show what happened to a run, its cost and its checkpoints",
     "spotrun show RUN",
     "Shows what happened to a run (state, attempts, preemptions, lost\n"
     "work, checkpoint times, cost) and its checkpoints.",
     1, 1, READER | RUN_OP},
    {"report", sr_cmd_report, "draw a run's timeline, or the fleet's page (SVG or HTML)",
     "spotrun report RUN [-o run.svg|run.html] | spotrun report --fleet -o DIR [--since T] "
     "[--until T] [--label K=V]...",
     "Draws a timeline of the run across attempts and nodes: training segments,\n"
     "checkpoints (staged and durable), notices, restarts, lost work. With --fleet,\n"
     "writes DIR/index.html, a static page of the fleet: runs (sortable, filtered by\n"
     "label), sweeps, cost and GPU-hours by team and week, preemption rate by zone\n"
     "and instance type, and the capacity plan's charts (docs/cost.md).",
     0, 1, READER | RUN_OP},
    {"stats", sr_cmd_stats, "the fleet's cost, preemption rate, failures and GPU use, grouped",
     "spotrun stats [--by KEYS] [--since T] [--until T] [--label K=V]... [--json|--csv|--svg "
     "F|--format openmetrics]",
     "Adds up every run in the store (or --prefix, --label, the --since/--until\n"
     "window): runs, attempts, instance- and GPU-hours, cost, on-demand cost and\n"
     "saving, preemptions per 100 instance-hours, lost work, end causes, checkpoint\n"
     "overhead and GPU utilization, grouped by --by (docs/cost.md).",
     0, 0, READER},
    {"plan", sr_cmd_plan, "a capacity plan: reserved baseline vs spot burst, from the record",
     "spotrun plan [--by instance_type|team] [--since T] [--until T] [--label K=V]... "
     "[--reserved-price X] [--json|--svg F]",
     "Sweeps the attempts' intervals over the window: GPU-hours per week and team,\n"
     "peak jobs and GPUs, failure, retry and preemption rates, and per instance\n"
     "type the share of hours with at least L GPUs busy. With --reserved-price,\n"
     "the GPUs worth reserving against spot at its effective price (lost work and\n"
     "checkpoint time added) and each strategy's weekly cost (docs/cost.md).",
     0, 0, READER},
    {"quota", sr_cmd_quota, "quotas per team or user: set, show", "spotrun quota set|show ...",
     "Quotas per team or user (docs/cost.md, \"Quotas and approvals\").", 0, ANY, 0},
    {"approve", sr_cmd_approve,
     "approve a run (or a sweep's trials) above a quota's --approve-above",
     "spotrun approve RUN|SWEEP --by NAME",
     "Records who approved RUN (create-only: the first approval stands), so that a run\n"
     "whose own limits exceed a quota's --approve-above may start; a sweep's approval\n"
     "covers every trial of it (docs/cost.md).",
     1, 1, STORE | RUN_OP},
    {"pull", sr_cmd_pull, "restore a checkpoint into a directory", "spotrun pull RUN [DIR]",
     "Restores the newest (or --seq N) checkpoint of RUN into DIR (default ./RUN).\n"
     "DIR is replaced: it ends up holding exactly the checkpoint. DIR must be new,\n"
     "empty, or made by an earlier pull (spotrun refuses a directory holding files\n"
     "it did not put there, or one that overlaps the store or the work dir).",
     1, 2, READER | RUN_OP},
    {"export", sr_cmd_export, "write a checkpoint as a standalone .tar.zst",
     "spotrun export RUN FILE",
     "Writes the newest (or --seq N) checkpoint of RUN, delta or full, to FILE as an\n"
     "ordinary archive that stock tools read (zstd -d < FILE | tar -x). Every frame\n"
     "is verified first. FILE must not exist.",
     2, 2, READER | RUN_OP},
    {"push", sr_cmd_push, "snapshot a directory as a checkpoint", "spotrun push RUN DIR [--step N]",
     "Snapshots DIR as a new checkpoint of RUN.", 2, 2, STORE | RUN_OP},
    {"sweep", sr_cmd_sweep, "hyperparameter sweeps: init, work, show, report",
     "spotrun sweep init|work|show|report NAME ...",
     "Sweeps: many trials of one command, each an ordinary run (docs/sweeps.md).", 0, ANY, 0},
    {"gc", sr_cmd_gc, "delete old checkpoints of a run", "spotrun gc RUN --keep N",
     "Deletes all but the newest N complete checkpoints of RUN.", 1, 1, READS | RUN_OP},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: spotrun COMMAND [options] [args]\n\n"
               "Checkpoint-aware wrapper for training jobs on spot / preemptible instances.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nglobal options, before or after the command: -v, --verbose; -q, --quiet; "
               "--store URL\n"
               "stores: a path or file:///path, s3://bucket/prefix (S3 and compatible servers), "
               "az://account/container/prefix (Azure Blob)\n");
    fprintf(
        f,
        "\n'spotrun COMMAND --help' lists a command's options and their SPOTRUN_* "
        "environment twins.\n"
        "exit codes of run: 0 done, 75 preempted (requeue), 124 stopped at a time limit "
        "or budget\n(do not requeue), 79 refused by a quota, the job's code after --max-restarts, "
        "64-78 spotrun's own failures (sysexits).\n");
}

/* 1 when a is one of spotrun's global options (taken before the command:
 * `spotrun -v ls`, `spotrun --store s3://b ls`); *takes_value when its
 * value is the next argument. */
static int is_global(const char *a, int *takes_value)
{
    *takes_value = strcmp(a, "--store") == 0;
    return *takes_value || strncmp(a, "--store=", 8) == 0 || strcmp(a, "-v") == 0 ||
           strcmp(a, "--verbose") == 0 || strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0;
}

/* Moves the global options before the command to just after it (after
 * `sweep`'s subcommand), where every command's own parser takes them, with
 * their usual precedence over the environment. 0, or SR_EX_USAGE after a
 * message. argv gets the new order in place (same elements). */
static int globals_after_command(int argc, char **argv)
{
    int i = 1, tv;
    while (i < argc && is_global(argv[i], &tv))
        i += tv ? 2 : 1;
    if (i == 1)
        return 0;
    if (i > argc || (i == argc && tv)) {
        fprintf(stderr, "spotrun: missing value for --store (see spotrun --help)\n");
        return SR_EX_USAGE;
    }
    if (i == argc) {
        fprintf(stderr, "spotrun: no command after the options (see spotrun --help)\n");
        return SR_EX_USAGE;
    }
    const int nglob = i - 1;
    int head = 1; /* the command word, and sweep's subcommand */
    if ((strcmp(argv[i], "sweep") == 0 || strcmp(argv[i], "quota") == 0) && i + 1 < argc &&
        argv[i + 1][0] != '-')
        head = 2;
    for (int k = 0; k < head; k++) { /* rotate each head word in front of the options */
        char *w = argv[i + k];
        memmove(argv + 2 + k, argv + 1 + k, (size_t)nglob * sizeof(*argv));
        argv[1 + k] = w;
    }
    return 0;
}

int main(int argc, char **argv)
{
    /* A closed stdout or stderr (`spotrun run ... 2>&1 | head -1`) is an
     * EPIPE to ignore, never a death that would kill the job before its
     * commit and leave the lease held. The job gets SIGPIPE back (child.c). */
    signal(SIGPIPE, SIG_IGN);
    /* File names are bytes. libarchive converts them to the pax headers'
     * UTF-8 through LC_CTYPE: under "C" every non-ASCII name warned, and a
     * user's legacy charset would re-encode them between nodes. C.UTF-8
     * keeps UTF-8 names as they are (others go as raw bytes); only LC_CTYPE,
     * so numbers still print with a '.'. */
    if (!setlocale(LC_CTYPE, "C.UTF-8"))
        setlocale(LC_CTYPE, "");
    const int grc = globals_after_command(argc, argv);
    if (grc)
        return grc;
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? SR_EX_USAGE : 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        return sr_print_version(stdout);
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return sr_cmd_finish(&commands[i], commands[i].fn(&commands[i], argc - 1, argv + 1));
    const char *names[sizeof(commands) / sizeof(commands[0]) + 2] = {"help", "version"};
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        names[i + 2] = commands[i].name;
    if (argv[1][0] == '-') {
        fprintf(stderr,
                "spotrun: unknown option \"%s\" before the command (only -v, -q and --store go "
                "there; put it after the command: see spotrun --help)\n",
                argv[1]);
        return SR_EX_USAGE;
    }
    const char *m = sr_did_you_mean(argv[1], names, sizeof(names) / sizeof(names[0]));
    if (m)
        fprintf(stderr,
                "spotrun: unknown command \"%s\"; did you mean \"%s\"? (see spotrun --help)\n",
                argv[1], m);
    else
        fprintf(stderr, "spotrun: unknown command \"%s\" (see spotrun --help)\n", argv[1]);
    return SR_EX_USAGE;
}
