/*
 * test_runid.c - run ids (runtime/cmd/runid.h): the default "<name>-<hash>[-<index>]"
 * and --run-id templates with their placeholders and errors.
 *
 * The scheduler variables are cleared before and after every test so that
 * the environment the suite runs in (a SLURM array, say) cannot leak in.
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

#include "log.h"
#include "runid.h"

static const char *const sched_vars[] = {
    "SLURM_JOB_ID",         "SLURM_ARRAY_JOB_ID",        "SLURM_ARRAY_TASK_ID",
    "JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX", "SPOTRUN_TEST_RUNID_VAR",
};

static int clear_env(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(sched_vars) / sizeof(sched_vars[0]); i++)
        unsetenv(sched_vars[i]);
    return 0;
}

#define CWD "/home/user/exp"

static char *const train_argv[] = {"python3", "train.py", "--lr", "0.1", NULL};

/* Expands tmpl for argv/cwd and asserts success; returns a static buffer. */
static const char *expand_ok(const char *tmpl, char *const argv[], const char *cwd)
{
    static char out[256];
    sr_err_clear();
    const int rc = sr_runid_expand(tmpl, argv, cwd, out, sizeof(out));
    if (rc != 0)
        fail_msg("sr_runid_expand(\"%s\") = %d: %s", tmpl ? tmpl : "(null)", rc, sr_strerror(rc));
    return out;
}

/* Expands tmpl, asserts -EINVAL and that the message contains want. */
static void expand_fails(const char *tmpl, char *const argv[], const char *want)
{
    char out[256];
    sr_err_clear();
    const int rc = sr_runid_expand(tmpl, argv, CWD, out, sizeof(out));
    assert_int_equal(rc, -EINVAL);
    const char *msg = sr_strerror(rc);
    if (!strstr(msg, want))
        fail_msg("message \"%s\" does not mention \"%s\"", msg, want);
}

static int is_hex8(const char *s)
{
    if (strlen(s) != 8)
        return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return 0;
    return 1;
}

/* ---- default id ---- */

static void test_default_is_name_dash_eight_hex_digits(void **state)
{
    (void)state;
    const char *id = expand_ok(NULL, train_argv, CWD);
    assert_true(strncmp(id, "train-", 6) == 0);
    assert_true(is_hex8(id + 6));
}

static void test_empty_template_means_default(void **state)
{
    (void)state;
    char a[256];
    snprintf(a, sizeof(a), "%s", expand_ok(NULL, train_argv, CWD));
    assert_string_equal(expand_ok("", train_argv, CWD), a);
}

static void test_default_is_stable_for_same_command_and_cwd(void **state)
{
    (void)state;
    char *const again[] = {"python3", "train.py", "--lr", "0.1", NULL};
    char a[256];
    snprintf(a, sizeof(a), "%s", expand_ok(NULL, train_argv, CWD));
    assert_string_equal(expand_ok(NULL, again, CWD), a);
}

static void test_default_differs_for_different_args(void **state)
{
    (void)state;
    char *const other[] = {"python3", "train.py", "--lr", "0.2", NULL};
    char a[256];
    snprintf(a, sizeof(a), "%s", expand_ok(NULL, train_argv, CWD));
    assert_string_not_equal(expand_ok(NULL, other, CWD), a);
}

static void test_default_differs_when_args_are_split_differently(void **state)
{
    (void)state;
    char *const one[] = {"prog", "ab", "c", NULL};
    char *const two[] = {"prog", "a", "bc", NULL};
    char a[256];
    snprintf(a, sizeof(a), "%s", expand_ok(NULL, one, CWD));
    assert_string_not_equal(expand_ok(NULL, two, CWD), a);
}

static void test_default_differs_for_different_cwd(void **state)
{
    (void)state;
    char a[256];
    snprintf(a, sizeof(a), "%s", expand_ok(NULL, train_argv, CWD));
    assert_string_not_equal(expand_ok(NULL, train_argv, "/home/user/exp2"), a);
}

static void test_name_is_script_for_interpreter(void **state)
{
    (void)state;
    char *const argv[] = {"python3", "train.py", NULL};
    assert_true(strncmp(expand_ok(NULL, argv, CWD), "train-", 6) == 0);
}

