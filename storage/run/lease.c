/*
 * lease.c - one owner per run (see lease.h and docs/store.md, "Single
 * owner").
 *
 * DESIGN: every write of the LEASE object is conditional on the version we
 * last saw (create-only when there was none), so of two wrappers racing for
 * an expired lease exactly one wins and the other sees -EBUSY. A write that
 * fails its condition may still have been ours: a retried request whose
 * first try reached the server (connection reset after the write) fails
 * its own condition. So a failed condition is judged by reading the object
 * back: if it holds exactly the bytes we wrote, the write was ours.
 *
 * The lease document carries a write counter, so no two of our writes have
 * the same bytes (and no ETag repeats).
 */
#include "lease.h"
#include "catalog.h"
#include "layout.h"
#include "log.h"
#include "termsafe.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LEASE_MAX (64u << 10)
#define LEASE_FORMAT 1

struct sr_lease {
    pthread_mutex_t lock;
    struct sr_store *st;
    char run_id[SR_RUN_ID_MAX + 1];
    char key[SR_RUN_ID_MAX + 16];
    struct sr_lease_info info; /* as last written by us */
    uint64_t writes;
    char etag[SR_ETAG_MAX];
    int weak;
    int lost;
    char lost_why[256]; /* how it was lost, said again by every later call */
    int released;       /* by us: no more writes, no more commits */
    /* fixed at acquisition (info is rewritten under the lock by renewals;
     * these are read without it, by the keeper thread) */
    uint64_t epoch;
    int ttl;
};

static void lease_key(char *buf, size_t len, const char *run_id, int rank)
{
    (void)sr_key_lease(buf, len, run_id, rank);
}

static int encode(const char *run_id, const struct sr_lease_info *in, uint64_t writes, char **out,
                  size_t *len)
{
    json_t *o = json_pack("{s:i,s:s,s:s,s:s,s:I,s:s,s:I,s:I,s:I,s:I,s:i,s:b,s:I}", "format",
                          LEASE_FORMAT, "run_id", run_id, "owner", in->owner, "host", in->host,
                          "pid", (json_int_t)in->pid, "node", in->node, "epoch",
                          (json_int_t)in->epoch, "acquired", (json_int_t)in->acquired, "renewed",
                          (json_int_t)in->renewed, "expires", (json_int_t)in->expires, "ttl",
                          in->ttl, "released", in->released, "writes", (json_int_t)writes);
    if (o && in->prev_clean)
        json_object_set_new(o, "prev_clean", json_true());
    char *s = o ? json_dumps(o, JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!s)
        return sr_errf(-ENOMEM, "cannot encode the lease of %s: %s", run_id, strerror(ENOMEM));
    *len = strlen(s);
    *out = s;
    return 0;
}

static int get_i64(json_t *o, const char *name, int64_t min, int64_t *v)
{
    json_t *x = json_object_get(o, name);
    if (!json_is_integer(x) || json_integer_value(x) < min)
        return sr_errf(-EBADMSG, "lease: field \"%s\" must be an integer >= %lld", name,
                       (long long)min);
    *v = json_integer_value(x);
    return 0;
}

static int get_s(json_t *o, const char *name, char *dst, size_t len)
{
    json_t *x = json_object_get(o, name);
    if (!json_is_string(x) || strlen(json_string_value(x)) >= len)
        return sr_errf(-EBADMSG, "lease: field \"%s\" must be a string of at most %zu bytes", name,
                       len - 1);
    if (sr_text_has_ctrl(json_string_value(x))) /* printed by show and messages: SECURITY.md */
        return sr_errf(-EBADMSG, "lease: field \"%s\" holds a control character", name);
    memcpy(dst, json_string_value(x), strlen(json_string_value(x)) + 1);
    return 0;
}

