/*
 * sweepparetosvg.h - the Pareto chart of `spotrun sweep report` for a
 * sweep with 2+ objectives (`sweep init --objective`): every done trial
 * that reported each objective, placed by the first two; better is towards
 * the lower left on both axes whichever their directions; the front
 * (sr_sweepview_pareto, as `sweep show` lists it) drawn dark, each trial of
 * it named, with two objectives joined by the staircase that bounds what
 * it dominates; dominated trials faint.
 */
#ifndef SPOTRUN_SWEEPPARETOSVG_H
#define SPOTRUN_SWEEPPARETOSVG_H

#include <stdio.h>

#include "sweepview.h"

/* The chart from x 0 to width below top; its height (0: nothing drawn,
 * fewer than 2 objectives or no done trial reported all of them). f NULL:
 * the height only. */
double sr_sv_pareto_svg(FILE *f, const struct sr_sweepview *v, const struct sr_sv_opts *o,
                        double top, double width);

#endif
