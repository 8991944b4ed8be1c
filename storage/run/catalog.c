/*
 * catalog.c - the checkpoints of a run inside a store (see catalog.h and
 * docs/store.md).
 *
 * DESIGN: the manifest is the commit point. Publish uploads the data first
 * and writes the manifest last, so a crash at any moment leaves either the
 * previous set of checkpoints or the previous set plus the new one; a seq
 * directory without a manifest is an incomplete upload, never restored, but
 * its seq is never reused (next_seq counts it). GC deletes manifests before
 * data for the same reason. Restore trusts the manifest only as far as it
 * must: the data's size and checksum are verified against it before
 * anything is extracted, and extraction is capped at the raw size it
 * declares; a checkpoint that fails (corrupt, truncated, missing, hostile)
 * is skipped for the previous one, while local errors (disk full, I/O) are
 * returned because an older checkpoint would not fix them.
 *
 * Threads: no state of its own; safe wherever the store handle is.
 */
#include "catalog.h"
#include "catalog_int.h"
#include "framelist.h"
#include "fsutil.h"
#include "layout.h"
#include "log.h"
#include "quarantine.h"
#include "termsafe.h"
#include "units.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MANIFEST_NAME SR_KEY_MANIFEST
#define DATA_NAME SR_KEY_DATA
#define MANIFEST_MAX SR_MANIFEST_MAX
#define KEY_LEN 512

static int check_run(const char *run_id)
{
    if (!sr_manifest_run_id_valid(run_id))
        return sr_errf(-EINVAL,
                       "invalid run id \"%.140s\" (1-128 of A-Z a-z 0-9 . _ -, not starting "
                       "with . or -)",
                       run_id ? run_id : "");
    return 0;
}

void sr_ckpt_key(char *buf, size_t len, const char *run_id, uint64_t seq, const char *name)
{
    (void)sr_key_ckpt(buf, len, run_id, seq, name);
}

void sr_ckpt_names(const struct sr_manifest *m, char *data, char *record)
{
    if (m->is_part) {
        snprintf(data, SR_CKPT_NAME_LEN, "part-%u-e%llu.tar.zst", m->node_rank,
                 (unsigned long long)m->epoch);
        snprintf(record, SR_CKPT_NAME_LEN, "part-%u-e%llu.json", m->node_rank,
                 (unsigned long long)m->epoch);
    } else {
        snprintf(data, SR_CKPT_NAME_LEN, "%s", DATA_NAME);
        snprintf(record, SR_CKPT_NAME_LEN, "%s", MANIFEST_NAME);
    }
}

/* Key of m's data object or record (its manifest). */
static void object_key(char key[KEY_LEN], const struct sr_manifest *m, int record)
{
    char data[SR_CKPT_NAME_LEN], rec[SR_CKPT_NAME_LEN];
    sr_ckpt_names(m, data, rec);
    sr_ckpt_key(key, KEY_LEN, m->run_id, m->seq, record ? rec : data);
}

void sr_ckpt_list_free(struct sr_ckpt_list *l)
{
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

/* Seq of a directory name under ckpt/, 0 when it is not one. */
uint64_t sr_ckpt_parse_seq(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 19)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (name[i] < '0' || name[i] > '9')
            return 0;
    return strtoull(name, NULL, 10);
}

/* Reads and checks the manifest of seq: 0, -ENOENT when there is none,
 * -EBADMSG when it is unparseable or belongs elsewhere, other errors of the
 * store as they come. */
static int load_record(struct sr_store *st, const char *run_id, uint64_t seq, const char *name,
                       struct sr_manifest *m)
{
    char key[KEY_LEN];
    char *buf = NULL;
    size_t len = 0;
    sr_ckpt_key(key, sizeof(key), run_id, seq, name);
    int rc = sr_store_get(st, key, MANIFEST_MAX, &buf, &len);
    if (rc < 0)
        return rc;
    rc = sr_manifest_parse(buf, len, m);
    free(buf);
    if (rc < 0)
        return rc;
    if (m->seq != seq || strcmp(m->run_id, run_id) != 0)
        return sr_errf(-EBADMSG, "manifest %s belongs to run %s seq %llu", key, m->run_id,
                       (unsigned long long)m->seq);
    char data[SR_CKPT_NAME_LEN], rec[SR_CKPT_NAME_LEN];
    sr_ckpt_names(m, data, rec);
    if (strcmp(rec, name) != 0)
        return sr_errf(-EBADMSG, "manifest %s describes %s", key, rec);
    return 0;
}