int sr_lease_parse(const char *buf, size_t len, struct sr_lease_info *out)
{
    struct sr_lease_info in;
    memset(&in, 0, sizeof(in));
    in.rank = -1;
    json_error_t err;
    json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
    if (!o)
        return sr_errf(-EBADMSG, "lease: invalid JSON at line %d: %s", err.line,
                       sr_json_error_scrub(err.text));
    int64_t v = 0, epoch = 0;
    int rc = json_is_object(o) ? 0 : sr_errf(-EBADMSG, "lease: not a JSON object");
    if (rc == 0)
        rc = get_i64(o, "format", 1, &v);
    if (rc == 0 && v > LEASE_FORMAT) /* not garbage to take over: someone newer owns it */
        rc = sr_errf(-EPROTONOSUPPORT,
                     "lease: format %lld is newer than this spotrun understands; upgrade spotrun",
                     (long long)v);
    if (rc == 0)
        rc = get_s(o, "owner", in.owner, sizeof(in.owner));
    if (rc == 0)
        rc = get_s(o, "host", in.host, sizeof(in.host));
    if (rc == 0 && (rc = get_i64(o, "pid", 0, &v)) == 0)
        in.pid = (long)v;
    if (rc == 0 && json_object_get(o, "node")) /* optional */
        rc = get_s(o, "node", in.node, sizeof(in.node));
    if (rc == 0 && (rc = get_i64(o, "epoch", 1, &epoch)) == 0 && (uint64_t)epoch > SR_EPOCH_MAX)
        rc = sr_errf(-EBADMSG, "lease: field \"epoch\" must be at most 2^53");
    if (rc == 0)
        in.epoch = (uint64_t)epoch;
    if (rc == 0)
        rc = get_i64(o, "acquired", 0, &in.acquired);
    if (rc == 0)
        rc = get_i64(o, "renewed", 0, &in.renewed);
    if (rc == 0)
        rc = get_i64(o, "expires", 0, &in.expires);
    if (rc == 0 && (rc = get_i64(o, "ttl", 1, &v)) == 0)
        in.ttl = v > 86400 ? 86400 : (int)v;
    if (rc == 0) {
        json_t *r = json_object_get(o, "released");
        if (!json_is_boolean(r))
            rc = sr_errf(-EBADMSG, "lease: field \"released\" must be true or false");
        else
            in.released = json_is_true(r);
    }
    if (rc == 0) {
        json_t *c = json_object_get(o, "prev_clean"); /* optional */
        if (c && !json_is_boolean(c))
            rc = sr_errf(-EBADMSG, "lease: field \"prev_clean\" must be true or false");
        in.prev_clean = json_is_true(c);
    }
    json_decref(o);
    if (rc == 0)
        *out = in;
    return rc;
}

/* Reads the lease; etag may be NULL; raw (may be NULL) gets the object's
 * bytes whenever there is one, parsed or not (the caller frees them). */
static int read_lease_raw(struct sr_store *st, const char *key, struct sr_lease_info *info,
                          char *etag, char **raw, size_t *rawlen)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = sr_store_get_etag(st, key, LEASE_MAX, &buf, &len, etag);
    if (rc == -EFBIG) /* malformed as any other: taken over, fenced by its ETag */
        return sr_errf(-EBADMSG, "%s is over %u KiB, far more than a lease", key, LEASE_MAX >> 10);
    if (rc < 0)
        return rc;
    rc = sr_lease_parse(buf, len, info);
    if (raw) {
        *raw = buf;
        *rawlen = len;
    } else {
        free(buf);
    }
    return rc;
}

static int read_lease(struct sr_store *st, const char *key, struct sr_lease_info *info, char *etag)
{
    return read_lease_raw(st, key, info, etag, NULL, NULL);
}

int sr_lease_read(struct sr_store *st, const char *run_id, struct sr_lease_info *info)
{
    return sr_lease_read_rank(st, run_id, -1, info);
}

int sr_lease_read_owner(struct sr_store *st, const char *run_id, struct sr_lease_info *info)
{
    const int rc = sr_lease_read_rank(st, run_id, -1, info);
    if (rc != -ENOENT)
        return rc;
    return sr_lease_read_rank(st, run_id, 0, info);
}

