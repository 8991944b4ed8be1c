/*
 * test_lease.c - one owner per run (storage/run/lease.h) on the file store:
 * conditional writes, acquire / busy / take over after expiry or release,
 * renewal after a takeover fails, racing acquirers (exactly one wins), the
 * epoch fence (a lost owner's checkpoint never becomes the newest), the
 * weak mode on a store that ignores conditions, and the exclusion of a
 * multi-node group's rank leases and the run's LEASE; the keeper thread
 * telling the loop, once and with why, that the lease was taken over.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "fsutil.h"
#include "keeper.h"
#include "lease.h"
#include "log.h"

#define RUN "exp1"

/* Release and free, as a wrapper does at exit. */
static int release(struct sr_lease *l)
{
    const int rc = sr_lease_release(l);
    sr_lease_free(l);
    return rc;
}

/* Rewrites one field of a stored lease, as another writer would. */
static void set_lease_field_of(struct tu_store *f, const char *key, const char *name, json_t *value)
{
    char *buf;
    size_t len;
    assert_int_equal(sr_store_get(f->st, key, 1 << 16, &buf, &len), 0);
    json_t *o = json_loadb(buf, len, 0, NULL);
    free(buf);
    assert_non_null(o);
    assert_int_equal(json_object_set_new(o, name, value), 0);
    buf = json_dumps(o, JSON_PRESERVE_ORDER);
    json_decref(o);
    assert_non_null(buf);
    assert_int_equal(sr_store_put(f->st, key, buf, strlen(buf)), 0);
    free(buf);
}

static void set_lease_field(struct tu_store *f, const char *name, json_t *value)
{
    set_lease_field_of(f, RUN "/LEASE", name, value);
}

/* Makes the current lease look expired, as if its holder died ttl ago. */
static void expire_lease(struct tu_store *f)
{
    set_lease_field(f, "expires", json_integer((json_int_t)time(NULL) - 1));
}

/* sr_lease_acquire with its warnings captured: what the user sees on
 * stderr (malloc'd) goes to *said. */
static int acquire_saying(struct tu_store *f, struct sr_lease **l, char **said)
{
    char path[PATH_MAX];
    assert_true(snprintf(path, sizeof(path), "%s/stderr", f->dir) < (int)sizeof(path));
    fflush(stderr);
    const int saved = dup(2);
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(saved >= 0 && fd >= 0);
    assert_int_equal(dup2(fd, 2), 2);
    close(fd);
    const int verbosity = sr_verbosity;
    sr_verbosity = SR_WARN;
    const int rc = sr_lease_acquire(f->st, RUN, 60, l, NULL);
    sr_verbosity = verbosity;
    fflush(stderr);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    size_t len;
    assert_int_equal(sr_read_file(path, 1 << 16, said, &len), 0);
    return rc;
}

static void test_put_if(void **state)
{
    struct tu_store *f = *state;
    char e1[SR_ETAG_MAX], e2[SR_ETAG_MAX], got[SR_ETAG_MAX];
    assert_int_equal(sr_store_put_if(f->st, "a/obj", "one", 3, NULL, e1), 0);
    assert_int_equal(sr_store_put_if(f->st, "a/obj", "two", 3, NULL, NULL), -EEXIST);
    assert_int_equal(sr_store_put_if(f->st, "a/obj", "two", 3, "not-the-etag", NULL), -ESTALE);
    assert_int_equal(sr_store_put_if(f->st, "a/obj", "two", 3, e1, e2), 0);
    assert_string_not_equal(e1, e2);
    assert_int_equal(sr_store_put_if(f->st, "a/obj", "three", 5, e1, NULL), -ESTALE);
    char *buf;
    size_t len;
    assert_int_equal(sr_store_get_etag(f->st, "a/obj", 100, &buf, &len, got), 0);
    assert_memory_equal(buf, "two", 3);
    assert_string_equal(got, e2);
    free(buf);
    assert_int_equal(sr_store_put_if(f->st, "a/missing", "x", 1, e2, NULL), -ENOENT);
    /* Lock files stay out of listings. */
    struct sr_strlist names;
    assert_int_equal(sr_store_list(f->st, "a", &names), 0);
    assert_int_equal(names.n, 1);
    assert_string_equal(names.v[0], "obj");
    sr_strlist_free(&names);
}

