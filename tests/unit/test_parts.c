/*
 * test_parts.c - multi-node checkpoints in a file store
 * (storage/run/parts.h, docs/multinode.md): a set exists iff every node's
 * part is there; whichever node completes it publishes it once; fenced-off
 * parts never complete a set; restore takes a node's own part, every part,
 * or refuses another node count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "catalog.h"
#include "fsutil.h"
#include "log.h"
#include "parts.h"

#define RUN "ddp"

struct fixture {
    struct tu_store fs;
    uint64_t fenced_rank1_below; /* parts of rank 1 under this epoch do not count */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    tu_store_open(&f->fs, "parts");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    tu_store_close(&f->fs);
    free(f);
    return 0;
}

/* Node `rank` of `nodes` commits step with one file `name` ("rank<r>.txt"
 * when NULL) holding text, as the owner of `epoch`. */
static void commit_file(struct fixture *f, uint32_t nodes, uint32_t rank, uint64_t epoch,
                        int64_t step, const char *name, const char *text)
{
    char src[PATH_MAX], data[PATH_MAX + 16], own[32];
    snprintf(src, sizeof(src), "%s/src-%u-%llu-%lld", f->fs.dir, rank, (unsigned long long)epoch,
             (long long)step);
    assert_int_equal(sr_mkdirs(src, 0755), 0);
    snprintf(own, sizeof(own), "rank%u.txt", rank);
    tu_write_text(src, name ? name : own, text);
    snprintf(data, sizeof(data), "%s.tar.zst", src);
    struct sr_pack_opts opts = {.level = 3, .frame_size = 64 * 1024, .threads = 1};
    struct sr_pack_stats stats;
    assert_int_equal(sr_pack_dir_to_file(src, data, &opts, &stats), 0);
    struct sr_manifest m;
    memset(&m, 0, sizeof(m));
    m.format = SR_MANIFEST_FORMAT;
    snprintf(m.run_id, sizeof(m.run_id), RUN);
    m.seq = sr_set_seq(step);
    m.step = step;
    m.created = time(NULL);
    snprintf(m.host, sizeof(m.host), "node%u", rank);
    m.raw_bytes = stats.raw_bytes;
    m.stored_bytes = stats.stored_bytes;
    m.files = stats.files;
    m.frames = stats.frames;
    m.frame_size = 64 * 1024;
    m.level = 3;
    memcpy(m.checksum, stats.checksum, SR_CHECKSUM_LEN);
    m.epoch = epoch;
    m.nodes = nodes;
    m.is_part = 1;
    m.node_rank = rank;
    const int rc = sr_ckpt_publish(f->fs.st, &m, data, NULL);
    if (rc != 0)
        fail_msg("part %u of step %lld: %s", rank, (long long)step, sr_strerror(rc));
}

static void commit_part(struct fixture *f, uint32_t nodes, uint32_t rank, uint64_t epoch,
                        int64_t step, const char *text)
{
    commit_file(f, nodes, rank, epoch, step, NULL, text);
}

static int counts(void *ctx, uint32_t rank, uint64_t epoch)
{
    const struct fixture *f = ctx;
    return !(rank == 1 && epoch < f->fenced_rank1_below);
}

static void set_exists_only_once_every_part_is_there(void **state)
{
    struct fixture *f = *state;
    struct sr_manifest set;
    uint32_t missing = 99;
    commit_part(f, 3, 0, 1, 100, "a");
    commit_part(f, 3, 2, 1, 100, "c");
    assert_int_equal(sr_set_complete(f->fs.st, RUN, sr_set_seq(100), 3, counts, f, &set, &missing),
                     0);
    assert_int_equal(missing, 1);
    struct sr_ckpt_list l;
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 0); /* no manifest: no checkpoint */
    sr_ckpt_list_free(&l);

    commit_part(f, 3, 1, 1, 100, "b");
    assert_int_equal(sr_set_complete(f->fs.st, RUN, sr_set_seq(100), 3, counts, f, &set, NULL), 1);
    assert_int_equal(set.nodes, 3);
    assert_int_equal(set.step, 100);
    assert_int_equal(set.is_part, 0);
    assert_int_equal(sr_ckpt_list(f->fs.st, RUN, &l), 0);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.v[0].nodes, 3);
    sr_ckpt_list_free(&l);
    /* A second completer finds it published and gets the same set. */
    struct sr_manifest again;
    assert_int_equal(sr_set_complete(f->fs.st, RUN, sr_set_seq(100), 3, counts, f, &again, NULL),
                     1);
    assert_int_equal(again.seq, set.seq);
}