static int load_manifest(struct sr_store *st, const char *run_id, uint64_t seq,
                         struct sr_manifest *m)
{
    return load_record(st, run_id, seq, MANIFEST_NAME, m);
}

int sr_ckpt_load_record(struct sr_store *st, const char *run_id, uint64_t seq, const char *name,
                        struct sr_manifest *m)
{
    int rc = check_run(run_id);
    return rc < 0 ? rc : load_record(st, run_id, seq, name, m);
}

/* Oldest first: by owner epoch, then seq (see catalog.h). */
static int cmp_age(const void *a, const void *b)
{
    const struct sr_manifest *x = a, *y = b;
    if (x->epoch != y->epoch)
        return x->epoch < y->epoch ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Adds the manifest of seq to out when it is complete; skips (with a
 * warning) a manifest that cannot be used. */
static int list_one(struct sr_store *st, const char *run_id, uint64_t seq, struct sr_ckpt_list *out,
                    size_t *cap)
{
    struct sr_manifest m;
    int rc = load_manifest(st, run_id, seq, &m);
    if (rc == -ENOENT)
        return 0; /* incomplete: data uploaded, manifest not (yet) */
    if (rc == -EBADMSG || rc == -EFBIG || rc == -EISDIR) {
        char key[KEY_LEN];
        sr_ckpt_key(key, sizeof(key), run_id, seq, MANIFEST_NAME);
        sr_warn("skipping checkpoint %s: %s", key, sr_strerror(rc));
        return 0;
    }
    if (rc < 0)
        return rc;
    if (out->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        struct sr_manifest *v = realloc(out->v, ncap * sizeof(*v));
        if (!v)
            return sr_errf(-ENOMEM, "cannot list checkpoints of %s: %s", run_id, strerror(ENOMEM));
        out->v = v;
        *cap = ncap;
    }
    out->v[out->n++] = m;
    return 0;
}

/* Every seq directory of the run (a valid run id), complete or not. */
static int list_seqs(struct sr_store *st, const char *run_id, struct sr_strlist *names)
{
    const int rc = check_run(run_id);
    return rc < 0 ? rc : sr_list_run(st, run_id, SR_KEY_CKPT, names);
}

int sr_ckpt_list(struct sr_store *st, const char *run_id, struct sr_ckpt_list *out)
{
    memset(out, 0, sizeof(*out));
    struct sr_strlist names;
    int rc = list_seqs(st, run_id, &names);
    if (rc < 0)
        return rc;
    size_t cap = 0;
    for (size_t i = 0; i < names.n; i++) {
        uint64_t seq = sr_ckpt_parse_seq(names.v[i]);
        if (seq == 0)
            continue;
        if ((rc = list_one(st, run_id, seq, out, &cap)) < 0)
            goto out;
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof(*out->v), cmp_age);
out:
    sr_strlist_free(&names);
    if (rc < 0)
        sr_ckpt_list_free(out);
    return rc;
}

int sr_ckpt_max_epoch(struct sr_store *st, const char *run_id, uint64_t *epoch)
{
    struct sr_ckpt_list l;
    *epoch = 0;
    const int rc = sr_ckpt_list(st, run_id, &l);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < l.n; i++)
        if (l.v[i].epoch > *epoch)
            *epoch = l.v[i].epoch;
    sr_ckpt_list_free(&l);
    return 0;
}

int sr_ckpt_next_seq(struct sr_store *st, const char *run_id, uint64_t *seq)
{
    struct sr_strlist names;
    const int rc = list_seqs(st, run_id, &names);
    if (rc < 0)
        return rc;
    uint64_t max = 0;
    for (size_t i = 0; i < names.n; i++) {
        uint64_t s = sr_ckpt_parse_seq(names.v[i]);
        if (s > max)
            max = s;
    }
    sr_strlist_free(&names);
    *seq = max + 1;
    return 0;
}

