/*
 * fuzz_store.c - libFuzzer target: a generator of hostile file-store trees.
 * The input is a small program that lays out one run in a fresh file store:
 * each object (manifests, data, LEASE, DONE, event logs) and each seq
 * directory becomes a regular file of fuzzed or templated bytes (numbers
 * picked from a table of extremes: 2^53 + 1, 2^63 - 1, 1e308...), a FIFO,
 * a directory, a socket, a deep directory chain, a symlink to a secret
 * outside the store, or a symlink to /dev/null. Then everything that reads
 * a store runs over it: list, restore (newest, with fallback), the lease,
 * the event history, next attempt, gc and clear.
 *
 * Never: a crash, a hang (libFuzzer's -timeout catches a blocking open of a
 * FIFO), a sanitizer report, a byte of the secret in any message, a change
 * outside the store and the restore target, an epoch, attempt or time
 * past its bound in what was accepted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "catalog.h"
#include "codec.h"
#include "events.h"
#include "fsutil.h"
#include "history.h"
#include "lease.h"
#include "log.h"
#include "store.h"

#define RUN "r"
#define SECRET "SECRET-7f3a9c"

static char base[64], store[128], target[128], outside[128], secret[160], good[160];
static char *good_data;
static size_t good_len;
static char good_sum[SR_CHECKSUM_LEN];
static uint64_t good_raw;

/* ---- reading the program ------------------------------------------------ */

struct prog {
    const uint8_t *p;
    size_t n;
};

static unsigned byte(struct prog *g)
{
    if (g->n == 0)
        return 0;
    g->n--;
    return *g->p++;
}

/* Up to max bytes of the input, as a slice. */
static const uint8_t *slice(struct prog *g, size_t max, size_t *len)
{
    size_t want = byte(g) % (max + 1);
    if (want > g->n)
        want = g->n;
    const uint8_t *s = g->p;
    g->p += want;
    g->n -= want;
    *len = want;
    return s;
}

static const char *const extremes[] = {"0",
                                       "1",
                                       "-1",
                                       "2",
                                       "4294967295",
                                       "4294967296",
                                       "999999",
                                       "1000000",
                                       "2147483648",
                                       "9007199254740992",
                                       "9007199254740993",
                                       "9223372036854775807",
                                       "-9223372036854775808",
                                       "1e308",
                                       "-1e308",
                                       "0.5",
                                       "1700000000000",
                                       "253402300799999",
                                       "253402300800000",
                                       "null",
                                       "\"x\"",
                                       "[]",
                                       "{}",
                                       "true"};

static const char *extreme(struct prog *g)
{
    return extremes[byte(g) % (sizeof(extremes) / sizeof(*extremes))];
}

/* ---- laying out objects ------------------------------------------------- */

static void put_bytes(const char *path, const void *buf, size_t len)
{
    /* What an earlier step made there (a FIFO, a link to the secret) is
     * left alone: never block on it, never write through it. */
    const int fd =
        open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    if (len && write(fd, buf, len) < 0) {
        /* a full disk only makes the object shorter */
    }
    close(fd);
}

static void deep_chain(const char *path, unsigned depth)
{
    if (mkdir(path, 0755) != 0)
        return;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (unsigned i = 0; fd >= 0 && i < depth; i++) {
        if (mkdirat(fd, "d", 0755) != 0)
            break;
        const int sub = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        close(fd);
        fd = sub;
    }
    if (fd >= 0)
        close(fd);
}

static void make_socket(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(a.sun_path))
        return;
    strcpy(a.sun_path, path);
    const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s >= 0) {
        (void)bind(s, (struct sockaddr *)&a, sizeof(a));
        close(s);
    }
}

/* Makes path a hostile non-file, or returns 0 to let the caller write one. */
static int hostile(struct prog *g, const char *path)
{
    switch (byte(g) % 12) {
    case 0:
        return mkfifo(path, 0644), 1;
    case 1:
        deep_chain(path, 1 + byte(g) * 3);
        return 1;
    case 2:
        return symlink(secret, path), 1;
    case 3:
        return symlink("/dev/null", path), 1;
    case 4:
        make_socket(path);
        return 1;
    case 5:
        return symlink(outside, path), 1;
    case 6:
        return 1; /* missing */
    default:
        return 0;
    }
}

