/*
 * test_checkpointer.c - the stage / persist commit pipeline
 * (runtime/supervise/checkpointer.h) against a file store in a scratch directory:
 * results and their order, what ends up in the store, retention, failure
 * of a stage, draining on stop, and the synchronous building blocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "checkpointer.h"
#include "fsutil.h"
#include "log.h"
#include "parts.h"
#include "units.h"

#define RUN "cp-run"
#define WAIT_MS 30000
#define MAXRES 32

struct fixture {
    struct tu_store fs;
    char ckpt[PATH_MAX]; /* the job's checkpoint directory */
    char spool[PATH_MAX];
    struct sr_commits_config cfg;
    struct sr_commits *cp;
    struct sr_commit_result res[MAXRES];
    size_t nres;
};

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    tu_store_open(&f->fs, "checkpointer");
    snprintf(f->ckpt, sizeof(f->ckpt), "%s/ckpt", f->fs.dir);
    snprintf(f->spool, sizeof(f->spool), "%s/spool", f->fs.dir);
    assert_int_equal(sr_mkdirs(f->ckpt, 0755), 0);
    tu_write_text(f->ckpt, "model.bin", "weights v1");
    tu_write_text(f->ckpt, "optim.bin", "optimizer state v1");
    char sub[PATH_MAX + 8];
    snprintf(sub, sizeof(sub), "%s/rng", f->ckpt);
    assert_int_equal(sr_mkdirs(sub, 0755), 0);
    tu_write_text(sub, "state.txt", "seed 1234");
    f->cfg = (struct sr_commits_config){.st = f->fs.st,
                                        .run_id = RUN,
                                        .spool_dir = f->spool,
                                        .keep = 0,
                                        .attempt = 1,
                                        .threads = 2};
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    sr_commits_stop(f->cp, 0);
    tu_store_close(&f->fs);
    free(f);
    return 0;
}

static void start(struct fixture *f)
{
    sr_err_clear();
    const int rc = sr_commits_start(&f->cfg, &f->cp);
    if (rc != 0)
        fail_msg("sr_commits_start: %d %s", rc, sr_strerror(rc));
}

static void stop(struct fixture *f)
{
    sr_commits_stop(f->cp, 0);
    f->cp = NULL;
}

/* Collects results, the way the supervisor's loop does (poll the fd, drain
 * with sr_commits_take), until want results of kind arrived in total; fails
 * after WAIT_MS. */
static void wait_results(struct fixture *f, enum sr_commit_kind kind, size_t want)
{
    const int64_t end = sr_now_ms() + WAIT_MS;
    for (;;) {
        size_t have = 0;
        for (size_t i = 0; i < f->nres; i++)
            have += f->res[i].kind == kind;
        if (have >= want)
            return;
        const int64_t left = end - sr_now_ms();
        if (left <= 0)
            fail_msg("timed out: %zu of %zu %s results", have, want,
                     kind == SR_COMMIT_STAGED    ? "STAGED"
                     : kind == SR_COMMIT_SNAPPED ? "SNAPPED"
                                                 : "PERSISTED");
        struct pollfd p = {.fd = sr_commits_fd(f->cp), .events = POLLIN};
        poll(&p, 1, (int)left);
        struct sr_commit_result r;
        while (sr_commits_take(f->cp, &r) == 1) {
            assert_true(f->nres < MAXRES);
            f->res[f->nres++] = r;
        }
    }
}

/* Index of the result of kind for seq, or -1. */
static int find_result(const struct fixture *f, enum sr_commit_kind kind, uint64_t seq)
{
    for (size_t i = 0; i < f->nres; i++)
        if (f->res[i].kind == kind && f->res[i].seq == seq)
            return (int)i;
    return -1;
}

static void submit(struct fixture *f, const char *dir, int64_t step, int client_fd)
{
    assert_int_equal(sr_commits_submit(f->cp, dir, step, client_fd), 0);
}

/* Submits one commit and waits until it persisted; returns its result. */
static struct sr_commit_result commit(struct fixture *f, int64_t step)
{
    size_t before = 0;
    for (size_t i = 0; i < f->nres; i++)
        before += f->res[i].kind == SR_COMMIT_PERSISTED;
    submit(f, f->ckpt, step, -1);
    wait_results(f, SR_COMMIT_PERSISTED, before + 1);
    const struct sr_commit_result r = f->res[f->nres - 1];
    assert_int_equal(r.kind, SR_COMMIT_PERSISTED);
    if (r.rc != 0)
        fail_msg("persist failed: %d %s", r.rc, r.msg);
    return r;
}

