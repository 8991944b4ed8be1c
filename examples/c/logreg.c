/*
 * logreg.c - a C training job that checkpoints through the `spotrun` CLI.
 *
 * Logistic regression by minibatch SGD on synthetic data: 20000 samples of
 * 32 features drawn from a fixed-seed xorshift64* generator, labelled by a
 * hidden true weight vector. It shows the whole job contract in plain C:
 *
 *   - resume: when SPOTRUN_RESUMED=1, load $SPOTRUN_CKPT_DIR/state.bin
 *     (weights, step and the minibatch PRNG state) and carry on from there;
 *   - save: write state.bin durably (temp file, fsync, rename, fsync dir),
 *     then run `$SPOTRUN_BIN commit --step N` and check its exit status;
 *   - request: a sigaction handler for $SPOTRUN_SIGNAL only sets a flag;
 *     the loop checkpoints between steps and keeps training (the wrapper
 *     decides whether to stop the job).
 *
 * Everything that affects the result (weights, step, PRNG state) is in the
 * checkpoint, so an interrupted and resumed run ends bit-identical to an
 * uninterrupted one. Without SPOTRUN_CKPT_DIR it trains without saving.
 *
 * state.bin, all integers little-endian:
 *   0  char[8] magic "SPOTLRG\0"     24 u64 PRNG state
 *   8  u32 format version (1)        32 u64 XXH64 of bytes [0,32) + weights
 *   12 u32 number of weights         40 weights, n little-endian doubles
 *   16 u64 step
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define N_SAMPLES 20000
#define N_FEATURES 32
#define N_WEIGHTS (N_FEATURES + 1) /* the last one is the bias */
#define BATCH 64
#define LEARNING_RATE 0.2
#define DATA_SEED 0x5EED0DA7AULL
#define TRAIN_SEED 0x7A1B5EEDULL

#define CKPT_MAGIC "SPOTLRG"
#define CKPT_VERSION 1u
#define CKPT_HEADER 40
#define CKPT_NAME "state.bin"

struct options {
    long steps;
    long save_every;
    long pace_ms;
    long crash_at;
    const char *out;
};

struct model {
    double w[N_WEIGHTS];
    uint64_t step;
    uint64_t rng; /* minibatch sampling state */
};

static volatile sig_atomic_t checkpoint_wanted;

static void on_checkpoint_signal(int sig)
{
    (void)sig;
    checkpoint_wanted = 1;
}

/* ---- PRNG and data ------------------------------------------------------ */

static uint64_t xorshift64s(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [0, 1) with 53 random bits. */
static double uniform01(uint64_t *s)
{
    return (double)(xorshift64s(s) >> 11) * 0x1.0p-53;
}

static double sigmoid(double z)
{
    return 1.0 / (1.0 + exp(-z));
}

static double dot(const double *w, const double *x)
{
    double z = w[N_FEATURES];
    for (int j = 0; j < N_FEATURES; j++)
        z += w[j] * x[j];
    return z;
}

/* Fills x (N_SAMPLES x N_FEATURES) and y with a noisy logistic model of a
 * hidden weight vector; the same on every start. */
static void make_data(double *x, double *y)
{
    uint64_t s = DATA_SEED;
    double truth[N_WEIGHTS];
    for (int j = 0; j < N_WEIGHTS; j++)
        truth[j] = 4.0 * uniform01(&s) - 2.0;
    for (int i = 0; i < N_SAMPLES; i++) {
        double *xi = x + (size_t)i * N_FEATURES;
        for (int j = 0; j < N_FEATURES; j++)
            xi[j] = 2.0 * uniform01(&s) - 1.0;
        y[i] = uniform01(&s) < sigmoid(dot(truth, xi)) ? 1.0 : 0.0;
    }
}

/* ---- training ----------------------------------------------------------- */

static void sgd_step(struct model *m, const double *x, const double *y)
{
    double grad[N_WEIGHTS] = {0};
    for (int b = 0; b < BATCH; b++) {
        const size_t i = (size_t)(xorshift64s(&m->rng) % N_SAMPLES);
        const double *xi = x + i * N_FEATURES;
        const double err = sigmoid(dot(m->w, xi)) - y[i];
        for (int j = 0; j < N_FEATURES; j++)
            grad[j] += err * xi[j];
        grad[N_FEATURES] += err;
    }
    for (int j = 0; j < N_WEIGHTS; j++)
        m->w[j] -= LEARNING_RATE * grad[j] / BATCH;
    m->step++;
}

/* Mean log loss over the whole data set; accuracy through *acc. */
static double full_loss(const struct model *m, const double *x, const double *y, double *acc)
{
    double loss = 0.0;
    long right = 0;
    for (int i = 0; i < N_SAMPLES; i++) {
        const double p = sigmoid(dot(m->w, x + (size_t)i * N_FEATURES));
        const double q = y[i] > 0.5 ? p : 1.0 - p;
        loss -= log(q > 1e-300 ? q : 1e-300);
        right += (p > 0.5) == (y[i] > 0.5);
    }
    if (acc)
        *acc = (double)right / N_SAMPLES;
    return loss / N_SAMPLES;
}

/* ---- encoding ----------------------------------------------------------- */

static void put_u32(unsigned char *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, sizeof v);
}

