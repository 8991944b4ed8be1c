/*
 * test_fsutil.c - durable writes, copies and safe deletion (common/fsutil.h).
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
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "log.h"

static char *scratch(void)
{
    const char *base = getenv("SPOTRUN_TEST_TMP");
    char tmpl[PATH_MAX];
    assert_true(snprintf(tmpl, sizeof(tmpl), "%s/fsutil.XXXXXX", base && *base ? base : "/tmp") <
                (int)sizeof(tmpl));
    assert_int_equal(sr_mkdirs(base && *base ? base : "/tmp", 0755), 0);
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *path)
{
    char *buf;
    size_t len;
    assert_int_equal(sr_read_file(path, 1 << 20, &buf, &len), 0);
    return buf;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static void atomic_write_replaces_and_leaves_no_temp_file(void **state)
{
    (void)state;
    char *d = scratch(), p[PATH_MAX];
    assert_true(snprintf(p, sizeof(p), "%s/f.txt", d) < (int)sizeof(p));
    put(p, "old contents that are longer");
    assert_int_equal(sr_write_file_atomic(p, "new", 3), 0);
    char *s = slurp(p);
    assert_string_equal(s, "new");
    free(s);
    assert_int_equal(count_entries(d), 1);
    sr_rmtree(d);
    free(d);
}

static void atomic_write_into_missing_dir_names_the_path(void **state)
{
    (void)state;
    char *d = scratch(), p[PATH_MAX];
    assert_true(snprintf(p, sizeof(p), "%s/nodir/f.txt", d) < (int)sizeof(p));
    assert_int_equal(sr_write_file_atomic(p, "x", 1), -ENOENT);
    assert_non_null(strstr(sr_strerror(-ENOENT), "cannot write"));
    assert_non_null(strstr(sr_strerror(-ENOENT), "nodir/f.txt"));
    sr_rmtree(d);
    free(d);
}

static void copy_is_byte_identical(void **state)
{
    (void)state;
    char *d = scratch(), a[PATH_MAX], b[PATH_MAX];
    assert_true(snprintf(a, sizeof(a), "%s/a.bin", d) < (int)sizeof(a));
    assert_true(snprintf(b, sizeof(b), "%s/b.bin", d) < (int)sizeof(b));
    size_t n = (3u << 20) + 17;
    unsigned char *buf = malloc(n);
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(i * 131 + 7);
    assert_int_equal(sr_write_file_atomic(a, buf, n), 0);
    put(b, "to be replaced");
    assert_int_equal(sr_copy_file_atomic(a, b), 0);
    char *got;
    size_t len;
    assert_int_equal(sr_read_file(b, n, &got, &len), 0);
    assert_int_equal(len, n);
    assert_memory_equal(got, buf, n);
    free(got);
    free(buf);
    assert_int_equal(count_entries(d), 2);
    sr_rmtree(d);
    free(d);
}

static void copy_of_missing_source_fails_and_keeps_target(void **state)
{
    (void)state;
    char *d = scratch(), a[PATH_MAX], b[PATH_MAX];
    assert_true(snprintf(a, sizeof(a), "%s/missing", d) < (int)sizeof(a));
    assert_true(snprintf(b, sizeof(b), "%s/b", d) < (int)sizeof(b));
    put(b, "keep");
    assert_int_equal(sr_copy_file_atomic(a, b), -ENOENT);
    char *s = slurp(b);
    assert_string_equal(s, "keep");
    free(s);
    sr_rmtree(d);
    free(d);
}

static void read_file_over_max_is_efbig(void **state)
{
    (void)state;
    char *d = scratch(), p[PATH_MAX];
    assert_true(snprintf(p, sizeof(p), "%s/f", d) < (int)sizeof(p));
    put(p, "0123456789");
    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(sr_read_file(p, 9, &buf, &len), -EFBIG);
    assert_null(buf);
    assert_int_equal(sr_read_file(p, 10, &buf, &len), 0);
    assert_int_equal(len, 10);
    assert_string_equal(buf, "0123456789");
    free(buf);
    sr_rmtree(d);
    free(d);
}

static void rmtree_does_not_follow_symlinks(void **state)
{
    (void)state;
    char *d = scratch(), keep[PATH_MAX], victim[PATH_MAX], p[PATH_MAX + 64];
    assert_true(snprintf(keep, sizeof(keep), "%s/keep", d) < (int)sizeof(keep));
    assert_true(snprintf(victim, sizeof(victim), "%s/victim", d) < (int)sizeof(victim));
    assert_int_equal(sr_mkdirs(keep, 0755), 0);
    assert_true(snprintf(p, sizeof(p), "%s/precious", keep) < (int)sizeof(p));
    put(p, "precious");
    assert_true(snprintf(p, sizeof(p), "%s/a/b/c", victim) < (int)sizeof(p));
    assert_int_equal(sr_mkdirs(p, 0755), 0);
    assert_true(snprintf(p, sizeof(p), "%s/a/b/c/f", victim) < (int)sizeof(p));
    put(p, "x");
    assert_true(snprintf(p, sizeof(p), "%s/a/link", victim) < (int)sizeof(p));
    assert_int_equal(symlink(keep, p), 0);

    assert_int_equal(sr_rmtree(victim), 0);
    struct stat sb;
    assert_int_equal(lstat(victim, &sb), -1);
    assert_true(snprintf(p, sizeof(p), "%s/precious", keep) < (int)sizeof(p));
    char *s = slurp(p);
    assert_string_equal(s, "precious");
    free(s);
    assert_int_equal(sr_rmtree(victim), 0); /* missing is fine */
    sr_rmtree(d);
    free(d);
}

