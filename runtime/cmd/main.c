/*
 * main.c - the spotrun command: one table of subcommands with one
 * signature (git's shape). Each subcommand parses its own options and
 * returns the process's exit code.
 */
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"run", sr_cmd_run, "run a job under spotrun: resume, restart, checkpoint on preemption"},
    {"commit", sr_cmd_commit, "(inside the job) publish $SPOTRUN_CKPT_DIR as a checkpoint"},
    {"notify", sr_cmd_notify, "deliver a preemption notice to a running wrapper"},
    {"metric", sr_cmd_metric, "(inside the job) record metrics: loss=0.31 acc=0.91"},
    {"ls", sr_cmd_ls, "list the runs in the store"},
    {"show", sr_cmd_show, "show what happened to a run, its cost and its checkpoints"},
    {"report", sr_cmd_report, "draw a run's timeline (SVG or HTML)"},
    {"pull", sr_cmd_pull, "restore a checkpoint into a directory"},
    {"push", sr_cmd_push, "snapshot a directory as a checkpoint"},
    {"gc", sr_cmd_gc, "delete old checkpoints of a run"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: spotrun COMMAND [options] [args]\n\n"
               "Checkpoint-aware wrapper for training jobs on spot / preemptible instances.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'spotrun COMMAND --help' lists a command's options and their SPOTRUN_* "
               "environment twins.\n"
               "exit codes of run: 0 done, 75 preempted (requeue), the job's code after "
               "--max-restarts,\n64-78 spotrun's own failures (sysexits).\n");
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
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? SR_EX_USAGE : 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("spotrun %s\n", SPOTRUN_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "spotrun: unknown command \"%s\" (see spotrun --help)\n", argv[1]);
    return SR_EX_USAGE;
}
