/*
 * fleetpage.c - `spotrun report --fleet` (fleetpage.h): the fleet's page,
 * tables and inline SVG charts, every string from the store escaped.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fleetpage.h"
#include "planout.h"
#include "statsout.h"
#include "svg.h"
#include "sweepview.h"

/* q with the window, labels and prices of base and the groups of by. */
static int grouped(const struct sr_stats_query *base, const char *by, const struct sr_runsum *runs,
                   size_t n, struct sr_stats *out)
{
    struct sr_stats_query q = *base;
    char err[256];
    if (sr_stats_parse_by(by, &q, err, sizeof(err)) < 0)
        return -EINVAL;
    return sr_stats_compute(runs, n, &q, out);
}

int sr_fleet_compute(struct sr_fleet *fl)
{
    const struct sr_stats_query *q = &fl->q->sq;
    int rc = grouped(q, "team", fl->runs, fl->n, &fl->team);
    if (rc == 0)
        rc = grouped(q, "week,team", fl->runs, fl->n, &fl->team_week);
    if (rc == 0)
        rc = grouped(q, "zone", fl->runs, fl->n, &fl->zone);
    if (rc == 0)
        rc = grouped(q, "instance_type", fl->runs, fl->n, &fl->type);
    if (rc == 0)
        rc = sr_plan_compute(fl->runs, fl->n, fl->q, &fl->plan);
    return rc;
}

void sr_fleet_free(struct sr_fleet *fl)
{
    sr_stats_free(&fl->team);
    sr_stats_free(&fl->team_week);
    sr_stats_free(&fl->zone);
    sr_stats_free(&fl->type);
    sr_plan_free(&fl->plan);
}

static int priced(const struct sr_stats_row *r)
{
    return r->inst_h - r->unpriced_h > 1e-9;
}

/* The figures stats --json prints, as data- attributes (a null cost: ""). */
static void data_attrs(FILE *f, const struct sr_stats_row *r)
{
    fprintf(f, " data-runs=\"%llu\" data-gpu-hours=\"%.6f\" data-preemptions=\"%llu\"",
            (unsigned long long)r->runs, r->gpu_h, (unsigned long long)r->preemptions);
    if (priced(r))
        fprintf(f, " data-cost=\"%.6f\"", r->cost);
    else
        fprintf(f, " data-cost=\"\"");
}

static void cell_text(FILE *f, const char *s)
{
    fputs("<td>", f);
    sr_svg_escape(f, s);
    fputs("</td>", f);
}

/* v with prec decimals, after a "$" when dollars. */
static void cell_num(FILE *f, double v, int prec, int dollars)
{
    if (isnan(v)) {
        fputs("<td class=\"n\" data-v=\"\">-</td>", f);
        return;
    }
    fprintf(f, "<td class=\"n\" data-v=\"%.6f\">", v);
    fprintf(f, "%s%.*f</td>", dollars ? "$" : "", prec, v);
}

static void cell_cost(FILE *f, const struct sr_stats_row *r)
{
    cell_num(f, priced(r) ? r->cost : NAN, 2, 1);
}

static void head(FILE *f, const char *id, const char *const *cols)
{
    fprintf(f, "<table id=\"%s\"><thead><tr>", id);
    for (size_t i = 0; cols[i]; i++)
        fprintf(f, "<th>%s</th>", cols[i]);
    fputs("</tr></thead><tbody>\n", f);
}

static void totals(FILE *f, const struct sr_fleet *fl)
{
    const struct sr_stats_row *t = &fl->team.total;
    fputs("<section id=\"totals\"", f);
    data_attrs(f, t);
    fprintf(f, "><h2>Totals</h2><p>%llu runs, %llu attempts, %.1f GPU-hours, ",
            (unsigned long long)t->runs, (unsigned long long)t->attempts, t->gpu_h);
    if (priced(t))
        fprintf(f, "$%.2f, ", t->cost);
    fprintf(f, "%llu preemptions (%.2f per 100 instance-hours), %.1f hours lost.</p></section>\n",
            (unsigned long long)t->preemptions, sr_stats_rate_per_100h(t), t->lost_h);
}