static void restore_seq(struct fixture *f, uint64_t seq, const char *into)
{
    struct sr_manifest m;
    sr_err_clear();
    const int rc = sr_ckpt_restore(f->fs.st, RUN, seq, into, 1, &m);
    if (rc != 0)
        fail_msg("restore of seq %llu: %d %s", (unsigned long long)seq, rc, sr_strerror(rc));
    assert_int_equal(m.seq, seq);
}

/* ---- the asynchronous pipeline ---- */

static void test_three_submits_give_staged_then_persisted_results_in_seq_order(void **state)
{
    struct fixture *f = *state;
    start(f);
    submit(f, f->ckpt, 100, 11);
    submit(f, f->ckpt, 200, 12);
    submit(f, f->ckpt, 300, 13);
    wait_results(f, SR_COMMIT_PERSISTED, 3);
    wait_results(f, SR_COMMIT_STAGED, 3);
    wait_results(f, SR_COMMIT_SNAPPED, 3);
    assert_int_equal(f->nres, 9);
    uint64_t last[3] = {0, 0, 0};
    for (size_t i = 0; i < f->nres; i++) {
        const struct sr_commit_result *r = &f->res[i];
        if (r->rc != 0)
            fail_msg("result %zu failed: %d %s", i, r->rc, r->msg);
        assert_int_equal(r->seq, last[r->kind] + 1); /* 1, 2, 3 in order */
        last[r->kind] = r->seq;
        assert_int_equal(r->step, 100 * (int64_t)r->seq);
        /* the job is answered by the snapshot's result, once */
        assert_int_equal(r->client_fd, r->kind == SR_COMMIT_SNAPPED ? 10 + (int)r->seq : -1);
        assert_true(r->kind == SR_COMMIT_SNAPPED || r->raw_bytes > 0);
        assert_true(r->kind == SR_COMMIT_SNAPPED || r->stored_bytes > 0);
    }
    for (uint64_t seq = 1; seq <= 3; seq++) {
        assert_true(find_result(f, SR_COMMIT_SNAPPED, seq) < find_result(f, SR_COMMIT_STAGED, seq));
        assert_true(find_result(f, SR_COMMIT_STAGED, seq) <
                    find_result(f, SR_COMMIT_PERSISTED, seq));
    }
}

static void test_pending_drops_to_zero_once_all_persisted(void **state)
{
    struct fixture *f = *state;
    start(f);
    assert_int_equal(sr_commits_pending(f->cp), 0);
    submit(f, f->ckpt, 1, -1);
    submit(f, f->ckpt, 2, -1);
    submit(f, f->ckpt, 3, -1);
    wait_results(f, SR_COMMIT_PERSISTED, 3);
    assert_int_equal(sr_commits_pending(f->cp), 0);
    assert_int_equal(sr_commits_staging(f->cp), 0);
}

/* More results than the queue to the loop holds (64), none taken until
 * the workers found it full: they wait for room (never drop one), the
 * loop can still ask what is pending meanwhile (the workers let go of
 * their lock while they wait), and every result arrives, in order. */
#define BURST 40

static void test_a_burst_of_results_past_the_queue_arrives_whole_and_in_order(void **state)
{
    struct fixture *f = *state;
    start(f);
    for (int i = 1; i <= BURST; i++)
        submit(f, f->ckpt, i, -1);
    const int64_t end = sr_now_ms() + WAIT_MS;
    while (sr_commits_result_waits(f->cp) == 0) {
        if (sr_now_ms() > end)
            fail_msg("the workers never found the queue of results full");
        usleep(10 * 1000);
    }
    assert_true(sr_commits_pending(f->cp) > 0);
    assert_true(sr_commits_staging(f->cp) >= 0);
    uint64_t last[3] = {0, 0, 0};
    size_t n = 0;
    while (last[SR_COMMIT_PERSISTED] < BURST) {
        struct pollfd p = {.fd = sr_commits_fd(f->cp), .events = POLLIN};
        if (poll(&p, 1, WAIT_MS) <= 0)
            fail_msg("timed out after %zu results", n);
        for (struct sr_commit_result r; sr_commits_take(f->cp, &r) == 1; n++) {
            if (r.rc != 0)
                fail_msg("result %zu failed: %d %s", n, r.rc, r.msg);
            assert_int_equal(r.seq, last[r.kind] + 1); /* each kind in seq order, none missing */
            last[r.kind] = r.seq;
            assert_int_equal(r.step, (int64_t)r.seq);
        }
    }
    assert_int_equal(n, 3 * BURST);
    assert_int_equal(last[SR_COMMIT_SNAPPED], BURST);
    assert_int_equal(last[SR_COMMIT_STAGED], BURST);
    assert_int_equal(sr_commits_pending(f->cp), 0);
}

