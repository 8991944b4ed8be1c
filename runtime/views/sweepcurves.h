/*
 * sweepcurves.h - the learning curves of `spotrun sweep report`: one chart
 * per metric with every trial's values over steps (the points its history
 * kept: sweeprec.h's curves, history.h's keep_points), each curve colored as
 * its trial's lane (sweepreport.h's looks), a pruned trial's curve ending
 * in a mark at its rung, a cancelled one's in the cancel mark, the best
 * trial (sr_sweepview_best: the sweep's, the same in every chart) drawn
 * thick and named; the value axis labelled with the metric and its
 * direction, log-scaled when the values span 10x or more and are all
 * positive.
 */
#ifndef SPOTRUN_SWEEPCURVES_H
#define SPOTRUN_SWEEPCURVES_H

#include <stdio.h>

#include "sweepview.h"

#define SR_SV_CURVES_MAX 8 /* charts drawn; more metrics are counted in a line */

/* The charts from x 0 to width below top; their height (0: nothing
 * drawn, no trial kept a point). f NULL: the height only. */
double sr_sv_curves_svg(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o,
                        double top, double width);

#endif
