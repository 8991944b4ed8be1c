/*
 * sweepreport.h - the picture of a sweep (`spotrun sweep report`): one lane
 * per trial on a shared wall-clock axis, each attempt a bar colored by how
 * it ended (done, preempted, failed or crashed, running, pruned, cancelled,
 * stopped by a pause or at a limit), with its notices, restarts and
 * resumes, the done and failed marks and the operator's steering (cancel,
 * retry, priority, pause --stop marks; the spans the sweep was paused);
 * a legend naming every color and mark drawn; then the search's progress
 * (sweepprogress.c) and the learning curves (sweepcurves.h).
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

/* How an attempt is drawn, on the lanes and the curves alike: a color per
 * way it ended, each named in the legend. */
enum sr_sr_look {
    SR_LOOK_DONE,
    SR_LOOK_RUNNING,
    SR_LOOK_PREEMPTED, /* also vanished, and a last attempt whose wrapper is gone */
    SR_LOOK_FAILED,    /* failed or crashed */
    SR_LOOK_PRUNED,    /* early stopping stopped it */
    SR_LOOK_CANCELLED, /* the operator's cancel stopped it */
    SR_LOOK_PAUSED,    /* the operator's pause --stop stopped it */
    SR_LOOK_STOPPED,   /* a time limit or budget stopped it */
    SR_LOOK_EXPLOITED, /* PBT stopped it to go on from another trial's checkpoint */
    SR_LOOK_COUNT
};
struct sr_sr_look_info {
    const char *cls;   /* its class word: "done", "running", ... */
    const char *color; /* its fill */
    const char *name;  /* what the legend says */
};
extern const struct sr_sr_look_info sr_sr_looks[SR_LOOK_COUNT];
/* The look of attempt a of trial t. */
enum sr_sr_look sr_sweepreport_look(const struct sr_sv_trial *t, const struct sr_hist_attempt *a);
/* A trial's look: its last attempt's (SR_LOOK_COUNT when it never started). */
enum sr_sr_look sr_sweepreport_trial_look(const struct sr_sv_trial *t);

#endif
