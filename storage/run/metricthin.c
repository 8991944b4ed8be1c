/*
 * metricthin.c - which reported metric values reach the event log (see
 * metricthin.h).
 */
#include "metricthin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sr_metric_keep(uint64_t index, uint64_t budget)
{
    if (budget == 0)
        return 1;
    /* budget x (2^k - 1) <= index  <=>  2^k <= index / budget + 1 */
    const uint64_t q = index / budget + 1;
    unsigned k = 0;
    while (k < 63 && (q >> (k + 1)) != 0)
        k++;
    const uint64_t off = index - budget * ((UINT64_C(1) << k) - 1);
    return (off & ((UINT64_C(1) << k) - 1)) == 0;
}

void sr_metric_thin_init(struct sr_metric_thin *t, uint64_t budget)
{
    memset(t, 0, sizeof(*t));
    t->budget = budget ? budget : SR_METRIC_BUDGET_DEFAULT;
}

static struct sr_metric_name *name_of(struct sr_metric_thin *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i].name, name) == 0)
            return &t->v[i];
    if (t->n == SR_METRIC_NAMES_MAX || strlen(name) > SR_METRIC_NAME_MAX)
        return NULL;
    struct sr_metric_name *m = &t->v[t->n++];
    memset(m, 0, sizeof(*m));
    snprintf(m->name, sizeof(m->name), "%s", name);
    m->min_step = m->max_step = m->last_step = -1;
    return m;
}

/* The first value reached wins a tie, as the views read it (history.c). */
static void sum_up(struct sr_metric_name *m, double v, int64_t step, int64_t ms)
{
    if (m->count == 0 || v < m->min) {
        m->min = v;
        m->min_step = step;
    }
    if (m->count == 0 || v > m->max) {
        m->max = v;
        m->max_step = step;
    }
    m->last = v;
    m->last_step = step;
    m->last_ms = ms;
}

int sr_metric_thin_add(struct sr_metric_thin *t, const char *name, double value, int64_t step,
                       int64_t ms)
{
    struct sr_metric_name *m = name_of(t, name);
    if (!m)
        return -1;
    const uint64_t index = m->count;
    sum_up(m, value, step, ms);
    m->count++;
    const uint64_t lines_max = t->budget * SR_METRIC_LINES_PER_BUDGET;
    if (sr_metric_keep(index, t->budget) && t->lines < lines_max) {
        t->lines++;
        return 1;
    }
    m->dropped++;
    return 0;
}

int64_t sr_metric_budget_env(void)
{
    const char *s = getenv("SPOTRUN_METRIC_BUDGET");
    if (!s || !*s)
        return 0;
    char *end = NULL;
    errno = 0;
    const unsigned long long b = strtoull(s, &end, 10);
    if (errno || *end || s[0] < '0' || s[0] > '9' || b < 1 || b > SR_METRIC_BUDGET_MAX)
        return -EINVAL;
    return (int64_t)b;
}
