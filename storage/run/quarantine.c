/*
 * quarantine.c - suspect checkpoints (quarantine.h, docs/runtime.md "A bad
 * checkpoint"): the judgement of an attempt's end, what gc keeps, and the
 * marks in the store.
 *
 * DESIGN: a mark is its own create-only object, <run>/suspect/<seq>.json,
 * not a change to the checkpoint: a manifest is never rewritten (it is the
 * commit point), and one listing of suspect/ tells a restore, `show` and
 * gc every mark at once. A mark outlives nothing: gc deletes it with its
 * checkpoint, and a seq is never reused, so a stale one could not name
 * another checkpoint anyway.
 */
#include "quarantine.h"
#include "layout.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEY_LEN 512
#define MARK_MAX (64 * 1024) /* a mark is a few hundred bytes; a bigger one is not ours */

/* ---- the judgement (pure) ------------------------------------------------ */

/* A signal the job dies of by itself when it cannot go on. */
static int crash_signal(int signo)
{
    switch (signo) {
    case SIGSEGV:
    case SIGBUS:
    case SIGILL:
    case SIGFPE:
    case SIGABRT:
    case SIGSYS:
    case SIGTRAP:
        return 1;
    default:
        return 0;
    }
}

/* The job failed by itself, in a way its restored state may explain. */
static int own_failure(const struct sr_suspect_facts *f)
{
    if (f->code == 0 || f->oom)
        return 0;
    if (f->signaled)
        return crash_signal(f->code - 128);
    if ((f->code == 126 || f->code == 127) && !f->talked)
        return 0; /* the command cannot run: not the checkpoint */
    /* a shell saying its command was killed from outside */
    return f->code != 128 + SIGKILL && f->code != 128 + SIGTERM && f->code != 128 + SIGINT &&
           f->code != 128 + SIGHUP;
}

enum sr_suspect_verdict sr_suspect_judge(struct sr_suspect_row *row,
                                         const struct sr_suspect_facts *f)
{
    if (row->n >= SR_SUSPECT_AFTER) /* marked: a new row */
        *row = (struct sr_suspect_row){0};
    if (f->restored_seq == 0 || f->committed || f->stop != SR_STOP_NONE || f->multinode ||
        !own_failure(f)) {
        *row = (struct sr_suspect_row){0};
        return SR_SUSPECT_NOT;
    }
    if (row->seq != f->restored_seq)
        *row = (struct sr_suspect_row){.seq = f->restored_seq};
    row->attempts[row->n] = f->attempt;
    row->codes[row->n] = f->code;
    row->signaled[row->n] = f->signaled;
    row->n++;
    return row->n >= SR_SUSPECT_AFTER ? SR_SUSPECT_MARK : SR_SUSPECT_COUNTED;
}

static void describe_exit(int code, int signaled, char *buf, size_t len)
{
    const char *abbrev = signaled ? sigabbrev_np(code - 128) : NULL;
    if (signaled)
        snprintf(buf, len, "killed by SIG%s", abbrev ? abbrev : "?");
    else
        snprintf(buf, len, "exit %d", code);
}

void sr_suspect_reason(const struct sr_suspect_row *row, char *buf, size_t len)
{
    char exits[SR_SUSPECT_AFTER * 40] = "";
    size_t at = 0;
    for (unsigned i = 0; i < row->n && i < SR_SUSPECT_AFTER; i++) {
        char one[40];
        describe_exit(row->codes[i], row->signaled[i], one, sizeof(one));
        const int w = snprintf(exits + at, sizeof(exits) - at, "%s%s", i ? ", " : "", one);
        if (w > 0 && (size_t)w < sizeof(exits) - at)
            at += (size_t)w;
    }
    snprintf(buf, len, "job failed %s right after restoring it (%s)",
             row->n == 2 ? "twice" : "repeatedly", exits);
}

/* ---- the marks in a list ------------------------------------------------- */

void sr_suspect_set_free(struct sr_suspect_set *s)
{
    free(s->seq);
    *s = (struct sr_suspect_set){0};
}

int sr_suspect_has(const struct sr_suspect_set *s, uint64_t seq)
{
    for (size_t i = 0; s && i < s->n; i++)
        if (s->seq[i] == seq)
            return 1;
    return 0;
}

size_t sr_suspect_gc_drop(const struct sr_ckpt_list *l, const struct sr_suspect_set *s,
                          unsigned keep)
{
    unsigned trusted = 0;
    for (size_t i = l->n; i-- > 0;)
        if (!sr_suspect_has(s, l->v[i].seq) && ++trusted == keep)
            return i; /* the oldest kept: everything newer stays */
    return 0;         /* fewer than keep trusted ones: all stay */
}

/* The seq of a name listed under suspect/ ("0000000007.json"), 0 if none. */
static uint64_t mark_seq(const char *name)
{
    const size_t digits = strspn(name, "0123456789");
    if (digits == 0 || digits > 19 || strcmp(name + digits, ".json") != 0)
        return 0;
    return strtoull(name, NULL, 10);
}