static void test_store_lists_the_persisted_checkpoints_with_their_steps(void **state)
{
    struct fixture *f = *state;
    start(f);
    submit(f, f->ckpt, 10, -1);
    submit(f, f->ckpt, -1, -1);
    submit(f, f->ckpt, 30, -1);
    wait_results(f, SR_COMMIT_PERSISTED, 3);
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 3);
    const int64_t steps[] = {10, -1, 30};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(l.v[i].seq, i + 1);
        assert_int_equal(l.v[i].step, steps[i]);
        assert_string_equal(l.v[i].run_id, RUN);
        assert_int_equal(l.v[i].attempt, 1);
    }
    sr_ckpt_list_free(&l);
}

static void test_persisted_checkpoint_restores_the_directory(void **state)
{
    struct fixture *f = *state;
    start(f);
    commit(f, 5);
    char out[PATH_MAX + 16];
    snprintf(out, sizeof(out), "%s/restored", f->fs.dir);
    restore_seq(f, 1, out);
    tu_assert_text(out, "model.bin", "weights v1");
    tu_assert_text(out, "optim.bin", "optimizer state v1");
    tu_assert_text(out, "rng/state.txt", "seed 1234");
}

static void test_spool_is_empty_after_commits_persist(void **state)
{
    struct fixture *f = *state;
    start(f);
    commit(f, 1);
    commit(f, 2);
    /* only the pool: links to the last staged archive (its unchanged frame
     * is a hole) and the one that holds that frame, which the next stage
     * refers to; gone when the checkpointer stops */
    assert_int_equal(count_entries(f->spool), 2);
    DIR *d = opendir(f->spool);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            assert_int_equal(strncmp(e->d_name, "pool-", 5), 0);
    closedir(d);
    stop(f);
    assert_int_equal(count_entries(f->spool), 0);
}

/* The staged frames v as a pool for the next stage: those in the archive
 * itself are in paths[k - 1], the holes where they already point. */
static struct sr_frame_info *pool_of(const struct sr_manifest *m, uint32_t k)
{
    struct sr_frame_info *v = malloc(m->staged_nframes * sizeof(*v));
    assert_non_null(v);
    memcpy(v, m->staged_frames, m->staged_nframes * sizeof(*v));
    for (uint32_t i = 0; i < m->staged_nframes; i++)
        if (!v[i].src) {
            v[i].src = k;
            v[i].soff = v[i].coff;
        }
    return v;
}

/* A stage after an unchanged commit copies every frame from the last
 * staged archive instead of compressing it again; the archive is the same
 * bytes (and a changed frame is compressed anew). */
static void test_unchanged_frames_are_copied_from_the_last_stage(void **state)
{
    struct fixture *f = *state;
    char a[PATH_MAX + 16], b[PATH_MAX + 16], c[PATH_MAX + 16];
    snprintf(a, sizeof(a), "%s/a.tar.zst", f->fs.dir);
    snprintf(b, sizeof(b), "%s/b.tar.zst", f->fs.dir);
    snprintf(c, sizeof(c), "%s/c.tar.zst", f->fs.dir);
    struct sr_manifest ma, mb, mc;
    assert_int_equal(sr_commits_stage(&f->cfg, f->ckpt, 1, 1, a, &ma), 0);
    struct sr_frame_info *pool = pool_of(&ma, 1);
    const char *const paths[] = {a};
    const struct sr_pack_reuse reuse = {
        .paths = paths, .npaths = 1, .v = pool, .n = ma.staged_nframes};
    struct sr_commits_config cfg = f->cfg;
    cfg.reuse = &reuse;
    assert_int_equal(sr_commits_stage(&cfg, f->ckpt, 2, 2, b, &mb), 0);
    assert_string_equal(ma.checksum, mb.checksum); /* byte for byte the same archive */
    /* a damaged earlier archive only costs the compression: same result */
    FILE *fp = fopen(a, "r+b");
    assert_non_null(fp);
    for (uint32_t i = 0; i < ma.staged_nframes; i++) {
        fseek(fp, (long)(ma.staged_frames[i].coff + ma.staged_frames[i].csize / 2), SEEK_SET);
        fputc('X', fp);
    }
    fclose(fp);
    assert_int_equal(sr_commits_stage(&cfg, f->ckpt, 3, 3, c, &mc), 0);
    assert_string_equal(mc.checksum, mb.checksum);
    free(pool);
    free(ma.staged_frames);
    free(mb.staged_frames);
    free(mc.staged_frames);
}

/* size bytes that do not compress, from seed */
static void write_noise(const char *dir, const char *name, size_t size, uint64_t seed)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    for (size_t i = 0; i < size; i += 8) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        fwrite(&seed, 1, size - i < 8 ? size - i : 8, fp);
    }
    fclose(fp);
}