static void test_name_skips_interpreter_options_and_script_directory(void **state)
{
    (void)state;
    char *const argv[] = {"/usr/bin/python3", "-u", "scripts/finetune.py", "--epochs", "3", NULL};
    assert_true(strncmp(expand_ok(NULL, argv, CWD), "finetune-", 9) == 0);
}

static void test_name_is_script_for_versioned_python(void **state)
{
    (void)state;
    char *const argv[] = {"python3.11", "eval.py", NULL};
    assert_true(strncmp(expand_ok(NULL, argv, CWD), "eval-", 5) == 0);
}

static void test_name_is_program_basename_otherwise(void **state)
{
    (void)state;
    char *const argv[] = {"/opt/x/my_trainer", "--config", "a.yaml", NULL};
    assert_true(strncmp(expand_ok(NULL, argv, CWD), "my_trainer-", 11) == 0);
}

static void test_name_replaces_characters_not_allowed_in_run_ids(void **state)
{
    (void)state;
    char *const argv[] = {"/opt/my trainer+v2", NULL};
    assert_true(strncmp(expand_ok(NULL, argv, CWD), "my_trainer_v2-", 14) == 0);
}

static void test_default_appends_slurm_array_task_id(void **state)
{
    (void)state;
    char plain[256], want[300];
    snprintf(plain, sizeof(plain), "%s", expand_ok(NULL, train_argv, CWD));
    setenv("SLURM_ARRAY_TASK_ID", "7", 1);
    snprintf(want, sizeof(want), "%s-7", plain);
    assert_string_equal(expand_ok(NULL, train_argv, CWD), want);
}

static void test_default_appends_job_completion_index(void **state)
{
    (void)state;
    char plain[256], want[300];
    snprintf(plain, sizeof(plain), "%s", expand_ok(NULL, train_argv, CWD));
    setenv("JOB_COMPLETION_INDEX", "12", 1);
    snprintf(want, sizeof(want), "%s-12", plain);
    assert_string_equal(expand_ok(NULL, train_argv, CWD), want);
}

static void test_default_appends_aws_batch_array_index(void **state)
{
    (void)state;
    char plain[256], want[300];
    snprintf(plain, sizeof(plain), "%s", expand_ok(NULL, train_argv, CWD));
    setenv("AWS_BATCH_JOB_ARRAY_INDEX", "3", 1);
    snprintf(want, sizeof(want), "%s-3", plain);
    assert_string_equal(expand_ok(NULL, train_argv, CWD), want);
}

static void test_slurm_index_wins_over_other_indexes(void **state)
{
    (void)state;
    setenv("SLURM_ARRAY_TASK_ID", "1", 1);
    setenv("JOB_COMPLETION_INDEX", "2", 1);
    setenv("AWS_BATCH_JOB_ARRAY_INDEX", "3", 1);
    assert_string_equal(expand_ok("t{index}", train_argv, CWD), "t1");
}

static void test_empty_index_variable_is_ignored(void **state)
{
    (void)state;
    setenv("SLURM_ARRAY_TASK_ID", "", 1);
    setenv("JOB_COMPLETION_INDEX", "4", 1);
    assert_string_equal(expand_ok("t{index}", train_argv, CWD), "t4");
}

/* ---- template placeholders ---- */

static void test_template_without_placeholders_is_used_verbatim(void **state)
{
    (void)state;
    assert_string_equal(expand_ok("my-run_1.v2", train_argv, CWD), "my-run_1.v2");
}

static void test_template_index(void **state)
{
    (void)state;
    setenv("JOB_COMPLETION_INDEX", "5", 1);
    assert_string_equal(expand_ok("sweep-{index}", train_argv, CWD), "sweep-5");
}

static void test_template_hash_matches_default_hash(void **state)
{
    (void)state;
    char def[256], want[300];
    snprintf(def, sizeof(def), "%s", expand_ok(NULL, train_argv, CWD));
    snprintf(want, sizeof(want), "x-%s", def + strlen("train-"));
    assert_string_equal(expand_ok("x-{hash}", train_argv, CWD), want);
}

static void test_template_name(void **state)
{
    (void)state;
    assert_string_equal(expand_ok("{name}-final", train_argv, CWD), "train-final");
}