/* A new checkpoint must not overwrite a committed one: 0 when seq is free. */
int sr_ckpt_check_new_seq(struct sr_store *st, const struct sr_manifest *m)
{
    int rc = check_run(m->run_id);
    if (rc < 0)
        return rc;
    char key[KEY_LEN];
    uint64_t size = 0;
    object_key(key, m, 1);
    rc = sr_store_size(st, key, &size);
    if (rc == 0)
        return sr_errf(-EEXIST, "%s already exists in %s", key, sr_store_url(st));
    return rc == -ENOENT ? 0 : rc;
}

/* The data object of m must have the size m declares: 0, or mismatch (a
 * negative errno: -EIO after an upload, -EBADMSG for a stored one), or the
 * store's error. key receives the data object's key. */
static int data_size_check(struct sr_store *st, const struct sr_manifest *m, char key[KEY_LEN],
                           int mismatch)
{
    uint64_t size = 0;
    object_key(key, m, 0);
    const int rc = sr_store_size(st, key, &size);
    if (rc < 0)
        return rc;
    if (size != m->stored_bytes)
        return sr_errf(mismatch, "%s is %llu bytes but its manifest says %llu (truncated?)", key,
                       (unsigned long long)size, (unsigned long long)m->stored_bytes);
    return 0;
}

/* Writes the manifest create-only. A failed condition may be our own
 * earlier try (a retried request whose first try landed): the same bytes
 * there mean it was. */
static int put_manifest(struct sr_store *st, const struct sr_manifest *m, const char *json,
                        size_t len)
{
    char key[KEY_LEN];
    object_key(key, m, 1);
    int rc = sr_store_put_if(st, key, json, len, NULL, NULL);
    if (rc != -EEXIST || sr_store_holds(st, key, json, len, NULL))
        return rc == -EEXIST ? 0 : rc;
    return sr_errf(-EEXIST,
                   "checkpoint %s seq %llu was committed by another writer meanwhile (two "
                   "wrappers on one run?)",
                   m->run_id, (unsigned long long)m->seq);
}

/* Checks the uploaded data object against the manifest, runs the fence,
 * then writes the manifest: the commit point. json is m encoded, or NULL
 * to encode here. */
int sr_ckpt_commit_manifest(struct sr_store *st, const struct sr_manifest *m, const char *json,
                            size_t len, const char *from, const struct sr_fence *fence)
{
    char key[KEY_LEN];
    int rc = data_size_check(st, m, key, -EIO);
    if (rc == -EIO) {
        char why[300];
        snprintf(why, sizeof(why), "%s", sr_strerror(rc)); /* sr_errf reuses that buffer */
        return sr_errf(rc, "%s (was %s changed while uploading?)", why, from);
    }
    if (rc < 0)
        return rc;
    if (fence && fence->check && (rc = fence->check(fence->ctx)) < 0)
        return rc;
    char *own = NULL;
    if (!json && (rc = sr_manifest_to_json(m, &own, &len)) < 0)
        return rc;
    rc = put_manifest(st, m, json ? json : own, len);
    free(own);
    return rc;
}

int sr_ckpt_publish(struct sr_store *st, const struct sr_manifest *m, const char *data_path,
                    const struct sr_fence *fence)
{
    int rc = sr_ckpt_check_new_seq(st, m);
    if (rc < 0)
        return rc;
    char key[KEY_LEN];
    char *json = NULL;
    size_t len = 0;
    /* Encode first: a manifest we could not write must not cost an upload. */
    if ((rc = sr_manifest_to_json(m, &json, &len)) < 0)
        return rc;
    object_key(key, m, 0);
    rc = sr_store_put_file_new(st, key, data_path);
    if (rc == 0)
        rc = sr_ckpt_commit_manifest(st, m, json, len, data_path, fence);
    free(json);
    return rc;
}

