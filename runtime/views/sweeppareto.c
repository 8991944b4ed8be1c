/*
 * sweeppareto.c - the Pareto front (see sweeppareto.h).
 *
 * The points sorted by their first value, best first (ties by the other
 * values, best first): a point can then be dominated only by one before
 * it, and only by one on the front (domination is transitive), so each
 * is compared with the front found so far: n log n plus n times the
 * front's size, not n^2.
 *
 * Threads: none; the caller's.
 */
#include "sweeppareto.h"

#include <errno.h>
#include <stdlib.h>

struct order_ctx {
    const double *v;
    size_t k;
    const int *max;
};

/* The value j of point i, turned so that smaller is better. */
static double cost(const struct order_ctx *c, size_t i, size_t j)
{
    const double x = c->v[i * c->k + j];
    return c->max[j] ? -x : x;
}

/* 1 when point a dominates point b. */
static int dominates(const struct order_ctx *c, size_t a, size_t b)
{
    int better = 0;
    for (size_t j = 0; j < c->k; j++) {
        const double x = cost(c, a, j), y = cost(c, b, j);
        if (x > y)
            return 0;
        better |= x < y;
    }
    return better;
}

/* A point to sort, with what it is compared by (qsort has no context). */
struct item {
    size_t i;
    const struct order_ctx *c;
};

static int cmp_points(const void *pa, const void *pb)
{
    const struct item *a = pa, *b = pb;
    for (size_t j = 0; j < a->c->k; j++) {
        const double x = cost(a->c, a->i, j), y = cost(a->c, b->i, j);
        if (x != y)
            return x < y ? -1 : 1;
    }
    return (a->i > b->i) - (a->i < b->i);
}

int sr_pareto_front(const double *v, size_t n, size_t k, const int *max, unsigned char *front)
{
    struct item *idx = malloc((n ? n : 1) * sizeof(*idx));
    size_t *on = malloc((n ? n : 1) * sizeof(*on));
    if (!idx || !on) {
        free(idx);
        free(on);
        return -ENOMEM;
    }
    const struct order_ctx c = {v, k, max};
    for (size_t i = 0; i < n; i++) {
        idx[i] = (struct item){i, &c};
        front[i] = 0;
    }
    qsort(idx, n, sizeof(*idx), cmp_points);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int dominated = 0;
        for (size_t f = 0; f < m && !dominated; f++)
            dominated = dominates(&c, on[f], idx[i].i);
        if (!dominated) {
            on[m++] = idx[i].i;
            front[idx[i].i] = 1;
        }
    }
    free(idx);
    free(on);
    return 0;
}
