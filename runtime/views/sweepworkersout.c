/*
 * sweepworkersout.c - a sweep's worker hours as `sweep show` and `stats`
 * print them (see sweepworkersout.h).
 */
#include "sweepworkersout.h"

#include "summary.h"

/* Cost of the workers: recorded prices, the rest at spot; -1 unknown.
 * Unknown as soon as one worker has no price and there is no spot price,
 * however short its life so far: a running worker whose first keep-alive
 * is still to come costs as much as the same worker once it has ended. */
static void costs(const struct sr_sv_workers *ws, double spot, double *life, double *idle)
{
    if (ws->unpriced && spot <= 0) {
        *life = *idle = -1;
        return;
    }
    *life = ws->life_cost + (double)ws->unpriced_life_ms / 3600000.0 * spot;
    *idle = ws->idle_cost + (double)ws->unpriced_idle_ms / 3600000.0 * spot;
}

void sr_sv_workers_print(FILE *f, const struct sr_sv_workers *ws, double spot)
{
    if (!ws->n)
        return;
    fprintf(f, "workers:     %zu (%.4f worker-hours: %.4f running trials, %.4f idle)", ws->n,
            (double)ws->life_ms / 3600000.0, (double)ws->busy_ms / 3600000.0,
            (double)ws->idle_ms / 3600000.0);
    double life, idle;
    costs(ws, spot, &life, &idle);
    if (life < 0) {
        fprintf(f, "; cost - (give --price-per-hour)\n");
        return;
    }
    char a[32], b[32];
    sr_format_money(life, a, sizeof(a));
    sr_format_money(idle, b, sizeof(b));
    fprintf(f, "; cost %s, idle %s\n", a, b);
}

json_t *sr_sv_workers_json(const struct sr_sv_workers *ws, double spot)
{
    double life, idle;
    costs(ws, spot, &life, &idle);
    return json_pack("{s:I,s:I,s:f,s:f,s:f,s:o,s:o}", "count", (json_int_t)ws->n, "open",
                     (json_int_t)ws->open, "hours", (double)ws->life_ms / 3600000.0, "busy_hours",
                     (double)ws->busy_ms / 3600000.0, "idle_hours", (double)ws->idle_ms / 3600000.0,
                     "cost", life < 0 ? json_null() : json_real(life), "idle_cost",
                     idle < 0 ? json_null() : json_real(idle));
}
