/*
 * commitjob.c - a C job for tests/e2e/t0086-commit-snapshot.sh: commits
 * through libspotrun's spotrun_commit() and waits with
 * spotrun_wait_durable(). Not a spotrun command.
 *
 *   commitjob rename|inplace
 *
 * Writes a.bin and b.bin (replaced by a rename: v1), commits step 1 and
 * waits until it is durable; writes v2 the same way and commits step 2;
 * records the metric commit2_returned (an event: the test orders it with
 * the commit's "staged" one, held until the job creates $TRASH/go: the
 * wrapper runs with SPOTRUN_TEST_HOLD_PACK=$TRASH/go); then changes both files (rename:
 * replaced by v3; inplace: b.bin rewritten in place with v3), releases the
 * pack (creates $TRASH/go) and writes spotrun_wait_durable()'s result for
 * commit 2 to $TRASH/wait2.rc.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spotrun.h"

#define SIZE (8u << 20)

static char buf[SIZE];

static void die(const char *what)
{
    fprintf(stderr, "commitjob: %s: %s\n", what, strerror(errno));
    exit(9);
}

/* name filled with byte c (first bytes: a stamp), written in place or via
 * a temporary and a rename. */
static void put(const char *dir, const char *name, char c, int in_place)
{
    char path[4200], tmp[4300];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    memset(buf, c, sizeof(buf));
    snprintf(buf, 16, "%s-%c", name, c);
    const int fd = open(in_place ? path : tmp, O_WRONLY | O_CREAT | (in_place ? 0 : O_TRUNC), 0644);
    if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || close(fd) != 0)
        die(name);
    if (!in_place && rename(tmp, path) != 0)
        die("rename");
}

static void touch(const char *trash, const char *name)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/%s", trash, name);
    const int fd = open(p, O_WRONLY | O_CREAT, 0644);
    if (fd < 0)
        die(p);
    close(fd);
}

int main(int argc, char **argv)
{
    const char *dir = getenv("SPOTRUN_CKPT_DIR"), *trash = getenv("TRASH");
    if (argc != 2 || !dir || !trash)
        return 2;
    const int in_place = strcmp(argv[1], "inplace") == 0;
    put(dir, "a.bin", '1', 0);
    put(dir, "b.bin", '1', 0);
    int rc = spotrun_commit(1);
    touch(trash, "go"); /* commit 1 is not held */
    if (rc != 0 || (rc = spotrun_wait_durable(0, 120000)) != 0) {
        fprintf(stderr, "commitjob: commit 1: %d\n", rc);
        return 3;
    }
    put(dir, "a.bin", '2', 0);
    put(dir, "b.bin", '2', 0);
    if ((rc = spotrun_commit(2)) != 0) {
        fprintf(stderr, "commitjob: commit 2: %d\n", rc);
        return 4;
    }
    if ((rc = spotrun_metric("commit2_returned", 1, 2)) != 0) {
        fprintf(stderr, "commitjob: metric: %d\n", rc);
        return 5;
    }
    put(dir, "a.bin", '3', in_place);
    put(dir, "b.bin", '3', in_place);
    touch(trash, "go");
    rc = spotrun_wait_durable(0, 120000);
    char p[4200];
    snprintf(p, sizeof(p), "%s/wait2.rc", trash);
    FILE *f = fopen(p, "w");
    if (!f)
        die(p);
    fprintf(f, "%d\n", rc);
    fclose(f);
    touch(trash, "go"); /* the commit of the directory as it ends, if any */
    return 0;
}
