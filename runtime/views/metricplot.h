/*
 * metricplot.h - the metric panel of `spotrun report`: the job's metrics
 * (`spotrun metric`, history.h) as curves over steps, one small chart per
 * metric, two to a row, with the attempts that were preempted or crashed
 * marked as vertical lines at the step they had reached.
 *
 * Reads the values a history kept with keep_points (evenly thinned past
 * SR_HIST_POINTS_MAX); a metric reported without steps is drawn over the
 * order of its values instead. Plain SVG 1.1 like the timeline; each
 * element has a class (metric-panel, curve, point, best, metric-preemption,
 * metric-crash) and a <title>.
 */
#ifndef SPOTRUN_METRICPLOT_H
#define SPOTRUN_METRICPLOT_H

#include <stdio.h>

#include "history.h"

/* Panels drawn at most; the others are named in a line below them. */
#define SR_METRICPLOT_MAX 16

/* The height the panel takes in a picture width wide; 0 without metrics. */
double sr_metricplot_height(const struct sr_history *h);
/* Draws it from y = top over the width (inside an <svg>). */
void sr_metricplot_svg(FILE *f, const struct sr_history *h, double top, double width);

#endif
