/*
 * test_http.c - the HTTP core's one retry policy (storage/http/http.h):
 * the backoff's bound grows from the base and stops at the cap, the wait
 * is a draw within the bound, a signal does not cut a backoff sleep short,
 * and the retry loop tries exactly as often as its judge allows; and the
 * one IMDSv2 token cache (storage/http/imds.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "imds.h"

static void backoff_bound_doubles_from_the_base_up_to_the_cap(void **state)
{
    (void)state;
    assert_int_equal(sr_http_backoff_max_ms(1, 200), 200);
    assert_int_equal(sr_http_backoff_max_ms(2, 200), 400);
    assert_int_equal(sr_http_backoff_max_ms(3, 200), 800);
    assert_int_equal(sr_http_backoff_max_ms(5, 200), 3200);
    assert_int_equal(sr_http_backoff_max_ms(6, 200), SR_HTTP_BACKOFF_CAP_MS);
    /* far past the cap, and a base over it: the cap, never an overflow */
    assert_int_equal(sr_http_backoff_max_ms(1000, 200), SR_HTTP_BACKOFF_CAP_MS);
    assert_int_equal(sr_http_backoff_max_ms(1, 60000), SR_HTTP_BACKOFF_CAP_MS);
    assert_int_equal(sr_http_backoff_max_ms(3, 0), 0);
    assert_int_equal(SR_HTTP_BACKOFF_CAP_MS, 5000);
}

static void backoff_is_full_jitter_within_the_bound(void **state)
{
    (void)state;
    assert_int_equal(sr_http_backoff_ms(1, 200, 0), 0);
    assert_int_equal(sr_http_backoff_ms(1, 200, 200), 200);
    assert_int_equal(sr_http_backoff_ms(1, 200, 201), 0); /* rnd mod (bound + 1) */
    assert_int_equal(sr_http_backoff_ms(3, 200, 800), 800);
    assert_int_equal(sr_http_backoff_ms(3, 0, 12345), 0);
    for (uint64_t r = 0; r < 2000000; r += 997) {
        const long ms = sr_http_backoff_ms(30, 200, r * 0x9e3779b97f4a7c15ull);
        assert_true(ms >= 0 && ms <= SR_HTTP_BACKOFF_CAP_MS);
    }
}

static void retry_delays_are_random_draws_within_the_bound(void **state)
{
    (void)state;
    long lo = SR_HTTP_BACKOFF_CAP_MS, hi = 0;
    for (int i = 0; i < 2000; i++) {
        const long ms = sr_http_retry_delay_ms(4, 200);
        assert_true(ms >= 0 && ms <= 1600);
        lo = ms < lo ? ms : lo;
        hi = ms > hi ? ms : hi;
    }
    /* 2000 draws from 0..1600 spread over most of it (jitter, not a constant) */
    assert_true(lo < 400);
    assert_true(hi > 1200);
    for (int i = 0; i < 200; i++)
        assert_true(sr_http_retry_delay_ms(40, 200) <= SR_HTTP_BACKOFF_CAP_MS);
}

/* Each thread draws from its own generator: two threads see different
 * sequences (a shared, reseeded rand() gives both the same). */
static void *draw_many(void *arg)
{
    uint64_t *out = arg;
    for (int i = 0; i < 8; i++)
        out[i] = sr_http_rand();
    return NULL;
}

static void threads_draw_their_own_jitter(void **state)
{
    (void)state;
    uint64_t a[8], b[8];
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, draw_many, a), 0);
    assert_int_equal(pthread_create(&tb, NULL, draw_many, b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_memory_not_equal(a, b, sizeof(a));
}

static atomic_int hits, sleeping, woke;

static void on_usr1(int sig)
{
    (void)sig;
    atomic_fetch_add(&hits, 1);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *sleeper(void *arg)
{
    int64_t *slept = arg;
    const int64_t t0 = mono_ms();
    atomic_store(&sleeping, 1);
    sr_http_sleep_ms(400);
    *slept = mono_ms() - t0;
    atomic_store(&woke, 1);
    return NULL;
}

static void a_signal_does_not_cut_a_backoff_sleep_short(void **state)
{
    (void)state;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1; /* no SA_RESTART: the sleep sees EINTR */
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
    int64_t slept = 0;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, sleeper, &slept), 0);
    while (!atomic_load(&sleeping))
        usleep(1000);
    /* Interrupt it again and again while it sleeps. */
    while (!atomic_load(&woke)) {
        pthread_kill(t, SIGUSR1);
        usleep(20000);
    }
    pthread_join(t, NULL);
    signal(SIGUSR1, SIG_DFL);
    assert_true(atomic_load(&hits) > 0);
    assert_true(slept >= 400);
}

struct counts {
    int setups, judges, cleanups, again_until;
    int last_attempt;
};

static int fake_setup(void *ctx, CURL *c)
{
    (void)c;
    ((struct counts *)ctx)->setups++;
    return 0;
}

static int fake_judge(void *ctx, CURL *c, CURLcode cc, int attempt)
{
    (void)c;
    (void)cc; /* no URL: the perform fails at once, nothing is sent */
    struct counts *k = ctx;
    k->judges++;
    k->last_attempt = attempt;
    if (attempt < k->again_until && sr_http_may_retry(attempt, 5))
        return SR_HTTP_AGAIN;
    return attempt < k->again_until ? -ECONNRESET : 0;
}

static void fake_cleanup(void *ctx)
{
    ((struct counts *)ctx)->cleanups++;
}

