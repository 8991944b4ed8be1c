/*
 * test_fsutil.c - the durable writer, adopting files (a link, else a copy)
 * and safe deletion (common/fsutil.h).
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

static void assert_text(const char *path, const char *want)
{
    char *buf;
    size_t len;
    assert_int_equal(sr_read_file(path, 1 << 20, &buf, &len), 0);
    assert_string_equal(buf, want);
    free(buf);
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
    assert_text(p, "new");
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

/* A test pattern of n bytes (malloc'd). */
static unsigned char *pattern(size_t n)
{
    unsigned char *buf = malloc(n);
    assert_non_null(buf);
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(i * 131 + 7);
    return buf;
}

static void assert_file_holds(const char *path, const void *want, size_t n)
{
    char *got;
    size_t len;
    assert_int_equal(sr_read_file(path, n, &got, &len), 0);
    assert_int_equal(len, n);
    assert_memory_equal(got, want, n);
    free(got);
}

/* Writes of more than one writeback step land whole; nothing is visible
 * before commit, and no temp file is left after it. */
static void durable_writer_is_invisible_until_commit(void **state)
{
    (void)state;
    char *d = scratch(), p[PATH_MAX];
    assert_true(snprintf(p, sizeof(p), "%s/big", d) < (int)sizeof(p));
    const size_t half = SR_DURABLE_SYNC_CHUNK / 2 + 4097;
    unsigned char *buf = pattern(2 * half);
    struct sr_durable w;
    assert_int_equal(sr_durable_open(&w, p), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(sr_durable_write(&w, buf + i * half, half), 0);
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(sr_durable_commit(&w, 0), 0);
    sr_durable_abort(&w); /* after a commit: nothing to remove */
    assert_file_holds(p, buf, 2 * half);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0644);
    assert_int_equal(count_entries(d), 1);
    free(buf);
    sr_rmtree(d);
    free(d);
}

static void durable_writer_abort_leaves_the_target_alone(void **state)
{
    (void)state;
    char *d = scratch(), p[PATH_MAX];
    assert_true(snprintf(p, sizeof(p), "%s/f", d) < (int)sizeof(p));
    put(p, "old");
    struct sr_durable w;
    assert_int_equal(sr_durable_open(&w, p), 0);
    assert_int_equal(sr_durable_write(&w, "new", 3), 0);
    sr_durable_abort(&w);
    assert_text(p, "old");
    assert_int_equal(count_entries(d), 1);
    sr_rmtree(d);
    free(d);
}

/* noreplace: an object that is never replaced lands only where nothing is. */
static void durable_writer_noreplace_refuses_an_existing_target(void **state)
{
    (void)state;
    char *d = scratch(), p[PATH_MAX];
    assert_true(snprintf(p, sizeof(p), "%s/f", d) < (int)sizeof(p));
    put(p, "theirs");
    struct sr_durable w;
    assert_int_equal(sr_durable_open(&w, p), 0);
    assert_int_equal(sr_durable_write(&w, "mine", 4), 0);
    assert_int_equal(sr_durable_commit(&w, 1), -EEXIST);
    assert_non_null(strstr(sr_strerror(-EEXIST), "already exists"));
    sr_durable_abort(&w);
    assert_text(p, "theirs");
    assert_int_equal(count_entries(d), 1);
    sr_rmtree(d);
    free(d);
}