static void test_template_slurm_job_id(void **state)
{
    (void)state;
    setenv("SLURM_JOB_ID", "424242", 1);
    assert_string_equal(expand_ok("j{slurm_job_id}", train_argv, CWD), "j424242");
}

static void test_template_slurm_array_job_id(void **state)
{
    (void)state;
    setenv("SLURM_ARRAY_JOB_ID", "1000", 1);
    assert_string_equal(expand_ok("a{slurm_array_job_id}", train_argv, CWD), "a1000");
}

static void test_template_slurm_array_task_id(void **state)
{
    (void)state;
    setenv("SLURM_ARRAY_TASK_ID", "9", 1);
    assert_string_equal(expand_ok("t{slurm_array_task_id}", train_argv, CWD), "t9");
}

static void test_template_job_completion_index(void **state)
{
    (void)state;
    setenv("JOB_COMPLETION_INDEX", "8", 1);
    assert_string_equal(expand_ok("k{job_completion_index}", train_argv, CWD), "k8");
}

static void test_template_aws_batch_job_array_index(void **state)
{
    (void)state;
    setenv("AWS_BATCH_JOB_ARRAY_INDEX", "6", 1);
    assert_string_equal(expand_ok("b{aws_batch_job_array_index}", train_argv, CWD), "b6");
}

static void test_template_env_variable(void **state)
{
    (void)state;
    setenv("SPOTRUN_TEST_RUNID_VAR", "lr0.1", 1);
    assert_string_equal(expand_ok("exp-{env:SPOTRUN_TEST_RUNID_VAR}", train_argv, CWD),
                        "exp-lr0.1");
}

static void test_template_several_placeholders(void **state)
{
    (void)state;
    setenv("SLURM_ARRAY_JOB_ID", "77", 1);
    setenv("SLURM_ARRAY_TASK_ID", "2", 1);
    assert_string_equal(expand_ok("{name}.{slurm_array_job_id}.{index}", train_argv, CWD),
                        "train.77.2");
}

/* ---- template errors ---- */

static void test_missing_slurm_variable_is_error_naming_it(void **state)
{
    (void)state;
    expand_fails("j{slurm_job_id}", train_argv, "SLURM_JOB_ID");
}

static void test_missing_env_variable_is_error_naming_it(void **state)
{
    (void)state;
    expand_fails("x-{env:SPOTRUN_TEST_RUNID_VAR}", train_argv,
                 "SPOTRUN_TEST_RUNID_VAR, which is not set");
}

static void test_empty_env_variable_is_error_naming_it(void **state)
{
    (void)state;
    setenv("SPOTRUN_TEST_RUNID_VAR", "", 1);
    expand_fails("x-{env:SPOTRUN_TEST_RUNID_VAR}", train_argv,
                 "SPOTRUN_TEST_RUNID_VAR, which is set but empty");
}

static void test_index_without_any_index_variable_is_error_naming_them(void **state)
{
    (void)state;
    expand_fails("sweep-{index}", train_argv, "SLURM_ARRAY_TASK_ID");
}

static void test_unknown_placeholder_is_error_naming_it(void **state)
{
    (void)state;
    expand_fails("x-{bogus}", train_argv, "bogus");
}

static void test_unbalanced_brace_is_error(void **state)
{
    (void)state;
    expand_fails("x-{name", train_argv, "unbalanced");
}

static void test_lone_closing_brace_is_invalid_run_id(void **state)
{
    (void)state;
    expand_fails("x-}", train_argv, "invalid run id");
}

static void test_env_value_with_slash_is_invalid_run_id(void **state)
{
    (void)state;
    setenv("SPOTRUN_TEST_RUNID_VAR", "a/b", 1);
    expand_fails("x-{env:SPOTRUN_TEST_RUNID_VAR}", train_argv, "invalid run id");
}

static void test_result_starting_with_dot_is_invalid(void **state)
{
    (void)state;
    expand_fails(".hidden", train_argv, "invalid run id");
}

static void test_result_over_128_characters_is_invalid(void **state)
{
    (void)state;
    char tmpl[140];
    memset(tmpl, 'a', 129);
    tmpl[129] = '\0';
    expand_fails(tmpl, train_argv, "invalid run id");
}

