/*
 * test_store.c - store URLs, key validation and the file backend
 * (storage/store/store.h). Each test opens a store in its own scratch directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "log.h"
#include "store.h"
#include "units.h"

static char *scratch(void)
{
    return tu_scratch("store");
}

static int exists(struct tu_store *f, const char *rel)
{
    char p[PATH_MAX];
    struct stat sb;
    assert_true(snprintf(p, sizeof(p), "%s/store/%s", f->dir, rel) < (int)sizeof(p));
    return lstat(p, &sb) == 0;
}

static void file_url_plain_and_relative_paths_open_the_same_store(void **state)
{
    (void)state;
    char *d = scratch(), url[PATH_MAX + 16], cwd[PATH_MAX];
    struct sr_store *st;
    assert_true(snprintf(url, sizeof(url), "file://%s/s1", d) < (int)sizeof(url));
    assert_int_equal(sr_store_open(url, &st), 0);
    assert_string_equal(sr_store_url(st), url);
    sr_store_close(st);

    snprintf(url, sizeof(url), "%s/s2/", d); /* trailing slash dropped */
    assert_int_equal(sr_store_open(url, &st), 0);
    char want[PATH_MAX + 16];
    assert_true(snprintf(want, sizeof(want), "file://%s/s2", d) < (int)sizeof(want));
    assert_string_equal(sr_store_url(st), want);
    sr_store_close(st);

    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir(d), 0);
    assert_int_equal(sr_store_open("rel/store", &st), 0);
    assert_int_equal(chdir(cwd), 0);
    assert_true(snprintf(want, sizeof(want), "file://%s/rel/store", d) < (int)sizeof(want));
    assert_string_equal(sr_store_url(st), want);
    sr_store_close(st);
    assert_true(snprintf(want, sizeof(want), "%s/rel/store", d) < (int)sizeof(want));
    struct stat sb;
    assert_int_equal(stat(want, &sb), 0); /* created on open */
    assert_true(S_ISDIR(sb.st_mode));
    sr_rmtree(d);
    free(d);
}

static void s3_and_unknown_urls_are_refused_clearly(void **state)
{
    (void)state;
    struct sr_store *st = (void *)1;
    /* s3:// is a backend now (tests/unit/test_s3.c, tests/e2e/t02*); a
     * URL without a bucket is still refused. */
    assert_int_equal(sr_store_open("s3:///prefix", &st), -EINVAL);
    assert_null(st);
    assert_non_null(strstr(sr_strerror(-EINVAL), "want s3://bucket/prefix"));
    assert_int_equal(sr_store_open("gs://bucket", &st), -EINVAL);
    assert_non_null(strstr(sr_strerror(-EINVAL), "unsupported store URL"));
    assert_int_equal(sr_store_open("file://relative/x", &st), -EINVAL);
    assert_int_equal(sr_store_open("", &st), -EINVAL);
}

static void mistyped_scheme_is_refused_naming_the_intended_url(void **state)
{
    (void)state;
    struct sr_store *st = (void *)1;
    const char *typos[][2] = {
        {"s3:/bucket/x", "mistyped s3://bucket/x"}, {"s3:bucket", "mistyped s3://bucket"},
        {"S3://bucket", "mistyped s3://bucket"},    {"s3//bucket", "mistyped s3://bucket"},
        {"file:/abs", "mistyped file:///abs"},      {"gs:bucket", "unknown scheme \"gs:\""}};
    for (size_t i = 0; i < sizeof(typos) / sizeof(typos[0]); i++) {
        assert_int_equal(sr_store_open(typos[i][0], &st), -EINVAL);
        assert_null(st);
        assert_non_null(strstr(sr_strerror(-EINVAL), typos[i][1]));
    }
}

static void open_existing_never_creates_a_store(void **state)
{
    (void)state;
    char *d = scratch(), p[PATH_MAX];
    assert_true(snprintf(p, sizeof(p), "%s/none/deeper", d) < (int)sizeof(p));
    struct sr_store *st = (void *)1;
    assert_int_equal(sr_store_open_existing(p, &st), -ENOENT);
    assert_null(st);
    assert_non_null(strstr(sr_strerror(-ENOENT), "no store at"));
    struct stat sb;
    assert_true(snprintf(p, sizeof(p), "%s/none", d) < (int)sizeof(p));
    assert_int_not_equal(lstat(p, &sb), 0);
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(sr_store_open_existing(p, &st), 0);
    sr_store_close(st);
    sr_rmtree(d);
    free(d);
}