int sr_lease_read_rank(struct sr_store *st, const char *run_id, int rank,
                       struct sr_lease_info *info)
{
    if (!sr_manifest_run_id_valid(run_id))
        return sr_errf(-EINVAL, "invalid run id \"%.140s\"", run_id ? run_id : "");
    char key[SR_RUN_ID_MAX + 16];
    lease_key(key, sizeof(key), run_id, rank);
    const int rc = read_lease(st, key, info, NULL);
    if (rc == 0)
        info->rank = rank < 0 ? -1 : rank;
    return rc;
}

int sr_lease_part_counts(void *ctx, uint32_t rank, uint64_t epoch)
{
    const struct sr_lease_counts *c = ctx;
    struct sr_lease_info li;
    const int rc = sr_lease_read_rank(c->st, c->run_id, (int)rank, &li);
    if (rc == -ENOENT)
        return 1; /* a run without leases: nothing fences */
    if (rc == -EBADMSG)
        return 0;
    if (rc < 0)
        return rc;
    return li.epoch == epoch || (li.epoch == epoch + 1 && li.prev_clean);
}

/* Writes info (with the next write counter) under the condition match
 * (NULL = create). A failed condition is checked by reading back: our own
 * bytes there mean an earlier try of this very write landed. Returns 0 or
 * the failed condition (-EEXIST, -ESTALE, -ENOENT), or the store's error. */
static int write_lease(struct sr_lease *l, const struct sr_lease_info *info, const char *match)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = encode(l->run_id, info, l->writes + 1, &buf, &len);
    if (rc < 0)
        return rc;
    char etag[SR_ETAG_MAX] = "";
    rc = sr_store_put_if(l->st, l->key, buf, len, match, etag);
    if ((rc == -EEXIST || rc == -ESTALE || rc == -ENOENT) &&
        sr_store_holds(l->st, l->key, buf, len, etag))
        rc = 0;
    free(buf);
    if (rc == 0) {
        l->writes++;
        l->info = *info;
        snprintf(l->etag, sizeof(l->etag), "%s", etag);
    }
    return rc;
}

/* The newest epoch among the run's checkpoints (0 when none): a lease
 * created anew (first run, or a deleted or unreadable LEASE) starts above
 * it, so its checkpoints still order after the old ones. */
static uint64_t max_ckpt_epoch(struct sr_store *st, const char *run_id)
{
    uint64_t max = 0;
    (void)sr_ckpt_max_epoch(st, run_id, &max); /* none readable: 0 */
    return max;
}

/* The epoch after cur. Parsing bounds every epoch read from the store by
 * SR_EPOCH_MAX, so only a planted value can reach it: refused, never
 * wrapped (a wrapped epoch would sort every new checkpoint below old ones). */
static int next_epoch(const char *run_id, uint64_t cur, uint64_t *next)
{
    if (cur >= SR_EPOCH_MAX)
        return sr_errf(-EBADMSG,
                       "the owner epoch of run %s is already 2^53, the largest spotrun uses: its "
                       "LEASE or a manifest was planted or corrupted; remove them from the store",
                       run_id);
    *next = cur + 1;
    return 0;
}

/* This machine's boot and PID namespace, where a pid names one process. */
static void node_id(char *out, size_t len)
{
    char boot[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f) {
        if (!fgets(boot, sizeof(boot), f))
            boot[0] = '\0';
        fclose(f);
    }
    boot[strcspn(boot, "\n")] = '\0';
    struct stat sb;
    if (!boot[0] || stat("/proc/self/ns/pid", &sb) != 0) {
        out[0] = '\0';
        return;
    }
    snprintf(out, len, "%s/%llu", boot, (unsigned long long)sb.st_ino);
}

/* 1 when the holder ran here and its process is gone. */
static int holder_dead_here(const struct sr_lease_info *h, const struct sr_lease_info *me)
{
    if (!h->node[0] || strcmp(h->node, me->node) != 0 || h->pid <= 0)
        return 0;
    return kill((pid_t)h->pid, 0) != 0 && errno == ESRCH;
}

