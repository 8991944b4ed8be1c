/*
 * test_dirmark.c - which directories spotrun may replace or remove
 * (common/dirmark.h): the run's mark on a checkpoint dir, the work dir
 * spotrun made (its marker, made and checked), identity by device and inode.
 * Each test works in its own directory under $SPOTRUN_TEST_TMP.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirmark.h"
#include "fsutil.h"
#include "log.h"
#include "testutil.h"

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void path(char *out, size_t len, const char *dir, const char *name)
{
    assert_true(snprintf(out, len, "%s/%s", dir, name) < (int)len);
}

static void claim_makes_a_private_marked_dir_once(void **state)
{
    (void)state;
    char *d = tu_scratch("dirmark"), run[PATH_MAX], nonce[SR_OWNER_NONCE_LEN + 1],
         again[SR_OWNER_NONCE_LEN + 1];
    int made = 0;
    assert_int_equal(sr_owned_dir_claim(d, "exp1", "exp1", nonce, &made), 0);
    assert_int_equal(made, 1);
    assert_int_equal((int)strlen(nonce), SR_OWNER_NONCE_LEN);
    path(run, sizeof(run), d, "exp1");
    struct stat st;
    assert_int_equal(lstat(run, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    char *mark = tu_read_text(run, SR_OWNER_MARK);
    assert_non_null(strstr(mark, "\nrun exp1\n"));
    assert_non_null(strstr(mark, nonce));
    free(mark);
    /* a second claim (the next wrapper of the run) finds it, same nonce */
    assert_int_equal(sr_owned_dir_claim(d, "exp1", "exp1", again, &made), 0);
    assert_int_equal(made, 0);
    assert_string_equal(nonce, again);
    /* no temporary directory is left beside it */
    assert_int_equal(count_entries(d), 1);
    sr_rmtree(d);
    free(d);
}

static void claim_refuses_a_dir_spotrun_did_not_make_and_leaves_it(void **state)
{
    (void)state;
    char *d = tu_scratch("dirmark"), run[PATH_MAX], nonce[SR_OWNER_NONCE_LEN + 1];
    path(run, sizeof(run), d, "exp1");
    assert_int_equal(sr_mkdirs(run, 0755), 0);
    tu_write_text(run, "precious", "mine");
    assert_int_equal(sr_owned_dir_claim(d, "exp1", "exp1", nonce, NULL), -EEXIST);
    assert_non_null(strstr(sr_strerror(-EEXIST), "spotrun did not make it"));
    assert_int_equal(count_entries(run), 1);
    char *text = tu_read_text(run, "precious");
    assert_string_equal(text, "mine");
    free(text);
    /* made for another run: refused too */
    assert_int_equal(sr_owned_dir_claim(d, "other", "other", nonce, NULL), 0);
    assert_int_equal(sr_owned_dir_claim(d, "other", "exp1", nonce, NULL), -EEXIST);
    sr_rmtree(d);
    free(d);
}

static void claim_and_open_refuse_a_symlink(void **state)
{
    (void)state;
    char *d = tu_scratch("dirmark"), user[PATH_MAX], link[PATH_MAX], nonce[SR_OWNER_NONCE_LEN + 1];
    path(user, sizeof(user), d, "user");
    path(link, sizeof(link), d, "root");
    assert_int_equal(sr_mkdirs(link, 0700), 0);
    assert_int_equal(sr_mkdirs(user, 0755), 0);
    /* even a user dir holding a valid-looking marker is not followed */
    tu_write_text(user, SR_OWNER_MARK, "x\nrun exp1\nnonce 0123456789abcdef0123456789abcdef\n");
    path(link, sizeof(link), d, "root/exp1");
    assert_int_equal(symlink(user, link), 0);
    path(link, sizeof(link), d, "root");
    assert_int_equal(sr_owned_dir_claim(link, "exp1", "exp1", nonce, NULL), -ELOOP);
    assert_int_equal(sr_owned_dir_open(link, "exp1", "exp1", NULL, NULL), -ELOOP);
    assert_int_equal(count_entries(user), 1);
    sr_rmtree(d);
    free(d);
}

static void open_checks_the_nonce_of_the_making(void **state)
{
    (void)state;
    char *d = tu_scratch("dirmark"), run[PATH_MAX], nonce[SR_OWNER_NONCE_LEN + 1],
         other[SR_OWNER_NONCE_LEN + 1];
    assert_int_equal(sr_owned_dir_claim(d, "r", "r", nonce, NULL), 0);
    int rootfd = -1;
    const int fd = sr_owned_dir_open(d, "r", "r", nonce, &rootfd);
    assert_true(fd >= 0 && rootfd >= 0);
    close(fd);
    close(rootfd);
    /* removed and made again since: not the same making */
    path(run, sizeof(run), d, "r");
    assert_int_equal(sr_rmtree(run), 0);
    assert_int_equal(sr_owned_dir_claim(d, "r", "r", other, NULL), 0);
    assert_string_not_equal(nonce, other);
    assert_int_equal(sr_owned_dir_open(d, "r", "r", nonce, NULL), -EEXIST);
    sr_rmtree(d);
    free(d);
}

static void same_file_compares_device_and_inode(void **state)
{
    (void)state;
    char *d = tu_scratch("dirmark"), a[PATH_MAX], slash[PATH_MAX], link[PATH_MAX], b[PATH_MAX];
    path(a, sizeof(a), d, "a");
    path(slash, sizeof(slash), d, "a/");
    path(link, sizeof(link), d, "link");
    path(b, sizeof(b), d, "b");
    assert_int_equal(sr_mkdirs(a, 0700), 0);
    assert_int_equal(sr_mkdirs(b, 0700), 0);
    assert_int_equal(symlink(a, link), 0);
    assert_true(sr_same_file(slash, 1, a, 0));
    assert_true(sr_same_file(link, 1, a, 0));
    assert_false(sr_same_file(link, 0, a, 0)); /* the link itself */
    assert_false(sr_same_file(a, 1, b, 1));
    path(b, sizeof(b), d, "missing");
    assert_false(sr_same_file(b, 1, b, 1));
    sr_rmtree(d);
    free(d);
}

static void the_mark_names_the_run(void **state)
{
    (void)state;
    char *d = tu_scratch("dirmark"), v[64];
    if (sr_dir_mark_run(d, "exp-7") < 0) {
        sr_rmtree(d);
        free(d);
        skip(); /* no user xattrs on this filesystem */
    }
    assert_int_equal(sr_dir_mark_get(d, v, sizeof(v)), 1);
    assert_string_equal(v, "exp-7");
    assert_int_equal(sr_dir_marked(d), 1);
    assert_int_equal(sr_dir_mark(d), 0);
    assert_int_equal(sr_dir_mark_get(d, v, sizeof(v)), 1);
    assert_string_equal(v, SR_DIR_MARK_ANY);
    sr_rmtree(d);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(claim_makes_a_private_marked_dir_once),
        cmocka_unit_test(claim_refuses_a_dir_spotrun_did_not_make_and_leaves_it),
        cmocka_unit_test(claim_and_open_refuse_a_symlink),
        cmocka_unit_test(open_checks_the_nonce_of_the_making),
        cmocka_unit_test(same_file_compares_device_and_inode),
        cmocka_unit_test(the_mark_names_the_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
