/*
 * report.h - `spotrun report RUN -o run.svg|run.html`: a timeline picture of
 * a run across attempts and nodes (training segments, staged and durable
 * checkpoints, notices, restarts, lost work shaded).
 */
#ifndef SPOTRUN_REPORT_H
#define SPOTRUN_REPORT_H

#include <stdio.h>

#include "history.h"

/* Writes the SVG document of h to f (valid XML, no external references). */
void sr_report_svg(FILE *f, const char *run_id, const struct sr_history *h);
/* A self-contained HTML page: the SVG inline and the `show` summary. */
void sr_report_html(FILE *f, const char *run_id, const struct sr_history *h,
                    const struct sr_hist_prices *p);

int sr_cmd_report(int argc, char **argv);

#endif