static void teams(FILE *f, const struct sr_fleet *fl)
{
    static const char *const cols[] = {"team",        "runs",       "GPU-hours", "cost",
                                       "preemptions", "lost hours", NULL};
    fputs("<section><h2>Cost and GPU-hours by team</h2>\n", f);
    head(f, "teams", cols);
    for (size_t i = 0; i < fl->team.n; i++) {
        const struct sr_stats_row *r = &fl->team.rows[i];
        fputs("<tr data-team=\"", f);
        sr_svg_escape(f, r->key[0]);
        fputc('"', f);
        data_attrs(f, r);
        fputc('>', f);
        cell_text(f, r->key[0]);
        cell_num(f, (double)r->runs, 0, 0);
        cell_num(f, r->gpu_h, 1, 0);
        cell_cost(f, r);
        cell_num(f, (double)r->preemptions, 0, 0);
        cell_num(f, r->lost_h, 1, 0);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table></section>\n", f);
}

static void weeks(FILE *f, const struct sr_fleet *fl)
{
    static const char *const cols[] = {"week", "team", "runs", "GPU-hours", "cost", NULL};
    fputs("<section><h2>Cost and GPU-hours by week and team</h2>\n", f);
    head(f, "weeks", cols);
    for (size_t i = 0; i < fl->team_week.n; i++) {
        const struct sr_stats_row *r = &fl->team_week.rows[i];
        fputs("<tr>", f);
        cell_text(f, r->key[0]);
        cell_text(f, r->key[1]);
        cell_num(f, (double)r->runs, 0, 0);
        cell_num(f, r->gpu_h, 1, 0);
        cell_cost(f, r);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table></section>\n", f);
}

static void preemptions(FILE *f, const char *id, const char *what, const struct sr_stats *s)
{
    const char *const cols[] = {
        what, "instance-hours", "preemptions", "per 100 hours", "MTBP hours", NULL};
    fprintf(f, "<section><h2>Preemption rate by %s</h2>\n", what);
    head(f, id, cols);
    for (size_t i = 0; i < s->n; i++) {
        const struct sr_stats_row *r = &s->rows[i];
        fputs("<tr>", f);
        cell_text(f, r->key[0]);
        cell_num(f, r->inst_h, 1, 0);
        cell_num(f, (double)r->preemptions, 0, 0);
        cell_num(f, sr_stats_rate_per_100h(r), 2, 0);
        cell_num(f, sr_stats_mtbp_h(r), 1, 0);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table></section>\n", f);
}

static void sweeps(FILE *f, const struct sr_fleet *fl)
{
    static const char *const cols[] = {"sweep", "trials", "states", "best", NULL};
    fputs("<section><h2>Sweeps</h2>\n", f);
    head(f, "sweeps", cols);
    for (size_t i = 0; i < fl->n_sweeps; i++) {
        const struct sr_fleet_sweep *s = &fl->sweeps[i];
        fputs("<tr>", f);
        cell_text(f, s->name);
        cell_num(f, (double)s->trials, 0, 0);
        fputs("<td>", f);
        for (int k = 0; k < SR_SV_NSTATES; k++)
            if (s->counts[k])
                fprintf(f, "%s %u ", sr_sv_state_name((enum sr_sv_state)k), s->counts[k]);
        fputs("</td><td>", f);
        if (s->has_best) {
            sr_svg_escape(f, s->metric);
            fprintf(f, " %.6g (trial %zu)", s->best, s->best_trial);
        } else {
            fputs("-", f);
        }
        fputs("</td></tr>\n", f);
    }
    if (!fl->n_sweeps)
        fputs("<tr><td colspan=\"4\">no sweeps in the store</td></tr>\n", f);
    fputs("</tbody></table></section>\n", f);
}

/* "12.50 of 500.00", or "12.50" without a limit (as `quota show`). */
static void cell_of(FILE *f, double used, double limit, const char *attr)
{
    fprintf(f, "<td class=\"n\" data-%s=\"%.6f\" data-%s-limit=\"%.6f\">%.2f", attr, used, attr,
            limit, used);
    if (limit > 0)
        fprintf(f, " of %.2f", limit);
    fputs("</td>", f);
}

/* Each quota in force and its use in its current period. */
static void quotas(FILE *f, const struct sr_fleet *fl)
{
    static const char *const cols[] = {"quota", "per", "GPU-hours", "cost", "running", NULL};
    fputs("<section><h2>Quotas</h2>\n", f);
    head(f, "quotas", cols);
    for (size_t i = 0; i < fl->n_quotas; i++) {
        const struct sr_quota *q = &fl->quotas[i];
        const struct sr_quota_use *u = &fl->quota_use[i];
        fputs("<tr data-quota=\"", f);
        sr_svg_escape(f, q->label.key);
        fputc('=', f);
        sr_svg_escape(f, q->label.value);
        fputs("\"><td>", f);
        sr_svg_escape(f, q->label.key);
        fputc('=', f);
        sr_svg_escape(f, q->label.value);
        fprintf(f, "</td><td>%s</td>", sr_quota_per_name(q->per));
        cell_of(f, u->gpu_hours, q->gpu_hours, "gpu-hours");
        cell_of(f, u->cost, q->max_cost, "cost");
        cell_of(f, (double)u->running, (double)q->max_concurrent, "running");
        fputs("</tr>\n", f);
    }
    if (!fl->n_quotas)
        fputs("<tr><td colspan=\"5\">no quotas (spotrun quota set)</td></tr>\n", f);
    fputs("</tbody></table></section>\n", f);
}

/* A run's row: its figures in the window. */
struct run_row {
    size_t i;
    int64_t last_ms;
    uint64_t attempts, preemptions;
    double gpu_h, cost;
};

static int newest_first(const void *a, const void *b)
{
    const struct run_row *x = a, *y = b;
    return x->last_ms < y->last_ms   ? 1
           : x->last_ms > y->last_ms ? -1
                                     : (x->i > y->i) - (x->i < y->i);
}

/* The runs q matches, newest first; *out malloc'd. -ENOMEM. */
static int run_rows(const struct sr_fleet *fl, struct run_row **out, size_t *n)
{
    struct run_row *v = calloc(fl->n + 1, sizeof(*v));
    *n = 0;
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < fl->n; i++) {
        struct sr_stats s = {0};
        if (sr_stats_compute(&fl->runs[i], 1, &fl->q->sq, &s) < 0) {
            free(v);
            return -ENOMEM;
        }
        const struct sr_stats_row *t = &s.total;
        if (t->attempts) {
            struct run_row *r = &v[(*n)++];
            *r = (struct run_row){
                i, 0, t->attempts, t->preemptions, t->gpu_h, priced(t) ? t->cost : NAN};
            for (size_t a = 0; a < fl->runs[i].n_att; a++)
                if (fl->runs[i].att[a].start_ms > r->last_ms)
                    r->last_ms = fl->runs[i].att[a].start_ms;
        }
        sr_stats_free(&s);
    }
    qsort(v, *n, sizeof(*v), newest_first);
    *out = v;
    return 0;
}

static void run_labels(FILE *f, const struct sr_labels *l)
{
    for (size_t k = 0; k < l->n; k++) {
        if (k)
            fputc(' ', f);
        sr_svg_escape(f, l->v[k].key);
        fputc('=', f);
        sr_svg_escape(f, l->v[k].value);
    }
}

static void run_row(FILE *f, const struct sr_runsum *run, const struct run_row *r)
{
    char when[32] = "-";
    if (r->last_ms > 0) {
        const time_t t = (time_t)(r->last_ms / 1000);
        struct tm tm;
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M", gmtime_r(&t, &tm));
    }
    fputs("<tr data-labels=\"", f);
    run_labels(f, &run->labels);
    fputs("\"><td data-v=\"", f);
    sr_svg_escape(f, run->run);
    fputs("\">", f);
    sr_svg_escape(f, run->run);
    fprintf(f, "</td><td data-v=\"%s\">%s</td><td data-v=\"", sr_hist_state_name(run->state),
            sr_hist_state_name(run->state));
    run_labels(f, &run->labels);
    fputs("\">", f);
    run_labels(f, &run->labels);
    fputs("</td>", f);
    cell_num(f, (double)r->attempts, 0, 0);
    cell_num(f, r->gpu_h, 1, 0);
    cell_num(f, r->cost, 2, 1);
    cell_num(f, (double)r->preemptions, 0, 0);
    fprintf(f, "<td data-v=\"%lld\">%s</td></tr>\n", (long long)r->last_ms, when);
}

static int runs(FILE *f, const struct sr_fleet *fl)
{
    struct run_row *v;
    size_t n;
    if (run_rows(fl, &v, &n) < 0)
        return -ENOMEM;
    const size_t shown = n < SR_FLEET_RUNS_MAX ? n : SR_FLEET_RUNS_MAX;
    fprintf(f,
            "<section><h2>Runs</h2>\n<p>Filter by label: <input id=\"filter\" "
            "placeholder=\"team=nlp ana\" size=\"30\"> <span id=\"shown\">%zu</span> of "
            "%zu shown%s; click a column's header to sort.</p>\n",
            shown, n, n > shown ? " (the newest)" : "");
    fputs("<table id=\"runs\"><thead><tr><th data-key=\"run\">run</th>"
          "<th data-key=\"state\">state</th><th data-key=\"labels\">labels</th>"
          "<th data-key=\"attempts\" data-num>attempts</th>"
          "<th data-key=\"gpu_hours\" data-num>GPU-hours</th>"
          "<th data-key=\"cost\" data-num>cost</th>"
          "<th data-key=\"preemptions\" data-num>preemptions</th>"
          "<th data-key=\"last_start\" data-num>last start (UTC)</th></tr></thead><tbody>\n",
          f);
    for (size_t k = 0; k < shown; k++)
        run_row(f, &fl->runs[v[k].i], &v[k]);
    fputs("</tbody></table></section>\n", f);
    free(v);
    return 0;
}

static void charts(FILE *f, const struct sr_fleet *fl)
{
    struct sr_stats_query q = fl->q->sq;
    char err[256];
    fputs("<section id=\"charts\"><h2>Cost by team over time, preemption rate</h2>\n", f);
    if (sr_stats_parse_by("team", &q, err, sizeof(err)) == 0)
        sr_stats_svg(f, fl->runs, fl->n, &q, &fl->team, 0);
    fputs("</section>\n<section id=\"plan\"><h2>Capacity plan</h2>\n", f);
    if (fl->q->reserved <= 0)
        fputs("<p>The curves only: pass --reserved-price X for the GPUs worth reserving.</p>\n", f);
    sr_plan_svg(f, fl->q, &fl->plan);
    fputs("</section>\n", f);
}

/* Sorts the runs' table by a click on a header (again: the other way),
 * filters it by words, each a KEY=VALUE or a VALUE of a label;
 * ?sort=KEY&dir=desc&label=K=V does the same on load (the tests' hook).
 * body's data-script says it ran; data-js-error holds an error's message. */
static const char script[] =
    "<script>\n"
    "window.onerror = function (m) { document.body.setAttribute('data-js-error', String(m)); };\n"
    "(function () {\n"
    "  var t = document.getElementById('runs'), tb = t.tBodies[0], hs = t.tHead.rows[0].cells;\n"
    "  var f = document.getElementById('filter');\n"
    "  function val(r, c, num) {\n"
    "    var v = r.cells[c].getAttribute('data-v');\n"
    "    if (!num) return v;\n"
    "    v = parseFloat(v);\n"
    "    return isNaN(v) ? -Infinity : v;\n"
    "  }\n"
    "  function sortBy(c, desc) {\n"
    "    var num = hs[c].hasAttribute('data-num'), rows = Array.prototype.slice.call(tb.rows);\n"
    "    rows.sort(function (a, b) {\n"
    "      var x = val(a, c, num), y = val(b, c, num), r = x < y ? -1 : x > y ? 1 : 0;\n"
    "      return desc ? -r : r;\n"
    "    });\n"
    "    rows.forEach(function (r) { tb.appendChild(r); });\n"
    "    t.setAttribute('data-sorted', hs[c].getAttribute('data-key') + (desc ? ' desc' : ' "
    "asc'));\n"
    "  }\n"
    "  Array.prototype.forEach.call(hs, function (h, c) {\n"
    "    h.addEventListener('click', function () {\n"
    "      sortBy(c, t.getAttribute('data-sorted') === h.getAttribute('data-key') + ' asc');\n"
    "    });\n"
    "  });\n"
    "  function filter() {\n"
    "    var want = f.value.trim().split(/\\s+/).filter(Boolean), shown = 0;\n"
    "    Array.prototype.forEach.call(tb.rows, function (r) {\n"
    "      var l = ' ' + r.getAttribute('data-labels') + ' ';\n"
    "      var ok = want.every(function (w) {\n"
    "        return l.indexOf(' ' + w + ' ') >= 0 || (w.indexOf('=') < 0 && l.indexOf('=' + w + ' "
    "') >= 0);\n"
    "      });\n"
    "      r.hidden = !ok;\n"
    "      shown += ok ? 1 : 0;\n"
    "    });\n"
    "    document.getElementById('shown').textContent = String(shown);\n"
    "  }\n"
    "  f.addEventListener('input', filter);\n"
    "  var p = new URLSearchParams(location.search);\n"
    "  if (p.get('label')) f.value = p.get('label');\n"
    "  filter();\n"
    "  Array.prototype.forEach.call(hs, function (h) {\n"
    "    if (h.getAttribute('data-key') !== p.get('sort')) return;\n"
    "    h.click();\n"
    "    if (p.get('dir') === 'desc') h.click();\n"
    "  });\n"
    "  document.body.setAttribute('data-script', 'ok');\n"
    "})();\n"
    "</script>\n";

static void page_head(FILE *f, const struct sr_fleet *fl)
{
    fputs(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
        "<title>fleet - spotrun report</title>\n<style>\n"
        "body{font-family:sans-serif;margin:2em;color:#222}\n"
        "table{border-collapse:collapse;margin:.5em 0}\n"
        "th,td{border-bottom:1px solid #ddd;padding:.2em .6em;text-align:left;white-space:nowrap}\n"
        "td.n{text-align:right}\n#runs th{cursor:pointer;background:#f2f2f2}\n"
        "svg{max-width:100%;height:auto;display:block}\n"
        ".grid{display:flex;flex-wrap:wrap;gap:0 3em;align-items:flex-start}\n"
        "h2{font-size:1.2em;margin:.8em 0 .2em}\n</style>\n</head>\n<body>\n"
        "<h1>spotrun fleet</h1>\n<p>",
        f);
    sr_svg_escape(f, fl->store_url);
    char from[32] = "the first attempt", to[32] = "the last";
    if (fl->q->sq.since_ms)
        sr_stats_day(fl->q->sq.since_ms, from, sizeof(from));
    if (fl->q->sq.until_ms)
        sr_stats_day(fl->q->sq.until_ms - 1, to, sizeof(to));
    fprintf(f, ": from %s to %s", from, to);
    for (size_t i = 0; i < fl->q->sq.want.n; i++) {
        fputs(i ? ", " : "; runs labelled ", f);
        sr_svg_escape(f, fl->q->sq.want.v[i].key);
        fputc('=', f);
        sr_svg_escape(f, fl->q->sq.want.v[i].value);
    }
    fputs(".</p>\n", f);
}

int sr_fleet_html(FILE *f, const struct sr_fleet *fl)
{
    page_head(f, fl);
    totals(f, fl);
    fputs("<div class=\"grid\">\n", f);
    teams(f, fl);
    weeks(f, fl);
    preemptions(f, "zones", "zone", &fl->zone);
    preemptions(f, "types", "instance type", &fl->type);
    sweeps(f, fl);
    quotas(f, fl);
    fputs("</div>\n", f);
    if (runs(f, fl) < 0)
        return -1;
    charts(f, fl);
    fputs(script, f);
    fputs("</body>\n</html>\n", f);
    return ferror(f) ? -1 : 0;
}