int sr_ckpt_publish_dir(struct sr_store *st, struct sr_manifest *m, const char *dir,
                        const struct sr_pack_opts *opts, const struct sr_fence *fence)
{
    int rc = sr_ckpt_check_new_seq(st, m);
    if (rc < 0)
        return rc;
    /* The archive goes from the compressor straight into the store (an
     * s3 multipart upload runs while later frames are still compressed);
     * the object becomes visible only at commit, the manifest after it. */
    char key[KEY_LEN];
    struct sr_store_writer *w = NULL;
    struct sr_pack_stats stats;
    memset(&stats, 0, sizeof(stats));
    const int64_t t0 = sr_now_ms();
    object_key(key, m, 0);
    if ((rc = sr_store_writer_open_new(st, key, &w)) < 0)
        return rc;
    rc = sr_pack_dir(dir, sr_store_writer_sink, w, opts, &stats);
    if (rc == 0)
        rc = sr_store_writer_commit(w);
    sr_store_writer_close(w);
    if (rc < 0)
        return rc;
    sr_manifest_set_archive(m, &stats, (double)(sr_now_ms() - t0) / 1000.0);
    return sr_ckpt_commit_manifest(st, m, NULL, 0, dir, fence);
}

/* Verifies and extracts one checkpoint into dir. */
static int restore_one(struct sr_store *st, const struct sr_manifest *m, const char *dir,
                       int threads)
{
    if (m->format >= 2)
        return sr_ckpt_restore_frames(st, m, dir, threads);
    char key[KEY_LEN];
    int rc = data_size_check(st, m, key, -EBADMSG);
    if (rc < 0)
        return rc;
    struct sr_source src;
    if ((rc = sr_store_source(st, key, &src)) < 0)
        return rc;
    /* The cap is what the manifest declared: a lying manifest cannot make
     * us extract more (raw_bytes 0 is never genuine: a tar has an end block). */
    struct sr_unpack_opts opts = {
        .threads = threads,
        .checksum = m->checksum,
        .max_raw_bytes = m->raw_bytes ? m->raw_bytes : 1,
    };
    struct sr_unpack_stats stats;
    memset(&stats, 0, sizeof(stats));
    rc = sr_unpack_to_dir(&src, dir, &opts, &stats);
    sr_store_source_close(st, &src);
    return rc;
}

/* Moves everything in from into into (directories merged, recursively, at
 * most `depth` levels): parts of one step hold disjoint files; a file in
 * two parts is an error, never a silent choice. */
static int merge_into(const char *from, const char *into, int depth)
{
    if (depth > 64)
        return sr_errf(-EBADMSG, "parts nest deeper than 64 directories below %s", into);
    DIR *d = opendir(from);
    if (!d)
        return sr_errf(-errno, "cannot read %s: %s", from, strerror(errno));
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char a[PATH_MAX], b[PATH_MAX];
        if (sr_pathf(a, sizeof(a), "%s/%s", from, e->d_name) < 0 ||
            sr_pathf(b, sizeof(b), "%s/%s", into, e->d_name) < 0) {
            rc = -ENAMETOOLONG;
            break;
        }
        struct stat sa, sb;
        if (lstat(a, &sa) != 0) {
            rc = sr_errf(-errno, "cannot read %s: %s", a, strerror(errno));
        } else if (lstat(b, &sb) != 0) {
            if (rename(a, b) != 0)
                rc = sr_errf(-errno, "cannot move %s to %s: %s", a, b, strerror(errno));
        } else if (S_ISDIR(sa.st_mode) && S_ISDIR(sb.st_mode)) {
            rc = merge_into(a, b, depth + 1);
        } else {
            rc = sr_errf(-EBADMSG, "two parts of the checkpoint hold %s", b + strlen(into) + 1);
        }
    }
    closedir(d);
    return rc;
}

int sr_ckpt_part_of(struct sr_store *st, const struct sr_manifest *set, uint32_t rank,
                    struct sr_manifest *part)
{
    *part = *set;
    part->is_part = 1;
    part->node_rank = rank;
    part->epoch = set->part_epoch[rank];
    char data[SR_CKPT_NAME_LEN], rec[SR_CKPT_NAME_LEN];
    sr_ckpt_names(part, data, rec);
    int rc = load_record(st, set->run_id, set->seq, rec, part);
    if (rc == 0 && (!part->is_part || part->node_rank != rank || part->nodes != set->nodes ||
                    part->step != set->step || part->epoch != set->part_epoch[rank]))
        rc = sr_errf(-EBADMSG, "%s/ckpt/%010llu/%s is not part %u of this checkpoint", set->run_id,
                     (unsigned long long)set->seq, rec, rank);
    return rc;
}