/* What acquire and release store is what parse reads back. */
static void test_stored_lease_parses(void **state)
{
    struct tu_store *f = *state;
    struct sr_lease *a = NULL;
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &a, NULL), 0);
    char *buf;
    size_t len;
    assert_int_equal(sr_store_get(f->st, RUN "/LEASE", 1 << 16, &buf, &len), 0);
    struct sr_lease_info out;
    assert_int_equal(sr_lease_parse(buf, len, &out), 0);
    free(buf);
    char pid[32];
    snprintf(pid, sizeof(pid), ":%ld:", (long)getpid());
    assert_non_null(strstr(out.owner, pid));
    assert_int_equal(out.pid, (long)getpid());
    assert_int_equal(out.epoch, 1);
    assert_int_equal(out.ttl, 60);
    assert_int_equal(out.expires, out.renewed + 60);
    assert_int_equal(out.released, 0);
    assert_int_equal(release(a), 0);
    assert_int_equal(sr_store_get(f->st, RUN "/LEASE", 1 << 16, &buf, &len), 0);
    assert_int_equal(sr_lease_parse(buf, len, &out), 0);
    free(buf);
    assert_int_equal(out.released, 1);
    static const char *bad[] = {
        "",
        "[]",
        "{\"format\":1}",
        "{\"format\":1,\"owner\":\"o\",\"host\":\"h\",\"pid\":1,\"epoch\":0,\"acquired\":0,"
        "\"renewed\":0,\"expires\":0,\"ttl\":1,\"released\":false}", /* epoch 0 */
        "{\"format\":1,\"owner\":\"o\",\"host\":\"h\",\"pid\":1,\"epoch\":1,\"acquired\":0,"
        "\"renewed\":0,\"expires\":\"soon\",\"ttl\":1,\"released\":false}",
        "{\"format\":1,\"owner\":\"o\",\"host\":\"h\",\"pid\":1,\"epoch\":1,\"acquired\":0,"
        "\"renewed\":0,\"expires\":0,\"ttl\":1,\"released\":1}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sr_lease_parse(bad[i], strlen(bad[i]), &out), -EBADMSG);
    const char *newer = "{\"format\":2,\"owner\":\"x\"}";
    assert_int_equal(sr_lease_parse(newer, strlen(newer), &out), -EPROTONOSUPPORT);
}

static void test_acquire_busy_release(void **state)
{
    struct tu_store *f = *state;
    struct sr_lease *a = NULL, *b = NULL;
    struct sr_lease_info holder;
    char *said = NULL;
    assert_int_equal(acquire_saying(f, &a, &said), 0);
    assert_int_equal(sr_lease_epoch(a), 1);
    assert_null(strstr(said, "ignores conditional writes")); /* not weak */
    free(said);
    memset(&holder, 0, sizeof(holder));
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &b, &holder), -EBUSY);
    assert_null(b);
    assert_int_equal(holder.epoch, 1);
    assert_int_equal(holder.pid, (long)getpid());
    assert_non_null(strstr(sr_strerror(-EBUSY), "owned by"));
    assert_int_equal(sr_lease_renew(a), 0);
    assert_int_equal(sr_lease_renew(a), 0);
    assert_int_equal(release(a), 0);
    /* Released: the next owner need not wait, and gets the next epoch. */
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &b, NULL), 0);
    assert_int_equal(sr_lease_epoch(b), 2);
    assert_int_equal(release(b), 0);
}

/* A sweep worker's claim (sr_lease_claim): a second worker loses it for
 * one request, without starting a wrapper; a wrapper nobody started
 * waits; the worker's own wrapper takes it over at once (the claim wrote
 * nothing else: prev_clean), and the worker's later release of its claim
 * leaves the wrapper's lease alone. An unclaimed trial is free at once. */