static void read_all(const char *path, char **buf, size_t *len)
{
    sr_err_clear();
    const int rc = sr_read_file(path, 64u << 20, buf, len);
    if (rc != 0)
        fail_msg("read %s: %s", path, sr_strerror(rc));
}

/* dir_a/name and dir_b/name hold the same bytes */
static void assert_same_file(const char *dir_a, const char *dir_b, const char *name)
{
    char pa[PATH_MAX + 64], pb[PATH_MAX + 64], *a, *b;
    size_t la, lb;
    snprintf(pa, sizeof(pa), "%s/%s", dir_a, name);
    snprintf(pb, sizeof(pb), "%s/%s", dir_b, name);
    read_all(pa, &a, &la);
    read_all(pb, &b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
}

/* by_ref: a stage leaves holes for the frames earlier archives hold (a
 * chain: c refers to b's own frames and, through b's holes, to a's), does
 * not write them (the file takes less room), and filling it in gives the
 * very archive a stage without reuse makes. Each hole's frame reads back
 * as that archive's; an earlier archive that changed cannot be filled
 * from. */
static void test_unchanged_frames_become_holes_and_fill_back(void **state)
{
    struct fixture *f = *state;
    write_noise(f->ckpt, "big1.bin", 9u << 20, 1);
    write_noise(f->ckpt, "big2.bin", 5u << 20, 2);
    char a[PATH_MAX + 16], b[PATH_MAX + 16], c[PATH_MAX + 16], whole[PATH_MAX + 16];
    snprintf(a, sizeof(a), "%s/a.tar.zst", f->fs.dir);
    snprintf(b, sizeof(b), "%s/b.tar.zst", f->fs.dir);
    snprintf(c, sizeof(c), "%s/c.tar.zst", f->fs.dir);
    snprintf(whole, sizeof(whole), "%s/whole.tar.zst", f->fs.dir);
    struct sr_manifest ma, mb, mc, mw;
    assert_int_equal(sr_commits_stage(&f->cfg, f->ckpt, 1, 1, a, &ma), 0);
    const char *const paths[] = {a, b};
    struct sr_frame_info *pa = pool_of(&ma, 1);
    struct sr_pack_reuse reuse = {
        .paths = paths, .npaths = 2, .v = pa, .n = ma.staged_nframes, .by_ref = 1};
    struct sr_commits_config cfg = f->cfg;
    cfg.reuse = &reuse;
    write_noise(f->ckpt, "big2.bin", 5u << 20, 3); /* b: big2 changed */
    assert_int_equal(sr_commits_stage(&cfg, f->ckpt, 2, 2, b, &mb), 0);
    uint32_t holes = 0;
    for (uint32_t i = 0; i < mb.staged_nframes; i++)
        holes += mb.staged_frames[i].src == 1;
    assert_true(holes >= 3);              /* big1's frames at least */
    assert_string_equal(mb.checksum, ""); /* unknown until filled */
    struct stat sa, sb;
    assert_int_equal(stat(a, &sa), 0);
    assert_int_equal(stat(b, &sb), 0);
    assert_true((uint64_t)sb.st_size == mb.stored_bytes);
    assert_true(sb.st_blocks * 512 < sb.st_size - (8 << 20)); /* big1 not written */
    struct sr_frame_info *pb = pool_of(&mb, 2);
    reuse.v = pb;
    reuse.n = mb.staged_nframes;
    tu_write_text(f->ckpt, "model.bin", "weights v3"); /* c: a small change */
    assert_int_equal(sr_commits_stage(&cfg, f->ckpt, 3, 3, c, &mc), 0);
    uint32_t from_a = 0, from_b = 0;
    for (uint32_t i = 0; i < mc.staged_nframes; i++) {
        from_a += mc.staged_frames[i].src == 1;
        from_b += mc.staged_frames[i].src == 2;
    }
    assert_true(from_a >= 3 && from_b >= 2); /* big1 from a, big2 from b */
    assert_int_equal(sr_commits_stage(&f->cfg, f->ckpt, 4, 4, whole, &mw), 0);
    /* one frame read where it is: the same bytes as the whole archive's */
    char *wbuf, *cbuf;
    size_t wlen, clen;
    read_all(whole, &wbuf, &wlen);
    struct sr_source src;
    assert_int_equal(sr_source_file_open(c, &src), 0);
    for (uint32_t i = 0; i < mc.staged_nframes; i++) {
        const struct sr_frame_info *fi = &mc.staged_frames[i];
        char *buf = malloc(fi->csize);
        assert_int_equal(sr_staged_read_frame(&src, fi, paths, 2, buf), 0);
        assert_true(fi->coff + fi->csize <= wlen);
        assert_memory_equal(buf, wbuf + fi->coff, fi->csize);
        free(buf);
    }
    sr_source_file_close(&src);
    /* filled in: byte for byte the whole archive, and its checksum */
    char sum[SR_CHECKSUM_LEN];
    assert_int_equal(sr_staged_fill(c, mc.staged_frames, mc.staged_nframes, paths, 2, 0, sum), 0);
    assert_string_equal(sum, mw.checksum);
    for (uint32_t i = 0; i < mc.staged_nframes; i++)
        assert_int_equal(mc.staged_frames[i].src, 0);
    read_all(c, &cbuf, &clen);
    assert_int_equal(clen, wlen);
    assert_memory_equal(cbuf, wbuf, wlen);
    free(cbuf);
    /* b's holes refer to a: damage a frame of a and b cannot be filled */
    FILE *fp = fopen(a, "r+b");
    assert_non_null(fp);
    for (uint32_t i = 0; i < ma.staged_nframes; i++) {
        const long at = (long)(ma.staged_frames[i].coff + ma.staged_frames[i].csize / 2);
        fseek(fp, at, SEEK_SET);
        const int was = fgetc(fp);
        fseek(fp, at, SEEK_SET);
        fputc(~was & 0xff, fp);
    }
    fclose(fp);
    sr_err_clear();
    const int rc = sr_staged_fill(b, mb.staged_frames, mb.staged_nframes, paths, 2, 0, sum);
    assert_int_equal(rc, -EIO);
    assert_non_null(strstr(sr_strerror(rc), "changed"));
    free(wbuf);
    free(pa);
    free(pb);
    free(ma.staged_frames);
    free(mb.staged_frames);
    free(mc.staged_frames);
    free(mw.staged_frames);
}

/* The pipeline leaves holes and publishes every checkpoint whole and
 * right: deltas (holes read from the pool), full ones (filled in) and,
 * with full_every 1, nothing but full ones; each seq restores bit-exact. */
static void check_holes_publish(struct fixture *f, unsigned full_every)
{
    f->cfg.full_every = full_every;
    write_noise(f->ckpt, "big1.bin", 5u << 20, 11);
    write_noise(f->ckpt, "big2.bin", 2u << 20, 12);
    start(f);
    for (int step = 1; step <= 4; step++) {
        char v[32];
        snprintf(v, sizeof(v), "weights v%d", step);
        tu_write_text(f->ckpt, "model.bin", v);
        if (step == 3)
            write_noise(f->ckpt, "big2.bin", 2u << 20, 13);
        commit(f, step);
    }
    stop(f);
    assert_int_equal(count_entries(f->spool), 0);
    for (int step = 1; step <= 4; step++) {
        char out[PATH_MAX + 16], want[PATH_MAX + 16];
        snprintf(out, sizeof(out), "%s/restored", f->fs.dir);
        snprintf(want, sizeof(want), "%s/want", f->fs.dir);
        restore_seq(f, (uint64_t)step, out);
        char v[32];
        snprintf(v, sizeof(v), "weights v%d", step);
        tu_assert_text(out, "model.bin", v);
        sr_rmtree(want);
        assert_int_equal(sr_mkdirs(want, 0755), 0);
        write_noise(want, "big1.bin", 5u << 20, 11);
        write_noise(want, "big2.bin", 2u << 20, step >= 3 ? 13 : 12);
        assert_same_file(out, want, "big1.bin");
        assert_same_file(out, want, "big2.bin");
    }
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 4);
    for (uint32_t i = 0; i < l.n; i++)
        assert_int_equal(l.v[i].full, full_every == 1 || i == 0);
    sr_ckpt_list_free(&l);
}

