/*
 * test_catalog.c - checkpoints of a run in a file store (storage/run/catalog.h):
 * publish, list, restore with fallback past bad checkpoints, gc, DONE.
 * Checkpoints are real archives made by the codec from scratch directories.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "fsutil.h"
#include "log.h"

#define RUN "exp1"

struct fixture {
    struct tu_store fs;
    char log[64][300]; /* deletes seen by the recording store */
    size_t nlog;
};

static struct fixture *recording; /* the fixture whose store records deletes */
static const struct sr_store_ops *file_ops;

static int rec_del(struct sr_store *st, const char *key)
{
    if (recording && recording->nlog < 64)
        snprintf(recording->log[recording->nlog++], 300, "%s", key);
    return file_ops->del(st, key);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    tu_store_open(&f->fs, "catalog");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    recording = NULL;
    tu_store_close(&f->fs);
    free(f);
    return 0;
}

static int exists(const char *dir, const char *name)
{
    char p[PATH_MAX];
    struct stat sb;
    assert_true(snprintf(p, sizeof(p), "%s/%s", dir, name) < (int)sizeof(p));
    return lstat(p, &sb) == 0;
}

/* Packs a checkpoint directory holding "state.txt" = "state <seq>" (plus
 * a bigger file so the archive has several frames) and publishes it. */
static void publish_run(struct fixture *f, const char *run, uint64_t seq)
{
    char src[PATH_MAX], data[PATH_MAX + 32], text[64];
    assert_true(snprintf(src, sizeof(src), "%s/src-%s-%llu", f->fs.dir, run,
                         (unsigned long long)seq) < (int)sizeof(src));
    assert_int_equal(sr_mkdirs(src, 0755), 0);
    assert_true(snprintf(text, sizeof(text), "state %llu", (unsigned long long)seq) <
                (int)sizeof(text));
    tu_write_text(src, "state.txt", text);
    size_t n = 300000;
    char *big = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + (i * 7 + seq) % 26);
    big[n] = '\0';
    tu_write_text(src, "weights.bin", big);
    free(big);
    if (seq == 2)
        tu_write_text(src, "only-in-2.txt", "two");

    assert_true(snprintf(data, sizeof(data), "%s.tar.zst", src) < (int)sizeof(data));
    struct sr_pack_opts opts = {.level = 3, .frame_size = 64 * 1024, .threads = 2};
    struct sr_pack_stats stats;
    assert_int_equal(sr_pack_dir_to_file(src, data, &opts, &stats), 0);

    struct sr_manifest m;
    memset(&m, 0, sizeof(m));
    m.format = SR_MANIFEST_FORMAT;
    snprintf(m.run_id, sizeof(m.run_id), "%s", run);
    m.seq = seq;
    m.step = (int64_t)seq * 100;
    m.created = time(NULL);
    snprintf(m.host, sizeof(m.host), "testhost");
    m.raw_bytes = stats.raw_bytes;
    m.stored_bytes = stats.stored_bytes;
    m.files = stats.files;
    m.frames = stats.frames;
    m.frame_size = 64 * 1024;
    m.level = 3;
    memcpy(m.checksum, stats.checksum, SR_CHECKSUM_LEN);
    int rc = sr_ckpt_publish(f->fs.st, &m, data, NULL);
    if (rc != 0)
        fail_msg("publish %s seq %llu: %s", run, (unsigned long long)seq, sr_strerror(rc));
}

static void publish(struct fixture *f, uint64_t seq)
{
    publish_run(f, RUN, seq);
}

/* An interrupted upload: data present, no manifest. */
static void incomplete(struct fixture *f, uint64_t seq)
{
    char key[256];
    sr_ckpt_key(key, sizeof(key), RUN, seq, "data.tar.zst");
    assert_int_equal(sr_store_put(f->fs.st, key, "partial", 7), 0);
}

static void data_path(struct fixture *f, uint64_t seq, char *out, size_t len)
{
    char key[256];
    sr_ckpt_key(key, sizeof(key), RUN, seq, "data.tar.zst");
    assert_true(snprintf(out, len, "%s/%s", f->fs.root, key) < (int)len);
}

static char *restore_dir(struct fixture *f, const char *name)
{
    static char p[PATH_MAX];
    assert_true(snprintf(p, sizeof(p), "%s/%s", f->fs.dir, name) < (int)sizeof(p));
    return p;
}

