/*
 * sweep_steer.c - a sweep's steering in the store (see sweep_steer.h).
 */
#include "sweep_steer.h"

#include <errno.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "layout.h"
#include "log.h"
#include "sweep.h"
#include "termsafe.h"

#define STEER_OBJ_MAX (1u << 20) /* bytes of one object */
#define TRIALS_PER_ACTION 100000

static const char *const action_names[] = {"cancel", "retry", "pause", "resume", "priority"};
#define N_ACTIONS (sizeof(action_names) / sizeof(action_names[0]))

const char *sr_steer_action_name(enum sr_steer_action a)
{
    return (unsigned)a < N_ACTIONS ? action_names[a] : "?";
}

int sr_steer_action_of(const char *name)
{
    for (size_t i = 0; name && i < N_ACTIONS; i++)
        if (strcmp(name, action_names[i]) == 0)
            return (int)i;
    return -1;
}

/* ---- the fold (pure) ------------------------------------------------------- */

static void apply(struct sr_steer_state *s, const struct sr_steer_entry *e)
{
    switch (e->action) {
    case SR_STEER_PAUSE:
        s->paused = 1;
        s->pause_stop = e->stop;
        s->paused_by = e;
        return;
    case SR_STEER_RESUME:
        s->paused = s->pause_stop = 0;
        s->paused_by = NULL;
        return;
    default:
        break;
    }
    for (size_t i = 0; i < e->n_trials; i++) {
        const long k = e->trials[i];
        if (k < 0 || (size_t)k >= s->n)
            continue;
        if (e->action == SR_STEER_CANCEL)
            s->cancelled[k] = 1;
        else if (e->action == SR_STEER_RETRY)
            s->cancelled[k] = 0;
        else if (e->action == SR_STEER_PRIORITY)
            s->priority[k] = e->priority;
    }
}

int sr_steer_fold(const struct sr_steer_entry *log, size_t n_log, size_t n_trials,
                  struct sr_steer_state *out)
{
    memset(out, 0, sizeof(*out));
    out->n = n_trials;
    out->cancelled = calloc(n_trials ? n_trials : 1, 1);
    out->priority = calloc(n_trials ? n_trials : 1, sizeof(long));
    if (!out->cancelled || !out->priority) {
        free(out->cancelled);
        free(out->priority);
        out->cancelled = NULL;
        out->priority = NULL;
        return -ENOMEM;
    }
    out->log = (struct sr_steer_entry *)log;
    out->n_log = n_log;
    for (size_t i = 0; i < n_log; i++)
        apply(out, &log[i]);
    return 0;
}

int sr_steer_cancelled(const struct sr_steer_state *s, size_t k)
{
    return s->cancelled && k < s->n && s->cancelled[k];
}

long sr_steer_priority(const struct sr_steer_state *s, size_t k)
{
    return s->priority && k < s->n ? s->priority[k] : 0;
}

/* ---- one object ------------------------------------------------------------ */

static int parse_trials(const json_t *a, struct sr_steer_entry *out)
{
    if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > TRIALS_PER_ACTION)
        return -EBADMSG;
    out->trials = calloc(json_array_size(a), sizeof(long));
    if (!out->trials)
        return -ENOMEM;
    size_t i;
    const json_t *v;
    json_array_foreach(a, i, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= SR_SWEEP_TRIALS_MAX)
            return -EBADMSG;
        out->trials[out->n_trials++] = (long)json_integer_value(v);
    }
    return 0;
}

static int parse_object(const json_t *o, const char *sweep, unsigned seq,
                        struct sr_steer_entry *out)
{
    const json_t *sw = json_object_get(o, "sweep"), *n = json_object_get(o, "seq");
    const int a = sr_steer_action_of(json_string_value(json_object_get(o, "action")));
    if (!json_is_object(o) || !json_is_string(sw) || strcmp(json_string_value(sw), sweep) != 0 ||
        !json_is_integer(n) || json_integer_value(n) != (json_int_t)seq || a < 0)
        return -EBADMSG;
    out->seq = seq;
    out->action = (enum sr_steer_action)a;
    const json_t *v;
    if ((v = json_object_get(o, "by")) && json_is_string(v))
        sr_term_safe(json_string_value(v), out->by, sizeof(out->by));
    if ((v = json_object_get(o, "unix_ms")) && json_is_integer(v) && json_integer_value(v) >= 0)
        out->unix_ms = json_integer_value(v);
    out->stop = json_is_true(json_object_get(o, "stop"));
    if (a == SR_STEER_PAUSE || a == SR_STEER_RESUME)
        return 0;
    if (a == SR_STEER_PRIORITY) {
        v = json_object_get(o, "priority");
        if (!json_is_integer(v) || json_integer_value(v) < -SR_STEER_PRIORITY_MAX ||
            json_integer_value(v) > SR_STEER_PRIORITY_MAX)
            return -EBADMSG;
        out->priority = (long)json_integer_value(v);
    }
    return parse_trials(json_object_get(o, "trials"), out);
}