static void test_worker_claim_handed_over(void **state)
{
    struct tu_store *f = *state;
    struct sr_lease *claim = NULL, *other = NULL, *wrapper = NULL;
    assert_int_equal(sr_lease_claim(f->st, RUN, 60, &claim, NULL), 0);
    char owner[128];
    snprintf(owner, sizeof(owner), "%s", sr_lease_owner(claim));
    assert_true(strlen(owner) > 0);
    assert_int_equal(sr_lease_claim(f->st, RUN, 60, &other, NULL), -EBUSY);
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &other, NULL), -EBUSY);
    assert_null(other);
    sr_lease_accept_from("somebody-else:1:0000000000000000");
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &other, NULL), -EBUSY);
    sr_lease_accept_from(owner);
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &wrapper, NULL), 0);
    sr_lease_accept_from(NULL);
    assert_true(sr_lease_epoch(wrapper) > sr_lease_epoch(claim));
    struct sr_lease_info now;
    assert_int_equal(sr_lease_read(f->st, RUN, &now), 0);
    assert_int_equal(now.prev_clean, 1);
    assert_int_equal(release(claim), 0); /* the worker's unclaim: a no-op now */
    assert_int_equal(sr_lease_read(f->st, RUN, &now), 0);
    assert_int_equal(now.released, 0);
    assert_int_equal(now.epoch, sr_lease_epoch(wrapper));
    assert_int_equal(sr_lease_renew(wrapper), 0);
    assert_int_equal(release(wrapper), 0);
    /* claimed, never taken over, released: the next wrapper need not wait */
    assert_int_equal(sr_lease_claim(f->st, RUN, 60, &claim, NULL), 0);
    assert_int_equal(release(claim), 0);
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &other, NULL), 0);
    assert_int_equal(release(other), 0);
}

static void test_takeover_after_expiry(void **state)
{
    struct tu_store *f = *state;
    struct sr_lease *a = NULL, *b = NULL;
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &a, NULL), 0);
    expire_lease(f); /* a stopped renewing (paused, partitioned) */
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &b, NULL), 0);
    assert_int_equal(sr_lease_epoch(b), sr_lease_epoch(a) + 1);
    /* a comes back: its renewal fails for good and names the new owner. */
    assert_int_equal(sr_lease_renew(a), -ESTALE);
    assert_non_null(strstr(sr_strerror(-ESTALE), "took it over"));
    /* A later caller (the keeper, after a commit's fence saw it) hears the
     * same: who took the run over, not merely that it was lost. */
    sr_err_clear();
    assert_int_equal(sr_lease_renew(a), -ESTALE);
    assert_non_null(strstr(sr_strerror(-ESTALE), "took it over (epoch 2)"));
    /* Releasing a lost lease leaves the new owner's alone. */
    assert_int_equal(release(a), 0);
    assert_int_equal(sr_lease_renew(b), 0);
    struct sr_lease_info in;
    assert_int_equal(sr_lease_read(f->st, RUN, &in), 0);
    assert_int_equal(in.epoch, sr_lease_epoch(b));
    assert_false(in.released);
    assert_int_equal(release(b), 0);
}

/* The keeper (runtime/supervise/keeper.h) renewing a lease another owner
 * took over: its descriptor wakes the loop, which hears once that the
 * lease was lost and who took it, and nothing more after. */
static void test_keeper_tells_the_loop_once_that_the_lease_was_lost(void **state)
{
    struct tu_store *f = *state;
    struct sr_lease *a = NULL, *b = NULL;
    assert_int_equal(sr_lease_acquire(f->st, RUN, 1, &a, NULL), 0);
    struct sr_keeper *k = NULL;
    assert_int_equal(sr_keeper_start(a, &k), 0);
    char why[512];
    assert_int_equal(sr_keeper_lost(k, why, sizeof(why)), 0); /* held */
    expire_lease(f);
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &b, NULL), 0);
    struct pollfd p = {.fd = sr_keeper_fd(k), .events = POLLIN};
    assert_int_equal(poll(&p, 1, 30000), 1); /* renewed every ttl/3 */
    assert_int_equal(sr_keeper_lost(k, why, sizeof(why)), 1);
    assert_non_null(strstr(why, "took it over"));
    assert_int_equal(sr_keeper_lost(k, why, sizeof(why)), 0);
    sr_keeper_stop(k);
    assert_int_equal(release(a), 0);
    assert_int_equal(release(b), 0);
}

static void test_unreadable_lease_taken_over(void **state)
{
    struct tu_store *f = *state;
    assert_int_equal(sr_store_put(f->st, RUN "/LEASE", "{garbage", 8), 0);
    struct sr_lease *a = NULL;
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &a, NULL), 0);
    assert_int_equal(sr_lease_epoch(a), 1);
    sr_lease_free(a); /* not released: it stays held until it expires */
    struct sr_lease *b = NULL;
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &b, NULL), -EBUSY);
    /* A lease in a newer format is someone's, not garbage: refused. */
    const char *newer = "{\"format\":9,\"owner\":\"future\"}";
    assert_int_equal(sr_store_put(f->st, RUN "/LEASE", newer, strlen(newer)), 0);
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &b, NULL), -EPROTONOSUPPORT);
    assert_null(b);
}