int sr_suspect_list(struct sr_store *st, const char *run_id, struct sr_suspect_set *out)
{
    *out = (struct sr_suspect_set){0};
    char prefix[KEY_LEN];
    if (sr_key_run(prefix, sizeof(prefix), run_id, SR_KEY_SUSPECT) < 0)
        return sr_errf(-ENAMETOOLONG, "run id %.64s... is too long", run_id);
    struct sr_strlist names;
    int rc = sr_store_list(st, prefix, &names);
    if (rc < 0)
        return rc;
    if (names.n && !(out->seq = calloc(names.n, sizeof(*out->seq))))
        rc = sr_errf(-ENOMEM, "cannot list the suspect checkpoints of %s: %s", run_id,
                     strerror(ENOMEM));
    for (size_t i = 0; rc == 0 && i < names.n; i++) {
        const uint64_t seq = mark_seq(names.v[i]);
        if (seq)
            out->seq[out->n++] = seq;
    }
    sr_strlist_free(&names);
    if (rc < 0)
        sr_suspect_set_free(out);
    return rc;
}

/* ---- one mark ------------------------------------------------------------ */

static int mark_key(char key[KEY_LEN], const char *run_id, uint64_t seq)
{
    if (sr_key_suspect(key, KEY_LEN, run_id, seq) < 0)
        return sr_errf(-ENAMETOOLONG, "run id %.64s... is too long", run_id);
    return 0;
}

static json_t *mark_json(const char *run_id, int64_t step, const struct sr_suspect_row *row)
{
    char reason[256], host[256] = "", when[40] = "";
    sr_suspect_reason(row, reason, sizeof(reason));
    gethostname(host, sizeof(host) - 1);
    const time_t t = time(NULL);
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *attempts = json_array(), *exits = json_array();
    for (unsigned i = 0; i < row->n && i < SR_SUSPECT_AFTER; i++) {
        json_array_append_new(attempts, json_integer(row->attempts[i]));
        const char *abbrev = row->signaled[i] ? sigabbrev_np(row->codes[i] - 128) : NULL;
        json_t *e = json_pack("{s:i}", "code", row->codes[i]);
        if (e && row->signaled[i])
            json_object_set_new(e, "signal", json_string(abbrev ? abbrev : "?"));
        json_array_append_new(exits, e);
    }
    return json_pack("{s:i,s:s,s:I,s:o,s:s,s:o,s:o,s:s,s:s}", "format", 1, "run_id", run_id, "seq",
                     (json_int_t)row->seq, "step", step >= 0 ? json_integer(step) : json_null(),
                     "reason", reason, "attempts", attempts, "exits", exits, "host", host, "time",
                     when);
}

int sr_suspect_put(struct sr_store *st, const char *run_id, int64_t step,
                   const struct sr_suspect_row *row)
{
    char key[KEY_LEN];
    int rc = mark_key(key, run_id, row->seq);
    if (rc < 0)
        return rc;
    json_t *o = mark_json(run_id, step, row);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text)
        return sr_errf(-ENOMEM, "cannot write %s: %s", key, strerror(ENOMEM));
    rc = sr_store_put_if(st, key, text, strlen(text), NULL, NULL);
    free(text);
    if (rc == -EEXIST) /* marked already (another wrapper, an earlier try) */
        return 0;
    return rc < 0 ? sr_errf(rc, "cannot write %s in %s: %s", key, sr_store_url(st), sr_strerror(rc))
                  : 0;
}

static void copy_str(json_t *o, const char *name, char *dst, size_t len)
{
    const char *v = json_string_value(json_object_get(o, name));
    snprintf(dst, len, "%s", v ? v : "");
}

int sr_suspect_load(struct sr_store *st, const char *run_id, uint64_t seq,
                    struct sr_suspect_mark *out)
{
    *out = (struct sr_suspect_mark){.seq = seq, .step = -1};
    char key[KEY_LEN];
    int rc = mark_key(key, run_id, seq);
    if (rc < 0)
        return rc;
    char *buf = NULL;
    size_t len = 0;
    rc = sr_store_get(st, key, MARK_MAX, &buf, &len);
    if (rc == -EFBIG)
        rc = -EBADMSG;
    if (rc < 0) {
        free(buf);
        return rc == -ENOENT || rc == -EBADMSG ? rc : sr_errf(rc, "cannot read %s", key);
    }
    json_t *o = json_loadb(buf, len, 0, NULL);
    free(buf);
    if (!json_is_object(o) || json_integer_value(json_object_get(o, "seq")) != (json_int_t)seq) {
        json_decref(o);
        return -EBADMSG;
    }
    copy_str(o, "reason", out->reason, sizeof(out->reason));
    copy_str(o, "host", out->host, sizeof(out->host));
    copy_str(o, "time", out->time, sizeof(out->time));
    json_t *step = json_object_get(o, "step");
    if (json_is_integer(step))
        out->step = json_integer_value(step);
    json_decref(o);
    return 0;
}

int sr_suspect_forget(struct sr_store *st, const char *run_id, uint64_t seq)
{
    char key[KEY_LEN];
    int rc = mark_key(key, run_id, seq);
    if (rc == 0)
        rc = sr_store_delete(st, key);
    return rc == -ENOENT ? 0 : rc;
}

int sr_suspect_newest_trusted(struct sr_store *st, const char *run_id, struct sr_manifest *out)
{
    struct sr_ckpt_list l;
    struct sr_suspect_set bad = {0};
    int rc = sr_ckpt_list(st, run_id, &l);
    if (rc < 0)
        return rc;
    if ((rc = sr_suspect_list(st, run_id, &bad)) == 0) {
        rc = -ENOENT;
        for (size_t i = l.n; rc == -ENOENT && i-- > 0;)
            if (!sr_suspect_has(&bad, l.v[i].seq)) {
                *out = l.v[i];
                rc = 0;
            }
    }
    sr_suspect_set_free(&bad);
    sr_ckpt_list_free(&l);
    return rc;
}