/* The owner of a sweep worker's claim this process may take over at once
 * (sr_lease_accept_from): "" = none. Set once, before any acquisition. */
static char accept_from[sizeof(((struct sr_lease_info *)0)->owner)];

void sr_lease_accept_from(const char *owner)
{
    snprintf(accept_from, sizeof(accept_from), "%s", owner ? owner : "");
}

static int handed_over(const struct sr_lease_info *h)
{
    return accept_from[0] && strcmp(h->owner, accept_from) == 0;
}

int sr_lease_takeable(const struct sr_lease_info *h, int64_t now_s)
{
    if (h->released || now_s >= h->expires)
        return 1;
    struct sr_lease_info me = {0};
    node_id(me.node, sizeof(me.node));
    return holder_dead_here(h, &me);
}

static void make_owner(struct sr_lease_info *in)
{
    if (gethostname(in->host, sizeof(in->host) - 1) != 0)
        in->host[0] = '\0';
    in->host[sizeof(in->host) - 1] = '\0';
    in->pid = (long)getpid();
    node_id(in->node, sizeof(in->node));
    unsigned long long nonce = 0;
    if (getrandom(&nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce))
        nonce = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 32);
    /* host is informational here (it has its own field): at most 64 bytes
     * of it, so the owner string always fits. */
    snprintf(in->owner, sizeof(in->owner), "%.64s:%ld:%016llx", in->host[0] ? in->host : "unknown",
             in->pid, nonce);
}

/* Does the server honour If-Match? A write of the same bytes under an ETag
 * that cannot match must fail; if it succeeds, the server ignores the
 * header (same bytes: the lease is unchanged either way). */
static void probe(struct sr_lease *l)
{
    char *buf = NULL;
    size_t len = 0;
    if (encode(l->run_id, &l->info, l->writes, &buf, &len) < 0)
        return;
    char etag[SR_ETAG_MAX] = "";
    const int rc = sr_store_put_if(l->st, l->key, buf, len, "\"spotrun-probe-no-such-etag\"", etag);
    free(buf);
    if (rc == 0) {
        l->weak = 1;
        snprintf(l->etag, sizeof(l->etag), "%s", etag);
        sr_warn("store %s ignores conditional writes (If-Match): the single-owner lease of "
                "%s is best-effort (read, check, write); checkpoints stay ordered by owner epoch",
                sr_store_url(l->st), l->run_id);
    }
}

/* "LEASE.<rank>": 1 and *rank. */
static int rank_lease_name(const char *name, int *rank)
{
    const size_t n = strlen(SR_KEY_LEASE);
    if (strncmp(name, SR_KEY_LEASE ".", n + 1) != 0)
        return 0;
    const char *d = name + n + 1;
    long v = 0;
    if (!*d || strlen(d) > 6 || (d[0] == '0' && d[1]))
        return 0;
    for (; *d; d++) {
        if (*d < '0' || *d > '9')
            return 0;
        v = v * 10 + (*d - '0');
    }
    if (v >= SR_NODES_MAX)
        return 0;
    *rank = (int)v;
    return 1;
}

int sr_lease_count_ranks(struct sr_store *st, const char *run_id, int *top)
{
    if (top)
        *top = -1;
    if (!sr_manifest_run_id_valid(run_id))
        return sr_errf(-EINVAL, "invalid run id \"%.140s\"", run_id ? run_id : "");
    struct sr_strlist names = {0};
    const int rc = sr_store_list(st, run_id, &names);
    int n = 0;
    for (size_t i = 0; rc == 0 && i < names.n; i++) {
        int k;
        if (!rank_lease_name(names.v[i], &k))
            continue;
        n++;
        if (top && k > *top)
            *top = k;
    }
    sr_strlist_free(&names);
    return rc < 0 ? rc : n;
}