/* A part of set m, restored into dir. */
static int restore_part(struct sr_store *st, const struct sr_manifest *set, uint32_t rank,
                        const char *dir, int threads)
{
    struct sr_manifest part;
    const int rc = sr_ckpt_part_of(st, set, rank, &part);
    return rc < 0 ? rc : restore_one(st, &part, dir, threads);
}

/* Every part of set m into dir: the first as usual (dir is replaced), the
 * others into a scratch directory inside dir, then merged. */
static int restore_all_parts(struct sr_store *st, const struct sr_manifest *m, const char *dir,
                             int threads)
{
    int rc = restore_part(st, m, 0, dir, threads);
    for (uint32_t r = 1; rc == 0 && r < m->nodes; r++) {
        char tmp[PATH_MAX];
        if ((rc = sr_pathf(tmp, sizeof(tmp), "%s/.spotrun-part-%u", dir, r)) < 0)
            break;
        rc = restore_part(st, m, r, tmp, threads);
        if (rc == 0)
            rc = merge_into(tmp, dir, 0);
        sr_rmtree(tmp);
    }
    return rc;
}

static int restore_checkpoint(struct sr_store *st, const struct sr_manifest *m, const char *dir,
                              const struct sr_restore_opts *o)
{
    const uint32_t have = m->nodes ? m->nodes : 1, want = o && o->nodes ? o->nodes : 1;
    const int all = o && o->all_parts;
    if (have != want && !all)
        return sr_errf(-EINVAL,
                       "checkpoint %s seq %llu was made by %u node(s) and this run has %u: "
                       "resume with --restore-parts all (every part in every node's "
                       "directory), or with --nodes %u",
                       m->run_id, (unsigned long long)m->seq, have, want, have);
    const int threads = o ? o->threads : 0;
    if (m->nodes == 0)
        return restore_one(st, m, dir, threads);
    if (all)
        return restore_all_parts(st, m, dir, threads);
    return restore_part(st, m, o ? o->rank : 0, dir, threads);
}

/* Errors that condemn the checkpoint rather than this machine. */
static int is_unusable(int rc)
{
    return rc == -EBADMSG || rc == -EPERM || rc == -EFBIG || rc == -ENOENT;
}

static int restore_newest(struct sr_store *st, const char *run_id, const char *dir,
                          const struct sr_restore_opts *o, struct sr_manifest *out)
{
    struct sr_ckpt_list l;
    int rc = sr_ckpt_list(st, run_id, &l);
    if (rc < 0)
        return rc;
    /* Suspect checkpoints (quarantine.h) are never restored first. */
    struct sr_suspect_set bad = {0};
    if (l.n && (rc = sr_suspect_list(st, run_id, &bad)) < 0) {
        sr_ckpt_list_free(&l);
        return rc;
    }
    size_t suspect = 0;
    rc = sr_errf(-ENOENT, "run %s has no complete checkpoint in %s", run_id, sr_store_url(st));
    for (size_t i = l.n; i-- > 0;) {
        const struct sr_manifest *m = &l.v[i];
        if (sr_suspect_has(&bad, m->seq)) {
            sr_warn("checkpoint %s seq %llu is marked suspect (the job failed right after "
                    "restoring it; `spotrun show %s`): trying the previous one",
                    run_id, (unsigned long long)m->seq, run_id);
            suspect++;
            continue;
        }
        rc = restore_checkpoint(st, m, dir, o);
        if (rc == 0) {
            if (out)
                *out = *m;
            goto out;
        }
        if (!is_unusable(rc))
            goto out;
        sr_warn("checkpoint %s seq %llu is unusable (%s); trying the previous one", run_id,
                (unsigned long long)m->seq, sr_strerror(rc));
    }
    /* Checkpoints exist but none restores: not "fresh", or a run would
     * silently start over and bury them under new ones. */
    if (l.n > 0 && suspect == l.n)
        rc = sr_errf(-EBADMSG,
                     "every checkpoint of run %s (%zu) is marked suspect: the job failed right "
                     "after restoring each (`spotrun show %s` says how); `spotrun pull %s DIR "
                     "--seq N` fetches one to look at, `spotrun run --fresh` starts over, and "
                     "deleting %s/" SR_KEY_SUSPECT "/<seq>.json from the store trusts that one "
                     "again",
                     run_id, l.n, run_id, run_id, run_id);
    else if (l.n > 0)
        rc = sr_errf(-EBADMSG,
                     "all %zu checkpoint(s) of run %s are unusable (see the warnings above); "
                     "`spotrun show %s` lists them, --fresh starts over",
                     l.n, run_id, run_id);
out:
    sr_suspect_set_free(&bad);
    sr_ckpt_list_free(&l);
    return rc;
}