/* A holder killed with -9 on this machine: its pid is gone, so the lease
 * is taken over at once; a live pid, or one on another machine, waits. */
static void test_dead_holder_here(void **state)
{
    struct tu_store *f = *state;
    struct sr_lease *a = NULL, *b = NULL;
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &a, NULL), 0);
    sr_lease_free(a); /* "killed": never released */
    struct sr_lease_info in;
    assert_int_equal(sr_lease_read(f->st, RUN, &in), 0);
    assert_true(in.node[0] != '\0');
    const pid_t child = fork();
    if (child == 0)
        _exit(0);
    assert_int_equal(waitpid(child, NULL, 0), child);
    set_lease_field(f, "pid", json_integer(child)); /* a pid that is gone */
    set_lease_field(f, "node", json_string("another-boot/4026531836"));
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &b, NULL), -EBUSY); /* another machine */
    set_lease_field(f, "node", json_string(in.node));
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &b, NULL), 0);
    assert_int_equal(sr_lease_epoch(b), in.epoch + 1);
    assert_int_equal(release(b), 0);
}

struct racer {
    struct sr_store *st;
    pthread_barrier_t *go;
    int rc;
    struct sr_lease *l;
    int rank; /* race_rank: the lease to take (-1: LEASE) */
};

static void *race(void *arg)
{
    struct racer *r = arg;
    pthread_barrier_wait(r->go);
    r->rc = sr_lease_acquire(r->st, RUN, 60, &r->l, NULL);
    return NULL;
}

static void test_racing_acquirers(void **state)
{
    struct tu_store *f = *state;
    enum { N = 8 };
    for (int round = 0; round < 5; round++) {
        struct sr_lease *old = NULL;
        assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &old, NULL), 0);
        const uint64_t epoch = sr_lease_epoch(old);
        sr_lease_free(old);
        expire_lease(f);
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, N);
        struct racer r[N];
        pthread_t t[N];
        for (int i = 0; i < N; i++) {
            r[i] = (struct racer){.st = f->st, .go = &go};
            assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
        }
        int won = 0;
        for (int i = 0; i < N; i++)
            pthread_join(t[i], NULL);
        for (int i = 0; i < N; i++) {
            if (r[i].rc == 0) {
                won++;
                assert_int_equal(sr_lease_epoch(r[i].l), epoch + 1);
                assert_int_equal(release(r[i].l), 0);
            } else {
                assert_int_equal(r[i].rc, -EBUSY);
            }
        }
        pthread_barrier_destroy(&go);
        assert_int_equal(won, 1);
    }
}

/* Publishes a checkpoint of a directory holding state.txt = text. */
static int publish_text(struct tu_store *f, uint64_t seq, const char *text, struct sr_lease *l)
{
    char src[PATH_MAX];
    snprintf(src, sizeof(src), "%s/src-%llu", f->dir, (unsigned long long)seq);
    assert_int_equal(sr_mkdirs(src, 0755), 0);
    tu_write_text(src, "state.txt", text);
    struct sr_manifest m;
    memset(&m, 0, sizeof(m));
    m.format = SR_MANIFEST_FORMAT;
    snprintf(m.run_id, sizeof(m.run_id), "%s", RUN);
    m.seq = seq;
    m.step = -1;
    m.created = time(NULL);
    m.frame_size = SR_CODEC_DEFAULT_FRAME;
    m.level = 3;
    m.epoch = l ? sr_lease_epoch(l) : 0;
    struct sr_pack_opts opts = {.level = 3, .threads = 1};
    struct sr_fence fence = {.check = sr_lease_fence, .ctx = l};
    return sr_ckpt_publish_dir(f->st, &m, src, &opts, l ? &fence : NULL);
}

static void assert_restores(struct tu_store *f, const char *want, uint64_t want_seq)
{
    char out[PATH_MAX];
    snprintf(out, sizeof(out), "%s/out", f->dir);
    struct sr_manifest m;
    assert_int_equal(sr_ckpt_restore(f->st, RUN, 0, out, 1, &m), 0);
    assert_int_equal(m.seq, want_seq);
    tu_assert_text(out, "state.txt", want);
}