int sr_steer_parse(const char *buf, size_t len, const char *sweep, unsigned seq,
                   struct sr_steer_entry *out)
{
    memset(out, 0, sizeof(*out));
    json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
    const int rc = o ? parse_object(o, sweep, seq, out) : -EBADMSG;
    json_decref(o);
    if (rc < 0)
        sr_steer_entry_free(out);
    return rc;
}

void sr_steer_entry_free(struct sr_steer_entry *e)
{
    free(e->trials);
    e->trials = NULL;
    e->n_trials = 0;
}

/* ---- the store --------------------------------------------------------------- */

static void key_of(char *buf, size_t len, const char *name, unsigned seq)
{
    sr_key_sweep(buf, len, name, SR_SWEEP_STEER "/%06u.json", seq);
}

/* The seq of a listed name "NNNNNN.json", or -1. */
static long seq_of(const char *s)
{
    unsigned k;
    char tail;
    if (strlen(s) == 11 && strspn(s, "0123456789") == 6 && sscanf(s, "%6u.jso%c", &k, &tail) == 2 &&
        tail == 'n' && k < SR_STEER_MAX)
        return (long)k;
    return -1;
}

static int list_seqs(struct sr_store *st, const char *name, unsigned **seqs, size_t *n)
{
    struct sr_strlist l;
    int rc = sr_list_sweep(st, name, SR_SWEEP_STEER, &l);
    *n = 0;
    *seqs = NULL;
    if (rc < 0)
        return rc;
    *seqs = calloc(l.n ? l.n : 1, sizeof(unsigned));
    if (!*seqs)
        rc = -ENOMEM;
    /* the listing is sorted, and the names zero-padded: seq order */
    for (size_t i = 0; rc == 0 && i < l.n; i++)
        if (seq_of(l.v[i]) >= 0)
            (*seqs)[(*n)++] = (unsigned)seq_of(l.v[i]);
    sr_strlist_free(&l);
    return rc;
}

static int read_one(struct sr_store *st, const char *name, unsigned seq, struct sr_steer_entry *out)
{
    char key[256], *buf = NULL;
    size_t len = 0;
    key_of(key, sizeof(key), name, seq);
    int rc = sr_store_get(st, key, STEER_OBJ_MAX, &buf, &len);
    if (rc == -EFBIG)
        return -EBADMSG;
    if (rc < 0)
        return rc;
    rc = sr_steer_parse(buf, len, name, seq, out);
    free(buf);
    return rc;
}

/* prev's action numbered seq, copied into out: 0, -ENOENT (prev has none),
 * -ENOMEM. */
static int from_prev(const struct sr_steer_state *prev, unsigned seq, struct sr_steer_entry *out)
{
    size_t lo = 0, hi = prev && prev->owns_log ? prev->n_log : 0;
    while (lo < hi) { /* the log is in seq order */
        const size_t mid = lo + (hi - lo) / 2;
        if (prev->log[mid].seq < seq) {
            lo = mid + 1;
        } else if (prev->log[mid].seq > seq) {
            hi = mid;
        } else {
            *out = prev->log[mid];
            out->trials = NULL;
            if (out->n_trials && !(out->trials = calloc(out->n_trials, sizeof(long))))
                return -ENOMEM;
            if (out->n_trials)
                memcpy(out->trials, prev->log[mid].trials, out->n_trials * sizeof(long));
            return 0;
        }
    }
    return -ENOENT;
}

int sr_steer_read(struct sr_store *st, const char *name, size_t n_trials,
                  struct sr_steer_state *out)
{
    return sr_steer_reread(st, name, n_trials, NULL, out);
}

