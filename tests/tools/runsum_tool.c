/*
 * runsum_tool.c - a test and benchmark tool for run summaries
 * (runtime/record/runsum.h), not a spotrun command:
 *
 *   runsum_tool load STORE [PREFIX]   every run via sr_runsum_load_all: one
 *                                     line per run, and its time on stderr
 *   runsum_tool list STORE [PREFIX]   the one listing alone (sr_store_list_keys)
 *   runsum_tool gen STORE N [PREFIX]  N synthetic runs (one event log and a
 *                                     matching summaries/<run>.json each),
 *                                     written on 16 threads
 *   runsum_tool fold STORE            every run of a file store from its
 *                                     event logs into its summaries/<run>.json,
 *                                     as its wrapper would have written it
 *
 * Used by tests/e2e/t0772-stats-summary.sh and scripts/bench-stats.sh.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "history.h"
#include "log.h"
#include "manifest.h"
#include "parallel.h"
#include "runsum.h"
#include "store.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int load(struct sr_store *st, const char *prefix)
{
    struct sr_runsum *v;
    size_t n;
    const double t0 = now_s();
    const int rc = sr_runsum_load_all(st, prefix, &v, &n);
    const double t = now_s() - t0;
    if (rc < 0) {
        fprintf(stderr, "runsum_tool: %s\n", sr_strerror(rc));
        return 1;
    }
    size_t logs = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sr_runsum *r = &v[i];
        logs += r->from_logs != 0;
        printf("%s snap=%d from_logs=%d state=%s labels=%zu attempts=", r->run, r->from_snapshot,
               r->from_logs, sr_hist_state_name(r->state), r->labels.n);
        for (size_t k = 0; k < r->n_att; k++) {
            const struct sr_runsum_attempt *a = &r->att[k];
            printf("%s%" PRIu32 ":%s:%" PRId64 ":%" PRId64, k ? "," : "", a->attempt,
                   a->cause == SR_CAUSE_NONE ? "open" : sr_hist_cause_name(a->cause),
                   a->end_ms - a->start_ms, a->lost_ms);
        }
        printf("\n");
        sr_runsum_free(&v[i]);
    }
    free(v);
    fprintf(stderr, "%zu runs in %.3f s (%zu from their event logs)\n", n, t, logs);
    return 0;
}

struct gen {
    struct sr_store *st;
    const char *prefix;
};

/* r as its wrapper writes it: summaries/<run>.json. */
static int put_summary(struct sr_store *st, const struct sr_runsum *r)
{
    json_t *o = sr_runsum_to_json(r);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    char key[512];
    snprintf(key, sizeof(key), "%s/%s.json", SR_KEY_SUMMARIES, r->run);
    int rc = text ? sr_store_put(st, key, text, strlen(text)) : -ENOMEM;
    free(text);
    json_decref(o);
    return rc;
}

/* Every run of a file store folded from its logs, with each log's size. */
static int fold(struct sr_store *st)
{
    struct sr_runsum *v;
    size_t n;
    int rc = sr_runsum_load_all(st, "", &v, &n);
    if (rc < 0)
        return rc;
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        for (size_t k = 0; rc >= 0 && k < v[i].n_att; k++) {
            char key[512];
            snprintf(key, sizeof(key), "%s/events/%06" PRIu32 ".jsonl", v[i].run,
                     v[i].att[k].attempt);
            rc = sr_store_size(st, key, &v[i].att[k].log_bytes);
        }
        if (rc >= 0)
            rc = put_summary(st, &v[i]);
    }
    for (size_t i = 0; i < n; i++)
        sr_runsum_free(&v[i]);
    free(v);
    return rc;
}

/* Run i: attempt 0 preempted after an hour on one of a few instance types
 * and zones, labelled with one of a few teams. */