static void store_on_a_file_is_not_a_directory(void **state)
{
    (void)state;
    char *d = scratch(), p[PATH_MAX];
    assert_true(snprintf(p, sizeof(p), "%s/file", d) < (int)sizeof(p));
    assert_int_equal(sr_write_file_atomic(p, "x", 1), 0);
    struct sr_store *st;
    assert_int_equal(sr_store_open(p, &st), -ENOTDIR);
    assert_non_null(strstr(sr_strerror(-ENOTDIR), "is not a directory"));
    sr_rmtree(d);
    free(d);
}

static void read_only_store_is_not_writable(void **state)
{
    (void)state;
    if (geteuid() == 0)
        skip(); /* root writes anywhere */
    char *d = scratch(), p[PATH_MAX];
    assert_true(snprintf(p, sizeof(p), "%s/ro", d) < (int)sizeof(p));
    assert_int_equal(mkdir(p, 0555), 0);
    struct sr_store *st;
    assert_int_equal(sr_store_open(p, &st), -EACCES);
    assert_non_null(strstr(sr_strerror(-EACCES), "is not writable: Permission denied"));
    chmod(p, 0755);
    sr_rmtree(d);
    free(d);
}

/* A reader's handle on a store it may not write (sr_store_open_reader):
 * every write is -EROFS before the backend sees it; reads go on. Root may
 * write anywhere, so the flag is set by hand here (t0672 opens real
 * read-only stores). */
static void read_only_handle_refuses_every_write(void **state)
{
    (void)state;
    char *d = scratch();
    struct sr_store *st;
    assert_int_equal(sr_store_open_reader(d, &st), 0);
    assert_int_equal(sr_store_put(st, "r/a", "x", 1), 0);
    st->read_only = 1;
    assert_int_equal(sr_store_read_only(st), 1);
    assert_int_equal(sr_store_put(st, "r/b", "x", 1), -EROFS);
    assert_non_null(strstr(sr_strerror(-EROFS), "is read-only here"));
    assert_int_equal(sr_store_put_if(st, "r/b", "x", 1, NULL, NULL), -EROFS);
    assert_int_equal(sr_store_delete(st, "r/a"), -EROFS);
    struct sr_store_writer *w;
    assert_int_equal(sr_store_writer_open_new(st, "r/c", &w), -EROFS);
    char *buf;
    size_t len;
    assert_int_equal(sr_store_get(st, "r/a", 16, &buf, &len), 0);
    assert_int_equal(len, 1);
    free(buf);
    uint64_t size;
    assert_int_equal(sr_store_size(st, "r/b", &size), -ENOENT);
    sr_err_clear();
    sr_store_close(st);
    sr_rmtree(d);
    free(d);
}

/* An object over get_etag's max: -EFBIG, and its ETag all the same, which
 * a conditional write may replace it by (an oversized LEASE). */
static void oversized_object_still_has_its_etag(void **state)
{
    (void)state;
    char *d = scratch();
    struct sr_store *st;
    assert_int_equal(sr_store_open(d, &st), 0);
    char big[200000];
    memset(big, 'x', sizeof(big));
    assert_int_equal(sr_store_put(st, "r/LEASE", big, sizeof(big)), 0);
    char *buf;
    size_t len;
    char want[SR_ETAG_MAX], got[SR_ETAG_MAX];
    assert_int_equal(sr_store_get_etag(st, "r/LEASE", sizeof(big), &buf, &len, want), 0);
    free(buf);
    assert_int_equal(sr_store_get_etag(st, "r/LEASE", 1024, &buf, &len, got), -EFBIG);
    assert_null(buf);
    assert_string_equal(got, want);
    sr_err_clear();
    assert_int_equal(sr_store_put_if(st, "r/LEASE", "{}", 2, "0000000000000000", NULL), -ESTALE);
    sr_err_clear();
    assert_int_equal(sr_store_put_if(st, "r/LEASE", "{}", 2, got, NULL), 0);
    assert_int_equal(sr_store_get(st, "r/LEASE", 16, &buf, &len), 0);
    assert_int_equal(len, 2);
    free(buf);
    sr_store_close(st);
    sr_rmtree(d);
    free(d);
}