/* Whether a writer of the other kind holds the run now (see lease.h): for
 * rank < 0 any LEASE.<rank>, else LEASE. 1 and *h (its holder), 0, or an
 * error of the store (-EPROTONOSUPPORT: a newer spotrun's lease). An
 * unreadable lease holds nothing: its writer's own acquisition takes it
 * over. */
static int other_side_holds(struct sr_store *st, const char *run_id, int rank,
                            struct sr_lease_info *h)
{
    const int64_t now = (int64_t)time(NULL);
    if (rank >= 0) {
        const int rc = sr_lease_read_rank(st, run_id, -1, h);
        if (rc == -ENOENT || rc == -EBADMSG) {
            return 0;
        }
        return rc < 0 ? rc : !sr_lease_takeable(h, now);
    }
    struct sr_strlist names = {0};
    int rc = sr_store_list(st, run_id, &names);
    int held = 0;
    for (size_t i = 0; rc == 0 && !held && i < names.n; i++) {
        int k;
        if (!rank_lease_name(names.v[i], &k))
            continue;
        rc = sr_lease_read_rank(st, run_id, k, h);
        if (rc == -ENOENT || rc == -EBADMSG) {
            rc = 0;
            continue;
        }
        if (rc == 0)
            held = !sr_lease_takeable(h, now);
    }
    sr_strlist_free(&names);
    return rc < 0 ? rc : held;
}

/* Backing off: the lease goes back to exactly what it was (the bytes read
 * before taking it, or no object), so the next owner's epoch and
 * prev_clean are what they would have been had we never come. */
static void put_back(struct sr_lease *l, const char *prev, size_t len)
{
    char etag[SR_ETAG_MAX] = "";
    const int rc = prev ? sr_store_put_if(l->st, l->key, prev, len, l->etag, etag)
                        : sr_store_delete(l->st, l->key);
    if (rc < 0)
        sr_warn("cannot put the lease %s back as it was (%s): it expires on its own in %ds", l->key,
                sr_strerror(rc), l->info.ttl);
}

int sr_lease_acquire(struct sr_store *st, const char *run_id, int ttl, struct sr_lease **out,
                     struct sr_lease_info *holder)
{
    return sr_lease_acquire_rank(st, run_id, -1, ttl, out, holder);
}

/* A lease just taken (l): when a writer of the other kind (a node's
 * LEASE.<rank> against the run's LEASE, or back) holds the run, puts the
 * lease back as it was (prev) and returns -EBUSY naming the holder; else 0,
 * or an error. */
static int other_side_check(struct sr_lease *l, int rank, const char *prev, size_t prev_len,
                            struct sr_lease_info *holder)
{
    const char *run_id = l->run_id;
    struct sr_lease_info h;
    int rc = other_side_holds(l->st, run_id, rank, &h);
    if (rc == 0)
        return 0;
    put_back(l, prev, prev_len);
    if (rc < 0)
        return rc;
    if (holder)
        *holder = h;
    const long long left = (long long)(h.expires - (int64_t)time(NULL));
    if (h.rank >= 0)
        return sr_errf(-EBUSY,
                       "run %s is owned by %s pid %ld, node %d of its multi-node group "
                       "(LEASE.%d expires in %llds)",
                       run_id, h.host, h.pid, h.rank, h.rank, left);
    return sr_errf(-EBUSY,
                   "run %s is owned by %s pid %ld, a single-node wrapper or a "
                   "command writing the whole run (LEASE expires in %llds)",
                   run_id, h.host, h.pid, left);
}

static int acquire(struct sr_store *st, const char *run_id, int rank, int ttl, int probe_it,
                   struct sr_lease **out, struct sr_lease_info *holder);

int sr_lease_acquire_rank(struct sr_store *st, const char *run_id, int rank, int ttl,
                          struct sr_lease **out, struct sr_lease_info *holder)
{
    return acquire(st, run_id, rank, ttl, 1, out, holder);
}

/* A claim is handed over within seconds: whether the server honours
 * If-Match is the wrapper's to find out (its acquisition probes). */
