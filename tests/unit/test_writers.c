/*
 * test_writers.c - which file of a checkpoint directory a process below
 * this one holds open for writing (runtime/supervise/writers.h): a file
 * open for writing in place counts, wherever it lies under the directory;
 * one open for reading or for appending (a log), one left out by
 * --ckpt-exclude, and one outside the directory do not; and how a process
 * that held one ended (exited, or killed by a signal) while it is a
 * zombie.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "writers.h"

/* A child that opens dir/rel with flags, says so on a pipe and waits to
 * be killed. */
static pid_t child_holding(const char *dir, const char *rel, int flags)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, rel);
        const int fd = open(path, flags | O_CREAT, 0600);
        (void)!write(p[1], fd >= 0 ? "y" : "n", 1);
        for (;;)
            pause();
    }
    close(p[1]);
    char c = 0;
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    assert_int_equal(c, 'y');
    return pid;
}

static void stop_child(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static char *ckpt_dir(const char *name)
{
    char *dir = tu_scratch(name);
    char sub[4096];
    snprintf(sub, sizeof(sub), "%s/opt", dir);
    mkdir(sub, 0700);
    return dir;
}

static void test_a_file_written_in_place_is_found(void **state)
{
    (void)state;
    char *dir = ckpt_dir("writers-inplace");
    const pid_t pid = child_holding(dir, "ckpt.pt", O_WRONLY | O_TRUNC);
    struct sr_writer w;
    assert_int_equal(sr_writers_find(getpid(), dir, NULL, 0, &w), 1);
    assert_int_equal(w.pid, pid);
    assert_string_equal(w.file, "ckpt.pt");
    stop_child(pid);
    assert_int_equal(sr_writers_find(getpid(), dir, NULL, 0, &w), 0);
    assert_int_equal(w.pid, 0);
    free(dir);
}

static void test_a_file_in_a_subdirectory_read_write_is_found(void **state)
{
    (void)state;
    char *dir = ckpt_dir("writers-sub");
    const pid_t pid = child_holding(dir, "opt/state.bin", O_RDWR);
    struct sr_writer w;
    assert_int_equal(sr_writers_find(getpid(), dir, NULL, 0, &w), 1);
    assert_string_equal(w.file, "opt/state.bin");
    stop_child(pid);
    free(dir);
}

static void test_reading_and_appending_are_not_writing(void **state)
{
    (void)state;
    char *dir = ckpt_dir("writers-read");
    tu_write_text(dir, "ckpt.pt", "whole");
    const pid_t reader = child_holding(dir, "ckpt.pt", O_RDONLY);
    const pid_t logger = child_holding(dir, "train.log", O_WRONLY | O_APPEND);
    struct sr_writer w;
    assert_int_equal(sr_writers_find(getpid(), dir, NULL, 0, &w), 0);
    stop_child(reader);
    stop_child(logger);
    free(dir);
}

static void test_an_excluded_path_and_a_path_outside_do_not_count(void **state)
{
    (void)state;
    char *dir = ckpt_dir("writers-excl");
    char *outside = tu_scratch("writers-excl-outside");
    const pid_t in_excluded = child_holding(dir, "opt/events.1", O_WRONLY);
    const pid_t out = child_holding(outside, "ckpt.pt", O_WRONLY);
    const char *const pats[] = {"opt"};
    struct sr_writer w;
    assert_int_equal(sr_writers_find(getpid(), dir, pats, 1, &w), 0);
    assert_int_equal(sr_writers_find(getpid(), dir, NULL, 0, &w), 1);
    assert_string_equal(w.file, "opt/events.1");
    stop_child(in_excluded);
    stop_child(out);
    free(dir);
    free(outside);
}

static void test_a_zombie_tells_how_it_ended(void **state)
{
    (void)state;
    const pid_t exited = fork();
    if (exited == 0)
        _exit(1);
    const pid_t killed = fork();
    if (killed == 0)
        for (;;)
            pause();
    assert_int_equal(sr_writers_fate(killed), SR_FATE_RUNNING);
    kill(killed, SIGKILL);
    siginfo_t si;
    /* zombies, not reaped: WNOWAIT */
    assert_int_equal(waitid(P_PID, (id_t)exited, &si, WEXITED | WNOWAIT), 0);
    assert_int_equal(waitid(P_PID, (id_t)killed, &si, WEXITED | WNOWAIT), 0);
    assert_int_equal(sr_writers_fate(exited), SR_FATE_EXITED);
    assert_int_equal(sr_writers_fate(killed), SR_FATE_KILLED);
    waitpid(exited, NULL, 0);
    waitpid(killed, NULL, 0);
    assert_int_equal(sr_writers_fate(killed), SR_FATE_GONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_file_written_in_place_is_found),
        cmocka_unit_test(test_a_file_in_a_subdirectory_read_write_is_found),
        cmocka_unit_test(test_reading_and_appending_are_not_writing),
        cmocka_unit_test(test_an_excluded_path_and_a_path_outside_do_not_count),
        cmocka_unit_test(test_a_zombie_tells_how_it_ended),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