/* Near a deadline (hurry), a checkpoint due to be full is a delta; the
 * next one without hurry is full. */
static void test_hurry_makes_a_due_full_checkpoint_a_delta(void **state)
{
    struct fixture *f = *state;
    f->cfg.full_every = 2; /* full, delta, full, delta... */
    write_noise(f->ckpt, "big1.bin", 5u << 20, 21);
    start(f);
    commit(f, 1); /* full: the first */
    tu_write_text(f->ckpt, "model.bin", "weights v2");
    commit(f, 2); /* a delta */
    tu_write_text(f->ckpt, "model.bin", "weights v3");
    sr_commits_hurry(f->cp, 1);
    commit(f, 3); /* due to be full, a delta */
    sr_commits_hurry(f->cp, 0);
    tu_write_text(f->ckpt, "model.bin", "weights v4");
    commit(f, 4); /* full again */
    stop(f);
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 4);
    const int want[] = {1, 0, 0, 1};
    for (int i = 0; i < 4; i++)
        assert_int_equal(l.v[i].full, want[i]);
    sr_ckpt_list_free(&l);
    char out[PATH_MAX + 16];
    snprintf(out, sizeof(out), "%s/restored", f->fs.dir);
    restore_seq(f, 3, out);
    tu_assert_text(out, "model.bin", "weights v3");
}

