/*
 * test_nodes.c - which node of a multi-node run a wrapper is
 * (runtime/cmd/nodes.h): flags win, then the launcher's variables; bad
 * values are refused with a message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nodes.h"

static const char *const vars[] = {"SLURM_STEP_NUM_TASKS",
                                   "SLURM_PROCID",
                                   "AWS_BATCH_JOB_NUM_NODES",
                                   "AWS_BATCH_JOB_NODE_INDEX",
                                   "SKYPILOT_NUM_NODES",
                                   "SKYPILOT_NODE_RANK",
                                   "MY_WORLD",
                                   NULL};

static int clean(void **state)
{
    (void)state;
    for (int i = 0; vars[i]; i++)
        unsetenv(vars[i]);
    return 0;
}

static void single_node_by_default(void **state)
{
    (void)state;
    struct sr_nodes n;
    assert_int_equal(sr_nodes_resolve(NULL, NULL, &n), 0);
    assert_int_equal(n.nodes, 1);
    assert_int_equal(n.rank, 0);
}

static void flags_and_env_templates(void **state)
{
    (void)state;
    struct sr_nodes n;
    assert_int_equal(sr_nodes_resolve("4", "3", &n), 0);
    assert_int_equal(n.nodes, 4);
    assert_int_equal(n.rank, 3);
    setenv("MY_WORLD", "8", 1);
    assert_int_equal(sr_nodes_resolve("{env:MY_WORLD}", "7", &n), 0);
    assert_int_equal(n.nodes, 8);
    setenv("SLURM_STEP_NUM_TASKS", "2", 1); /* flags win over the launcher */
    setenv("SLURM_PROCID", "1", 1);
    assert_int_equal(sr_nodes_resolve("3", "0", &n), 0);
    assert_int_equal(n.nodes, 3);
}

static void bad_values_are_refused(void **state)
{
    (void)state;
    struct sr_nodes n;
    assert_int_equal(sr_nodes_resolve("4", "4", &n), -EINVAL);
    assert_non_null(strstr(sr_strerror(-EINVAL), "--node-rank"));
    assert_int_equal(sr_nodes_resolve("0", "0", &n), -EINVAL);
    assert_int_equal(sr_nodes_resolve("257", "0", &n), -EINVAL);
    assert_int_equal(sr_nodes_resolve("2x", "0", &n), -EINVAL);
    assert_int_equal(sr_nodes_resolve("4", NULL, &n), -EINVAL);
    assert_non_null(strstr(sr_strerror(-EINVAL), "go together"));
    assert_int_equal(sr_nodes_resolve("{env:NOPE_NOT_SET}", "0", &n), -EINVAL);
    assert_non_null(strstr(sr_strerror(-EINVAL), "NOPE_NOT_SET is not set"));
}

static void launchers_say_which_node(void **state)
{
    (void)state;
    struct sr_nodes n;
    setenv("SLURM_STEP_NUM_TASKS", "2", 1);
    setenv("SLURM_PROCID", "1", 1);
    assert_int_equal(sr_nodes_resolve(NULL, NULL, &n), 0);
    assert_int_equal(n.nodes, 2);
    assert_int_equal(n.rank, 1);
    assert_string_equal(n.from, "slurm");
    clean(NULL);
    setenv("AWS_BATCH_JOB_NUM_NODES", "3", 1);
    setenv("AWS_BATCH_JOB_NODE_INDEX", "2", 1);
    assert_int_equal(sr_nodes_resolve(NULL, NULL, &n), 0);
    assert_int_equal(n.nodes, 3);
    assert_string_equal(n.from, "aws-batch");
    clean(NULL);
    setenv("SKYPILOT_NUM_NODES", "2", 1);
    setenv("SKYPILOT_NODE_RANK", "5", 1);
    assert_int_equal(sr_nodes_resolve(NULL, NULL, &n), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(single_node_by_default, clean),
        cmocka_unit_test_setup(flags_and_env_templates, clean),
        cmocka_unit_test_setup(bad_values_are_refused, clean),
        cmocka_unit_test_setup(launchers_say_which_node, clean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