static void manifest(struct prog *g, const char *path, unsigned seq, int good_one)
{
    if (hostile(g, path))
        return;
    if (byte(g) % 4 == 0) { /* raw bytes */
        size_t len;
        const uint8_t *s = slice(g, 200, &len);
        put_bytes(path, s, len);
        return;
    }
    /* Usually the right seq and sizes, so that restore gets to extraction;
     * otherwise (and for the other numbers) an extreme. */
    char seqs[24], raws[24], stored[24];
    snprintf(seqs, sizeof(seqs), "%u", seq);
    snprintf(raws, sizeof(raws), "%llu", (unsigned long long)good_raw);
    snprintf(stored, sizeof(stored), "%zu", good_len);
    const char *v_seq = byte(g) % 3 ? seqs : extreme(g);
    const char *v_step = extreme(g);
    const char *v_created = byte(g) % 2 ? "1700000000" : extreme(g);
    const char *v_attempt = byte(g) % 2 ? "0" : extreme(g);
    const char *v_raw = good_one || byte(g) % 2 ? raws : extreme(g);
    const char *v_stored = good_one || byte(g) % 2 ? stored : extreme(g);
    const char *v_stage = byte(g) % 2 ? "0.5" : extreme(g);
    const char *v_epoch = byte(g) % 2 ? "1" : extreme(g);
    char buf[2048];
    const int n =
        snprintf(buf, sizeof(buf),
                 "{\"format\":1,\"run_id\":\"" RUN "\",\"seq\":%s,\"step\":%s,\"created\":%s,"
                 "\"host\":\"h\",\"attempt\":%s,\"raw_bytes\":%s,\"stored_bytes\":%s,\"files\":1,"
                 "\"frames\":1,\"frame_size\":4194304,\"level\":3,\"codec\":\"tar+zstd-seekable\","
                 "\"checksum\":\"%s\",\"stage_seconds\":%s,\"epoch\":%s}",
                 v_seq, v_step, v_created, v_attempt, v_raw, v_stored, good_sum, v_stage, v_epoch);
    put_bytes(path, buf, (size_t)n);
}

static void data_object(struct prog *g, const char *path)
{
    if (hostile(g, path))
        return;
    if (byte(g) % 2) {
        put_bytes(path, good_data, good_len);
    } else {
        size_t len;
        const uint8_t *s = slice(g, 255, &len);
        put_bytes(path, s, len);
    }
}

static void lease(struct prog *g, const char *path)
{
    if (hostile(g, path))
        return;
    const char *pid = extreme(g), *epoch = extreme(g), *expires = extreme(g), *ttl = extreme(g);
    char buf[512];
    const int n = snprintf(buf, sizeof(buf),
                           "{\"format\":1,\"owner\":\"o\",\"host\":\"h\",\"pid\":%s,\"epoch\":%s,"
                           "\"acquired\":0,\"renewed\":0,\"expires\":%s,\"ttl\":%s,"
                           "\"released\":true}",
                           pid, epoch, expires, ttl);
    put_bytes(path, buf, (size_t)n);
}

static void event_log(struct prog *g, const char *dir)
{
    static const char *const names[] = {"000000.jsonl",     "000001.jsonl", "999999.jsonl",
                                        "4294967295.jsonl", "-1.jsonl",     "00000000001.jsonl"};
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, names[byte(g) % 6]);
    if (hostile(g, path))
        return;
    char buf[4096];
    size_t o = 0;
    static const char *const types[] = {"start", "notice",  "staged", "persisted",
                                        "exit",  "restore", "done",   "lease_lost"};
    for (unsigned lines = byte(g) % 6; lines-- > 0 && o < sizeof(buf) - 512;) {
        const char *type = types[byte(g) % 8];
        const char *v[7];
        for (int i = 0; i < 7; i++)
            v[i] = extreme(g);
        o += (size_t)snprintf(buf + o, sizeof(buf) - o,
                              "{\"event\":\"%s\",\"unix_ms\":%s,\"attempt\":%s,\"seq\":%s,"
                              "\"seconds\":%s,\"ms_left\":%s,\"code\":%s,\"raw_bytes\":%s}\n",
                              type, v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
    }
    put_bytes(path, buf, o);
}

/* ---- the run ------------------------------------------------------------- */

static void check_outside(void)
{
    char *buf = NULL;
    size_t len = 0;
    if (sr_read_file(secret, 1024, &buf, &len) != 0 || strcmp(buf, SECRET "\n") != 0)
        abort(); /* something wrote or deleted outside the store */
    free(buf);
    struct stat sb;
    if (stat(good, &sb) != 0)
        abort();
}

static void check_message(void)
{
    if (strstr(sr_strerror(-EIO), SECRET))
        abort(); /* a secret's bytes reached a message */
}