/* On the same filesystem the target is the source's inode: no byte copied. */
static void adopt_on_the_same_filesystem_links(void **state)
{
    (void)state;
    char *d = scratch(), a[PATH_MAX], b[PATH_MAX];
    assert_true(snprintf(a, sizeof(a), "%s/a", d) < (int)sizeof(a));
    assert_true(snprintf(b, sizeof(b), "%s/b", d) < (int)sizeof(b));
    put(a, "staged");
    assert_int_equal(chmod(a, 0600), 0);
    put(b, "to be replaced");
    assert_int_equal(sr_adopt_file(a, b, 0), 0);
    struct stat sa, sb;
    assert_int_equal(stat(a, &sa), 0);
    assert_int_equal(stat(b, &sb), 0);
    assert_int_equal(sa.st_ino, sb.st_ino);
    assert_int_equal(sb.st_mode & 0777, 0644);
    assert_int_equal(count_entries(d), 2);
    put(b, "x"); /* b is taken: create-only refuses, keeps it */
    assert_int_equal(sr_adopt_file(a, b, 1), -EEXIST);
    assert_text(b, "x");
    assert_int_equal(count_entries(d), 2);
    sr_rmtree(d);
    free(d);
}

/* On another filesystem (tmpfs /dev/shm) adopting copies, byte for byte. */
static void adopt_across_filesystems_copies(void **state)
{
    (void)state;
    char *d = scratch(), a[PATH_MAX], b[PATH_MAX];
    assert_true(snprintf(a, sizeof(a), "/dev/shm/spotrun-test-fsutil.%d", (int)getpid()) <
                (int)sizeof(a));
    assert_true(snprintf(b, sizeof(b), "%s/b.bin", d) < (int)sizeof(b));
    struct stat sa, sd;
    const size_t n = (3u << 20) + 17;
    unsigned char *buf = pattern(n);
    if (stat("/dev/shm", &sa) != 0 || stat(d, &sd) != 0 || sa.st_dev == sd.st_dev ||
        sr_write_file_atomic(a, buf, n) != 0) {
        free(buf);
        sr_rmtree(d);
        free(d);
        skip();
    }
    put(b, "to be replaced");
    assert_int_equal(sr_adopt_file(a, b, 0), 0);
    assert_file_holds(b, buf, n);
    assert_int_equal(count_entries(d), 1);
    unlink(a);
    free(buf);
    sr_rmtree(d);
    free(d);
}

