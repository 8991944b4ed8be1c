/*
 * test_walk.c - the iterative tree walk (common/walk.h) and what rides on
 * it: rm -rf and packing at depths no recursion survives, within a bounded
 * number of open descriptors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "fsutil.h"
#include "log.h"
#include "testutil.h"
#include "walk.h"

/* dir/a/a/.../a (depth levels) with a file "leaf" at the bottom, built
 * with *at calls so the total path may exceed PATH_MAX. */
static void make_deep(const char *dir, int depth)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    for (int i = 0; i < depth; i++) {
        assert_int_equal(mkdirat(fd, "a", 0755), 0);
        const int sub = openat(fd, "a", O_RDONLY | O_DIRECTORY);
        assert_true(sub >= 0);
        close(fd);
        fd = sub;
    }
    const int f = openat(fd, "leaf", O_WRONLY | O_CREAT, 0644);
    assert_true(f >= 0);
    assert_int_equal(write(f, "x", 1), 1);
    close(f);
    close(fd);
}

/* Runs with at most n descriptors (restored by the caller). */
static struct rlimit lower_fd_limit(rlim_t n)
{
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    struct rlimit low = {.rlim_cur = n, .rlim_max = old.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    return old;
}

static void rmtree_removes_a_tree_deeper_than_path_max(void **state)
{
    (void)state;
    char *d = tu_scratch("walk");
    char top[PATH_MAX];
    snprintf(top, sizeof(top), "%s/t", d);
    assert_int_equal(mkdir(top, 0755), 0);
    make_deep(top, 3000); /* 6000 bytes of path: more than PATH_MAX */
    const struct rlimit old = lower_fd_limit(64);
    const int rc = sr_rmtree(top);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(rc, 0);
    assert_int_equal(access(top, F_OK), -1);
    assert_int_equal(rmdir(d), 0);
    free(d);
}

struct order {
    char seen[512];
};

static int record(void *ctx, const struct sr_walk_entry *e, int post)
{
    struct order *o = ctx;
    size_t n = strlen(o->seen);
    snprintf(o->seen + n, sizeof(o->seen) - n, "%s%s%s", n ? " " : "", post ? "/" : "", e->rel);
    return 0;
}

static void walk_is_sorted_and_visits_directories_after_their_contents(void **state)
{
    (void)state;
    char *d = tu_scratch("walk");
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/b/y", d);
    assert_int_equal(sr_mkdirs(p, 0755), 0);
    tu_write_text(d, "c", "c");
    tu_write_text(d, "a", "a");
    tu_write_text(d, "b/x", "x");
    const int fd = open(d, O_RDONLY | O_DIRECTORY);
    struct order o = {{0}};
    const struct sr_walk_opts opts = {.sorted = 1};
    assert_int_equal(sr_walk(fd, d, &opts, record, &o), 0);
    close(fd);
    assert_string_equal(o.seen, "a b b/x b/y /b/y /b c");
    assert_int_equal(sr_rmtree(d), 0);
    free(d);
}

static void walk_refuses_past_max_depth_with_a_clear_error(void **state)
{
    (void)state;
    char *d = tu_scratch("walk");
    make_deep(d, 20);
    const int fd = open(d, O_RDONLY | O_DIRECTORY);
    struct order o = {{0}};
    const struct sr_walk_opts opts = {.max_depth = 10, .what = "archive"};
    assert_int_equal(sr_walk(fd, d, &opts, record, &o), -EPERM);
    close(fd);
    assert_non_null(strstr(sr_strerror(-EPERM), "nested deeper than 10 directory levels"));
    assert_int_equal(sr_rmtree(d), 0);
    free(d);
}

static int discard(void *ctx, const void *buf, size_t len)
{
    (void)buf;
    *(size_t *)ctx += len;
    return 0;
}

static void pack_of_a_deep_tree_is_refused_not_a_crash(void **state)
{
    (void)state;
    char *d = tu_scratch("walk");
    make_deep(d, 2000); /* 4000 bytes of path: under PATH_MAX */
    size_t n = 0;
    const struct sr_pack_opts po = {.threads = 1};
    assert_int_equal(sr_pack_dir(d, discard, &n, &po, NULL), -EPERM);
    assert_non_null(strstr(sr_strerror(-EPERM), "nested deeper than"));
    assert_int_equal(sr_rmtree(d), 0);
    free(d);
}

static void pack_of_a_tree_at_the_limit_works_with_few_descriptors(void **state)
{
    (void)state;
    char *d = tu_scratch("walk");
    char src[PATH_MAX], out[PATH_MAX], arc[PATH_MAX];
    snprintf(src, sizeof(src), "%s/src", d);
    snprintf(out, sizeof(out), "%s/out", d);
    snprintf(arc, sizeof(arc), "%s/a.tar.zst", d);
    assert_int_equal(mkdir(src, 0755), 0);
    make_deep(src, SR_TREE_MAX_DEPTH - 1); /* the leaf is at the limit */
    const struct rlimit old = lower_fd_limit(64);
    const struct sr_pack_opts po = {.threads = 1};
    int rc = sr_pack_dir_to_file(src, arc, &po, NULL);
    struct sr_source s;
    const struct sr_unpack_opts uo = {.threads = 1};
    if (rc == 0 && (rc = sr_source_file_open(arc, &s)) == 0) {
        rc = sr_unpack_to_dir(&s, out, &uo, NULL);
        sr_source_file_close(&s);
    }
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(rc, 0);
    /* The leaf came back at the bottom. */
    int fd = open(out, O_RDONLY | O_DIRECTORY);
    for (int i = 0; fd >= 0 && i < SR_TREE_MAX_DEPTH - 1; i++) {
        const int sub = openat(fd, "a", O_RDONLY | O_DIRECTORY);
        close(fd);
        fd = sub;
    }
    assert_true(fd >= 0);
    assert_int_equal(faccessat(fd, "leaf", F_OK, 0), 0);
    close(fd);
    assert_int_equal(sr_rmtree(d), 0);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rmtree_removes_a_tree_deeper_than_path_max),
        cmocka_unit_test(walk_is_sorted_and_visits_directories_after_their_contents),
        cmocka_unit_test(walk_refuses_past_max_depth_with_a_clear_error),
        cmocka_unit_test(pack_of_a_deep_tree_is_refused_not_a_crash),
        cmocka_unit_test(pack_of_a_tree_at_the_limit_works_with_few_descriptors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