/* Rewrites the manifest of seq through edit(). */
static void edit_manifest(struct fixture *f, uint64_t seq, void (*edit)(struct sr_manifest *))
{
    char key[256], *buf, *json;
    size_t len;
    struct sr_manifest m;
    sr_ckpt_key(key, sizeof(key), RUN, seq, "MANIFEST.json");
    assert_int_equal(sr_store_get(f->fs.st, key, 1 << 20, &buf, &len), 0);
    assert_int_equal(sr_manifest_parse(buf, len, &m), 0);
    free(buf);
    edit(&m);
    assert_int_equal(sr_manifest_to_json(&m, &json, &len), 0);
    assert_int_equal(sr_store_put(f->fs.st, key, json, len), 0);
    free(json);
}

static void publish_list_and_next_seq_count_incomplete_uploads(void **state)
{
    struct fixture *f = *state;
    uint64_t seq = 0;
    assert_int_equal(sr_ckpt_next_seq(f->fs.st, RUN, &seq), 0);
    assert_int_equal(seq, 1);
    publish(f, 1);
    publish(f, 2);
    incomplete(f, 4);
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.v[0].seq, 1);
    assert_int_equal(l.v[1].seq, 2);
    assert_int_equal(l.v[1].step, 200);
    sr_ckpt_list_free(&l);
    assert_int_equal(sr_ckpt_next_seq(f->fs.st, RUN, &seq), 0);
    assert_int_equal(seq, 5);
    assert_true(exists(f->fs.root, RUN "/ckpt/0000000002/MANIFEST.json"));
}

static void publishing_an_existing_seq_is_refused(void **state)
{
    struct fixture *f = *state;
    publish(f, 1);
    char data[PATH_MAX];
    data_path(f, 1, data, sizeof(data));
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(sr_ckpt_publish(f->fs.st, &l.v[0], data, NULL), -EEXIST);
    sr_ckpt_list_free(&l);
}

static void publish_checks_the_stored_size(void **state)
{
    struct fixture *f = *state;
    char p[PATH_MAX];
    assert_true(snprintf(p, sizeof(p), "%s/fake.tar.zst", f->fs.dir) < (int)sizeof(p));
    assert_int_equal(sr_write_file_atomic(p, "12345", 5), 0);
    struct sr_manifest m;
    memset(&m, 0, sizeof(m));
    snprintf(m.run_id, sizeof(m.run_id), RUN);
    m.seq = 1;
    m.stored_bytes = 6;
    m.raw_bytes = 10240;
    m.frame_size = 4096;
    snprintf(m.checksum, sizeof(m.checksum), "xxh3-128:%032d", 0);
    assert_int_equal(sr_ckpt_publish(f->fs.st, &m, p, NULL), -EIO);
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 0); /* no manifest written */
    sr_ckpt_list_free(&l);
}

static void list_skips_bad_manifests(void **state)
{
    struct fixture *f = *state;
    publish(f, 1);
    publish(f, 2);
    publish(f, 3);
    char key[256];
    sr_ckpt_key(key, sizeof(key), RUN, 2, "MANIFEST.json");
    assert_int_equal(sr_store_put(f->fs.st, key, "{not json", 9), 0);
    /* seq 3's manifest copied under seq 7: it names another seq. */
    char *buf;
    size_t len;
    sr_ckpt_key(key, sizeof(key), RUN, 3, "MANIFEST.json");
    assert_int_equal(sr_store_get(f->fs.st, key, 1 << 20, &buf, &len), 0);
    sr_ckpt_key(key, sizeof(key), RUN, 7, "MANIFEST.json");
    assert_int_equal(sr_store_put(f->fs.st, key, buf, len), 0);
    free(buf);
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.v[0].seq, 1);
    assert_int_equal(l.v[1].seq, 3);
    sr_ckpt_list_free(&l);
}

static void restore_picks_the_newest(void **state)
{
    struct fixture *f = *state;
    publish(f, 1);
    publish(f, 2);
    publish(f, 3);
    char *dir = restore_dir(f, "restored");
    struct sr_manifest m;
    assert_int_equal(sr_ckpt_restore(f->fs.st, RUN, 0, dir, 2, &m), 0);
    assert_int_equal(m.seq, 3);
    assert_int_equal(m.step, 300);
    tu_assert_text(dir, "state.txt", "state 3");
    assert_false(exists(dir, "only-in-2.txt"));
}