static void adopt_of_missing_source_fails_and_keeps_target(void **state)
{
    (void)state;
    char *d = scratch(), a[PATH_MAX], b[PATH_MAX];
    assert_true(snprintf(a, sizeof(a), "%s/missing", d) < (int)sizeof(a));
    assert_true(snprintf(b, sizeof(b), "%s/b", d) < (int)sizeof(b));
    put(b, "keep");
    assert_int_equal(sr_adopt_file(a, b, 0), -ENOENT);
    assert_text(b, "keep");
    assert_int_equal(count_entries(d), 1);
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
    assert_text(p, "precious");
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

static void rmtree_at_removes_a_symlink_not_its_target(void **state)
{
    (void)state;
    char *d = scratch(), keep[PATH_MAX], p[PATH_MAX + 64];
    assert_true(snprintf(keep, sizeof(keep), "%s/keep", d) < (int)sizeof(keep));
    assert_int_equal(sr_mkdirs(keep, 0755), 0);
    assert_true(snprintf(p, sizeof(p), "%s/precious", keep) < (int)sizeof(p));
    put(p, "precious");
    assert_true(snprintf(p, sizeof(p), "%s/spool", d) < (int)sizeof(p));
    assert_int_equal(symlink(keep, p), 0);
    assert_true(snprintf(p, sizeof(p), "%s/gpu/a/b", d) < (int)sizeof(p));
    assert_int_equal(sr_mkdirs(p, 0700), 0);
    const int dfd = open(d, O_RDONLY | O_DIRECTORY);
    assert_true(dfd >= 0);
    assert_int_equal(sr_rmtree_at(dfd, "spool", "d/spool"), 0);
    assert_int_equal(sr_rmtree_at(dfd, "gpu", "d/gpu"), 0);
    assert_int_equal(sr_rmtree_at(dfd, "missing", "d/missing"), 0);
    close(dfd);
    assert_int_equal(count_entries(d), 1); /* keep/ */
    assert_true(snprintf(p, sizeof(p), "%s/precious", keep) < (int)sizeof(p));
    assert_text(p, "precious");
    sr_rmtree(d);
    free(d);
}

static void empty_dir_log_removes_the_same_and_refuses_a_symlink(void **state)
{
    (void)state;
    char *d = scratch(), dir[PATH_MAX], link[PATH_MAX], p[PATH_MAX + 64];
    assert_true(snprintf(dir, sizeof(dir), "%s/ckpt", d) < (int)sizeof(dir));
    assert_true(snprintf(link, sizeof(link), "%s/link", d) < (int)sizeof(link));
    assert_true(snprintf(p, sizeof(p), "%s/sub", dir) < (int)sizeof(p));
    assert_int_equal(sr_mkdirs(p, 0700), 0);
    assert_true(snprintf(p, sizeof(p), "%s/sub/f", dir) < (int)sizeof(p));
    put(p, "x");
    assert_int_equal(symlink(dir, link), 0);
    assert_true(sr_empty_dir_log(link, "test") < 0); /* ENOTDIR: not followed */
    assert_int_equal(count_entries(dir), 1);
    assert_int_equal(sr_empty_dir_log(dir, "test"), 0);
    assert_int_equal(count_entries(dir), 0);
    sr_rmtree(d);
    free(d);
}

static void file_list_names_the_files_a_replace_removed(void **state)
{
    (void)state;
    char *d = scratch(), p[PATH_MAX + 64];
    assert_true(snprintf(p, sizeof(p), "%s/sub", d) < (int)sizeof(p));
    assert_int_equal(sr_mkdirs(p, 0700), 0);
    assert_true(snprintf(p, sizeof(p), "%s/sub/b", d) < (int)sizeof(p));
    put(p, "b");
    assert_true(snprintf(p, sizeof(p), "%s/a", d) < (int)sizeof(p));
    put(p, "a");
    struct sr_file_list l;
    assert_int_equal(sr_file_list_of(d, &l), 0);
    assert_int_equal((int)l.n, 2); /* files only, sorted */
    assert_string_equal(l.rel[0], "a");
    assert_string_equal(l.rel[1], "sub/b");
    assert_int_equal(unlink(p), 0);
    sr_file_list_log_gone(d, &l, "test"); /* logs a as removed; frees */
    assert_null(l.rel);
    assert_int_equal((int)l.n, 0);
    assert_true(snprintf(p, sizeof(p), "%s/missing", d) < (int)sizeof(p));
    assert_int_equal(sr_file_list_of(p, &l), 0);
    assert_int_equal((int)l.n, 0);
    sr_rmtree(d);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(atomic_write_replaces_and_leaves_no_temp_file),
        cmocka_unit_test(atomic_write_into_missing_dir_names_the_path),
        cmocka_unit_test(durable_writer_is_invisible_until_commit),
        cmocka_unit_test(durable_writer_abort_leaves_the_target_alone),
        cmocka_unit_test(durable_writer_noreplace_refuses_an_existing_target),
        cmocka_unit_test(adopt_on_the_same_filesystem_links),
        cmocka_unit_test(adopt_across_filesystems_copies),
        cmocka_unit_test(adopt_of_missing_source_fails_and_keeps_target),
        cmocka_unit_test(read_file_over_max_is_efbig),
        cmocka_unit_test(rmtree_does_not_follow_symlinks),
        cmocka_unit_test(rmtree_of_a_symlink_removes_only_the_link),
        cmocka_unit_test(empty_dir_keeps_the_directory),
        cmocka_unit_test(mkdirs_creates_parents_and_rejects_files),
        cmocka_unit_test(dirname_matches_posix),
        cmocka_unit_test(rmtree_at_removes_a_symlink_not_its_target),
        cmocka_unit_test(empty_dir_log_removes_the_same_and_refuses_a_symlink),
        cmocka_unit_test(file_list_names_the_files_a_replace_removed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