static void default_url_follows_env(void **state)
{
    (void)state;
    char buf[PATH_MAX];
    setenv("SPOTRUN_STORE", "s3://b/p", 1);
    assert_int_equal(sr_store_default_url(buf, sizeof(buf)), 0);
    assert_string_equal(buf, "s3://b/p");
    unsetenv("SPOTRUN_STORE");
    setenv("XDG_DATA_HOME", "/xdg", 1);
    assert_int_equal(sr_store_default_url(buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/xdg/spotrun/store");
    unsetenv("XDG_DATA_HOME");
    setenv("HOME", "/home/u", 1);
    assert_int_equal(sr_store_default_url(buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/home/u/.local/share/spotrun/store");
    assert_int_equal(sr_store_default_url(buf, 8), -ENAMETOOLONG);
    unsetenv("HOME");
    assert_int_equal(sr_store_default_url(buf, sizeof(buf)), -ENOENT);
}

static void put_get_size_round_trip(void **state)
{
    struct tu_store *f = *state;
    assert_int_equal(sr_store_put(f->st, "run/ckpt/0000000001/MANIFEST.json", "{}\n", 3), 0);
    char *buf;
    size_t len;
    assert_int_equal(sr_store_get(f->st, "run/ckpt/0000000001/MANIFEST.json", 100, &buf, &len), 0);
    assert_int_equal(len, 3);
    assert_string_equal(buf, "{}\n");
    free(buf);
    uint64_t size = 0;
    assert_int_equal(sr_store_size(f->st, "run/ckpt/0000000001/MANIFEST.json", &size), 0);
    assert_int_equal(size, 3);
    assert_int_equal(sr_store_put(f->st, "run/ckpt/0000000001/MANIFEST.json", "[1]", 3), 0);
    assert_int_equal(sr_store_get(f->st, "run/ckpt/0000000001/MANIFEST.json", 100, &buf, &len), 0);
    assert_string_equal(buf, "[1]");
    free(buf);
}

static void writer_commits_atomically_and_close_discards(void **state)
{
    struct tu_store *f = *state;
    struct sr_store_writer *w = NULL;
    assert_int_equal(sr_store_streams(f->st), 0); /* push stages for the file store */
    assert_int_equal(sr_store_writer_open_new(f->st, "run/ckpt/0000000001/data", &w), 0);
    assert_int_equal(sr_store_writer_write(w, "hello ", 6), 0);
    assert_int_equal(sr_store_writer_sink(w, "world", 5), 0);
    assert_int_equal(w->bytes, 11);
    uint64_t size = 0;
    assert_int_equal(sr_store_size(f->st, "run/ckpt/0000000001/data", &size), -ENOENT);
    assert_int_equal(sr_store_writer_commit(w), 0);
    sr_store_writer_close(w);
    char *buf;
    size_t len;
    assert_int_equal(sr_store_get(f->st, "run/ckpt/0000000001/data", 100, &buf, &len), 0);
    assert_int_equal(len, 11);
    assert_string_equal(buf, "hello world");
    free(buf);
    /* Closed without commit: nothing visible, no temp file left. */
    assert_int_equal(sr_store_writer_open_new(f->st, "run/ckpt/0000000001/other", &w), 0);
    assert_int_equal(sr_store_writer_write(w, "x", 1), 0);
    sr_store_writer_close(w);
    assert_int_equal(sr_store_size(f->st, "run/ckpt/0000000001/other", &size), -ENOENT);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/store/run/ckpt/0000000001", f->dir);
    DIR *d = opendir(path);
    assert_non_null(d);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));)
        entries += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    assert_int_equal(entries, 1);
    assert_int_equal(sr_store_writer_open_new(f->st, "../escape", &w), -EINVAL);
}

static void put_file_stores_and_source_reads_ranges(void **state)
{
    struct tu_store *f = *state;
    char p[PATH_MAX];
    assert_true(snprintf(p, sizeof(p), "%s/local.bin", f->dir) < (int)sizeof(p));
    assert_int_equal(sr_write_file_atomic(p, "0123456789", 10), 0);
    assert_int_equal(sr_store_put_file_new(f->st, "r/data", p), 0);
    struct sr_source src;
    assert_int_equal(sr_store_source(f->st, "r/data", &src), 0);
    assert_int_equal(src.size, 10);
    char buf[4] = {0};
    assert_int_equal(src.read_at(src.ctx, buf, 3, 4), 0);
    assert_memory_equal(buf, "456", 3);
    assert_int_equal(src.read_at(src.ctx, buf, 3, 8), -EBADMSG); /* past the end */
    sr_store_source_close(f->st, &src);
    assert_int_equal(sr_store_source(f->st, "r/missing", &src), -ENOENT);
}

static void get_over_max_is_efbig(void **state)
{
    struct tu_store *f = *state;
    assert_int_equal(sr_store_put(f->st, "k", "0123456789", 10), 0);
    char *buf = NULL;
    size_t len;
    assert_int_equal(sr_store_get(f->st, "k", 9, &buf, &len), -EFBIG);
    assert_null(buf);
}

static void missing_objects_are_enoent(void **state)
{
    struct tu_store *f = *state;
    uint64_t size;
    char *buf;
    size_t len;
    assert_int_equal(sr_store_size(f->st, "no/such", &size), -ENOENT);
    assert_int_equal(sr_store_get(f->st, "no/such", 10, &buf, &len), -ENOENT);
    assert_non_null(strstr(sr_strerror(-ENOENT), "no/such"));
}

static void invalid_keys_are_rejected(void **state)
{
    struct tu_store *f = *state;
    const char *bad[] = {"../x", "/abs", "a//b", "a/./b", "a/..", ".", "", "a/", "x/../../y"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        if (sr_store_put(f->st, bad[i], "x", 1) != -EINVAL)
            fail_msg("put \"%s\" was accepted", bad[i]);
        uint64_t size;
        assert_int_equal(sr_store_size(f->st, bad[i], &size), -EINVAL);
        assert_int_equal(sr_store_delete(f->st, bad[i]), -EINVAL);
    }
    char longkey[1100];
    memset(longkey, 'a', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    assert_int_equal(sr_store_put(f->st, longkey, "x", 1), -EINVAL);
    /* Nothing was written outside the root. */
    char p[PATH_MAX];
    struct stat sb;
    assert_true(snprintf(p, sizeof(p), "%s/x", f->dir) < (int)sizeof(p));
    assert_int_equal(stat(p, &sb), -1);
}

static void list_is_sorted_and_hides_temp_files(void **state)
{
    struct tu_store *f = *state;
    assert_int_equal(sr_store_put(f->st, "run/ckpt/0000000002/a", "x", 1), 0);
    assert_int_equal(sr_store_put(f->st, "run/ckpt/0000000010/a", "x", 1), 0);
    assert_int_equal(sr_store_put(f->st, "run/ckpt/0000000001/a", "x", 1), 0);
    assert_int_equal(sr_store_put(f->st, "run/ckpt/.data.tmp.abc", "x", 1), 0);
    struct sr_strlist l;
    assert_int_equal(sr_store_list(f->st, "run/ckpt", &l), 0);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.v[0], "0000000001");
    assert_string_equal(l.v[1], "0000000002");
    assert_string_equal(l.v[2], "0000000010");
    sr_strlist_free(&l);
    assert_int_equal(sr_store_list(f->st, "", &l), 0); /* the root */
    assert_int_equal(l.n, 1);
    assert_string_equal(l.v[0], "run");
    sr_strlist_free(&l);
}

static void list_of_missing_prefix_is_empty(void **state)
{
    struct tu_store *f = *state;
    struct sr_strlist l;
    assert_int_equal(sr_store_list(f->st, "nothing/here", &l), 0);
    assert_int_equal(l.n, 0);
    sr_strlist_free(&l);
}

static void delete_prunes_empty_dirs_but_not_the_root(void **state)
{
    struct tu_store *f = *state;
    assert_int_equal(sr_store_put(f->st, "a/b/c/obj", "x", 1), 0);
    assert_int_equal(sr_store_put(f->st, "a/keep", "x", 1), 0);
    assert_int_equal(sr_store_delete(f->st, "a/b/c/obj"), 0);
    assert_false(exists(f, "a/b/c/obj"));
    assert_false(exists(f, "a/b"));
    assert_true(exists(f, "a/keep"));
    assert_int_equal(sr_store_delete(f->st, "a/keep"), 0);
    assert_false(exists(f, "a"));
    assert_true(exists(f, ""));
    assert_int_equal(sr_store_delete(f->st, "a/keep"), 0); /* missing is fine */
}

/* A conditional write leaves its lock file beside the object: deleting
 * the last object of a run takes the run's directory with its idle lock
 * files (a deleted run is gone from `ls`), and a lock someone holds stays
 * with its directory, which is listed (a dead seq left with only a lock
 * file, by a gc killed midway, must stay visible to the catalog, which
 * removes it). */
static void delete_and_list_see_through_lock_files(void **state)
{
    struct tu_store *f = *state;
    assert_int_equal(sr_store_put_if(f->st, "r/LEASE", "x", 1, NULL, NULL), 0);
    assert_true(exists(f, "r/.LEASE.tmp.lock"));
    assert_int_equal(sr_store_delete(f->st, "r/LEASE"), 0);
    assert_false(exists(f, "r"));
    struct sr_strlist l;
    assert_int_equal(sr_store_list(f->st, "", &l), 0);
    assert_int_equal(l.n, 0);
    sr_strlist_free(&l);

    /* a held lock is left alone: its directory stays, and is listed */
    assert_int_equal(sr_store_put_if(f->st, "q/ckpt/0000000001/MANIFEST.json", "m", 1, NULL, NULL),
                     0);
    assert_int_equal(sr_store_put(f->st, "q/keep", "k", 1), 0);
    char lock[PATH_MAX + 64];
    snprintf(lock, sizeof(lock), "%s/store/q/ckpt/0000000001/.MANIFEST.json.tmp.lock", f->dir);
    const int held = open(lock, O_RDWR);
    assert_true(held >= 0);
    assert_int_equal(flock(held, LOCK_EX), 0);
    assert_int_equal(sr_store_delete(f->st, "q/ckpt/0000000001/MANIFEST.json"), 0);
    assert_true(exists(f, "q/ckpt/0000000001/.MANIFEST.json.tmp.lock"));
    assert_int_equal(sr_store_list(f->st, "q", &l), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[0], "ckpt");
    assert_string_equal(l.v[1], "keep");
    sr_strlist_free(&l);
    assert_int_equal(sr_store_delete(f->st, "q/keep"), 0);
    assert_true(exists(f, "q"));
    close(held);
    /* released: the next delete there takes it */
    assert_int_equal(sr_store_put(f->st, "q/ckpt/0000000001/x", "x", 1), 0);
    assert_int_equal(sr_store_delete(f->st, "q/ckpt/0000000001/x"), 0);
    assert_false(exists(f, "q"));

    /* so is a directory holding an upload's temp file (one killed
     * midway): the catalog must see that dead seq to clean it up */
    char tmp[PATH_MAX + 64];
    snprintf(tmp, sizeof(tmp), "%s/store/k/ckpt/0000000002", f->dir);
    assert_int_equal(sr_mkdirs(tmp, 0755), 0);
    snprintf(tmp, sizeof(tmp), "%s/store/k/ckpt/0000000002/.data.tar.zst.tmp.AbC123", f->dir);
    const int t = open(tmp, O_RDWR | O_CREAT, 0644);
    assert_true(t >= 0);
    close(t);
    /* and so is an empty one (a gc killed between its deletes) */
    snprintf(tmp, sizeof(tmp), "%s/store/k/ckpt/0000000003", f->dir);
    assert_int_equal(sr_mkdirs(tmp, 0755), 0);
    assert_int_equal(sr_store_list(f->st, "k/ckpt", &l), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[0], "0000000002");
    assert_string_equal(l.v[1], "0000000003");
    sr_strlist_free(&l);
}

static void strlist_sorts(void **state)
{
    (void)state;
    struct sr_strlist l = {0};
    const char *in[] = {"b", "a", "c", "aa"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(sr_strlist_push(&l, in[i]), 0);
    sr_strlist_sort(&l);
    assert_string_equal(l.v[0], "a");
    assert_string_equal(l.v[1], "aa");
    assert_string_equal(l.v[3], "c");
    sr_strlist_free(&l);
    assert_int_equal(l.n, 0);
}

struct worker {
    struct sr_store *st;
    int id;
    int failures;
    char last[300];
};

static void failed(struct worker *w, int rc)
{
    w->failures++;
    snprintf(w->last, sizeof(w->last), "%s", sr_strerror(rc));
}

/* Puts, reads back and deletes keys in a directory shared with the other
 * workers, so deletes prune directories that other puts are about to use. */
static void *churn(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 200; i++) {
        char key[64], val[64], *buf;
        size_t len;
        snprintf(key, sizeof(key), "shared/dir/w%d-%d", w->id, i);
        int n = snprintf(val, sizeof(val), "value %d %d", w->id, i);
        int rc = sr_store_put(w->st, key, val, (size_t)n);
        if (rc == 0)
            rc = sr_store_get(w->st, key, 64, &buf, &len);
        if (rc != 0) {
            failed(w, rc);
            continue;
        }
        if (len != (size_t)n || memcmp(buf, val, len) != 0)
            w->failures++;
        free(buf);
        if ((rc = sr_store_delete(w->st, key)) != 0)
            failed(w, rc);
    }
    return NULL;
}

static void concurrent_puts_and_deletes_do_not_interfere(void **state)
{
    struct tu_store *f = *state;
    pthread_t th[4];
    struct worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){.st = f->st, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, churn, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++)
        if (w[i].failures)
            fail_msg("worker %d: %d failures, last: %s", i, w[i].failures, w[i].last);
    assert_false(exists(f, "shared"));
}

