/*
 * testutil.h - helpers shared by the cmocka unit tests (header-only: each
 * test is its own executable). Include after <cmocka.h>.
 */
#ifndef SPOTRUN_TESTUTIL_H
#define SPOTRUN_TESTUTIL_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"

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

#endif