static void fenced_part_never_completes_a_set(void **state)
{
    struct fixture *f = *state;
    f->fenced_rank1_below = 2; /* rank 1's owner is at epoch 2 now */
    commit_part(f, 2, 0, 2, 200, "a");
    commit_part(f, 2, 1, 1, 200, "stale"); /* the old owner, woken up late */
    uint32_t missing = 99;
    assert_int_equal(sr_set_complete(f->fs.st, RUN, sr_set_seq(200), 2, counts, f, NULL, &missing),
                     0);
    assert_int_equal(missing, 1);
    commit_part(f, 2, 1, 2, 200, "fresh");
    struct sr_manifest set;
    assert_int_equal(sr_set_complete(f->fs.st, RUN, sr_set_seq(200), 2, counts, f, &set, NULL), 1);
    assert_int_equal(set.part_epoch[1], 2);
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/restore1", f->fs.dir);
    const struct sr_restore_opts o = {.threads = 1, .nodes = 2, .rank = 1};
    assert_int_equal(sr_ckpt_restore_node(f->fs.st, RUN, 0, dir, &o, NULL), 0);
    tu_assert_text(dir, "rank1.txt", "fresh");
}

static void restore_gives_own_part_all_parts_or_refuses(void **state)
{
    struct fixture *f = *state;
    commit_part(f, 2, 0, 1, 300, "zero");
    commit_part(f, 2, 1, 1, 300, "one");
    assert_int_equal(sr_set_complete(f->fs.st, RUN, sr_set_seq(300), 2, counts, f, NULL, NULL), 1);
    char own[PATH_MAX], all[PATH_MAX], other[PATH_MAX];
    snprintf(own, sizeof(own), "%s/own", f->fs.dir);
    snprintf(all, sizeof(all), "%s/all", f->fs.dir);
    snprintf(other, sizeof(other), "%s/other", f->fs.dir);
    struct sr_manifest m;
    const struct sr_restore_opts o0 = {.threads = 1, .nodes = 2, .rank = 0};
    assert_int_equal(sr_ckpt_restore_node(f->fs.st, RUN, 0, own, &o0, &m), 0);
    assert_int_equal(m.step, 300);
    tu_assert_text(own, "rank0.txt", "zero");
    char p[PATH_MAX + 16];
    struct stat sb;
    snprintf(p, sizeof(p), "%s/rank1.txt", own);
    assert_int_not_equal(lstat(p, &sb), 0);

    const struct sr_restore_opts every = {.threads = 1, .nodes = 3, .rank = 2, .all_parts = 1};
    assert_int_equal(sr_ckpt_restore_node(f->fs.st, RUN, 0, all, &every, NULL), 0);
    tu_assert_text(all, "rank0.txt", "zero");
    tu_assert_text(all, "rank1.txt", "one");

    const struct sr_restore_opts three = {.threads = 1, .nodes = 3, .rank = 0};
    assert_int_equal(sr_ckpt_restore_node(f->fs.st, RUN, 0, other, &three, NULL), -EINVAL);
    assert_non_null(strstr(sr_strerror(-EINVAL), "made by 2 node(s) and this run has 3"));
    assert_int_not_equal(lstat(other, &sb), 0); /* nothing extracted */
}

