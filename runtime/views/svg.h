/*
 * svg.h - what the pictures share (`spotrun report`'s run timeline,
 * `spotrun sweep report`'s lanes of trials): the palette, XML escaping,
 * text and tooltips, the document's head, and a time axis.
 *
 * Output only, plain SVG 1.1; every string written goes through
 * sr_svg_escape() (store contents are never trusted).
 */
#ifndef SPOTRUN_SVG_H
#define SPOTRUN_SVG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SR_SVG_TRAIN "#4c78a8"
#define SR_SVG_RESTORE "#9ecae9"
#define SR_SVG_LOST "#e45756"
#define SR_SVG_CKPT "#54a24b"
#define SR_SVG_NOTICE "#f58518"
#define SR_SVG_TEXT "#222"
#define SR_SVG_DIM "#777"

/* v as the pictures print numbers: at most 4 significant digits
 * ("0.0007363", "0.135", "1.235e5"), an integer up to 1e9 whole ("12000"). */
void sr_svg_num(double v, char *buf, size_t len);
/* A parameter's value (a string from the sweep's definition) as the
 * pictures print it: a decimal number through sr_svg_num ("lr=0.0007363"),
 * an integer or any other word as given. */
void sr_svg_value(const char *s, char *buf, size_t len);
/* A round step between ticks (1, 2 or 5 x 10^k) giving at most n ticks
 * over span; 1 when span is not positive. */
double sr_svg_nice_step(double span, int n);

/* Times t0..t1 (unix ms) drawn from x0 to x1. */
struct sr_svg_frame {
    int64_t t0, t1;
    double x0, x1;
};

/* The x of t, clamped to the frame. */
double sr_svg_x(const struct sr_svg_frame *fr, int64_t t);

/* XML text: escapes the five special characters; keeps line breaks and
 * tabs, drops the other control bytes. */
void sr_svg_escape(FILE *f, const char *s);
/* <text class=cls x y attrs>s</text> */
void sr_svg_text(FILE *f, double x, double y, const char *cls, const char *attrs, const char *s);
/* <title>s</title>: the tooltip of the element it is in. */
void sr_svg_tooltip(FILE *f, const char *s);

/* The <svg> element of a w x h picture, its white background and the
 * "hatch" pattern (lost work); close with "</svg>\n". */
void sr_svg_begin(FILE *f, double w, double h);

/* Tick step (ms) giving at most 12 ticks over span. */
int64_t sr_svg_tick_step(int64_t span);

/* The time axis at y, with grid lines up to top: ticks labelled with the
 * time since fr->t0 ("1m30s"), or with clock set, the UTC time of day
 * ("14:05:30"). label goes left of the axis. */
void sr_svg_axis(FILE *f, const struct sr_svg_frame *fr, double top, double y, int clock,
                 const char *label);

/* A self-contained HTML page around a picture: the head, titled
 * "NAME - spotrun WHAT", and the heading "spotrun HEADING NAME"; then the
 * caller writes the SVG; sr_svg_html_end() adds a <pre> of what print(m,
 * ctx) prints (the text view) and closes the page. */
void sr_svg_html_begin(FILE *f, const char *name, const char *what, const char *heading);
void sr_svg_html_end(FILE *f, void (*print)(FILE *m, const void *ctx), const void *ctx);

#endif