static void exercise(void)
{
    struct sr_store *st = NULL;
    if (sr_store_open(store, &st) != 0)
        return;
    struct sr_ckpt_list l;
    if (sr_ckpt_list(st, RUN, &l) == 0) {
        for (size_t i = 0; i < l.n; i++)
            if (l.v[i].epoch > SR_EPOCH_MAX)
                abort();
        sr_ckpt_list_free(&l);
    }
    check_message();
    struct sr_manifest m;
    (void)sr_ckpt_restore(st, RUN, 0, target, 1, &m);
    check_message();
    (void)sr_rmtree(target);
    struct sr_lease_info li;
    if (sr_lease_read(st, RUN, &li) == 0 && li.epoch > SR_EPOCH_MAX)
        abort();
    check_message();
    (void)sr_ckpt_is_done(st, RUN);
    uint32_t next = 0;
    if (sr_events_next_attempt(st, RUN, &next) == 0 && next > SR_ATTEMPT_MAX)
        abort();
    struct sr_history h;
    sr_hist_init(&h);
    if (sr_hist_load(st, RUN, &h) == 0) {
        if (h.first_ms < 0 || h.last_ms > SR_TIME_MAX_MS || h.wall_ms < 0 || h.lost_ms < 0)
            abort();
        for (size_t i = 0; i < h.n_att; i++)
            if (h.att[i].attempt > SR_ATTEMPT_MAX)
                abort();
    }
    sr_hist_free(&h);
    check_message();
    struct sr_strlist runs;
    if (sr_ckpt_list_runs(st, &runs) == 0)
        sr_strlist_free(&runs);
    unsigned deleted = 0;
    (void)sr_ckpt_gc(st, RUN, 1, &deleted);
    (void)sr_ckpt_clear_run(st, RUN);
    sr_store_close(st);
    check_outside();
}

static void cleanup(void)
{
    (void)sr_rmtree(base);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    sr_verbosity = SR_QUIET; /* warnings about bad objects are expected */
    /* tmpfs where there is one: every store write fsyncs. */
    snprintf(base, sizeof(base), "%s/frz.XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(base))
        abort();
    atexit(cleanup);
    snprintf(store, sizeof(store), "%s/s", base);
    snprintf(target, sizeof(target), "%s/t", base);
    snprintf(outside, sizeof(outside), "%s/o", base);
    snprintf(secret, sizeof(secret), "%s/secret", outside);
    snprintf(good, sizeof(good), "%s/g", base);
    mkdir(outside, 0755);
    put_bytes(secret, SECRET "\n", strlen(SECRET) + 1);
    /* A good archive: a restore of a well-formed object gets to extraction. */
    char src[160], arc[200], f[200];
    snprintf(src, sizeof(src), "%s/src", base);
    snprintf(arc, sizeof(arc), "%s/g.tar.zst", base);
    snprintf(f, sizeof(f), "%s/state", src);
    mkdir(src, 0755);
    put_bytes(f, "state\n", 6);
    mkdir(good, 0755);
    struct sr_pack_stats ps;
    const struct sr_pack_opts po = {.threads = 1};
    if (sr_pack_dir_to_file(src, arc, &po, &ps) != 0 ||
        sr_read_file(arc, 1 << 20, &good_data, &good_len) != 0)
        abort();
    memcpy(good_sum, ps.checksum, sizeof(good_sum));
    good_raw = ps.raw_bytes;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct prog g = {data, size};
    char path[256], dir[256];
    (void)sr_rmtree(store);
    snprintf(path, sizeof(path), "%s/" RUN "/ckpt", store);
    sr_mkdirs(path, 0755);
    for (unsigned seq = 1; seq <= 3 && g.n; seq++) {
        snprintf(dir, sizeof(dir), "%s/" RUN "/ckpt/%010u", store, seq);
        if (byte(&g) % 8 == 0) { /* the seq directory itself is hostile */
            (void)hostile(&g, dir);
            continue;
        }
        mkdir(dir, 0755);
        snprintf(path, sizeof(path), "%s/data.tar.zst", dir);
        data_object(&g, path);
        snprintf(path, sizeof(path), "%s/MANIFEST.json", dir);
        manifest(&g, path, seq, seq == 1);
    }
    snprintf(path, sizeof(path), "%s/" RUN "/LEASE", store);
    lease(&g, path);
    snprintf(path, sizeof(path), "%s/" RUN "/DONE", store);
    if (byte(&g) % 2)
        (void)hostile(&g, path);
    snprintf(dir, sizeof(dir), "%s/" RUN "/events", store);
    sr_mkdirs(dir, 0755);
    for (unsigned i = byte(&g) % 4; i-- > 0;)
        event_log(&g, dir);
    exercise();
    sr_err_clear();
    return 0;
}