static void rmtree_of_a_symlink_removes_only_the_link(void **state)
{
    (void)state;
    char *d = scratch(), keep[PATH_MAX], link[PATH_MAX], p[PATH_MAX + 64];
    assert_true(snprintf(keep, sizeof(keep), "%s/keep", d) < (int)sizeof(keep));
    assert_true(snprintf(link, sizeof(link), "%s/link", d) < (int)sizeof(link));
    assert_int_equal(sr_mkdirs(keep, 0755), 0);
    assert_true(snprintf(p, sizeof(p), "%s/f", keep) < (int)sizeof(p));
    put(p, "f");
    assert_int_equal(symlink(keep, link), 0);
    assert_int_equal(sr_rmtree(link), 0);
    assert_int_equal(count_entries(keep), 1);
    assert_int_equal(count_entries(d), 1);
    sr_rmtree(d);
    free(d);
}

static void empty_dir_keeps_the_directory(void **state)
{
    (void)state;
    char *d = scratch(), p[PATH_MAX + 64];
    assert_true(snprintf(p, sizeof(p), "%s/sub/deeper", d) < (int)sizeof(p));
    assert_int_equal(sr_mkdirs(p, 0755), 0);
    assert_true(snprintf(p, sizeof(p), "%s/sub/deeper/f", d) < (int)sizeof(p));
    put(p, "x");
    assert_true(snprintf(p, sizeof(p), "%s/.hidden", d) < (int)sizeof(p));
    put(p, "x");
    assert_int_equal(sr_empty_dir(d), 0);
    struct stat sb;
    assert_int_equal(stat(d, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(count_entries(d), 0);
    sr_rmtree(d);
    free(d);
}

static void mkdirs_creates_parents_and_rejects_files(void **state)
{
    (void)state;
    char *d = scratch(), p[PATH_MAX + 64];
    assert_true(snprintf(p, sizeof(p), "%s/a/b/c/", d) < (int)sizeof(p));
    assert_int_equal(sr_mkdirs(p, 0755), 0);
    assert_int_equal(sr_mkdirs(p, 0755), 0);
    assert_true(snprintf(p, sizeof(p), "%s/file", d) < (int)sizeof(p));
    put(p, "x");
    assert_int_equal(sr_mkdirs(p, 0755), -ENOTDIR);
    sr_rmtree(d);
    free(d);
}

static void dirname_matches_posix(void **state)
{
    (void)state;
    char out[64];
    sr_dirname("/a/b/c", out, sizeof(out));
    assert_string_equal(out, "/a/b");
    sr_dirname("/a/b/c/", out, sizeof(out));
    assert_string_equal(out, "/a/b");
    sr_dirname("/a", out, sizeof(out));
    assert_string_equal(out, "/");
    sr_dirname("a", out, sizeof(out));
    assert_string_equal(out, ".");
    sr_dirname("a//b", out, sizeof(out));
    assert_string_equal(out, "a");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(atomic_write_replaces_and_leaves_no_temp_file),
        cmocka_unit_test(atomic_write_into_missing_dir_names_the_path),
        cmocka_unit_test(copy_is_byte_identical),
        cmocka_unit_test(copy_of_missing_source_fails_and_keeps_target),
        cmocka_unit_test(read_file_over_max_is_efbig),
        cmocka_unit_test(rmtree_does_not_follow_symlinks),
        cmocka_unit_test(rmtree_of_a_symlink_removes_only_the_link),
        cmocka_unit_test(empty_dir_keeps_the_directory),
        cmocka_unit_test(mkdirs_creates_parents_and_rejects_files),
        cmocka_unit_test(dirname_matches_posix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