/* Newest is seq 2 (with only-in-2.txt); a fallback must give exactly seq 1. */
static void assert_fell_back_to_1(struct fixture *f)
{
    char *dir = restore_dir(f, "restored");
    assert_int_equal(sr_mkdirs(dir, 0755), 0);
    tu_write_text(dir, "stale.txt", "from before");
    struct sr_manifest m;
    int rc = sr_ckpt_restore(f->fs.st, RUN, 0, dir, 2, &m);
    if (rc != 0)
        fail_msg("restore: %s", sr_strerror(rc));
    assert_int_equal(m.seq, 1);
    tu_assert_text(dir, "state.txt", "state 1");
    assert_false(exists(dir, "only-in-2.txt"));
    assert_false(exists(dir, "stale.txt"));
}

static void corrupt_newest_falls_back_to_previous(void **state)
{
    struct fixture *f = *state;
    publish(f, 1);
    publish(f, 2);
    char p[PATH_MAX];
    data_path(f, 2, p, sizeof(p));
    int fd = open(p, O_RDWR);
    assert_true(fd >= 0);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    unsigned char c;
    off_t off = sb.st_size / 2;
    assert_int_equal(pread(fd, &c, 1, off), 1);
    c ^= 0x40;
    assert_int_equal(pwrite(fd, &c, 1, off), 1);
    close(fd);
    assert_fell_back_to_1(f);
}

static void truncated_newest_falls_back_to_previous(void **state)
{
    struct fixture *f = *state;
    publish(f, 1);
    publish(f, 2);
    char p[PATH_MAX];
    data_path(f, 2, p, sizeof(p));
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(truncate(p, sb.st_size / 3), 0);
    assert_fell_back_to_1(f);
}

static void missing_data_falls_back_to_previous(void **state)
{
    struct fixture *f = *state;
    publish(f, 1);
    publish(f, 2);
    char p[PATH_MAX];
    data_path(f, 2, p, sizeof(p));
    assert_int_equal(unlink(p), 0);
    assert_fell_back_to_1(f);
}

static void lie_checksum(struct sr_manifest *m)
{
    m->checksum[SR_CHECKSUM_LEN - 2] = m->checksum[SR_CHECKSUM_LEN - 2] == '0' ? '1' : '0';
}

static void manifest_lying_about_checksum_falls_back(void **state)
{
    struct fixture *f = *state;
    publish(f, 1);
    publish(f, 2);
    edit_manifest(f, 2, lie_checksum);
    assert_fell_back_to_1(f);
}

static void lie_raw_bytes(struct sr_manifest *m)
{
    m->raw_bytes = 2048; /* less than the archive really holds */
}

static void manifest_understating_raw_size_falls_back(void **state)
{
    struct fixture *f = *state;
    publish(f, 1);
    publish(f, 2);
    edit_manifest(f, 2, lie_raw_bytes);
    assert_fell_back_to_1(f);
}

static void no_checkpoint_is_enoent_and_leaves_dir_alone(void **state)
{
    struct fixture *f = *state;
    incomplete(f, 1);
    char *dir = restore_dir(f, "mine");
    assert_int_equal(sr_mkdirs(dir, 0755), 0);
    tu_write_text(dir, "work.txt", "precious");
    struct sr_manifest m;
    assert_int_equal(sr_ckpt_restore(f->fs.st, RUN, 0, dir, 1, &m), -ENOENT);
    assert_non_null(strstr(sr_strerror(-ENOENT), "run " RUN " has no complete checkpoint"));
    tu_assert_text(dir, "work.txt", "precious");
    assert_int_equal(sr_ckpt_restore(f->fs.st, "never-ran", 0, dir, 1, &m), -ENOENT);
    tu_assert_text(dir, "work.txt", "precious");
}

