/*
 * test_sweeppareto.c - the Pareto front of a multi-objective sweep
 * (runtime/views/sweeppareto.h): small fronts by hand (min and max
 * directions, ties, one point, none), and on random points with many ties
 * the front equals the definition computed here by brute force (a point
 * is on it iff no other point is at least as good in every value and
 * better in one).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "sweeppareto.h"

static void test_by_hand(void **state)
{
    (void)state;
    /* loss (min), acc (max) */
    const double v[] = {
        0.4,  0.7,  /* 0: on the front */
        0.35, 0.6,  /* 1: on the front (best loss) */
        0.5,  0.65, /* 2: dominated by 0 */
        0.4,  0.7,  /* 3: equal to 0: on the front too */
        0.3,  0.5,  /* 4: on the front (best loss) */
        0.3,  0.4,  /* 5: dominated by 4 (same loss, worse acc) */
    };
    const int max[] = {0, 1};
    unsigned char front[6];
    assert_int_equal(sr_pareto_front(v, 6, 2, max, front), 0);
    const unsigned char want[] = {1, 1, 0, 1, 1, 0};
    assert_memory_equal(front, want, 6);

    /* both minimized: point 5 (0.3, 0.4) dominates every other */
    const int min2[] = {0, 0};
    assert_int_equal(sr_pareto_front(v, 6, 2, min2, front), 0);
    const unsigned char want2[] = {0, 0, 0, 0, 0, 1};
    assert_memory_equal(front, want2, 6);

    /* one point, one objective, no point */
    assert_int_equal(sr_pareto_front(v, 1, 2, max, front), 0);
    assert_int_equal(front[0], 1);
    const double loss[] = {0.4, 0.35, 0.5, 0.4, 0.3, 0.3};
    assert_int_equal(sr_pareto_front(loss, 6, 1, max, front), 0); /* loss only: 4, 5 (0.3) */
    const unsigned char want3[] = {0, 0, 0, 0, 1, 1};
    assert_memory_equal(front, want3, 6);
    assert_int_equal(sr_pareto_front(v, 0, 2, max, front), 0);
}

static int dominates(const double *a, const double *b, size_t k, const int *max)
{
    int better = 0;
    for (size_t j = 0; j < k; j++) {
        const double x = max[j] ? -a[j] : a[j], y = max[j] ? -b[j] : b[j];
        if (x > y)
            return 0;
        better |= x < y;
    }
    return better;
}

static void test_random_against_the_definition(void **state)
{
    (void)state;
    srand(41);
    for (int round = 0; round < 300; round++) {
        const size_t n = (size_t)(rand() % 60), k = 2 + (size_t)(rand() % 3);
        double *v = malloc((n ? n : 1) * k * sizeof(*v));
        unsigned char *front = malloc(n ? n : 1);
        int max[4];
        for (size_t j = 0; j < k; j++)
            max[j] = rand() % 2;
        for (size_t i = 0; i < n * k; i++)
            v[i] = (double)(rand() % 7) / 4; /* few values: many ties */
        assert_int_equal(sr_pareto_front(v, n, k, max, front), 0);
        for (size_t i = 0; i < n; i++) {
            int on = 1;
            for (size_t o = 0; o < n && on; o++)
                on = !dominates(&v[o * k], &v[i * k], k, max);
            assert_int_equal(front[i], on);
        }
        free(v);
        free(front);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_by_hand),
        cmocka_unit_test(test_random_against_the_definition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