/* Objects that are never replaced: put_file_new and writer_open_new land
 * only where nothing is, leave an existing object intact, and leave no
 * temp files behind. */
static void create_only_writes_never_replace(void **state)
{
    struct tu_store *f = *state;
    char src[PATH_MAX];
    assert_true(snprintf(src, sizeof(src), "%s/src", f->dir) < (int)sizeof(src));
    assert_int_equal(sr_write_file_atomic(src, "theirs", 6), 0);
    assert_int_equal(sr_store_put_file_new(f->st, "r/ckpt/1/data", src), 0);
    assert_int_equal(sr_write_file_atomic(src, "mine", 4), 0);
    assert_int_equal(sr_store_put_file_new(f->st, "r/ckpt/1/data", src), -EEXIST);
    struct sr_store_writer *w = NULL;
    assert_int_equal(sr_store_writer_open_new(f->st, "r/ckpt/1/data", &w), 0);
    assert_int_equal(sr_store_writer_write(w, "mine", 4), 0);
    assert_int_equal(sr_store_writer_commit(w), -EEXIST);
    sr_store_writer_close(w);
    char *buf;
    size_t len;
    assert_int_equal(sr_store_get(f->st, "r/ckpt/1/data", 100, &buf, &len), 0);
    assert_int_equal(len, 6);
    assert_memory_equal(buf, "theirs", 6);
    free(buf);
    assert_int_equal(sr_store_writer_open_new(f->st, "r/ckpt/2/data", &w), 0);
    assert_int_equal(sr_store_writer_write(w, "new", 3), 0);
    assert_int_equal(sr_store_writer_commit(w), 0);
    sr_store_writer_close(w);
    struct sr_strlist names;
    assert_int_equal(sr_store_list(f->st, "r/ckpt/1", &names), 0);
    assert_int_equal(names.n, 1);
    sr_strlist_free(&names);
    char dir[PATH_MAX];
    assert_true(snprintf(dir, sizeof(dir), "%s/store/r/ckpt/1", f->dir) < (int)sizeof(dir));
    DIR *d = opendir(dir);
    assert_non_null(d);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));)
        entries += e->d_name[0] != '.' || strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    assert_int_equal(entries, 1); /* data only: no temp files */
}

