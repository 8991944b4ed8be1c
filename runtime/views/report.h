/*
 * report.h - the timeline picture of a run (`spotrun report`, in
 * runtime/cmd/cmd_report.c) across attempts and nodes (training segments, staged and durable
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

#endif