static void test_result_of_128_characters_is_accepted(void **state)
{
    (void)state;
    char tmpl[140];
    memset(tmpl, 'a', 128);
    tmpl[128] = '\0';
    assert_string_equal(expand_ok(tmpl, train_argv, CWD), tmpl);
}

static void test_result_too_long_for_output_buffer_is_error(void **state)
{
    (void)state;
    char out[8];
    sr_err_clear();
    const int rc = sr_runid_expand("{name}-{hash}", train_argv, CWD, out, sizeof(out));
    assert_int_equal(rc, -EINVAL);
    assert_non_null(strstr(sr_strerror(rc), "too long"));
}

/* A shell's -c script is looked into: `sh -c 'exec python3 train.py ...'`
 * names train, not the last path component of an argument. */
static void test_name_looks_into_a_shell_script(void **state)
{
    (void)state;
    static const struct {
        const char *script, *name;
    } cases[] = {
        {"exec python3 train.py --out_dir=out/ckpt --init_from=resume", "train-"},
        {"exec python3 train.py config/train_shakespeare_char.py", "train-"},
        {"A=1 env B=2 nohup python3 -u /src/x/train.py; echo done", "train-"},
        {"\"python3\" 'my train.py'", "my train"},
        {"./run.sh --fast", "run-"},
        {"", "job-"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *const argv[] = {"sh", "-c", (char *)cases[i].script, NULL};
        const char *id = expand_ok(NULL, argv, CWD);
        char want[64];
        snprintf(want, sizeof(want), "%s", cases[i].name);
        for (char *p = want; *p; p++)
            if (*p == ' ')
                *p = '_';
        if (strncmp(id, want, strlen(want)) != 0)
            fail_msg("sh -c \"%s\": run id %s, want %s...", cases[i].script, id, want);
    }
    char *const lc[] = {"/bin/bash", "-lc", "exec python3 train.py", NULL};
    assert_true(strncmp(expand_ok(NULL, lc, CWD), "train-", 6) == 0);
    char *const plain[] = {"sh", "./job-name.sh", NULL};
    assert_true(strncmp(expand_ok(NULL, plain, CWD), "job-name-", 9) == 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, clear_env, clear_env)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_default_is_name_dash_eight_hex_digits),
        T(test_empty_template_means_default),
        T(test_default_is_stable_for_same_command_and_cwd),
        T(test_default_differs_for_different_args),
        T(test_default_differs_when_args_are_split_differently),
        T(test_default_differs_for_different_cwd),
        T(test_name_is_script_for_interpreter),
        T(test_name_skips_interpreter_options_and_script_directory),
        T(test_name_is_script_for_versioned_python),
        T(test_name_is_program_basename_otherwise),
        T(test_name_looks_into_a_shell_script),
        T(test_name_replaces_characters_not_allowed_in_run_ids),
        T(test_default_appends_slurm_array_task_id),
        T(test_default_appends_job_completion_index),
        T(test_default_appends_aws_batch_array_index),
        T(test_slurm_index_wins_over_other_indexes),
        T(test_empty_index_variable_is_ignored),
        T(test_template_without_placeholders_is_used_verbatim),
        T(test_template_index),
        T(test_template_hash_matches_default_hash),
        T(test_template_name),
        T(test_template_slurm_job_id),
        T(test_template_slurm_array_job_id),
        T(test_template_slurm_array_task_id),
        T(test_template_job_completion_index),
        T(test_template_aws_batch_job_array_index),
        T(test_template_env_variable),
        T(test_template_several_placeholders),
        T(test_missing_slurm_variable_is_error_naming_it),
        T(test_missing_env_variable_is_error_naming_it),
        T(test_empty_env_variable_is_error_naming_it),
        T(test_index_without_any_index_variable_is_error_naming_them),
        T(test_unknown_placeholder_is_error_naming_it),
        T(test_unbalanced_brace_is_error),
        T(test_lone_closing_brace_is_invalid_run_id),
        T(test_env_value_with_slash_is_invalid_run_id),
        T(test_result_starting_with_dot_is_invalid),
        T(test_result_over_128_characters_is_invalid),
        T(test_result_of_128_characters_is_accepted),
        T(test_result_too_long_for_output_buffer_is_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