/* A writer paused inside the lock of an object (here: a lock taken on
 * another open file description and never released) must not hang the
 * next conditional write: after SPOTRUN_STORE_LOCK_WAIT it breaks the lock
 * and writes; the stalled holder's temp file is swept and its lock file is
 * no longer the lock, so its late write fails (the fence). */
static void a_stalled_lock_holder_is_broken_after_the_bound_and_fenced(void **state)
{
    struct tu_store *f = *state;
    char dir[PATH_MAX], lock[PATH_MAX + 32], tmp[PATH_MAX + 32];
    assert_true(snprintf(dir, sizeof(dir), "%s/store/r", f->dir) < (int)sizeof(dir));
    assert_int_equal(sr_mkdirs(dir, 0755), 0);
    snprintf(lock, sizeof(lock), "%s/.LEASE.tmp.lock", dir);
    snprintf(tmp, sizeof(tmp), "%s/.LEASE.tmp.stall1", dir);
    const int held = open(lock, O_RDWR | O_CREAT, 0644);
    assert_true(held >= 0);
    assert_int_equal(flock(held, LOCK_EX), 0);
    assert_int_equal(pwrite(held, "pid 4242 on paused-node\n", 24, 0), 24);
    const int stalled_tmp = open(tmp, O_RDWR | O_CREAT, 0644); /* its write in progress */
    assert_true(stalled_tmp >= 0);
    close(stalled_tmp);

    setenv("SPOTRUN_STORE_LOCK_WAIT", "300ms", 1);
    alarm(60); /* before the bound, this write waited forever */
    char etag[SR_ETAG_MAX];
    const int64_t t0 = sr_now_ms();
    assert_int_equal(sr_store_put_if(f->st, "r/LEASE", "new", 3, NULL, etag), 0);
    const int64_t took = sr_now_ms() - t0;
    alarm(0);
    unsetenv("SPOTRUN_STORE_LOCK_WAIT");
    assert_true(took >= 300 && took < 30000);

    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(sr_store_get(f->st, "r/LEASE", 16, &buf, &len), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(buf, "new", 3);
    free(buf);
    struct stat a, b;
    assert_int_not_equal(lstat(tmp, &a), 0); /* the stalled write's temp file: swept */
    assert_int_equal(fstat(held, &a), 0);
    assert_int_equal(stat(lock, &b), 0);
    assert_true(a.st_ino != b.st_ino); /* its lock is no longer the lock */
    /* The next writer takes the new lock at once (the breaker let it go). */
    assert_int_equal(sr_store_put_if(f->st, "r/LEASE", "newer", 5, etag, NULL), 0);
    close(held);
}

#define FT(t) cmocka_unit_test_setup_teardown(t, tu_store_setup, tu_store_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(file_url_plain_and_relative_paths_open_the_same_store),
        cmocka_unit_test(s3_and_unknown_urls_are_refused_clearly),
        cmocka_unit_test(mistyped_scheme_is_refused_naming_the_intended_url),
        cmocka_unit_test(open_existing_never_creates_a_store),
        cmocka_unit_test(store_on_a_file_is_not_a_directory),
        cmocka_unit_test(read_only_store_is_not_writable),
        cmocka_unit_test(read_only_handle_refuses_every_write),
        cmocka_unit_test(oversized_object_still_has_its_etag),
        cmocka_unit_test(default_url_follows_env),
        FT(put_get_size_round_trip),
        FT(writer_commits_atomically_and_close_discards),
        FT(put_file_stores_and_source_reads_ranges),
        FT(get_over_max_is_efbig),
        FT(missing_objects_are_enoent),
        FT(invalid_keys_are_rejected),
        FT(list_is_sorted_and_hides_temp_files),
        FT(list_of_missing_prefix_is_empty),
        FT(delete_prunes_empty_dirs_but_not_the_root),
        FT(delete_and_list_see_through_lock_files),
        FT(concurrent_puts_and_deletes_do_not_interfere),
        FT(create_only_writes_never_replace),
        FT(a_stalled_lock_holder_is_broken_after_the_bound_and_fenced),
        cmocka_unit_test(strlist_sorts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