/* A multi-node part is staged with holes too (the job waits only for the
 * new frames) and published as a delta on its rank's part of the last set:
 * both nodes' parts of step 2 restore bit-exact as one checkpoint. */
static void test_multinode_parts_are_deltas_and_restore(void **state)
{
    struct fixture *f = *state;
    f->cfg.nodes = 2;
    f->cfg.epoch = 1; /* as a lease's: a part of epoch 0 never counts */
    write_noise(f->ckpt, "big0.bin", 5u << 20, 31);
    char ckpt1[PATH_MAX + 16], spool1[PATH_MAX + 16];
    snprintf(ckpt1, sizeof(ckpt1), "%s/ckpt1", f->fs.dir);
    snprintf(spool1, sizeof(spool1), "%s/spool1", f->fs.dir);
    assert_int_equal(sr_mkdirs(ckpt1, 0755), 0);
    write_noise(ckpt1, "big1.bin", 5u << 20, 32);
    /* the two nodes, each its own checkpointer, commit steps 1 and 2 */
    struct sr_commits_config cfg1 = f->cfg;
    cfg1.node_rank = 1;
    cfg1.spool_dir = spool1;
    struct sr_commits *node1;
    start(f);
    assert_int_equal(sr_commits_start(&cfg1, &node1), 0);
    for (int step = 1; step <= 2; step++) {
        tu_write_text(f->ckpt, "model.bin", step == 1 ? "weights v1" : "weights v2");
        const struct sr_commit_result r = commit(f, step);
        assert_int_equal(r.part, 1);
        assert_int_equal(sr_commits_submit(node1, ckpt1, step, -1), 0);
        int persisted = 0;
        for (int64_t end = sr_now_ms() + WAIT_MS; !persisted && sr_now_ms() < end;) {
            struct pollfd pf = {.fd = sr_commits_fd(node1), .events = POLLIN};
            poll(&pf, 1, 100);
            for (struct sr_commit_result x; sr_commits_take(node1, &x) == 1;) {
                if (x.kind == SR_COMMIT_PERSISTED && x.rc != 0)
                    fail_msg("node 1 step %d: %s", step, x.msg);
                persisted |= x.kind == SR_COMMIT_PERSISTED && x.set;
            }
        }
        assert_true(persisted); /* node 1's part completed the set */
    }
    sr_commits_stop(node1, 0);
    stop(f);
    char out[PATH_MAX + 16];
    snprintf(out, sizeof(out), "%s/restored", f->fs.dir);
    const struct sr_restore_opts o = {.threads = 1, .nodes = 2, .rank = 0, .all_parts = 1};
    struct sr_manifest m;
    sr_err_clear();
    const int rc = sr_ckpt_restore_node(f->fs.st, RUN, sr_set_seq(2), out, &o, &m);
    if (rc != 0)
        fail_msg("restore of step 2: %s", sr_strerror(rc));
    /* each part of step 2 is a delta on its rank's part of step 1 */
    for (uint32_t rank = 0; rank < 2; rank++) {
        struct sr_manifest p;
        assert_int_equal(sr_ckpt_part_of(f->fs.st, &m, rank, &p), 0);
        assert_int_equal(p.format, 2);
        assert_int_equal(p.full, 0);
        assert_true(p.stored_bytes < p.raw_bytes / 4);
    }
    tu_assert_text(out, "model.bin", "weights v2");
    assert_same_file(out, f->ckpt, "big0.bin");
    assert_same_file(out, ckpt1, "big1.bin");
}

static void test_holes_publish_deltas_right(void **state)
{
    check_holes_publish(*state, 0);
}

static void test_holes_publish_full_checkpoints_right(void **state)
{
    check_holes_publish(*state, 1);
}

static void test_keep_two_leaves_only_the_newest_two(void **state)
{
    struct fixture *f = *state;
    f->cfg.keep = 2;
    start(f);
    submit(f, f->ckpt, 1, -1);
    submit(f, f->ckpt, 2, -1);
    submit(f, f->ckpt, 3, -1);
    wait_results(f, SR_COMMIT_PERSISTED, 3);
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.v[0].seq, 2);
    assert_int_equal(l.v[1].seq, 3);
    sr_ckpt_list_free(&l);
}