static void put_u64(unsigned char *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, sizeof v);
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return le32toh(v);
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return le64toh(v);
}

static void put_weights(unsigned char *p, const double *w)
{
    for (int j = 0; j < N_WEIGHTS; j++) {
        uint64_t bits;
        memcpy(&bits, &w[j], sizeof bits);
        put_u64(p + 8 * j, bits);
    }
}

static void get_weights(const unsigned char *p, double *w)
{
    for (int j = 0; j < N_WEIGHTS; j++) {
        const uint64_t bits = get_u64(p + 8 * j);
        memcpy(&w[j], &bits, sizeof bits);
    }
}

enum { CKPT_SIZE = CKPT_HEADER + 8 * N_WEIGHTS };

static uint64_t ckpt_checksum(const unsigned char *buf)
{
    XXH64_state_t *st = XXH64_createState();
    XXH64_reset(st, 0);
    XXH64_update(st, buf, 32);
    XXH64_update(st, buf + CKPT_HEADER, 8 * N_WEIGHTS);
    const uint64_t h = XXH64_digest(st);
    XXH64_freeState(st);
    return h;
}

static void encode_ckpt(unsigned char *buf, const struct model *m)
{
    memset(buf, 0, CKPT_HEADER);
    memcpy(buf, CKPT_MAGIC, sizeof CKPT_MAGIC);
    put_u32(buf + 8, CKPT_VERSION);
    put_u32(buf + 12, N_WEIGHTS);
    put_u64(buf + 16, m->step);
    put_u64(buf + 24, m->rng);
    put_weights(buf + CKPT_HEADER, m->w);
    put_u64(buf + 32, ckpt_checksum(buf));
}

/* Returns NULL when buf holds a valid checkpoint, else what is wrong. */
static const char *decode_ckpt(const unsigned char *buf, size_t len, struct model *m)
{
    if (len < CKPT_HEADER)
        return "truncated header";
    if (memcmp(buf, CKPT_MAGIC, sizeof CKPT_MAGIC) != 0)
        return "not a logreg checkpoint (bad magic)";
    if (get_u32(buf + 8) != CKPT_VERSION)
        return "unsupported format version";
    if (get_u32(buf + 12) != N_WEIGHTS)
        return "weight count does not match this model";
    if (len != CKPT_SIZE)
        return "truncated or oversized file";
    if (get_u64(buf + 32) != ckpt_checksum(buf))
        return "checksum mismatch";
    if (get_u64(buf + 24) == 0)
        return "invalid PRNG state";
    m->step = get_u64(buf + 16);
    m->rng = get_u64(buf + 24);
    get_weights(buf + CKPT_HEADER, m->w);
    return NULL;
}

/* ---- checkpoint files --------------------------------------------------- */

