/*
 * cmd_sweep_view.c - `spotrun sweep show` and `spotrun sweep report`.
 */
#include <stdio.h>

#include "cli.h"

int sr_cmd_sweep_show(const struct sr_cmd *cmd, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "spotrun %s: not built yet\n", cmd->name);
    return SR_EX_SOFTWARE;
}

int sr_cmd_sweep_report(const struct sr_cmd *cmd, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "spotrun %s: not built yet\n", cmd->name);
    return SR_EX_SOFTWARE;
}
