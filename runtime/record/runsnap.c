/*
 * runsnap.c - every run of a store in a number of requests that grows
 * with the runs, not with their objects (docs/store.md, "summaries/"):
 * one listing of summaries/ (each run's summary, with its ETag, and the
 * readers' snapshots), the newest snapshot, and one by one only the runs
 * whose summary changed since it was written.
 *
 * A snapshot is written by a reader, never by a daemon: create-only,
 * named by its time, the newest wins. It holds, per run, the summary the
 * reader believed (the same object as summaries/<run>.json, digest and all) and
 * what it was checked against: the ETag of summaries/<run>.json when the
 * summary was believed, else (the run was read from its logs: multi-node,
 * without a summary, or stale) the listed logs' sizes and
 * DONE. Nothing in it is trusted beyond what the listing still says:
 *
 *   - an entry is taken only while summaries/<run>.json is listed with
 *     the entry's ETag, and only if its summary passes sr_runsum_from_json
 *     (ranges, digest) and names its run;
 *   - an entry of logs is taken only while <run>/ lists exactly those logs
 *     of those sizes and the same DONE (one listing of the run);
 *   - anything else (a new or rewritten summary, a hostile or stale entry)
 *     is read as sr_runsum_load_all reads a run: its listing, its summary
 *     checked against its logs, else its logs.
 *
 * Threads: the runs are read on a few threads of sr_parallel_for, joined
 * before sr_runsnap_load returns; each item is one thread's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "layout.h"
#include "manifest.h"
#include "parallel.h"
#include "runsum_int.h"
#include "units.h"

#define SNAP_VERSION 1
#define SNAP_PREFIX SR_KEY_SUMMARIES "/snap/"
/* What a snapshot may weigh: per entry, twice its run's listed summary
 * (the entry holds that summary, re-serialised) plus ENTRY_BYTES (its run,
 * ETag, logs and DONE), for the runs listed and SNAP_MIN more, never more
 * than SNAP_BYTES_MAX. A larger one is not read (stats reads the logs):
 * no object in the store can make a reader grow past what its runs need. */
#define SNAP_BYTES_MAX (1024u << 20)
#define ENTRY_BYTES 1024u
#define SNAP_MIN 16                     /* runs read one by one that make a snapshot worth it */
#define SNAP_FUTURE_MS (86400 * 1000LL) /* a snapshot dated later than this is ignored */
#define THREADS 16

/* ---- the listing ------------------------------------------------------------- */

int sr_snap_name_ms(const char *name, int64_t *ms)
{
    const char *p = name;
    int64_t t = 0;
    for (int i = 0; i < 13; i++, p++) {
        if (*p < '0' || *p > '9')
            return -1;
        t = t * 10 + (*p - '0');
    }
    if (*p++ != '-')
        return -1;
    size_t k = 0;
    while ((p[k] >= '0' && p[k] <= '9') || (p[k] >= 'a' && p[k] <= 'f'))
        k++;
    if (k < 1 || k > 32 || strcmp(p + k, ".json") != 0)
        return -1;
    *ms = t;
    return 0;
}

/* "snap/<a snapshot's name>" (sr_snap_name_ms): 0 and its time, or -1. */
static int snap_name_ms(const char *name, int64_t *ms)
{
    return strncmp(name, "snap/", 5) == 0 ? sr_snap_name_ms(name + 5, ms) : -1;
}

int sr_runsnap_list_add(struct sr_strlist *sums, struct sr_strlist *snaps, const char *name,
                        uint64_t size, const char *etag)
{
    int64_t ms;
    if (snap_name_ms(name, &ms) == 0)
        return sr_strlist_push_sized(snaps, name, size);
    const size_t n = strlen(name);
    if (n <= 5 || n - 5 > SR_RUN_ID_MAX || strcmp(name + n - 5, ".json") != 0)
        return 0;
    char run[SR_RUN_ID_MAX + 1];
    memcpy(run, name, n - 5);
    run[n - 5] = '\0';
    if (!sr_manifest_run_id_valid(run))
        return 0;
    return sr_strlist_push_tagged(sums, run, size, etag);
}

long sr_runsnap_find(const struct sr_strlist *l, const char *s)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const int c = strcmp(l->v[mid], s);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

