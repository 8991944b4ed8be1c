/*
 * test_memcg.c - the OOM-kill count of the job's memory cgroup
 * (runtime/supervise/memcg.h), on planted cgroup trees: cgroup v2's
 * memory.events (unified, and hybrid under unified/), v1's
 * memory.oom_control, and nothing readable (nothing guessed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "memcg.h"
#include "testutil.h"

static const char EVENTS[] = "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n";

static void plant(const char *root, const char *dir, const char *file, const char *text)
{
    char d[4096];
    snprintf(d, sizeof(d), "%s/%s", root, dir);
    assert_int_equal(sr_mkdirs(d, 0755), 0);
    tu_write_text(d, file, text);
}

static void counts_are_read_by_key(void **state)
{
    (void)state;
    uint64_t n = 0;
    assert_int_equal(sr_memcg_count(EVENTS, "oom_kill", &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(sr_memcg_count(EVENTS, "oom", &n), 0);
    assert_int_equal(n, 2); /* "oom" is not "oom_kill" nor "oom_group_kill" */
    assert_int_equal(sr_memcg_count("oom_kill_disable 0\nunder_oom 0\noom_kill 7", "oom_kill", &n),
                     0);
    assert_int_equal(n, 7);
    assert_int_equal(sr_memcg_count("oom_kill_disable 0\n", "oom_kill", &n), -ENOENT);
    assert_int_equal(sr_memcg_count("oom_kill x\n", "oom_kill", &n), -EBADMSG);
}

/* v2 unified: "0::/a/b" -> root/a/b/memory.events; a rise is an OOM kill. */
static void v2_memory_events_rise(void **state)
{
    (void)state;
    char *root = tu_scratch("memcg-v2");
    plant(root, "a/b", "memory.events", EVENTS);
    struct sr_memcg m;
    assert_int_equal(sr_memcg_open_text(&m, root, "0::/a/b\n"), 0);
    assert_non_null(strstr(m.path, "/a/b/memory.events"));
    assert_int_equal(m.start, 1);
    assert_int_equal(sr_memcg_oom_rose(&m), 0);
    plant(root, "a/b", "memory.events", "oom 3\noom_kill 2\n");
    assert_int_equal(sr_memcg_oom_rose(&m), 1);
    /* the cgroup went away meanwhile: not known */
    char p[4200];
    snprintf(p, sizeof(p), "%s/a/b/memory.events", root);
    assert_int_equal(unlink(p), 0);
    assert_true(sr_memcg_oom_rose(&m) < 0);
    assert_int_equal(sr_rmtree(root), 0);
    free(root);
}

/* hybrid: v2 at unified/ without memory, the memory controller in v1. */
static void hybrid_falls_back_to_v1(void **state)
{
    (void)state;
    char *root = tu_scratch("memcg-v1");
    plant(root, "unified", "cgroup.procs", "");
    plant(root, "memory/job", "memory.oom_control",
          "oom_kill_disable 0\nunder_oom 0\noom_kill 4\n");
    struct sr_memcg m;
    const char *proc = "9:name=systemd:/\n4:memory:/job\n3:cpu,cpuacct:/\n0::/\n";
    assert_int_equal(sr_memcg_open_text(&m, root, proc), 0);
    assert_non_null(strstr(m.path, "/memory/job/memory.oom_control"));
    assert_int_equal(m.start, 4);
    plant(root, "memory/job", "memory.oom_control",
          "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n");
    assert_int_equal(sr_memcg_oom_rose(&m), 1);
    /* a v2 hybrid with memory.events under unified/ is preferred */
    plant(root, "unified/job", "memory.events", EVENTS);
    assert_int_equal(sr_memcg_open_text(&m, root, "4:memory:/job\n0::/job\n"), 0);
    assert_non_null(strstr(m.path, "/unified/job/memory.events"));
    assert_int_equal(sr_rmtree(root), 0);
    free(root);
}

/* Nothing readable, or a path that climbs out: no count, nothing guessed. */
static void nothing_readable_is_unknown(void **state)
{
    (void)state;
    char *root = tu_scratch("memcg-none");
    plant(root, "x", "memory.events", EVENTS);
    struct sr_memcg m;
    assert_int_equal(sr_memcg_open_text(&m, root, "0::/y\n"), -ENOENT);
    assert_string_equal(m.path, "");
    assert_true(sr_memcg_oom_rose(&m) < 0);
    assert_int_equal(sr_memcg_open_text(&m, root, "0::/y/../x\n"), -ENOENT);
    assert_int_equal(sr_memcg_open_text(&m, root, "garbage"), -ENOENT);
    assert_int_equal(sr_memcg_open_text(&m, root, ""), -ENOENT);
    assert_int_equal(sr_memcg_open(&m, root, 0x7ffffff0), -ENOENT); /* no such pid */
    assert_int_equal(sr_rmtree(root), 0);
    free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counts_are_read_by_key),
        cmocka_unit_test(v2_memory_events_rise),
        cmocka_unit_test(hybrid_falls_back_to_v1),
        cmocka_unit_test(nothing_readable_is_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