static void the_loop_retries_while_the_judge_says_again(void **state)
{
    (void)state;
    struct sr_http_pool *pool = sr_http_pool_new(2);
    assert_non_null(pool);
    struct counts k = {.again_until = 3};
    struct sr_http_call call = {
        .setup = fake_setup, .judge = fake_judge, .cleanup = fake_cleanup, .ctx = &k, .base_ms = 1};
    assert_int_equal(sr_http_run(pool, &call), 0);
    assert_int_equal(k.setups, 3);
    assert_int_equal(k.judges, 3);
    assert_int_equal(k.cleanups, 3);
    assert_int_equal(k.last_attempt, 3);
    /* retries 5: six tries in all, then the judge's error */
    memset(&k, 0, sizeof(k));
    k.again_until = 100;
    assert_int_equal(sr_http_run(pool, &call), -ECONNRESET);
    assert_int_equal(k.judges, 6);
    sr_http_pool_free(pool);
}

static void retries_count_the_same_for_every_backend(void **state)
{
    (void)state;
    assert_true(sr_http_may_retry(1, 1));
    assert_false(sr_http_may_retry(2, 1));
    assert_false(sr_http_may_retry(1, 0));
}

static void the_pool_hands_back_an_idle_handle(void **state)
{
    (void)state;
    struct sr_http_pool *pool = sr_http_pool_new(1);
    CURL *a = sr_http_pool_get(pool), *b = sr_http_pool_get(pool);
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    sr_http_pool_put(pool, a);
    sr_http_pool_put(pool, b); /* over the cap: cleaned up */
    assert_ptr_equal(sr_http_pool_get(pool), a);
    sr_http_pool_put(pool, a);
    sr_http_pool_free(pool);
}

struct puts {
    int n;
    int fail;
    char url[256], header[128];
};

static int fake_put(void *ctx, const char *url, const char *header, char *tok, size_t len)
{
    struct puts *k = ctx;
    k->n++;
    snprintf(k->url, sizeof(k->url), "%s", url);
    snprintf(k->header, sizeof(k->header), "%s", header);
    if (k->fail)
        return -ETIMEDOUT;
    snprintf(tok, len, "token-%d\r\n", k->n);
    return 0;
}

static void one_token_is_shared_until_a_minute_before_it_expires(void **state)
{
    (void)state;
    struct sr_imds_cache c = SR_IMDS_CACHE_INIT;
    struct puts k = {0};
    char tok[SR_IMDS_TOKEN_MAX];
    assert_int_equal(sr_imds_cache_token(&c, 1000, "http://imds/", fake_put, &k, tok, sizeof(tok)),
                     0);
    assert_string_equal(tok, "token-1"); /* its line end dropped */
    assert_string_equal(k.url, "http://imds/latest/api/token");
    assert_string_equal(k.header, "X-aws-ec2-metadata-token-ttl-seconds: 21600");
    /* the notice watcher, the placement lookup, the credentials: one PUT */
    const int64_t renew = 1000 + SR_IMDS_TTL_S * 1000LL - SR_IMDS_RENEW_MS;
    assert_int_equal(sr_imds_cache_token(&c, 5000, "http://imds", fake_put, &k, tok, sizeof(tok)),
                     0);
    assert_int_equal(
        sr_imds_cache_token(&c, renew - 1, "http://imds", fake_put, &k, tok, sizeof(tok)), 0);
    assert_int_equal(k.n, 1);
    assert_string_equal(tok, "token-1");
    /* a minute before it expires: a new one */
    assert_int_equal(sr_imds_cache_token(&c, renew, "http://imds", fake_put, &k, tok, sizeof(tok)),
                     0);
    assert_int_equal(k.n, 2);
    assert_string_equal(tok, "token-2");
}

static void a_refused_token_is_fetched_again_and_failures_are_not_kept(void **state)
{
    (void)state;
    struct sr_imds_cache c = SR_IMDS_CACHE_INIT;
    struct puts k = {0};
    char tok[SR_IMDS_TOKEN_MAX];
    assert_int_equal(sr_imds_cache_token(&c, 0, "http://imds", fake_put, &k, tok, sizeof(tok)), 0);
    /* a stale refusal (of a token already replaced) drops nothing */
    sr_imds_cache_refused(&c, "http://imds", "token-0");
    assert_int_equal(sr_imds_cache_token(&c, 1, "http://imds", fake_put, &k, tok, sizeof(tok)), 0);
    assert_int_equal(k.n, 1);
    sr_imds_cache_refused(&c, "http://imds/", "token-1"); /* a 401 */
    assert_int_equal(sr_imds_cache_token(&c, 2, "http://imds", fake_put, &k, tok, sizeof(tok)), 0);
    assert_int_equal(k.n, 2);
    assert_string_equal(tok, "token-2");
    /* another service: its own token; a failed PUT: the caller's error, nothing kept */
    k.fail = 1;
    assert_int_equal(sr_imds_cache_token(&c, 3, "http://other", fake_put, &k, tok, sizeof(tok)),
                     -ETIMEDOUT);
    assert_int_equal(sr_imds_cache_token(&c, 4, "http://other", fake_put, &k, tok, sizeof(tok)),
                     -ETIMEDOUT);
    assert_int_equal(k.n, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(backoff_bound_doubles_from_the_base_up_to_the_cap),
        cmocka_unit_test(backoff_is_full_jitter_within_the_bound),
        cmocka_unit_test(retry_delays_are_random_draws_within_the_bound),
        cmocka_unit_test(threads_draw_their_own_jitter),
        cmocka_unit_test(a_signal_does_not_cut_a_backoff_sleep_short),
        cmocka_unit_test(the_loop_retries_while_the_judge_says_again),
        cmocka_unit_test(retries_count_the_same_for_every_backend),
        cmocka_unit_test(the_pool_hands_back_an_idle_handle),
        cmocka_unit_test(one_token_is_shared_until_a_minute_before_it_expires),
        cmocka_unit_test(a_refused_token_is_fetched_again_and_failures_are_not_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