static void test_epoch_fence(void **state)
{
    struct tu_store *f = *state;
    struct sr_lease *a = NULL, *b = NULL;
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &a, NULL), 0);
    assert_int_equal(publish_text(f, 1, "a1", a), 0);
    expire_lease(f);
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &b, NULL), 0);
    assert_int_equal(publish_text(f, 2, "b2", b), 0);
    /* The old owner wakes up and commits: its fence (renewal) refuses. */
    assert_int_equal(publish_text(f, 3, "a3", a), -ESTALE);
    assert_restores(f, "b2", 2);
    /* Worse: it passed its fence just before pausing and writes its
     * manifest after the takeover. Its epoch orders it below b's. */
    assert_int_equal(publish_text(f, 4, "a4", NULL), 0); /* epoch 0: no fence */
    assert_restores(f, "b2", 2);
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->st, RUN, &l), 0);
    assert_int_equal(l.n, 3);
    assert_int_equal(l.v[l.n - 1].seq, 2);
    sr_ckpt_list_free(&l);
    /* gc keeps the newest by the same order. */
    unsigned deleted = 0;
    assert_int_equal(sr_ckpt_gc(f->st, RUN, 1, &deleted), 0);
    assert_int_equal(sr_ckpt_list(f->st, RUN, &l), 0);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.v[0].seq, 2);
    sr_ckpt_list_free(&l);
    /* A new lease after the LEASE object is lost still orders above. */
    sr_lease_free(a);
    assert_int_equal(release(b), 0);
    assert_int_equal(sr_store_delete(f->st, RUN "/LEASE"), 0);
    struct sr_lease *c = NULL;
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &c, NULL), 0);
    assert_true(sr_lease_epoch(c) > 2);
    assert_int_equal(publish_text(f, 5, "c5", c), 0);
    assert_restores(f, "c5", 5);
    assert_int_equal(release(c), 0);
}

static void test_manifest_create_only(void **state)
{
    struct tu_store *f = *state;
    assert_int_equal(publish_text(f, 1, "x", NULL), 0);
    /* A second writer that raced past the existence check: the manifest
     * write itself refuses. */
    char key[256];
    sr_ckpt_key(key, sizeof(key), RUN, 1, "MANIFEST.json");
    assert_int_equal(sr_store_put_if(f->st, key, "{}", 2, NULL, NULL), -EEXIST);
    assert_restores(f, "x", 1);
}

/* A store whose conditional writes ignore their condition (like s3rver). */
static const struct sr_store_ops *real_ops;
static int ignoring_put_if(struct sr_store *st, const char *key, const void *buf, size_t len,
                           const char *match, char *etag)
{
    (void)match;
    int rc = real_ops->put(st, key, buf, len);
    if (rc == 0)
        snprintf(etag, SR_ETAG_MAX, "whatever");
    return rc;
}

static void test_weak_store(void **state)
{
    struct tu_store *f = *state;
    static struct sr_store_ops ops;
    real_ops = f->st->ops;
    ops = *real_ops;
    ops.put_if = ignoring_put_if;
    f->st->ops = &ops;
    struct sr_lease *a = NULL, *b = NULL;
    char *said = NULL;
    assert_int_equal(acquire_saying(f, &a, &said), 0);
    assert_non_null(strstr(said, "ignores conditional writes")); /* weak, and says so */
    free(said);
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &b, NULL), -EBUSY);
    assert_int_equal(sr_lease_renew(a), 0);
    expire_lease(f);
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &b, NULL), 0);
    /* The check-before-write still tells the old owner it lost. */
    assert_int_equal(sr_lease_renew(a), -ESTALE);
    assert_int_equal(release(a), 0);
    assert_int_equal(sr_lease_renew(b), 0);
    assert_int_equal(release(b), 0);
    f->st->ops = real_ops;
}

/* One rule for both kinds of writer: a live LEASE.<rank> holds out the
 * run's LEASE (run, push, gc, --fresh) and the reverse; the one that backs
 * off leaves its own lease exactly as it was. */
