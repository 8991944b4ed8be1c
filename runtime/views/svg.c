/*
 * svg.c - the pictures' shared pieces (see svg.h).
 */
#include "svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "units.h"

void sr_svg_num(double v, char *buf, size_t len)
{
    if (!isfinite(v)) {
        snprintf(buf, len, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        return;
    }
    if (v == floor(v) && fabs(v) < 1e9) {
        snprintf(buf, len, "%.0f", v == 0 ? 0.0 : v); /* no "-0" */
        return;
    }
    char raw[32];
    snprintf(raw, sizeof(raw), "%.4g", v);
    /* "1.235e+05" -> "1.235e5", "1e-05" -> "1e-5" */
    char *e = strchr(raw, 'e');
    if (e) {
        char *d = e + 1, *s = e + 1;
        if (*s == '+')
            s++;
        else if (*s == '-')
            *d++ = *s++;
        while (*s == '0' && s[1])
            s++;
        memmove(d, s, strlen(s) + 1);
    }
    snprintf(buf, len, "%s", raw);
}

void sr_svg_value(const char *s, char *buf, size_t len)
{
    int64_t i;
    double d;
    if (sr_parse_int(s, INT64_MIN, INT64_MAX, &i) == 0 || sr_parse_real(s, &d) < 0)
        snprintf(buf, len, "%s", s);
    else
        sr_svg_num(d, buf, len);
}

double sr_svg_nice_step(double span, int n)
{
    if (!(span > 0) || n < 1)
        return 1;
    const double raw = span / n, p = pow(10, floor(log10(raw)));
    const double m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

double sr_svg_x(const struct sr_svg_frame *fr, int64_t t)
{
    if (t < fr->t0)
        t = fr->t0;
    if (t > fr->t1)
        t = fr->t1;
    return fr->x0 + (double)(t - fr->t0) / (double)(fr->t1 - fr->t0) * (fr->x1 - fr->x0);
}

void sr_svg_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&apos;", f);
            break;
        default:
            /* Line breaks and tabs are text (a <pre>'s lines); other
             * control bytes are not allowed in XML 1.0 at all. */
            if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t')
                fputc(*s, f);
        }
    }
}

void sr_svg_text(FILE *f, double x, double y, const char *cls, const char *attrs, const char *s)
{
    fprintf(f, "<text class=\"%s\" x=\"%.1f\" y=\"%.1f\" %s>", cls, x, y, attrs);
    sr_svg_escape(f, s);
    fputs("</text>\n", f);
}

void sr_svg_tooltip(FILE *f, const char *s)
{
    fputs("<title>", f);
    sr_svg_escape(f, s);
    fputs("</title>", f);
}

void sr_svg_begin(FILE *f, double w, double h)
{
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, "
            "Arial, sans-serif\" font-size=\"12\">\n",
            w, h, w, h);
    fprintf(f, "<defs><pattern id=\"hatch\" patternUnits=\"userSpaceOnUse\" width=\"6\" "
               "height=\"6\" patternTransform=\"rotate(45)\"><rect width=\"3\" height=\"6\" "
               "fill=\"" SR_SVG_LOST "\"/></pattern></defs>\n");
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
}

int64_t sr_svg_tick_step(int64_t span)
{
    static const int64_t steps[] = {100,    200,     500,     1000,    2000,     5000,
                                    10000,  15000,   30000,   60000,   120000,   300000,
                                    600000, 1800000, 3600000, 7200000, 21600000, 43200000};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
        if (span / steps[i] <= 12)
            return steps[i];
    return 86400000;
}

static void clock_label(int64_t unix_ms, int64_t step, char *buf, size_t len)
{
    const time_t t = (time_t)(unix_ms / 1000);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(buf, len, step >= 60000 ? "%H:%M" : "%H:%M:%S", &tm))
        snprintf(buf, len, "-");
    else if (step < 1000) /* sub-second ticks: the milliseconds too */
        snprintf(buf + strlen(buf), len - strlen(buf), ".%03d", (int)(unix_ms % 1000));
}

void sr_svg_axis(FILE *f, const struct sr_svg_frame *fr, double top, double y, int clock,
                 const char *label)
{
    fprintf(f,
            "<g class=\"axis\">\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"" SR_SVG_DIM "\"/>\n",
            fr->x0, y, fr->x1, y);
    const int64_t step = sr_svg_tick_step(fr->t1 - fr->t0);
    /* Clock ticks fall on round times of day; durations start at 0. */
    const int64_t first = clock ? (fr->t0 + step - 1) / step * step - fr->t0 : 0;
    for (int64_t t = first; fr->t0 + t <= fr->t1; t += step) {
        const double x = sr_svg_x(fr, fr->t0 + t);
        char lbl[32];
        if (clock)
            clock_label(fr->t0 + t, step, lbl, sizeof(lbl));
        else
            sr_format_duration_ms(t, lbl, sizeof(lbl));
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x,
                top, x, y);
        sr_svg_text(f, x, y + 16, "tick", "text-anchor=\"middle\" fill=\"" SR_SVG_DIM "\"", lbl);
    }
    sr_svg_text(f, fr->x0 - (clock ? 48 : 20), y + 16, "tick",
                "text-anchor=\"end\" fill=\"" SR_SVG_DIM "\"", label);
    fprintf(f, "</g>\n");
}

void sr_svg_html_begin(FILE *f, const char *name, const char *what, const char *heading)
{
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
    sr_svg_escape(f, name);
    fprintf(f, " - spotrun ");
    sr_svg_escape(f, what);
    fprintf(f, "</title>\n<style>body{font-family:sans-serif;margin:2em;color:#222}"
               "pre{background:#f6f6f6;padding:1em;overflow-x:auto}"
               "svg{max-width:100%%;height:auto}</style>\n</head>\n<body>\n<h1>spotrun ");
    sr_svg_escape(f, heading);
    fputc(' ', f);
    sr_svg_escape(f, name);
    fprintf(f, "</h1>\n");
}

void sr_svg_html_end(FILE *f, void (*print)(FILE *m, const void *ctx), const void *ctx)
{
    char *txt = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&txt, &len);
    if (m) {
        print(m, ctx);
        fclose(m);
        fprintf(f, "<pre>");
        sr_svg_escape(f, txt ? txt : "");
        fprintf(f, "</pre>\n");
        free(txt);
    }
    fprintf(f, "</body>\n</html>\n");
}
