/*
 * eventsview.c - an attempt's event log, readably (eventsview.h).
 *
 * Every string comes from the store and goes through sr_term_safe(); a line
 * that is not a JSON object is printed as such ("not an event"), never
 * skipped silently: this is the view that shows what the log holds.
 */
#include "eventsview.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "events.h"
#include "layout.h"
#include "termsafe.h"

#define LOG_MAX (64u << 20) /* the reader's bound on one log (history.c reads a head and tail) */

/* "17:03:10.752" of unix ms, UTC. */
static void clock_of(int64_t ms, char *buf, size_t len)
{
    const time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (ms <= 0 || !gmtime_r(&t, &tm)) {
        snprintf(buf, len, "%12s", "?");
        return;
    }
    snprintf(buf, len, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* A string field: inline, or, holding newlines (a traceback), as indented
 * lines written to `below`, printed under the event's line. */
static void print_string(FILE *f, const char *key, const char *s, FILE *below)
{
    char safe[1024];
    if (!below || !strchr(s, '\n')) {
        fprintf(f, " %s=%s", key, sr_term_safe(s, safe, sizeof(safe)));
        return;
    }
    fprintf(f, " %s=(below)", key);
    fprintf(below, "    %s:\n", key);
    for (const char *p = s; *p;) {
        const char *nl = strchr(p, '\n');
        const size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), p);
        fprintf(below, "      %s\n", sr_term_safe(line, safe, sizeof(safe)));
        p = nl ? nl + 1 : p + n;
    }
}

static void print_event(FILE *f, const json_t *ev, int64_t first_ms)
{
    const int64_t t = (int64_t)json_integer_value(json_object_get(ev, "unix_ms"));
    const char *type = json_string_value(json_object_get(ev, "event"));
    char clock[24], kind[64];
    clock_of(t, clock, sizeof(clock));
    fprintf(f, "  %s %+9.3fs  %-12s", clock,
            t > 0 && first_ms > 0 ? (double)(t - first_ms) / 1000.0 : 0.0,
            sr_term_safe(type ? type : "?", kind, sizeof(kind)));
    char *below = NULL;
    size_t below_len = 0;
    FILE *bf = open_memstream(&below, &below_len);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)ev, key, v)
    {
        if (!strcmp(key, "event") || !strcmp(key, "time") || !strcmp(key, "unix_ms") ||
            !strcmp(key, "attempt"))
            continue;
        char k[128];
        sr_term_safe(key, k, sizeof(k));
        if (json_is_string(v)) {
            print_string(f, k, json_string_value(v), bf);
            continue;
        }
        char *text = sr_events_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        char safe[2048];
        fprintf(f, " %s=%s", k, sr_term_safe(text ? text : "?", safe, sizeof(safe)));
        free(text);
    }
    fputc('\n', f);
    if (bf && fclose(bf) == 0 && below)
        fputs(below, f);
    free(below);
}

/* One log: a header, then its events. */
static void print_log(FILE *f, const char *name, const char *buf, size_t len)
{
    char safe[256];
    fprintf(f, SR_KEY_EVENTS "/%s\n", sr_term_safe(name, safe, sizeof(safe)));
    int64_t first_ms = 0;
    size_t n = 0;
    for (const char *p = buf, *end = buf + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
        json_t *ev = l ? json_loadb(p, l, 0, NULL) : NULL;
        if (json_is_object(ev)) {
            if (!first_ms)
                first_ms = (int64_t)json_integer_value(json_object_get(ev, "unix_ms"));
            print_event(f, ev, first_ms);
            n++;
        } else if (l) {
            fprintf(f, "  (line %zu is not an event)\n", n + 1);
            n++;
        }
        json_decref(ev);
        p = nl ? nl + 1 : end;
    }
    if (!n)
        fprintf(f, "  (no events)\n");
}

int sr_events_print(FILE *f, struct sr_store *st, const char *run_id, uint32_t attempt)
{
    char prefix[300];
    sr_key_run(prefix, sizeof(prefix), run_id, SR_KEY_EVENTS);
    struct sr_strlist names = {0};
    int rc = sr_store_list(st, prefix, &names);
    if (rc < 0)
        return rc;
    if (attempt == UINT32_MAX) { /* the newest */
        for (size_t i = 0; i < names.n; i++) {
            const uint32_t a = sr_events_attempt_of(names.v[i]);
            if (a != UINT32_MAX && (attempt == UINT32_MAX || a > attempt))
                attempt = a;
        }
    }
    size_t shown = 0;
    for (size_t i = 0; rc == 0 && attempt != UINT32_MAX && i < names.n; i++) {
        if (sr_events_attempt_of(names.v[i]) != attempt)
            continue;
        char key[600], *buf = NULL;
        size_t len = 0;
        sr_key_join(key, sizeof(key), prefix, names.v[i]);
        const int g = sr_store_get(st, key, LOG_MAX, &buf, &len);
        if (g == 0) {
            fprintf(f, "%sattempt %" PRIu32 ", ", shown ? "\n" : "", attempt);
            print_log(f, names.v[i], buf, len);
            shown++;
        } else if (g != -ENOENT) {
            rc = g;
        }
        free(buf);
    }
    sr_strlist_free(&names);
    return rc < 0 ? rc : shown ? 0 : -ENOENT;
}