static void test_ranks_and_whole_run_exclude(void **state)
{
    struct tu_store *f = *state;
    struct sr_lease *r1 = NULL, *w = NULL, *x = NULL;
    struct sr_lease_info h, in;
    /* A group's node 1 holds LEASE.1: the whole run is held. */
    assert_int_equal(sr_lease_acquire_rank(f->st, RUN, 1, 60, &r1, NULL), 0);
    memset(&h, 0, sizeof(h));
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &w, &h), -EBUSY);
    assert_null(w);
    assert_int_equal(h.rank, 1);
    assert_int_equal(h.epoch, sr_lease_epoch(r1));
    assert_non_null(strstr(sr_strerror(-EBUSY), "node 1 of its multi-node group"));
    /* Backing off left no LEASE behind (there was none). */
    assert_int_equal(sr_lease_read(f->st, RUN, &in), -ENOENT);
    sr_err_clear();
    /* Node 1 lets go cleanly: the whole-run writer may take the run now. */
    const uint64_t e1 = sr_lease_epoch(r1);
    assert_int_equal(release(r1), 0);
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &w, NULL), 0);
    /* While it holds LEASE, node 1 of a group is held out, and its lease
     * is put back as it was: same epoch, still released, so the parts of
     * node 1's last owner still count (prev_clean of the next owner). */
    memset(&h, 0, sizeof(h));
    assert_int_equal(sr_lease_acquire_rank(f->st, RUN, 1, 60, &x, &h), -EBUSY);
    assert_null(x);
    assert_int_equal(h.rank, -1);
    assert_int_equal(sr_lease_read_rank(f->st, RUN, 1, &in), 0);
    assert_int_equal(in.epoch, e1);
    assert_true(in.released);
    /* A node of a group that never had a lease leaves none behind. */
    assert_int_equal(sr_lease_acquire_rank(f->st, RUN, 0, 60, &x, NULL), -EBUSY);
    assert_int_equal(sr_lease_read_rank(f->st, RUN, 0, &in), -ENOENT);
    sr_err_clear();
    assert_int_equal(release(w), 0);
    assert_int_equal(sr_lease_acquire_rank(f->st, RUN, 1, 60, &x, NULL), 0);
    assert_int_equal(sr_lease_epoch(x), e1 + 1);
    assert_int_equal(sr_lease_read_rank(f->st, RUN, 1, &in), 0);
    assert_true(in.prev_clean);
    /* Expired rank leases (a group that vanished) hold nothing. */
    set_lease_field_of(f, RUN "/LEASE.1", "expires", json_integer((json_int_t)time(NULL) - 1));
    assert_int_equal(sr_lease_acquire(f->st, RUN, 60, &w, NULL), 0);
    assert_int_equal(release(w), 0);
    sr_lease_free(x);
}

static void *race_rank(void *arg)
{
    struct racer *r = arg;
    pthread_barrier_wait(r->go);
    r->rc = sr_lease_acquire_rank(r->st, RUN, r->rank, 60, &r->l, NULL);
    return NULL;
}

/* A whole-run writer racing two nodes of a group: never both sides. */
static void test_whole_run_races_ranks(void **state)
{
    struct tu_store *f = *state;
    enum { N = 3 };
    for (int round = 0; round < 40; round++) {
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, N);
        struct racer r[N];
        pthread_t t[N];
        for (int i = 0; i < N; i++) {
            r[i] = (struct racer){.st = f->st, .go = &go, .rank = i - 1};
            assert_int_equal(pthread_create(&t[i], NULL, race_rank, &r[i]), 0);
        }
        for (int i = 0; i < N; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&go);
        for (int i = 0; i < N; i++)
            if (r[i].rc != 0)
                assert_int_equal(r[i].rc, -EBUSY);
        const int whole = r[0].rc == 0, ranks = r[1].rc == 0 || r[2].rc == 0;
        assert_false(whole && ranks); /* both backing off is fine: callers wait */
        for (int i = 0; i < N; i++)
            if (r[i].rc == 0)
                assert_int_equal(release(r[i].l), 0);
        sr_err_clear();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_put_if, tu_store_setup, tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_stored_lease_parses, tu_store_setup,
                                        tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_acquire_busy_release, tu_store_setup,
                                        tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_worker_claim_handed_over, tu_store_setup,
                                        tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_takeover_after_expiry, tu_store_setup,
                                        tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_lease_taken_over, tu_store_setup,
                                        tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_dead_holder_here, tu_store_setup, tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_racing_acquirers, tu_store_setup, tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_epoch_fence, tu_store_setup, tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_keeper_tells_the_loop_once_that_the_lease_was_lost,
                                        tu_store_setup, tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_manifest_create_only, tu_store_setup,
                                        tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_weak_store, tu_store_setup, tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_ranks_and_whole_run_exclude, tu_store_setup,
                                        tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_whole_run_races_ranks, tu_store_setup,
                                        tu_store_teardown),
    };
    sr_verbosity = SR_QUIET;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
