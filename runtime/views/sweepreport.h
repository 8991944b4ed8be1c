/*
 * sweepreport.h - the picture of a sweep (`spotrun sweep report`): one lane
 * per trial on a shared wall-clock axis, each attempt a bar colored by how
 * it ended (done, preempted, failed or crashed, running), with its notices,
 * restarts and resumes, and the done and failed marks.
 */
#ifndef SPOTRUN_SWEEPREPORT_H
#define SPOTRUN_SWEEPREPORT_H

#include <stdio.h>

#include "sweepview.h"

/* The SVG document (valid XML, no external references); lanes in the
 * order of sr_sweepview_order(). */
void sr_sweepreport_svg(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o);
/* A self-contained HTML page: the SVG inline and the `sweep show` table. */
void sr_sweepreport_html(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o);

#endif
