/*
 * test_snapshot.c - the commit's snapshot (runtime/supervise/snapshot.h):
 * what is linked, what is copied, and a linked file rewritten in place
 * while packing fails the check instead of making a mixed checkpoint.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "dirmark.h"
#include "fsutil.h"
#include "snapshot.h"

struct fx {
    char *dir, *ckpt, *spool;
    struct sr_snaps *k;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    f->dir = tu_scratch("snapshot");
    assert_true(asprintf(&f->ckpt, "%s/ckpt", f->dir) > 0);
    assert_true(asprintf(&f->spool, "%s/spool", f->dir) > 0);
    assert_int_equal(sr_mkdirs(f->ckpt, 0755), 0);
    assert_int_equal(sr_mkdirs(f->spool, 0700), 0);
    f->k = sr_snaps_new();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    sr_snaps_free(f->k);
    sr_rmtree(f->dir);
    free(f->dir);
    free(f->ckpt);
    free(f->spool);
    free(f);
    return 0;
}

/* Rewrites name in place (same inode), as a job writing without a rename. */
static void rewrite_in_place(const char *dir, const char *name, const char *text)
{
    char p[8400];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *fp = fopen(p, "r+");
    assert_non_null(fp);
    assert_true(fputs(text, fp) >= 0);
    assert_int_equal(fclose(fp), 0);
}

static void test_first_copies_then_links_files_replaced_by_rename(void **state)
{
    struct fx *f = *state;
    struct sr_snap sn;
    tu_write_text(f->ckpt, "model.pt", "v1"); /* atomic: a rename */
    tu_write_text(f->ckpt, "skip.tmp", "x");
    const char *excl[] = {"*.tmp"};
    assert_int_equal(sr_snap_take(f->k, f->ckpt, f->spool, 1, excl, 1, &sn), 0);
    assert_int_equal(sn.copied_n + sn.reflinked_n, 1); /* not known yet */
    tu_assert_text(sn.root, "model.pt", "v1");
    assert_false(access(sn.root, F_OK) != 0);
    char *root = strdup(sn.root);
    sr_snap_remove(&sn);
    assert_int_equal(access(root, F_OK), -1); /* removed */
    free(root);

    tu_write_text(f->ckpt, "model.pt", "v2"); /* replaced by rename */
    assert_int_equal(sr_snap_take(f->k, f->ckpt, f->spool, 2, excl, 1, &sn), 0);
    assert_int_equal(sn.linked_n + sn.reflinked_n, 1);
    assert_int_equal(access(f->ckpt, F_OK), 0);
    tu_write_text(f->ckpt, "model.pt", "v3"); /* the job goes on at once */
    tu_assert_text(sn.root, "model.pt", "v2");
    tu_assert_text(sn.root, "skip.tmp", ""); /* excluded */
    assert_int_equal(sr_snap_verify(f->k, &sn), 0);
    sr_snap_remove(&sn);
}

static void test_linked_file_rewritten_in_place_fails_then_is_copied(void **state)
{
    struct fx *f = *state;
    struct sr_snap sn;
    tu_write_text(f->ckpt, "opt.bin", "aaaa");
    assert_int_equal(sr_snap_take(f->k, f->ckpt, f->spool, 1, NULL, 0, &sn), 0);
    sr_snap_remove(&sn);
    tu_write_text(f->ckpt, "opt.bin", "bbbb");
    assert_int_equal(sr_snap_take(f->k, f->ckpt, f->spool, 2, NULL, 0, &sn), 0);
    if (sn.reflinked_n) { /* a clone is safe whatever the job does */
        sr_snap_remove(&sn);
        skip();
    }
    assert_int_equal(sn.linked_n, 1);
    usleep(20 * 1000);                          /* a later mtime tick */
    rewrite_in_place(f->ckpt, "opt.bin", "cc"); /* while packing */
    assert_int_equal(sr_snap_verify(f->k, &sn), SR_ECHANGED);
    sr_snap_remove(&sn);
    /* From now on that path is copied: the snapshot holds its bytes. */
    assert_int_equal(sr_snap_take(f->k, f->ckpt, f->spool, 3, NULL, 0, &sn), 0);
    assert_int_equal(sn.linked_n, 0);
    assert_int_equal(sn.copied_n, 1);
    rewrite_in_place(f->ckpt, "opt.bin", "dd");
    tu_assert_text(sn.root, "opt.bin", "ccbb");
    assert_int_equal(sr_snap_verify(f->k, &sn), 0);
    sr_snap_remove(&sn);
}