static int gen_one(void *ctx, size_t i)
{
    const struct gen *g = ctx;
    static const char *const types[] = {"p4d.24xlarge", "g5.xlarge", "p3.2xlarge"};
    static const char *const zones[] = {"us-east-1a", "us-east-1b", "eu-west-1a"};
    static const char *const teams[] = {"nlp", "vision", "speech", "rl"};
    const long long t0 = 1767225600000LL + (long long)i * 60000; /* 2026-01-01 on */
    char run[256], key[512], log[2048];
    snprintf(run, sizeof(run), "%srun-%06zu", g->prefix, i);
    const int n = snprintf(
        log, sizeof(log),
        "{\"event\":\"start\",\"unix_ms\":%lld,\"attempt\":0,\"host\":\"h%zu\",\"cloud\":\"aws\","
        "\"instance_type\":\"%s\",\"zone\":\"%s\",\"price_per_hour\":%.2f,\"nodes\":1,"
        "\"labels\":{\"team\":\"%s\"}}\n"
        "{\"event\":\"staged\",\"unix_ms\":%lld,\"attempt\":0,\"seq\":1,\"step\":10,"
        "\"seconds\":1.5}\n"
        "{\"event\":\"notice\",\"unix_ms\":%lld,\"attempt\":0,\"source\":\"aws\","
        "\"ms_left\":120000}\n"
        "{\"event\":\"exit\",\"unix_ms\":%lld,\"attempt\":0,\"code\":143,\"signal\":\"TERM\"}\n"
        "{\"event\":\"preempted\",\"unix_ms\":%lld,\"attempt\":0,\"durable_seq\":1}\n",
        t0, i % 100, types[i % 3], zones[i % 3], 1.0 + (double)(i % 5), teams[i % 4], t0 + 1800000,
        t0 + 3590000, t0 + 3600000, t0 + 3600001);
    snprintf(key, sizeof(key), "%s/events/000000.jsonl", run);
    int rc = sr_store_put(g->st, key, log, (size_t)n);
    struct sr_history h;
    sr_hist_init(&h);
    for (const char *p = log; rc == 0 && *p;) {
        const char *nl = strchr(p, '\n');
        sr_hist_add_line(&h, p, (size_t)(nl - p));
        p = nl + 1;
    }
    sr_hist_derive(&h);
    struct sr_runsum r;
    if (rc == 0)
        rc = sr_runsum_from_history(&h, run, &r);
    sr_hist_free(&h);
    if (rc < 0)
        return rc;
    if (r.n_att == 1)
        r.att[0].log_bytes = (uint64_t)n; /* the log it folded, as the store holds it */
    rc = put_summary(g->st, &r);
    sr_runsum_free(&r);
    return rc < 0 ? sr_errf(rc, "%s: %s", run, sr_strerror(rc)) : 0;
}

int main(int argc, char **argv)
{
    const int gen = argc > 1 && strcmp(argv[1], "gen") == 0;
    if (argc < 3 ||
        (strcmp(argv[1], "load") != 0 && !gen && strcmp(argv[1], "list") != 0 &&
         strcmp(argv[1], "fold") != 0) ||
        (gen && argc < 4)) {
        fprintf(stderr, "usage: runsum_tool load|list STORE [PREFIX] | gen STORE N "
                        "[PREFIX] | fold STORE\n");
        return 64;
    }
    struct sr_store *st;
    int rc = sr_store_open(argv[2], &st);
    if (rc < 0) {
        fprintf(stderr, "runsum_tool: %s: %s\n", argv[2], sr_strerror(rc));
        return 69;
    }
    int code;
    if (strcmp(argv[1], "list") == 0) {
        struct sr_strlist keys;
        const double t0 = now_s();
        rc = sr_store_list_keys(st, argc > 3 ? argv[3] : "", &keys);
        if (rc == 0)
            fprintf(stderr, "%zu keys listed in %.3f s\n", keys.n, now_s() - t0);
        else
            fprintf(stderr, "runsum_tool: %s\n", sr_strerror(rc));
        if (rc == 0)
            sr_strlist_free(&keys);
        code = rc < 0 ? 1 : 0;
    } else if (strcmp(argv[1], "load") == 0) {
        code = load(st, argc > 3 ? argv[3] : "");
    } else if (strcmp(argv[1], "fold") == 0) {
        rc = fold(st);
        if (rc < 0)
            fprintf(stderr, "runsum_tool: %s\n", sr_strerror(rc));
        code = rc < 0 ? 1 : 0;
    } else {
        struct gen g = {st, argc > 4 ? argv[4] : ""};
        const double t0 = now_s();
        rc = sr_parallel_for(strtoull(argv[3], NULL, 10), 16, gen_one, &g);
        if (rc < 0)
            fprintf(stderr, "runsum_tool: %s\n", sr_strerror(rc));
        else
            fprintf(stderr, "wrote %s runs in %.1f s\n", argv[3], now_s() - t0);
        code = rc < 0 ? 1 : 0;
    }
    sr_store_close(st);
    return code;
}
