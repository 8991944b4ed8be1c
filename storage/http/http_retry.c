/*
 * http_retry.c - the one retry policy (http.h): full-jitter exponential
 * backoff capped at SR_HTTP_BACKOFF_CAP_MS, a per-thread generator for the
 * jitter, a sleep that a signal does not cut short, and the retry loop.
 *
 * DESIGN: the generator is splitmix64 in a thread-local word, seeded on a
 * thread's first draw from the monotonic clock and the word's address (so
 * two threads that start in the same nanosecond still differ): no lock and
 * no global rand() state shared with other code. The sleep waits for an
 * absolute deadline on CLOCK_MONOTONIC and resumes after EINTR, so a
 * signal (the supervisor's SIGCHLD, a timer) shortens no backoff and the
 * wall clock being set moves none.
 */
#include "http.h"
#include "log.h"

#include <errno.h>
#include <time.h>

long sr_http_backoff_max_ms(int attempt, long base_ms)
{
    long max = base_ms > 0 ? base_ms : 0;
    for (int i = 1; i < attempt && max < SR_HTTP_BACKOFF_CAP_MS; i++)
        max *= 2;
    return max > SR_HTTP_BACKOFF_CAP_MS ? SR_HTTP_BACKOFF_CAP_MS : max;
}

long sr_http_backoff_ms(int attempt, long base_ms, uint64_t rnd)
{
    const long max = sr_http_backoff_max_ms(attempt, base_ms);
    return max > 0 ? (long)(rnd % (uint64_t)(max + 1)) : 0;
}

uint64_t sr_http_rand(void)
{
    static __thread uint64_t state;
    if (!state) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        state = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
                (uint64_t)(uintptr_t)&state;
        if (!state)
            state = 1;
    }
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

long sr_http_retry_delay_ms(int attempt, long base_ms)
{
    return sr_http_backoff_ms(attempt, base_ms, sr_http_rand());
}

void sr_http_sleep_ms(long ms)
{
    if (ms <= 0)
        return;
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    at.tv_sec += ms / 1000;
    at.tv_nsec += (ms % 1000) * 1000000L;
    if (at.tv_nsec >= 1000000000L) {
        at.tv_sec++;
        at.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
        ;
}

int sr_http_may_retry(int attempt, int retries)
{
    return attempt <= retries;
}

int sr_http_run(struct sr_http_pool *pool, const struct sr_http_call *call)
{
    CURL *c = sr_http_pool_get(pool);
    if (!c)
        return sr_errf(-ENOMEM, "out of memory");
    int rc;
    for (int attempt = 1;; attempt++) {
        rc = call->setup(call->ctx, c);
        if (rc == 0)
            rc = call->judge(call->ctx, c, curl_easy_perform(c), attempt);
        if (call->cleanup)
            call->cleanup(call->ctx);
        if (rc != SR_HTTP_AGAIN)
            break;
        sr_http_sleep_ms(sr_http_retry_delay_ms(attempt, call->base_ms));
    }
    sr_http_pool_put(pool, c);
    return rc;
}