int sr_ckpt_restore(struct sr_store *st, const char *run_id, uint64_t seq, const char *dir,
                    int threads, struct sr_manifest *out)
{
    const struct sr_restore_opts o = {.threads = threads};
    return sr_ckpt_restore_node(st, run_id, seq, dir, &o, out);
}

int sr_ckpt_restore_node(struct sr_store *st, const char *run_id, uint64_t seq, const char *dir,
                         const struct sr_restore_opts *o, struct sr_manifest *out)
{
    int rc = check_run(run_id);
    if (rc < 0)
        return rc;
    if (seq == 0)
        return restore_newest(st, run_id, dir, o, out);
    struct sr_manifest m;
    rc = load_manifest(st, run_id, seq, &m);
    if (rc == -ENOENT)
        return sr_errf(-ENOENT, "run %s has no complete checkpoint seq %llu in %s", run_id,
                       (unsigned long long)seq, sr_store_url(st));
    if (rc < 0)
        return rc;
    rc = restore_checkpoint(st, &m, dir, o);
    if (rc == 0 && out)
        *out = m;
    struct sr_suspect_mark mark;
    const int marked = rc == 0 ? sr_suspect_load(st, run_id, seq, &mark) : -ENOENT;
    if (marked == 0 || marked == -EBADMSG) {
        char why[sizeof(mark.reason)] = "its mark is unreadable";
        if (mark.reason[0])
            sr_term_safe(mark.reason, why, sizeof(why));
        sr_warn("checkpoint %s seq %llu is marked suspect (%s): restored because it was asked "
                "for by its seq",
                run_id, (unsigned long long)seq, why);
    }
    if (marked < 0 && marked != -ENOENT && marked != -EBADMSG)
        sr_err_clear(); /* the restore stands; an unreadable mark is not its failure */
    return rc;
}

/* Deepest "directory" below a run's own ones that delete_tree descends:
 * spotrun nests two levels (ckpt/<seq>/object); a store tree deeper than
 * this is not spotrun's and is refused, not walked (nor recursed into). */
#define DELETE_MAX_DEPTH 16

/* Deletes every object under prefix (and prefix itself when an object). */
static int delete_tree_at(struct sr_store *st, const char *prefix, int depth)
{
    if (depth > DELETE_MAX_DEPTH)
        return sr_errf(-EBADMSG,
                       "cannot delete %.200s... from store %s: nested deeper than %d levels, "
                       "which spotrun never writes (remove it by hand)",
                       prefix, sr_store_url(st), DELETE_MAX_DEPTH);
    struct sr_strlist names;
    int rc = sr_store_list(st, prefix, &names);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < names.n && rc == 0; i++) {
        char key[KEY_LEN * 2];
        if (snprintf(key, sizeof(key), "%s/%s", prefix, names.v[i]) >= (int)sizeof(key)) {
            rc = sr_errf(-ENAMETOOLONG, "key %s/%s is too long", prefix, names.v[i]);
            break;
        }
        rc = delete_tree_at(st, key, depth + 1);
    }
    sr_strlist_free(&names);
    if (rc == 0)
        rc = sr_store_delete(st, prefix);
    return rc;
}

static int delete_tree(struct sr_store *st, const char *prefix)
{
    return delete_tree_at(st, prefix, 0);
}

/* Index of seq in l, or l->n when it is not a complete checkpoint. */
static size_t position(const struct sr_ckpt_list *l, uint64_t seq)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].seq == seq)
            return i;
    return l->n;
}

/* Adds the seqs of the objects m's frame list names to refs. A list that
 * is unreadable because it is bad adds nothing (that checkpoint cannot be
 * restored anyway); a store error fails. */