int sr_steer_reread(struct sr_store *st, const char *name, size_t n_trials,
                    const struct sr_steer_state *prev, struct sr_steer_state *out)
{
    memset(out, 0, sizeof(*out));
    if (!sr_sweep_name_valid(name))
        return -EINVAL;
    unsigned *seqs;
    size_t n;
    int rc = list_seqs(st, name, &seqs, &n);
    struct sr_steer_entry *log = rc == 0 ? calloc(n ? n : 1, sizeof(*log)) : NULL;
    if (rc == 0 && !log)
        rc = -ENOMEM;
    size_t got = 0, bad = 0;
    const unsigned next = n ? seqs[n - 1] + 1 : 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int r = from_prev(prev, seqs[i], &log[got]);
        if (r == -ENOENT)
            r = read_one(st, name, seqs[i], &log[got]);
        if (r == 0)
            got++;
        else if (r == -EBADMSG || r == -ENOENT) /* not one, or gone (sweep delete) */
            bad += r == -EBADMSG;
        else
            rc = r;
    }
    free(seqs);
    if (rc == 0)
        rc = sr_steer_fold(log, got, n_trials, out);
    if (rc < 0) {
        for (size_t i = 0; i < got; i++)
            sr_steer_entry_free(&log[i]);
        free(log);
        return rc;
    }
    out->owns_log = 1;
    out->bad = bad;
    out->next_seq = next;
    return 0;
}

int sr_steer_grew(struct sr_store *st, const char *name, const struct sr_steer_state *prev)
{
    if (!sr_sweep_name_valid(name))
        return -EINVAL;
    char key[256];
    uint64_t size;
    key_of(key, sizeof(key), name, prev ? prev->next_seq : 0);
    const int rc = sr_store_size(st, key, &size);
    if (rc == -ENOENT) {
        return 0;
    }
    return rc < 0 ? rc : 1;
}

void sr_steer_free(struct sr_steer_state *s)
{
    if (s->owns_log) {
        for (size_t i = 0; i < s->n_log; i++)
            sr_steer_entry_free(&s->log[i]);
        free(s->log);
    }
    free(s->cancelled);
    free(s->priority);
    memset(s, 0, sizeof(*s));
}

static json_t *entry_json(const char *name, const struct sr_steer_entry *e)
{
    json_t *o = json_pack("{s:i,s:s,s:I,s:s,s:s,s:I}", "format", 1, "sweep", name, "seq",
                          (json_int_t)e->seq, "action", sr_steer_action_name(e->action), "by",
                          e->by, "unix_ms", (json_int_t)e->unix_ms);
    if (o && e->action == SR_STEER_PAUSE)
        json_object_set_new(o, "stop", json_boolean(e->stop));
    if (o && e->action == SR_STEER_PRIORITY)
        json_object_set_new(o, "priority", json_integer(e->priority));
    if (o && e->n_trials) {
        json_t *t = json_array();
        for (size_t i = 0; t && i < e->n_trials; i++)
            json_array_append_new(t, json_integer(e->trials[i]));
        json_object_set_new(o, "trials", t);
    }
    return o;
}

static void who(char *buf, size_t len)
{
    char host[128] = "";
    gethostname(host, sizeof(host) - 1);
    const char *user = getenv("USER");
    if (!user || !*user)
        user = getenv("LOGNAME");
    const struct passwd *pw = !user || !*user ? getpwuid(getuid()) : NULL;
    if (pw)
        user = pw->pw_name;
    snprintf(buf, len, "%.60s@%.60s", user && *user ? user : "?", host[0] ? host : "?");
}

int sr_steer_write(struct sr_store *st, const char *name, struct sr_steer_entry *e, unsigned *seq)
{
    if (!sr_sweep_name_valid(name))
        return -EINVAL;
    who(e->by, sizeof(e->by));
    struct timeval tv;
    gettimeofday(&tv, NULL);
    e->unix_ms = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    int rc = -EEXIST;
    /* two operators racing: the loser takes the next number */
    for (int tries = 0; tries < 16 && rc == -EEXIST; tries++) {
        unsigned *seqs;
        size_t n;
        if ((rc = list_seqs(st, name, &seqs, &n)) < 0)
            return rc;
        e->seq = n ? seqs[n - 1] + 1 : 0;
        free(seqs);
        if (e->seq >= SR_STEER_MAX)
            return -EFBIG;
        json_t *o = entry_json(name, e);
        char *s = o ? json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT) : NULL;
        json_decref(o);
        if (!s)
            return -ENOMEM;
        char key[256];
        key_of(key, sizeof(key), name, e->seq);
        rc = sr_store_put_if(st, key, s, strlen(s), NULL, NULL);
        free(s);
    }
    if (rc == 0 && seq)
        *seq = e->seq;
    return rc;
}
