/*
 * testutil.h - helpers shared by the cmocka unit tests (header-only: each
 * test is its own executable). Include after <cmocka.h>.
 */
#ifndef SPOTRUN_TESTUTIL_H
#define SPOTRUN_TESTUTIL_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "store.h"

/* A fresh directory "<$SPOTRUN_TEST_TMP or /tmp>/<name>.XXXXXX" (malloc'd). */
static inline char *tu_scratch(const char *name)
{
    const char *base = getenv("SPOTRUN_TEST_TMP");
    if (!base || !*base)
        base = "/tmp";
    assert_int_equal(sr_mkdirs(base, 0755), 0);
    char tmpl[PATH_MAX];
    assert_true(snprintf(tmpl, sizeof(tmpl), "%s/%s.XXXXXX", base, name) < (int)sizeof(tmpl));
    assert_non_null(mkdtemp(tmpl));
    return strdup(tmpl);
}

static inline void tu_write_text(const char *dir, const char *name, const char *text)
{
    char p[PATH_MAX];
    assert_true(snprintf(p, sizeof(p), "%s/%s", dir, name) < (int)sizeof(p));
    assert_int_equal(sr_write_file_atomic(p, text, strlen(text)), 0);
}

/* The file's contents (malloc'd), "" when missing. */
static inline char *tu_read_text(const char *dir, const char *name)
{
    char p[PATH_MAX], *buf;
    size_t len;
    assert_true(snprintf(p, sizeof(p), "%s/%s", dir, name) < (int)sizeof(p));
    if (sr_read_file(p, 1 << 24, &buf, &len) != 0)
        return strdup("");
    return buf;
}

static inline void tu_assert_text(const char *dir, const char *name, const char *want)
{
    char *got = tu_read_text(dir, name);
    assert_string_equal(got, want);
    free(got);
}

/*
 * The file-store fixture: a scratch directory (tu_scratch) holding an
 * opened file store at "<dir>/store". tu_store_close closes the store and
 * removes the scratch directory tu_store_open made, nothing else.
 *
 * As a cmocka fixture, *state a struct tu_store * (the scratch directory
 * named after the test program):
 *     cmocka_unit_test_setup_teardown(fn, tu_store_setup, tu_store_teardown)
 * A test with more state of its own embeds a struct tu_store and calls
 * tu_store_open / tu_store_close from its setup and teardown.
 */
struct tu_store {
    char *dir;           /* the scratch directory (malloc'd) */
    char root[PATH_MAX]; /* the store's directory, "<dir>/store" */
    struct sr_store *st;
};

static inline void tu_store_open(struct tu_store *s, const char *name)
{
    s->dir = tu_scratch(name);
    assert_true(snprintf(s->root, sizeof(s->root), "%s/store", s->dir) < (int)sizeof(s->root));
    assert_int_equal(sr_store_open(s->root, &s->st), 0);
}

static inline void tu_store_close(struct tu_store *s)
{
    sr_store_close(s->st);
    s->st = NULL;
    if (s->dir)
        sr_rmtree(s->dir);
    free(s->dir);
    s->dir = NULL;
}

static inline int tu_store_setup(void **state)
{
    struct tu_store *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    tu_store_open(s, program_invocation_short_name);
    *state = s;
    return 0;
}

static inline int tu_store_teardown(void **state)
{
    struct tu_store *s = *state;
    tu_store_close(s);
    free(s);
    return 0;
}

#endif