static void test_file_changed_in_place_between_commits_is_copied(void **state)
{
    struct fx *f = *state;
    struct sr_snap sn;
    tu_write_text(f->ckpt, "state", "1111");
    assert_int_equal(sr_snap_take(f->k, f->ckpt, f->spool, 1, NULL, 0, &sn), 0);
    sr_snap_remove(&sn);
    usleep(20 * 1000);
    rewrite_in_place(f->ckpt, "state", "22");
    assert_int_equal(sr_snap_take(f->k, f->ckpt, f->spool, 2, NULL, 0, &sn), 0);
    assert_int_equal(sn.linked_n, 0);
    rewrite_in_place(f->ckpt, "state", "33");
    tu_assert_text(sn.root, "state", "2211");
    sr_snap_remove(&sn);
}

static void test_a_copy_keeps_a_sparse_file_sparse(void **state)
{
    struct fx *f = *state;
    struct sr_snap sn;
    char p[8400];
    snprintf(p, sizeof(p), "%s/sparse.bin", f->ckpt);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, 64 << 20, SEEK_SET), 0);
    assert_true(fputs("x", fp) >= 0);
    assert_int_equal(fclose(fp), 0);
    assert_int_equal(sr_snap_take(f->k, f->ckpt, f->spool, 1, NULL, 0, &sn), 0);
    struct stat st;
    snprintf(p, sizeof(p), "%s/sparse.bin", sn.root);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_size, (64 << 20) + 1);
    assert_true((uint64_t)st.st_blocks * 512u < (4u << 20)); /* holes, not 64 MiB of zeros */
    FILE *in = fopen(p, "r");
    assert_non_null(in);
    assert_int_equal(fseek(in, 64 << 20, SEEK_SET), 0);
    assert_int_equal(fgetc(in), 'x');
    assert_int_equal(fseek(in, 1 << 20, SEEK_SET), 0);
    assert_int_equal(fgetc(in), 0);
    fclose(in);
    sr_snap_remove(&sn);
}

/* A spool on another file system (tmpfs): the snapshot goes beside the
 * directory, marked as spotrun's, and links work there. */
static void test_spool_elsewhere_snapshot_beside_marked(void **state)
{
    struct fx *f = *state;
    struct stat a, b;
    char spool[] = "/dev/shm/snapshot-spool.XXXXXX";
    if (!mkdtemp(spool))
        skip();
    if (stat(spool, &a) != 0 || stat(f->ckpt, &b) != 0 || a.st_dev == b.st_dev) {
        rmdir(spool);
        skip();
    }
    struct sr_snap sn;
    tu_write_text(f->ckpt, "w.pt", "1");
    assert_int_equal(sr_snap_take(f->k, f->ckpt, spool, 1, NULL, 0, &sn), 0);
    sr_snap_remove(&sn);
    tu_write_text(f->ckpt, "w.pt", "2");
    assert_int_equal(sr_snap_take(f->k, f->ckpt, spool, 2, NULL, 0, &sn), 0);
    char want[4300];
    snprintf(want, sizeof(want), "%s.spotrun-tmp.snap-", f->ckpt);
    if (!sn.beside) { /* no user xattrs here: never an unmarked one beside */
        assert_int_equal(strncmp(sn.root, spool, strlen(spool)), 0);
        assert_int_equal(sn.copied_n, 1);
    } else {
        assert_int_equal(strncmp(sn.root, want, strlen(want)), 0);
        assert_true(sr_dir_marked(sn.root));
        assert_int_equal(sn.linked_n + sn.reflinked_n, 1);
    }
    tu_assert_text(sn.root, "w.pt", "2");
    char *root = strdup(sn.root);
    sr_snap_remove(&sn);
    assert_int_equal(access(root, F_OK), -1);
    free(root);
    sr_rmtree(spool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_first_copies_then_links_files_replaced_by_rename,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_linked_file_rewritten_in_place_fails_then_is_copied,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_changed_in_place_between_commits_is_copied, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_copy_keeps_a_sparse_file_sparse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spool_elsewhere_snapshot_beside_marked, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