int sr_lease_claim(struct sr_store *st, const char *run_id, int ttl, struct sr_lease **out,
                   struct sr_lease_info *holder)
{
    return acquire(st, run_id, -1, ttl, 0, out, holder);
}

const char *sr_lease_owner(const struct sr_lease *l)
{
    return l->info.owner;
}

static int acquire(struct sr_store *st, const char *run_id, int rank, int ttl, int probe_it,
                   struct sr_lease **out, struct sr_lease_info *holder)
{
    *out = NULL;
    if (!sr_manifest_run_id_valid(run_id))
        return sr_errf(-EINVAL, "invalid run id \"%.140s\"", run_id ? run_id : "");
    struct sr_lease *l = calloc(1, sizeof(*l));
    if (!l)
        return sr_errf(-ENOMEM, "out of memory");
    pthread_mutex_init(&l->lock, NULL);
    l->st = st;
    snprintf(l->run_id, sizeof(l->run_id), "%s", run_id);
    lease_key(l->key, sizeof(l->key), run_id, rank);
    struct sr_lease_info mine;
    memset(&mine, 0, sizeof(mine));
    make_owner(&mine);
    mine.ttl = ttl < 1 ? 1 : ttl;
    int rc = -EAGAIN, handed = 0;
    char *prev = NULL; /* the lease object as read in the last round */
    size_t prev_len = 0;
    for (int tries = 0; tries < 8; tries++) {
        struct sr_lease_info cur;
        char etag[SR_ETAG_MAX] = "";
        free(prev);
        prev = NULL;
        rc = read_lease_raw(st, l->key, &cur, etag, &prev, &prev_len);
        cur.rank = rank < 0 ? -1 : rank;
        const int64_t now = (int64_t)time(NULL);
        const char *match = NULL;
        mine.prev_clean = rc == -ENOENT || (rc == 0 && cur.released);
        if (rc == 0) {
            if (!cur.released && now < cur.expires && handed_over(&cur)) {
                mine.prev_clean = 1; /* a worker's claim: it wrote nothing else */
                handed = 1;
                sr_debug("run %s: taking over the claim of the sweep worker that started this "
                         "wrapper",
                         run_id);
            } else if (!cur.released && now < cur.expires && holder_dead_here(&cur, &mine)) {
                mine.prev_clean = 1; /* proven dead: no late writes to fear */
                sr_info("the lease of run %s belonged to pid %ld on this machine, which is gone; "
                        "taking it over",
                        run_id, cur.pid);
            } else if (!cur.released && now < cur.expires) {
                if (holder)
                    *holder = cur;
                rc = sr_errf(-EBUSY, "run %s is owned by %s pid %ld (lease expires in %llds)",
                             run_id, cur.host, cur.pid, (long long)(cur.expires - now));
                break;
            }
            rc = next_epoch(run_id, cur.epoch, &mine.epoch);
            match = etag;
        } else if (rc == -EBADMSG) {
            sr_warn("the lease of run %s is unreadable (%s); taking it over", run_id,
                    sr_strerror(rc));
            rc = next_epoch(run_id, max_ckpt_epoch(st, run_id), &mine.epoch);
            match = etag;
        } else if (rc == -ENOENT) {
            rc = next_epoch(run_id, max_ckpt_epoch(st, run_id), &mine.epoch);
        } else {
            break;
        }
        if (rc < 0)
            break;
        mine.acquired = mine.renewed = now;
        mine.expires = now + mine.ttl;
        mine.released = 0;
        rc = write_lease(l, &mine, match);
        if (rc == 0)
            break;
        if (rc != -EEXIST && rc != -ESTALE && rc != -ENOENT)
            break;
        /* Someone else wrote it in between: look again. */
    }
    /* Ours now: does a writer of the other kind hold the run? A claim
     * handed over was checked when it was taken: a writer of the other
     * kind that came since saw it and backed off (lease.h). */
    if (rc == 0 && !(handed && rank < 0))
        rc = other_side_check(l, rank, prev, prev_len, holder);
    free(prev);
    if (rc < 0) {
        sr_lease_free(l);
        return rc == -EAGAIN ? sr_errf(rc, "the lease of run %s keeps changing", run_id) : rc;
    }
    l->epoch = l->info.epoch;
    l->ttl = l->info.ttl;
    if (probe_it)
        probe(l);
    *out = l;
    return 0;
}