const char *sr_snap_newest(const struct sr_strlist *names, const char *dir)
{
    const size_t skip = strlen(dir);
    const int64_t limit = sr_wall_ms() + SNAP_FUTURE_MS;
    for (size_t i = names->n; i-- > 0;) {
        int64_t ms;
        if (strncmp(names->v[i], dir, skip) == 0 && sr_snap_name_ms(names->v[i] + skip, &ms) == 0 &&
            ms <= limit)
            return names->v[i];
    }
    return NULL;
}

static const char *newest_snap(const struct sr_strlist *snaps)
{
    return sr_snap_newest(snaps, "snap/");
}

/* ---- entries ----------------------------------------------------------------- */

static const char *entry_run(const json_t *e)
{
    return json_string_value(json_object_get(e, "run"));
}

/* The snapshot's object, when it is one: a version we know, its runs an
 * array of objects sorted by run id, each once. */
static json_t *snap_parse(const char *buf, size_t len)
{
    json_error_t err;
    json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
    const json_t *runs = json_object_get(o, "runs");
    json_t *ver = json_object_get(o, "version");
    int ok = json_is_integer(ver) && json_integer_value(ver) == SNAP_VERSION && json_is_array(runs);
    const char *prev = NULL;
    for (size_t i = 0; ok && i < json_array_size(runs); i++) {
        const json_t *e = json_array_get(runs, i);
        const char *run = entry_run(e);
        const json_t *etag = json_object_get(e, "etag");
        ok = json_is_object(e) && run && sr_manifest_run_id_valid(run) && json_is_string(etag) &&
             (!prev || strcmp(prev, run) < 0);
        prev = run;
    }
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The entry's summary, when it is a valid one of run. */
static int entry_summary(const json_t *e, const char *run, struct sr_runsum *out)
{
    const int rc = sr_runsum_from_json(json_object_get(e, "summary"), out);
    if (rc < 0)
        return rc;
    if (strcmp(out->run, run) != 0) {
        sr_runsum_free(out);
        return -EBADMSG;
    }
    out->from_logs = json_object_get(e, "logs") != NULL;
    out->from_snapshot = 1;
    return 0;
}

/* 1 when the entry's logs and DONE are exactly those listed. */
static int logs_match(const json_t *e, const struct sr_runsum_listed *l)
{
    const json_t *logs = json_object_get(e, "logs");
    const json_t *done = json_object_get(e, "done");
    if (!json_is_array(logs) || !json_is_boolean(done) || json_is_true(done) != (l->done == 1) ||
        json_array_size(logs) != l->logs.n)
        return 0;
    for (size_t i = 0; i < l->logs.n; i++) {
        const json_t *p = json_array_get(logs, i);
        const char *name = json_string_value(json_array_get(p, 0));
        const json_t *size = json_array_get(p, 1);
        if (!name || strcmp(name, l->logs.v[i]) != 0 || !json_is_integer(size) ||
            (uint64_t)json_integer_value(size) != sr_strlist_size(&l->logs, i) ||
            sr_strlist_size(&l->logs, i) == SR_SIZE_UNKNOWN)
            return 0;
    }
    return 1;
}

/* A new entry for run: its summary, checked against etag (the listed
 * summaries/<run>.json, NULL when none) when it was believed, else
 * against l; the ETag is kept either way (a multi-node run's marker: the
 * entry stands while the marker and the logs do). */
static json_t *entry_new(const char *run, const char *etag, const struct sr_runsum *r,
                         const struct sr_runsum_listed *l)
{
    json_t *sum = sr_runsum_to_json(r);
    json_t *e =
        sum ? json_pack("{s:s, s:s, s:o}", "run", run, "etag", etag ? etag : "", "summary", sum)
            : NULL;
    if (!e || (etag && !r->from_logs))
        return e;
    json_t *logs = json_array();
    for (size_t i = 0; logs && i < l->logs.n; i++)
        if (json_array_append_new(logs, json_pack("[s, I]", l->logs.v[i],
                                                  (json_int_t)sr_strlist_size(&l->logs, i))) < 0) {
            json_decref(logs);
            logs = NULL;
        }
    if (!logs || json_object_set_new(e, "logs", logs) < 0 ||
        json_object_set_new(e, "done", json_boolean(l->done == 1)) < 0) {
        json_decref(e);
        return NULL;
    }
    return e;
}

/* ---- writing ----------------------------------------------------------------- */

/* Puts the snapshot of runs (an array of entries, sorted by run; stolen)
 * create-only under a new name, then deletes the listed ones but the
 * newest (a reader may be reading it now); one dated in the future goes
 * too. */
static void snap_write(struct sr_store *st, json_t *runs, const struct sr_strlist *snaps)
{
    if (sr_store_read_only(st)) { /* said once, when it was opened */
        json_decref(runs);
        return;
    }
    const int64_t now = sr_wall_ms();
    json_t *o = json_pack("{s:i, s:I, s:o}", "version", SNAP_VERSION, "created_ms", (json_int_t)now,
                          "runs", runs);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    /* Named after every snapshot listed (a clock ahead of ours, or one
     * that could not be read): the newest name is the newest content. */
    const char *newest = newest_snap(snaps);
    int64_t ms = now, last;
    if (newest && snap_name_ms(newest, &last) == 0 && last >= ms)
        ms = last + 1;
    char key[128];
    snprintf(key, sizeof(key), "%s%013" PRId64 "-%08lx%04x.json", SNAP_PREFIX, ms,
             (unsigned long)getpid(), (unsigned)(sr_wall_ms() ^ (uintptr_t)&key) & 0xffff);
    const int rc = text ? sr_store_put_if(st, key, text, strlen(text), NULL, NULL) : -ENOMEM;
    free(text);
    if (rc < 0) {
        sr_debug("cannot write the snapshot %s: %s", key, sr_strerror(rc));
        return;
    }
    sr_debug("wrote the snapshot %s", key);
    for (size_t i = 0; i < snaps->n; i++) {
        if (snaps->v[i] == newest) /* another reader may be reading it */
            continue;
        sr_key_join(key, sizeof(key), SR_KEY_SUMMARIES, snaps->v[i]);
        if (sr_store_delete(st, key) < 0)
            sr_err_clear(); /* another reader's cleanup, or none: the next one tries */
    }
}

void sr_runsnap_save_full(struct sr_store *st, const struct sr_strlist *runs,
                          const struct sr_runsum_listed *l, const struct sr_runsum *v,
                          const struct sr_strlist *sums, const struct sr_strlist *snaps)
{
    size_t believed = 0;
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < runs->n; i++) {
        const long k = sr_runsnap_find(sums, runs->v[i]);
        const char *etag = k >= 0 ? sr_strlist_etag(sums, (size_t)k) : NULL;
        believed += etag && !v[i].from_logs;
        if (json_array_append_new(arr, entry_new(runs->v[i], etag, &v[i], &l[i])) < 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    /* Worth it only for a store whose runs mostly have summaries (runs
     * without one would each cost a listing per read: read it all). */
    if (arr && believed >= SNAP_MIN && runs->n - believed <= runs->n / 8)
        snap_write(st, arr, snaps);
    else
        json_decref(arr);
}

/* ---- reading ----------------------------------------------------------------- */

enum how { TAKE, CHECK, READ };

struct item {
    const char *run;
    enum how how;
    const json_t *entry; /* in the snapshot, or NULL */
    const char *etag;    /* of summaries/<run>.json as listed, or NULL */
    struct sr_runsum r;
    struct sr_runsum_listed l;
    int gone;     /* nothing under <run>/: a deleted run's leftover summary */
    int as_entry; /* r is the entry's: a new snapshot keeps it as it is */
};

struct fast {
    struct sr_store *st;
    struct item *it;
    size_t n, cap;
};

static int read_item(void *ctx, size_t i)
{
    struct fast *f = ctx;
    struct item *it = &f->it[i];
    if (it->how == TAKE && entry_summary(it->entry, it->run, &it->r) == 0) {
        it->as_entry = 1;
        return sr_runsum_settle(f->st, it->run, &it->r);
    }
    int rc = sr_runsum_list_run(f->st, it->run, &it->l);
    if (rc < 0)
        return sr_errf(rc, "cannot list the run %s: %s", it->run, sr_strerror(rc));
    it->l.summary = it->etag != NULL; /* summaries/<run>.json is listed */
    if (it->l.keys == 0) {
        it->gone = 1;
        return 0;
    }
    if (it->how == CHECK && logs_match(it->entry, &it->l) &&
        entry_summary(it->entry, it->run, &it->r) == 0) {
        it->as_entry = 1;
        return sr_runsum_settle(f->st, it->run, &it->r);
    }
    it->how = READ;
    rc = sr_runsum_read_listed(f->st, it->run, &it->l, &it->r);
    return rc < 0 ? sr_errf(rc, "cannot read the run %s: %s", it->run, sr_strerror(rc)) : 0;
}

static int add_item(struct fast *f, const char *run, enum how how, const json_t *e,
                    const char *etag)
{
    if (f->n == f->cap) {
        const size_t cap = f->cap ? 2 * f->cap : 256;
        struct item *v = realloc(f->it, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        f->it = v;
        f->cap = cap;
    }
    f->it[f->n++] = (struct item){.run = run, .how = how, .entry = e, .etag = etag};
    return 0;
}

/* Each run of the listing or the snapshot, and how to read it: merged in
 * run order (both are sorted). */
static int plan(struct fast *f, const char *prefix, const struct sr_strlist *sums,
                const json_t *runs)
{
    const size_t ne = json_array_size(runs);
    size_t i = 0, k = 0;
    int rc = 0;
    while (rc == 0 && (i < sums->n || k < ne)) {
        const json_t *e = k < ne ? json_array_get(runs, k) : NULL;
        const int c = i == sums->n ? 1 : !e ? -1 : strcmp(sums->v[i], entry_run(e));
        const char *run = c <= 0 ? sums->v[i] : entry_run(e);
        const char *etag = c <= 0 ? sr_strlist_etag(sums, i) : NULL;
        const char *was = c >= 0 ? json_string_value(json_object_get(e, "etag")) : NULL;
        i += c <= 0;
        k += c >= 0;
        if (strncmp(run, prefix, strlen(prefix)) != 0)
            continue;
        if (c < 0) /* new since the snapshot */
            rc = add_item(f, run, READ, NULL, etag);
        else if (c == 0 && *was && strcmp(was, etag) == 0)
            rc = add_item(f, run, json_object_get(e, "logs") ? CHECK : TAKE, e, etag);
        else if (c == 0) /* rewritten since */
            rc = add_item(f, run, READ, NULL, etag);
        else if (!*was) /* no summary then: its logs say whether it changed */
            rc = add_item(f, run, CHECK, e, NULL);
        /* else its summary was deleted with the run (sr_ckpt_clear_run) */
    }
    return rc;
}

/* The runs read, in order, into *out; a new snapshot when enough were
 * read one by one (the whole store only). */
static int finish(struct fast *f, const char *prefix, const struct sr_strlist *snaps,
                  struct sr_runsum **out, size_t *n)
{
    size_t reads = 0, m = 0;
    json_t *arr = *prefix ? NULL : json_array();
    struct sr_runsum *v = calloc(f->n ? f->n : 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < f->n; i++) {
        struct item *it = &f->it[i];
        if (it->gone)
            continue;
        reads += it->how == READ;
        json_t *e = !arr           ? NULL
                    : it->as_entry ? json_incref((json_t *)it->entry)
                                   : entry_new(it->run, it->etag, &it->r, &it->l);
        if (arr && json_array_append_new(arr, e) < 0) {
            json_decref(arr);
            arr = NULL;
        }
        v[m++] = it->r;
        memset(&it->r, 0, sizeof(it->r));
    }
    if (arr && reads >= SNAP_MIN)
        snap_write(f->st, arr, snaps);
    else
        json_decref(arr);
    *out = v;
    *n = m;
    return 0;
}

uint64_t sr_runsnap_cap(const struct sr_strlist *sums)
{
    uint64_t cap = (uint64_t)(sums->n + SNAP_MIN) * ENTRY_BYTES;
    for (size_t i = 0; i < sums->n && cap < SNAP_BYTES_MAX; i++) {
        const uint64_t z = sr_strlist_size(sums, i);
        cap += z == SR_SIZE_UNKNOWN || z > SR_RUNSUM_BYTES_MAX ? SR_RUNSUM_BYTES_MAX : 2 * z;
    }
    return cap < SNAP_BYTES_MAX ? cap : SNAP_BYTES_MAX;
}

/* The summaries/ listing and the newest snapshot: -EAGAIN when there is
 * no such listing with ETags (file, Azure) or no snapshot. */
int sr_runsnap_list(struct sr_store *st, const char *prefix, int etags, struct sr_strlist *sums,
                    struct sr_strlist *snaps)
{
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", SR_KEY_SUMMARIES, prefix);
    struct sr_strlist keys = {0};
    int rc = sr_store_list_keys(st, key, &keys);
    const size_t skip = strlen(SR_KEY_SUMMARIES "/");
    for (size_t i = 0; rc == 0 && i < keys.n; i++) {
        if (etags && !sr_strlist_etag(&keys, i))
            rc = -EAGAIN; /* a listing without ETags cannot say what changed */
        else
            rc = sr_runsnap_list_add(sums, snaps, keys.v[i] + skip, sr_strlist_size(&keys, i),
                                     sr_strlist_etag(&keys, i));
    }
    sr_strlist_free(&keys);
    return rc;
}

static int read_listing(struct sr_store *st, struct sr_strlist *sums, struct sr_strlist *snaps,
                        json_t **snap)
{
    int rc = sr_runsnap_list(st, "", 1, sums, snaps);
    if (rc == -ENOTSUP)
        return -EAGAIN;
    const char *name = rc == 0 ? newest_snap(snaps) : NULL;
    if (rc < 0 || !name)
        return rc < 0 ? rc : -EAGAIN;
    char key[128], *buf = NULL;
    size_t len = 0;
    sr_key_join(key, sizeof(key), SR_KEY_SUMMARIES, name);
    const uint64_t cap = sr_runsnap_cap(sums);
    uint64_t size = SR_SIZE_UNKNOWN;
    for (size_t i = 0; i < snaps->n; i++)
        if (snaps->v[i] == name)
            size = sr_strlist_size(snaps, i);
    if (size != SR_SIZE_UNKNOWN && size > cap) {
        sr_debug("the snapshot %s is unusable (%" PRIu64 " bytes, more than the %" PRIu64
                 " its %zu runs can need): reading every run",
                 key, size, cap, sums->n);
        return -EAGAIN;
    }
    rc = sr_store_get(st, key, (size_t)cap, &buf, &len);
    if (rc == -ENOMEM)
        return rc;
    *snap = rc == 0 ? snap_parse(buf, len) : NULL;
    free(buf);
    if (!*snap) {
        sr_debug("the snapshot %s is unusable (%s): reading every run", key,
                 rc < 0 ? sr_strerror(rc) : "not a snapshot");
        return -EAGAIN;
    }
    return 0;
}

int sr_runsnap_load(struct sr_store *st, const char *prefix, struct sr_runsum **out, size_t *n)
{
    struct sr_strlist sums = {0}, snaps = {0};
    json_t *snap = NULL;
    struct fast f = {.st = st};
    int rc = read_listing(st, &sums, &snaps, &snap);
    if (rc == 0)
        rc = plan(&f, prefix, &sums, json_object_get(snap, "runs"));
    size_t work = 0;
    for (size_t i = 0; rc == 0 && i < f.n; i++)
        work += f.it[i].how != TAKE;
    /* A run read one by one costs a listing and a GET or more; a whole
     * read about one GET a run: past a quarter of the runs, read it all. */
    if (rc == 0 && work > SNAP_MIN && work > f.n / 4)
        rc = -EAGAIN;
    if (rc == 0)
        rc = sr_parallel_for(f.n, THREADS, read_item, &f);
    if (rc == 0)
        rc = finish(&f, prefix, &snaps, out, n);
    for (size_t i = 0; i < f.n; i++) {
        sr_runsum_free(&f.it[i].r);
        sr_strlist_free(&f.it[i].l.logs);
    }
    free(f.it);
    json_decref(snap);
    sr_strlist_free(&sums);
    sr_strlist_free(&snaps);
    return rc;
}