static void test_commit_after_modification_holds_the_new_content(void **state)
{
    struct fixture *f = *state;
    start(f);
    commit(f, 1);
    tu_write_text(f->ckpt, "model.bin", "weights v2");
    tu_write_text(f->ckpt, "extra.txt", "new file");
    commit(f, 2);
    char out[PATH_MAX + 16];
    snprintf(out, sizeof(out), "%s/restored", f->fs.dir);
    restore_seq(f, 2, out);
    tu_assert_text(out, "model.bin", "weights v2");
    tu_assert_text(out, "extra.txt", "new file");
    restore_seq(f, 1, out);
    tu_assert_text(out, "model.bin", "weights v1");
    tu_assert_text(out, "extra.txt", "");
}

static void test_directory_may_change_once_staged(void **state)
{
    struct fixture *f = *state;
    start(f);
    submit(f, f->ckpt, 1, -1);
    wait_results(f, SR_COMMIT_STAGED, 1);
    /* The job resumes and overwrites its checkpoint while it uploads. */
    tu_write_text(f->ckpt, "model.bin", "weights overwritten");
    wait_results(f, SR_COMMIT_PERSISTED, 1);
    char out[PATH_MAX + 16];
    snprintf(out, sizeof(out), "%s/restored", f->fs.dir);
    restore_seq(f, 1, out);
    tu_assert_text(out, "model.bin", "weights v1");
}

static void test_missing_directory_fails_at_stage_and_publishes_nothing(void **state)
{
    struct fixture *f = *state;
    start(f);
    char missing[PATH_MAX + 16];
    snprintf(missing, sizeof(missing), "%s/no-such-dir", f->fs.dir);
    submit(f, missing, 9, 4);
    wait_results(f, SR_COMMIT_STAGED, 1);
    const struct sr_commit_result *r = &f->res[0];
    assert_int_equal(r->kind, SR_COMMIT_STAGED);
    assert_true(r->rc < 0);
    assert_true(r->msg[0] != '\0');
    assert_int_equal(r->client_fd, 4);
    assert_int_equal(sr_commits_pending(f->cp), 0);
    assert_int_equal(find_result(f, SR_COMMIT_PERSISTED, r->seq), -1);
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 0);
    sr_ckpt_list_free(&l);
}

static void test_failed_stage_does_not_block_later_commits(void **state)
{
    struct fixture *f = *state;
    start(f);
    char missing[PATH_MAX + 16];
    snprintf(missing, sizeof(missing), "%s/no-such-dir", f->fs.dir);
    submit(f, missing, 1, -1);
    const struct sr_commit_result r = commit(f, 2);
    assert_int_equal(r.step, 2);
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.v[0].step, 2);
    sr_ckpt_list_free(&l);
}

static void test_stop_drains_submitted_commits(void **state)
{
    struct fixture *f = *state;
    start(f);
    submit(f, f->ckpt, 1, -1);
    submit(f, f->ckpt, 2, -1);
    submit(f, f->ckpt, 3, -1);
    stop(f);
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 3);
    assert_int_equal(l.v[2].step, 3);
    sr_ckpt_list_free(&l);
}

static void test_restarted_checkpointer_continues_seq_numbering(void **state)
{
    struct fixture *f = *state;
    start(f);
    commit(f, 1);
    commit(f, 2);
    stop(f);
    f->nres = 0;
    start(f);
    const struct sr_commit_result r = commit(f, 3);
    assert_int_equal(r.seq, 3);
}

/* ---- synchronous building blocks ---- */

static void test_stage_fills_the_manifest(void **state)
{
    struct fixture *f = *state;
    char out[PATH_MAX + 16];
    snprintf(out, sizeof(out), "%s/staged.tar.zst", f->fs.dir);
    struct sr_manifest m;
    assert_int_equal(sr_commits_stage(&f->cfg, f->ckpt, 7, 700, out, &m), 0);
    assert_non_null(m.staged_frames); /* the packer's list, for the persist */
    assert_int_equal(m.staged_nframes, m.frames);
    free(m.staged_frames);
    assert_string_equal(m.run_id, RUN);
    assert_int_equal(m.seq, 7);
    assert_int_equal(m.step, 700);
    assert_int_equal(m.attempt, 1);
    assert_int_equal(m.files, 3);
    assert_true(m.raw_bytes > 0);
    assert_true(m.stored_bytes > 0);
    assert_true(strncmp(m.checksum, "xxh3-128:", 9) == 0);
    assert_int_equal(strlen(m.checksum), SR_CHECKSUM_LEN - 1);
    struct stat sb;
    assert_int_equal(stat(out, &sb), 0);
    assert_int_equal(m.stored_bytes, (uint64_t)sb.st_size);
}