int sr_lease_renew(struct sr_lease *l)
{
    pthread_mutex_lock(&l->lock);
    int rc = 0;
    if (l->lost) {
        /* Whichever thread saw it first (the keeper or a commit's fence),
         * every caller reports the same loss. */
        rc = sr_errf(-ESTALE, "%s", l->lost_why);
        goto out;
    }
    if (l->released) {
        rc = sr_errf(-ESTALE, "the lease of run %s was released", l->run_id);
        goto out;
    }
    if (l->weak) {
        /* The server would not refuse the write: check by reading. */
        struct sr_lease_info cur;
        rc = read_lease(l->st, l->key, &cur, NULL);
        if (rc == 0 && (strcmp(cur.owner, l->info.owner) != 0 || cur.epoch != l->info.epoch))
            rc = -ESTALE;
        else if (rc == -ENOENT || rc == -EBADMSG)
            rc = -ESTALE;
        if (rc == -ESTALE)
            goto lost;
        if (rc < 0)
            goto out;
    }
    struct sr_lease_info next = l->info;
    next.renewed = (int64_t)time(NULL);
    next.expires = next.renewed + next.ttl;
    rc = write_lease(l, &next, l->etag);
    if (rc == -ESTALE || rc == -ENOENT || rc == -EEXIST)
        goto lost;
    goto out;
lost:
    l->lost = 1;
    {
        struct sr_lease_info cur;
        if (read_lease(l->st, l->key, &cur, NULL) == 0)
            rc = sr_errf(-ESTALE,
                         "lost the lease of run %s: %s pid %ld took it over (epoch %llu); this "
                         "wrapper's checkpoints can no longer become the newest",
                         l->run_id, cur.host, cur.pid, (unsigned long long)cur.epoch);
        else
            rc = sr_errf(-ESTALE,
                         "lost the lease of run %s: its lease object was replaced or "
                         "deleted",
                         l->run_id);
        snprintf(l->lost_why, sizeof(l->lost_why), "%s", sr_strerror(rc));
    }
out:
    pthread_mutex_unlock(&l->lock);
    return rc;
}

int sr_lease_release(struct sr_lease *l)
{
    if (!l)
        return 0;
    int rc = 0;
    pthread_mutex_lock(&l->lock);
    if (!l->lost && !l->released) {
        struct sr_lease_info next = l->info;
        next.released = 1;
        next.renewed = next.expires = (int64_t)time(NULL);
        if (l->weak) {
            struct sr_lease_info cur;
            if (read_lease(l->st, l->key, &cur, NULL) != 0 ||
                strcmp(cur.owner, l->info.owner) != 0 || cur.epoch != l->info.epoch) {
                l->lost = 1;
                snprintf(l->lost_why, sizeof(l->lost_why),
                         "lost the lease of run %s: another wrapper took it over", l->run_id);
            }
        }
        if (!l->lost)
            rc = write_lease(l, &next, l->etag);
        if (rc == -ESTALE || rc == -ENOENT || rc == -EEXIST)
            rc = 0; /* taken over meanwhile: nothing of ours to release */
    }
    l->released = 1;
    pthread_mutex_unlock(&l->lock);
    return rc;
}

void sr_lease_free(struct sr_lease *l)
{
    if (!l)
        return;
    pthread_mutex_destroy(&l->lock);
    free(l);
}

uint64_t sr_lease_epoch(const struct sr_lease *l)
{
    return l->epoch;
}

int sr_lease_ttl(const struct sr_lease *l)
{
    return l->ttl;
}

int sr_lease_fence(void *ctx)
{
    return sr_lease_renew(ctx);
}