static int add_refs(struct sr_store *st, const struct sr_manifest *m, struct sr_frame_list *refs)
{
    struct sr_frame_list fl;
    int rc = sr_ckpt_frames(st, m, &fl);
    if (rc == -EBADMSG || rc == -ENOENT)
        return 0;
    for (uint32_t o = 0; rc == 0 && o < fl.nobj; o++) {
        const int r = sr_frame_list_object(refs, fl.obj_seq[o], 0);
        rc = r < 0 ? r : 0;
    }
    sr_frame_list_free(&fl);
    return rc;
}

/* The seqs whose data objects the checkpoints from `from` on reference:
 * format-2 frame lists, a multi-node checkpoint's in each of its parts
 * (each format-1 checkpoint or part references only its own). */
static int referenced(struct sr_store *st, const struct sr_ckpt_list *l, size_t from,
                      struct sr_frame_list *refs)
{
    for (size_t i = from; i < l->n; i++) {
        const struct sr_manifest *const m = &l->v[i];
        int rc = 0;
        if (m->nodes > 0 && !m->is_part) {
            for (uint32_t r = 0; rc == 0 && r < m->nodes && r < SR_NODES_MAX; r++) {
                struct sr_manifest part;
                if ((rc = sr_ckpt_part_of(st, m, r, &part)) == 0 && part.format >= 2)
                    rc = add_refs(st, &part, refs);
                else if (rc == -EBADMSG || rc == -ENOENT)
                    rc = 0;
            }
        } else if (m->format >= 2) {
            rc = add_refs(st, m, refs);
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int is_referenced(const struct sr_frame_list *refs, uint64_t seq)
{
    for (uint32_t i = 0; i < refs->nobj; i++)
        if (refs->obj_seq[i] == seq)
            return 1;
    return 0;
}

static int delete_manifest(struct sr_store *st, const char *run_id, uint64_t seq)
{
    char key[KEY_LEN];
    sr_ckpt_key(key, sizeof(key), run_id, seq, MANIFEST_NAME);
    const int rc = sr_store_delete(st, key);
    return rc == -ENOENT ? 0 : rc;
}

static int gc(struct sr_store *st, const char *run_id, unsigned keep, unsigned *deleted,
              unsigned *leftovers)
{
    if (deleted)
        *deleted = 0;
    if (leftovers)
        *leftovers = 0;
    int rc = check_run(run_id);
    if (rc < 0)
        return rc;
    if (keep == 0)
        return sr_errf(-EINVAL, "gc of %s must keep at least one checkpoint", run_id);
    struct sr_ckpt_list l;
    struct sr_strlist names = {0};
    if ((rc = sr_ckpt_list(st, run_id, &l)) < 0)
        return rc;
    struct sr_frame_list refs = {0};
    struct sr_suspect_set bad = {0};
    if ((rc = sr_list_run(st, run_id, SR_KEY_CKPT, &names)) < 0 ||
        (rc = sr_suspect_list(st, run_id, &bad)) < 0)
        goto out;
    /* The oldest complete ones go (oldest by (epoch, seq), as restore sees
     * them) but the newest keep that are not suspect and every one newer
     * (quarantine.h), and incomplete ones below the newest's seq. */
    uint64_t newest = l.n ? l.v[l.n - 1].seq : 0;
    const size_t drop = sr_suspect_gc_drop(&l, &bad, keep);
    /* Data objects that a kept checkpoint references stay (delta
     * checkpoints, docs/store.md "GC"); the lease keeps a writer out
     * meanwhile, and the newest checkpoint, the base of the next delta, is
     * always kept. */
    if ((rc = referenced(st, &l, drop, &refs)) < 0)
        goto out;
    /* Two passes, so that a gc killed anywhere leaves every checkpoint
     * still listed whole: first the manifests of the dropped checkpoints
     * (each is then no longer listed), then the data of every seq without
     * a manifest that no kept checkpoint references (a dropped delta may
     * reference an older dropped one's object until its manifest is gone).
     * What a killed gc leaves is an incomplete seq the next gc deletes. */
    for (size_t i = 0; i < names.n; i++) {
        const uint64_t seq = sr_ckpt_parse_seq(names.v[i]);
        if (seq && position(&l, seq) < drop && (rc = delete_manifest(st, run_id, seq)) < 0)
            goto out;
    }
    for (size_t i = 0; i < names.n; i++) {
        const uint64_t seq = sr_ckpt_parse_seq(names.v[i]);
        if (seq == 0)
            continue;
        const size_t at = position(&l, seq);
        const int complete = at < l.n;
        const int leftover = !complete && seq > newest && leftovers;
        if ((complete && at < drop) || (!complete && seq < newest) || leftover) {
            char key[KEY_LEN];
            sr_ckpt_key(key, sizeof(key), run_id, seq, NULL);
            const int kept = is_referenced(&refs, seq);
            if (!kept && (rc = delete_tree(st, key)) < 0)
                goto out;
            if (sr_suspect_has(&bad, seq) && (rc = sr_suspect_forget(st, run_id, seq)) < 0)
                goto out;
            if (leftover && !kept)
                (*leftovers)++;
            else if (!leftover && deleted) /* a dropped checkpoint, its data kept or not */
                (*deleted)++;
        }
    }
out:
    sr_suspect_set_free(&bad);
    sr_frame_list_free(&refs);
    sr_strlist_free(&names);
    sr_ckpt_list_free(&l);
    return rc;
}

int sr_ckpt_gc(struct sr_store *st, const char *run_id, unsigned keep, unsigned *deleted)
{
    return gc(st, run_id, keep, deleted, NULL);
}

int sr_ckpt_gc_held(struct sr_store *st, const char *run_id, unsigned keep, unsigned *deleted,
                    unsigned *leftovers)
{
    unsigned n = 0;
    return gc(st, run_id, keep, deleted, leftovers ? leftovers : &n);
}

int sr_ckpt_mark_done(struct sr_store *st, const char *run_id)
{
    int rc = check_run(run_id);
    if (rc < 0)
        return rc;
    char host[256] = "", when[32] = "";
    if (gethostname(host, sizeof(host) - 1) != 0)
        host[0] = '\0';
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *o = json_pack("{s:I,s:s,s:s}", "time", (json_int_t)now, "time_at", when, "host", host);
    char *s = o ? json_dumps(o, JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!s)
        return sr_errf(-ENOMEM, "cannot mark run %s done: %s", run_id, strerror(ENOMEM));
    char key[KEY_LEN];
    sr_key_run(key, sizeof(key), run_id, SR_KEY_DONE);
    size_t n = strlen(s);
    s[n] = '\n'; /* replaces the NUL: the object is n + 1 bytes of text */
    rc = sr_store_put(st, key, s, n + 1);
    free(s);
    return rc;
}

int sr_ckpt_is_done(struct sr_store *st, const char *run_id)
{
    int rc = check_run(run_id);
    if (rc < 0)
        return rc;
    char key[KEY_LEN];
    uint64_t size;
    sr_key_run(key, sizeof(key), run_id, SR_KEY_DONE);
    rc = sr_store_size(st, key, &size);
    if (rc == -ENOENT)
        return 0;
    return rc < 0 ? rc : 1;
}

int sr_ckpt_clear_run(struct sr_store *st, const char *run_id)
{
    int rc = check_run(run_id);
    if (rc < 0)
        return rc;
    /* Its summary in summaries/ first: a reader of that listing never
     * takes a run for alive once its deletion started. */
    char sum[KEY_LEN];
    sr_key_summaries(sum, sizeof(sum), run_id);
    if ((rc = sr_store_delete(st, sum)) < 0)
        return rc;
    struct sr_strlist names;
    if ((rc = sr_store_list(st, run_id, &names)) < 0)
        return rc;
    for (size_t i = 0; i < names.n && rc == 0; i++) {
        char key[KEY_LEN];
        sr_key_run(key, sizeof(key), run_id, names.v[i]);
        if (strcmp(names.v[i], SR_KEY_LEASE) != 0)
            rc = delete_tree(st, key);
    }
    sr_strlist_free(&names);
    return rc;
}

int sr_ckpt_list_runs(struct sr_store *st, struct sr_strlist *out)
{
    struct sr_strlist all;
    memset(out, 0, sizeof(*out));
    int rc = sr_store_list(st, "", &all);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < all.n && rc == 0; i++)
        if (sr_manifest_run_id_valid(all.v[i]))
            rc = sr_strlist_push(out, all.v[i]);
    sr_strlist_free(&all);
    if (rc < 0)
        sr_strlist_free(out);
    return rc;
}