static void all_checkpoints_bad_is_a_data_error_not_a_fresh_start(void **state)
{
    struct fixture *f = *state;
    publish(f, 1);
    char p[PATH_MAX];
    data_path(f, 1, p, sizeof(p));
    assert_int_equal(truncate(p, 100), 0);
    char *dir = restore_dir(f, "out");
    assert_int_equal(sr_mkdirs(dir, 0755), 0);
    tu_write_text(dir, "work.txt", "precious");
    struct sr_manifest m;
    assert_int_equal(sr_ckpt_restore(f->fs.st, RUN, 0, dir, 1, &m), -EBADMSG);
    assert_non_null(
        strstr(sr_strerror(-EBADMSG), "all 1 checkpoint(s) of run " RUN " are unusable"));
    tu_assert_text(dir, "work.txt", "precious");
}

static void explicit_seq_restores_that_one_without_fallback(void **state)
{
    struct fixture *f = *state;
    publish(f, 1);
    publish(f, 2);
    char *dir = restore_dir(f, "explicit");
    struct sr_manifest m;
    assert_int_equal(sr_ckpt_restore(f->fs.st, RUN, 1, dir, 1, &m), 0);
    assert_int_equal(m.seq, 1);
    tu_assert_text(dir, "state.txt", "state 1");

    edit_manifest(f, 2, lie_checksum);
    assert_int_equal(sr_ckpt_restore(f->fs.st, RUN, 2, dir, 1, &m), -EBADMSG);
    tu_assert_text(dir, "state.txt", "state 1"); /* untouched by the failure */
    assert_int_equal(sr_ckpt_restore(f->fs.st, RUN, 9, dir, 1, &m), -ENOENT);
}

static void gc_keeps_the_newest_and_deletes_manifests_first(void **state)
{
    struct fixture *f = *state;
    publish(f, 1);
    publish(f, 2);
    incomplete(f, 3); /* older than the newest complete: garbage */
    publish(f, 4);
    publish(f, 5);
    incomplete(f, 6); /* maybe an upload in progress: kept */

    /* Wrap the file store so deletes are recorded in order. */
    static struct sr_store_ops ops;
    file_ops = f->fs.st->ops;
    ops = *file_ops;
    ops.del = rec_del;
    f->fs.st->ops = &ops;
    recording = f;

    unsigned deleted = 0;
    assert_int_equal(sr_ckpt_gc(f->fs.st, RUN, 2, &deleted), 0);
    f->fs.st->ops = file_ops;
    assert_int_equal(deleted, 3);

    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.v[0].seq, 4);
    assert_int_equal(l.v[1].seq, 5);
    sr_ckpt_list_free(&l);
    assert_false(exists(f->fs.root, RUN "/ckpt/0000000001"));
    assert_false(exists(f->fs.root, RUN "/ckpt/0000000003"));
    assert_true(exists(f->fs.root, RUN "/ckpt/0000000006/data.tar.zst"));

    for (uint64_t seq = 1; seq <= 2; seq++) {
        char mk[256], dk[256];
        sr_ckpt_key(mk, sizeof(mk), RUN, seq, "MANIFEST.json");
        sr_ckpt_key(dk, sizeof(dk), RUN, seq, "data.tar.zst");
        size_t mi = SIZE_MAX, di = SIZE_MAX;
        for (size_t i = 0; i < f->nlog; i++) {
            if (strcmp(f->log[i], mk) == 0 && mi == SIZE_MAX)
                mi = i;
            if (strcmp(f->log[i], dk) == 0 && di == SIZE_MAX)
                di = i;
        }
        assert_true(mi != SIZE_MAX && di != SIZE_MAX);
        assert_true(mi < di);
    }
    /* next_seq never goes back. */
    uint64_t next;
    assert_int_equal(sr_ckpt_next_seq(f->fs.st, RUN, &next), 0);
    assert_int_equal(next, 7);
}

static void done_marker(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(sr_ckpt_is_done(f->fs.st, RUN), 0);
    assert_int_equal(sr_ckpt_mark_done(f->fs.st, RUN), 0);
    assert_int_equal(sr_ckpt_is_done(f->fs.st, RUN), 1);
    char *text = tu_read_text(f->fs.root, RUN "/DONE");
    assert_non_null(strstr(text, "\"time\""));
    assert_non_null(strstr(text, "\"host\""));
    free(text);
}