static void parts_holding_the_same_file_are_refused_together(void **state)
{
    struct fixture *f = *state;
    commit_file(f, 2, 0, 1, 400, "shared.txt", "zero");
    commit_file(f, 2, 1, 1, 400, "shared.txt", "one");
    assert_int_equal(sr_set_complete(f->fs.st, RUN, sr_set_seq(400), 2, counts, f, NULL, NULL), 1);
    char all[PATH_MAX];
    snprintf(all, sizeof(all), "%s/all", f->fs.dir);
    const struct sr_restore_opts every = {.threads = 1, .nodes = 2, .all_parts = 1};
    assert_int_equal(sr_ckpt_restore_node(f->fs.st, RUN, sr_set_seq(400), all, &every, NULL),
                     -EBADMSG);
    assert_non_null(strstr(sr_strerror(-EBADMSG), "two parts of the checkpoint hold shared.txt"));
    /* Each node's own part still restores. */
    const struct sr_restore_opts own = {.threads = 1, .nodes = 2, .rank = 1};
    assert_int_equal(sr_ckpt_restore_node(f->fs.st, RUN, sr_set_seq(400), all, &own, NULL), 0);
    tu_assert_text(all, "shared.txt", "one");
}

static void malformed_part_names_and_records_are_ignored(void **state)
{
    struct fixture *f = *state;
    commit_part(f, 2, 0, 1, 500, "zero");
    char key[256];
    /* Names that are not exactly ours, and a record for another step. */
    snprintf(key, sizeof(key), RUN "/ckpt/%010llu/part-01-e1.json",
             (unsigned long long)sr_set_seq(500));
    assert_int_equal(sr_store_put(f->fs.st, key, "{}", 2), 0);
    snprintf(key, sizeof(key), RUN "/ckpt/%010llu/part-1-e1.json.tmp",
             (unsigned long long)sr_set_seq(500));
    assert_int_equal(sr_store_put(f->fs.st, key, "{}", 2), 0);
    uint32_t missing = 99;
    assert_int_equal(sr_set_complete(f->fs.st, RUN, sr_set_seq(500), 2, counts, f, NULL, &missing),
                     0);
    assert_int_equal(missing, 1);
    snprintf(key, sizeof(key), RUN "/ckpt/%010llu/part-1-e1.json",
             (unsigned long long)sr_set_seq(500));
    assert_int_equal(sr_store_put(f->fs.st, key, "not json", 8), 0);
    assert_true(sr_set_complete(f->fs.st, RUN, sr_set_seq(500), 2, counts, f, NULL, &missing) < 0);
}

/* A run is done only when every node's job finished from the same start:
 * a mark of another start never counts, one mark twice counts once, odd
 * names and ranks out of range are ignored. */
static void done_needs_every_node_of_the_same_start(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(sr_nodes_done(f->fs.st, RUN, 2, 11), 0);
    assert_int_equal(sr_node_mark_done(f->fs.st, RUN, 0, 1), 0); /* an older start */
    assert_int_equal(sr_node_mark_done(f->fs.st, RUN, 1, 11), 0);
    assert_int_equal(sr_node_mark_done(f->fs.st, RUN, 1, 11), 0); /* again: fine */
    assert_int_equal(sr_store_put(f->fs.st, RUN "/done/01-s11", "x", 1), 0);
    assert_int_equal(sr_store_put(f->fs.st, RUN "/done/2-s11", "x", 1), 0);
    assert_int_equal(sr_store_put(f->fs.st, RUN "/done/0-s11x", "x", 1), 0);
    assert_int_equal(sr_nodes_done(f->fs.st, RUN, 2, 11), 1);
    assert_int_equal(sr_node_mark_done(f->fs.st, RUN, 0, 11), 0);
    assert_int_equal(sr_nodes_done(f->fs.st, RUN, 2, 11), 2);
    assert_int_equal(sr_nodes_done(f->fs.st, RUN, 2, 1), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(set_exists_only_once_every_part_is_there, setup, teardown),
        cmocka_unit_test_setup_teardown(fenced_part_never_completes_a_set, setup, teardown),
        cmocka_unit_test_setup_teardown(restore_gives_own_part_all_parts_or_refuses, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(parts_holding_the_same_file_are_refused_together, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(done_needs_every_node_of_the_same_start, setup, teardown),
        cmocka_unit_test_setup_teardown(malformed_part_names_and_records_are_ignored, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
