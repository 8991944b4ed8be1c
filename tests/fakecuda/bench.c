/*
 * bench.c - cost of a cudaMalloc/cudaFree pair (fake runtime), for
 * scripts/bench-preload.sh, which runs it with and without the shim.
 *   bench PAIRS SIZE THREADS   -> "ns_per_pair=X" (best of 5 rounds)
 */
#include <cuda_runtime_api.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long pairs;
static size_t size;

static void *loop(void *arg)
{
    (void)arg;
    for (long i = 0; i < pairs; i++) {
        void *p;
        if (cudaMalloc(&p, size) != cudaSuccess || cudaFree(p) != cudaSuccess)
            abort();
    }
    return NULL;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    pairs = argc > 1 ? atol(argv[1]) : 1000000;
    size = argc > 2 ? (size_t)atol(argv[2]) : 4096;
    const int threads = argc > 3 ? atoi(argv[3]) : 1;
    void *warm;
    cudaMalloc(&warm, 1);
    cudaFree(warm);
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        pthread_t th[64];
        const double t0 = now();
        for (int i = 0; i < threads; i++)
            pthread_create(&th[i], NULL, loop, NULL);
        for (int i = 0; i < threads; i++)
            pthread_join(th[i], NULL);
        const double ns = (now() - t0) / (double)pairs; /* wall time per pair per thread */
        if (ns < best)
            best = ns;
    }
    printf("ns_per_pair=%.1f\n", best);
    return 0;
}