static void test_persist_publishes_a_data_object_of_stored_bytes(void **state)
{
    struct fixture *f = *state;
    char out[PATH_MAX + 16];
    snprintf(out, sizeof(out), "%s/staged.tar.zst", f->fs.dir);
    struct sr_manifest m;
    assert_int_equal(sr_commits_stage(&f->cfg, f->ckpt, 1, 42, out, &m), 0);
    assert_int_equal(sr_commits_persist(&f->cfg, &m, out), 0);
    free(m.staged_frames);
    char key[512];
    sr_ckpt_key(key, sizeof(key), RUN, 1, "data.tar.zst");
    uint64_t size = 0;
    assert_int_equal(sr_store_size(f->fs.st, key, &size), 0);
    assert_int_equal(size, m.stored_bytes);
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.v[0].step, 42);
    assert_int_equal(l.v[0].stored_bytes, m.stored_bytes);
    assert_int_equal(l.v[0].raw_bytes, m.raw_bytes);
    assert_string_equal(l.v[0].checksum, m.checksum);
    sr_ckpt_list_free(&l);
}

/* Another writer committed the seq we staged for (a race in the weak lease
 * mode, an old owner's upload landing first): persist moves to the next
 * free seq instead of failing, and both checkpoints stay intact. */
static void test_persist_moves_to_a_free_seq_when_its_seq_was_taken(void **state)
{
    struct fixture *f = *state;
    char out[PATH_MAX + 16], other[PATH_MAX + 16];
    snprintf(out, sizeof(out), "%s/staged.tar.zst", f->fs.dir);
    snprintf(other, sizeof(other), "%s/other.tar.zst", f->fs.dir);
    struct sr_manifest mine, theirs;
    assert_int_equal(sr_commits_stage(&f->cfg, f->ckpt, 1, 10, out, &mine), 0);
    assert_int_equal(sr_commits_stage(&f->cfg, f->ckpt, 1, 99, other, &theirs), 0);
    assert_int_equal(sr_commits_persist(&f->cfg, &theirs, other), 0);
    assert_int_equal(sr_commits_persist(&f->cfg, &mine, out), 0);
    free(mine.staged_frames);
    free(theirs.staged_frames);
    assert_int_equal(mine.seq, 2);
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.v[0].step, 99);
    assert_int_equal(l.v[1].seq, 2);
    assert_int_equal(l.v[1].step, 10);
    sr_ckpt_list_free(&l);
}

static void test_stage_of_missing_directory_fails_with_message(void **state)
{
    struct fixture *f = *state;
    char out[PATH_MAX + 16], missing[PATH_MAX + 16];
    snprintf(out, sizeof(out), "%s/staged.tar.zst", f->fs.dir);
    snprintf(missing, sizeof(missing), "%s/no-such-dir", f->fs.dir);
    struct sr_manifest m;
    sr_err_clear();
    const int rc = sr_commits_stage(&f->cfg, missing, 1, 1, out, &m);
    assert_true(rc < 0);
    assert_true(sr_strerror(rc)[0] != '\0');
    struct stat sb;
    assert_int_not_equal(stat(out, &sb), 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    sr_verbosity = SR_WARN;
    const struct CMUnitTest tests[] = {
        T(test_three_submits_give_staged_then_persisted_results_in_seq_order),
        T(test_pending_drops_to_zero_once_all_persisted),
        T(test_a_burst_of_results_past_the_queue_arrives_whole_and_in_order),
        T(test_store_lists_the_persisted_checkpoints_with_their_steps),
        T(test_persisted_checkpoint_restores_the_directory),
        T(test_spool_is_empty_after_commits_persist),
        T(test_unchanged_frames_are_copied_from_the_last_stage),
        T(test_unchanged_frames_become_holes_and_fill_back),
        T(test_holes_publish_deltas_right),
        T(test_holes_publish_full_checkpoints_right),
        T(test_hurry_makes_a_due_full_checkpoint_a_delta),
        T(test_multinode_parts_are_deltas_and_restore),
        T(test_keep_two_leaves_only_the_newest_two),
        T(test_commit_after_modification_holds_the_new_content),
        T(test_directory_may_change_once_staged),
        T(test_missing_directory_fails_at_stage_and_publishes_nothing),
        T(test_failed_stage_does_not_block_later_commits),
        T(test_stop_drains_submitted_commits),
        T(test_restarted_checkpointer_continues_seq_numbering),
        T(test_stage_fills_the_manifest),
        T(test_persist_publishes_a_data_object_of_stored_bytes),
        T(test_persist_moves_to_a_free_seq_when_its_seq_was_taken),
        T(test_stage_of_missing_directory_fails_with_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