static int write_all(int fd, const unsigned char *p, size_t len)
{
    while (len > 0) {
        const ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Durably replaces `path` with `len` bytes: temp file, fsync, rename, fsync
 * of the directory, so a crash leaves either the old or the new file. */
static int write_durable(const char *dir, const char *name, const unsigned char *buf, size_t len)
{
    char path[4096], tmp[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path ||
        snprintf(tmp, sizeof tmp, "%s/.%s.tmp.%ld", dir, name, (long)getpid()) >= (int)sizeof tmp)
        return -ENAMETOOLONG;

    const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int result = write_all(fd, buf, len);
    if (result == 0 && fsync(fd) != 0)
        result = -errno;
    if (close(fd) != 0 && result == 0)
        result = -errno;
    if (result == 0 && rename(tmp, path) != 0)
        result = -errno;
    if (result != 0) {
        unlink(tmp);
        return result;
    }
    const int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    if (fsync(dfd) != 0)
        result = -errno;
    close(dfd);
    return result;
}

/* Loads state.bin into m. Returns 1 when loaded, 0 when there is none,
 * -1 (after saying why) when it exists but cannot be used. */
static int load_ckpt(const char *dir, struct model *m)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, CKPT_NAME);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        if (errno == ENOENT)
            return 0;
        fprintf(stderr, "logreg: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    unsigned char buf[CKPT_SIZE + 1];
    const size_t len = fread(buf, 1, sizeof buf, f);
    const int read_failed = ferror(f);
    fclose(f);
    const char *why = read_failed ? strerror(EIO) : decode_ckpt(buf, len, m);
    if (why) {
        fprintf(stderr, "logreg: refusing corrupt checkpoint %s: %s (remove it to start over)\n",
                path, why);
        return -1;
    }
    return 1;
}

/* Runs `$SPOTRUN_BIN commit --step N` and waits for it. */
static int run_commit(uint64_t step)
{
    const char *bin = getenv("SPOTRUN_BIN");
    if (bin == NULL || *bin == '\0')
        bin = "spotrun";
    char step_arg[32];
    snprintf(step_arg, sizeof step_arg, "%llu", (unsigned long long)step);
    char *const argv[] = {(char *)bin, "commit", "--step", step_arg, NULL};

    fflush(NULL); /* keep our output ordered before the child's */
    const pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        execvp(bin, argv);
        fprintf(stderr, "logreg: cannot run %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -errno;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status))
        fprintf(stderr, "logreg: warning: %s commit exited with %d\n", bin, WEXITSTATUS(status));
    else
        fprintf(stderr, "logreg: warning: %s commit killed by signal %d\n", bin, WTERMSIG(status));
    return -ECHILD;
}

/* Saves and commits; a failure is reported and training goes on. */
static void checkpoint(const char *dir, const struct model *m)
{
    unsigned char buf[CKPT_SIZE];
    encode_ckpt(buf, m);
    const int rc = write_durable(dir, CKPT_NAME, buf, sizeof buf);
    if (rc != 0) {
        fprintf(stderr, "logreg: warning: cannot save checkpoint in %s: %s\n", dir, strerror(-rc));
        return;
    }
    const int crc = run_commit(m->step);
    if (crc != 0 && crc != -ECHILD)
        fprintf(stderr, "logreg: warning: cannot run commit: %s\n", strerror(-crc));
}

/* ---- setup -------------------------------------------------------------- */

/* "SIGUSR1", "USR1" or a number; -1 when unknown. */
static int signal_number(const char *name)
{
    if (strncasecmp(name, "SIG", 3) == 0)
        name += 3;
    char *end;
    const long num = strtol(name, &end, 10);
    if (end != name && *end == '\0')
        return num > 0 && num < NSIG ? (int)num : -1;
    for (int sig = 1; sig < NSIG; sig++) {
        const char *abbrev = sigabbrev_np(sig);
        if (abbrev && strcasecmp(abbrev, name) == 0)
            return sig;
    }
    return -1;
}

static int install_handler(void)
{
    const char *name = getenv("SPOTRUN_SIGNAL");
    if (name == NULL || *name == '\0')
        name = "SIGUSR1";
    const int sig = signal_number(name);
    if (sig < 0) {
        fprintf(stderr, "logreg: unknown signal name in SPOTRUN_SIGNAL: '%s'\n", name);
        return -1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_checkpoint_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(sig, &sa, NULL) != 0) {
        fprintf(stderr, "logreg: cannot handle %s: %s\n", name, strerror(errno));
        return -1;
    }
    return 0;
}

static int parse_long(const char *flag, const char *s, long *out)
{
    char *end;
    errno = 0;
    const long v = s ? strtol(s, &end, 10) : -1;
    if (s == NULL || errno != 0 || end == s || *end != '\0' || v < 0) {
        fprintf(stderr, "logreg: %s needs a non-negative integer\n", flag);
        return -1;
    }
    *out = v;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: logreg [--steps N] [--save-every K] [--pace-ms MS] [--out FILE] "
               "[--crash-at STEP]\n"
               "  --steps N        SGD steps to train (default 2000)\n"
               "  --save-every K   checkpoint every K steps, 0 = only on request (default 500)\n"
               "  --pace-ms MS     sleep MS milliseconds per step (default 0)\n"
               "  --out FILE       write the final weights as raw little-endian doubles\n"
               "  --crash-at STEP  exit 3 on reaching STEP, on the first attempt only\n");
}

static int parse_args(int argc, char **argv, struct options *o)
{
    *o = (struct options){.steps = 2000, .save_every = 500, .crash_at = -1};
    for (int i = 1; i < argc; i += 2) { /* each option takes a value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--steps") == 0) {
            rc = parse_long(a, v, &o->steps);
        } else if (strcmp(a, "--save-every") == 0) {
            rc = parse_long(a, v, &o->save_every);
        } else if (strcmp(a, "--pace-ms") == 0) {
            rc = parse_long(a, v, &o->pace_ms);
        } else if (strcmp(a, "--crash-at") == 0) {
            rc = parse_long(a, v, &o->crash_at);
        } else if (strcmp(a, "--out") == 0 && v) {
            o->out = v;
            rc = 0;
        } else {
            usage(stderr);
            return -1;
        }
        if (rc != 0)
            return -1;
    }
    return 0;
}

static void pace(long ms)
{
    struct timespec left = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
}

static int first_attempt(void)
{
    const char *a = getenv("SPOTRUN_ATTEMPT");
    return a == NULL || *a == '\0' || strcmp(a, "0") == 0;
}

static int write_weights(const char *path, const struct model *m)
{
    unsigned char buf[8 * N_WEIGHTS];
    put_weights(buf, m->w);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(buf, 1, sizeof buf, f) != sizeof buf || fclose(f) != 0) {
        fprintf(stderr, "logreg: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static void print_summary(const struct model *m, const double *x, const double *y)
{
    unsigned char buf[8 * N_WEIGHTS];
    put_weights(buf, m->w);
    double norm = 0.0, acc;
    for (int j = 0; j < N_WEIGHTS; j++)
        norm += m->w[j] * m->w[j];
    const double loss = full_loss(m, x, y, &acc);
    printf("final weights: n=%d l2=%.6f loss=%.6f acc=%.4f w0=%.6f bias=%.6f xxh64=%016llx\n",
           N_WEIGHTS, sqrt(norm), loss, acc, m->w[0], m->w[N_FEATURES],
           (unsigned long long)XXH64(buf, sizeof buf, 0));
}

/* ---- main --------------------------------------------------------------- */

/* Restores from $SPOTRUN_CKPT_DIR when the wrapper says one was restored. */
static int resume(const char *dir, struct model *m)
{
    const char *resumed = getenv("SPOTRUN_RESUMED");
    if (dir == NULL || resumed == NULL || strcmp(resumed, "1") != 0)
        return 0;
    const int rc = load_ckpt(dir, m);
    if (rc < 0)
        return -1;
    if (rc == 0)
        printf("no %s in %s: starting fresh\n", CKPT_NAME, dir);
    else
        printf("resumed from step %llu\n", (unsigned long long)m->step);
    return 0;
}

/* The training loop: one SGD step at a time, checkpointing between steps
 * when periodic saving or a request says so. */
static void train(const struct options *opt, const char *dir, struct model *m, const double *x,
                  const double *y)
{
    uint64_t saved_at = m->step;
    const int may_crash = first_attempt();

    while (m->step < (uint64_t)opt->steps) {
        if (may_crash && opt->crash_at >= 0 && m->step == (uint64_t)opt->crash_at) {
            printf("crashing at step %llu as asked\n", (unsigned long long)m->step);
            fflush(stdout);
            _exit(3);
        }
        sgd_step(m, x, y);
        if (m->step % 100 == 0)
            printf("step %llu loss %.6f\n", (unsigned long long)m->step, full_loss(m, x, y, NULL));
        const int requested = checkpoint_wanted;
        const int periodic = opt->save_every > 0 && m->step % (uint64_t)opt->save_every == 0;
        if (dir && (requested || periodic)) {
            checkpoint_wanted = 0; /* a request arriving during the save stays pending */
            if (requested) {       /* before the commit: the wrapper may stop us right after it */
                printf("checkpoint requested at step %llu\n", (unsigned long long)m->step);
                fflush(stdout);
            }
            checkpoint(dir, m);
            saved_at = m->step;
        }
        fflush(stdout);
        if (opt->pace_ms > 0)
            pace(opt->pace_ms);
    }
    if (dir && saved_at != m->step)
        checkpoint(dir, m); /* the finished state, so a late restart has nothing to redo */
}

int main(int argc, char **argv)
{
    struct options opt;
    if (parse_args(argc, argv, &opt) != 0)
        return 2;

    const char *dir = getenv("SPOTRUN_CKPT_DIR");
    if (dir && *dir == '\0')
        dir = NULL; /* not under spotrun: train without saving */
    if (dir && install_handler() != 0)
        return 1;

    double *x = malloc(sizeof(double) * N_SAMPLES * N_FEATURES);
    double *y = malloc(sizeof(double) * N_SAMPLES);
    if (x == NULL || y == NULL) {
        fprintf(stderr, "logreg: out of memory for the data set\n");
        return 1;
    }
    make_data(x, y);

    struct model m = {.step = 0, .rng = TRAIN_SEED};
    int rc = resume(dir, &m) == 0 ? 0 : 1;
    if (rc == 0) {
        train(&opt, dir, &m, x, y);
        print_summary(&m, x, y);
        if (opt.out && write_weights(opt.out, &m) != 0)
            rc = 1;
    }
    free(x);
    free(y);
    return rc;
}