static void run_list_names_valid_runs(void **state)
{
    struct fixture *f = *state;
    publish_run(f, "beta", 1);
    publish_run(f, "alpha", 1);
    assert_int_equal(sr_store_put(f->fs.st, "not a run/x", "x", 1), 0);
    /* the store's own summaries/ is no run (and no run may be named so) */
    assert_int_equal(sr_store_put(f->fs.st, "summaries/alpha.json", "{}", 2), 0);
    assert_false(sr_manifest_run_id_valid("summaries"));
    struct sr_strlist l;
    assert_int_equal(sr_ckpt_list_runs(f->fs.st, &l), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[0], "alpha");
    assert_string_equal(l.v[1], "beta");
    sr_strlist_free(&l);
}

static void run_clear_deletes_the_whole_run_only(void **state)
{
    struct fixture *f = *state;
    publish(f, 1);
    incomplete(f, 2);
    publish_run(f, "other", 1);
    assert_int_equal(sr_store_put(f->fs.st, RUN "/events/0.jsonl", "{}\n", 3), 0);
    assert_int_equal(sr_ckpt_mark_done(f->fs.st, RUN), 0);
    assert_int_equal(sr_store_put(f->fs.st, "summaries/" RUN ".json", "{}", 2), 0);
    assert_int_equal(sr_store_put(f->fs.st, "summaries/other.json", "{}", 2), 0);
    assert_int_equal(sr_ckpt_clear_run(f->fs.st, RUN), 0);
    assert_false(exists(f->fs.root, RUN));
    assert_false(exists(f->fs.root, "summaries/" RUN ".json")); /* its summary goes with it */
    assert_true(exists(f->fs.root, "summaries/other.json"));
    assert_int_equal(sr_ckpt_is_done(f->fs.st, RUN), 0);
    uint64_t next;
    assert_int_equal(sr_ckpt_next_seq(f->fs.st, RUN, &next), 0);
    assert_int_equal(next, 1);
    assert_true(exists(f->fs.root, "other/ckpt/0000000001/MANIFEST.json"));
}

static void invalid_run_ids_are_refused(void **state)
{
    struct fixture *f = *state;
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, "../etc", &l), -EINVAL);
    assert_int_equal(sr_ckpt_clear_run(f->fs.st, ""), -EINVAL);
    assert_int_equal(sr_ckpt_mark_done(f->fs.st, "a/b"), -EINVAL);
}

/* Another writer's data object already at the seq (a stale owner's upload
 * that landed after our listing): the publish refuses to replace it. */
static void publish_never_replaces_another_writers_data(void **state)
{
    struct fixture *f = *state;
    publish(f, 1);
    incomplete(f, 2);
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    struct sr_manifest m = l.v[0];
    sr_ckpt_list_free(&l);
    m.seq = 2;
    char data[PATH_MAX];
    data_path(f, 1, data, sizeof(data));
    assert_int_equal(sr_ckpt_publish(f->fs.st, &m, data, NULL), -EEXIST);
    char p[PATH_MAX];
    data_path(f, 2, p, sizeof(p));
    char *buf;
    size_t len;
    assert_int_equal(sr_read_file(p, 100, &buf, &len), 0);
    assert_memory_equal(buf, "partial", 7);
    free(buf);
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 1);
    sr_ckpt_list_free(&l);
}

#define FT(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int main(void)
{
    /* The fallback warnings are expected; SPOTRUN_TEST_VERBOSE=1 shows them. */
    if (!getenv("SPOTRUN_TEST_VERBOSE"))
        sr_verbosity = SR_QUIET;
    const struct CMUnitTest tests[] = {
        FT(publish_list_and_next_seq_count_incomplete_uploads),
        FT(publishing_an_existing_seq_is_refused),
        FT(publish_checks_the_stored_size),
        FT(list_skips_bad_manifests),
        FT(restore_picks_the_newest),
        FT(corrupt_newest_falls_back_to_previous),
        FT(truncated_newest_falls_back_to_previous),
        FT(missing_data_falls_back_to_previous),
        FT(manifest_lying_about_checksum_falls_back),
        FT(manifest_understating_raw_size_falls_back),
        FT(no_checkpoint_is_enoent_and_leaves_dir_alone),
        FT(all_checkpoints_bad_is_a_data_error_not_a_fresh_start),
        FT(explicit_seq_restores_that_one_without_fallback),
        FT(gc_keeps_the_newest_and_deletes_manifests_first),
        FT(done_marker),
        FT(run_list_names_valid_runs),
        FT(run_clear_deletes_the_whole_run_only),
        FT(invalid_run_ids_are_refused),
        FT(publish_never_replaces_another_writers_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
