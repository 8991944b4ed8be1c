/*
 * shim.c - initialisation of libspotrun.so and the checkpoint-request
 * counters.
 *
 * DESIGN
 *  - Init runs from a constructor and, lazily, at the top of each public
 *    entry point and hook (libfaketime style), because another library's
 *    constructor may call into us first. The guard is a lock-free atomic
 *    state, not pthread_once: a caller that finds init in progress returns
 *    at once instead of waiting, so init can never deadlock against itself
 *    (for instance when reached from a signal handler that interrupted it).
 *  - Init only reads the environment and installs signal handlers; the
 *    accounting page and pointer map are created by the first allocation.
 *  - Never exits the process, never prints on the hot path.
 */
#include "account.h"
#include "job_page.h"
#include "shim.h"
#include "spotrun.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

__thread int shim_depth __attribute__((tls_model("initial-exec")));

enum { INIT_NONE, INIT_RUNNING, INIT_DONE };

static atomic_int init_state = INIT_NONE;
static atomic_ulong requested_gen;
static atomic_ulong served_gen;
static struct spotrun_job_page *job; /* NULL = no job page */

static void job_page_map(void)
{
    const char *path = getenv("SPOTRUN_JOB_PAGE");
    if (path == NULL || *path == '\0')
        return;
    const int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= SPOTRUN_JOB_PAGE_SIZE)
        p = mmap(NULL, SPOTRUN_JOB_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return;
    struct spotrun_job_page *pg = p;
    if (pg->magic != SPOTRUN_JOB_PAGE_MAGIC || pg->version != SPOTRUN_JOB_PAGE_VERSION) {
        munmap(p, SPOTRUN_JOB_PAGE_SIZE);
        return;
    }
    job = pg;
}

void shim_job_listening(void)
{
    if (job && !__atomic_load_n(&job->listening, __ATOMIC_RELAXED))
        __atomic_store_n(&job->listening, 1, __ATOMIC_RELAXED);
}

/* One heartbeat (job_page.h: progress, progress_ms). clock_gettime is
 * async-signal-safe, so this is too. */
void shim_heartbeat(void)
{
    if (!job)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    __atomic_add_fetch(&job->progress, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&job->progress_ms,
                     (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u,
                     __ATOMIC_RELAXED);
}

void shim_note_request(void)
{
    atomic_fetch_add_explicit(&requested_gen, 1, memory_order_relaxed);
}

unsigned long shim_request_generation(void)
{
    return atomic_load_explicit(&requested_gen, memory_order_relaxed);
}

void shim_mark_served(unsigned long generation)
{
    unsigned long cur = atomic_load(&served_gen);
    /* Advance only: a slower commit that started earlier must not roll back
     * a newer one that already answered a later request. */
    while (cur < generation && !atomic_compare_exchange_weak(&served_gen, &cur, generation)) {
    }
}

SPOTRUN_EXPORT int spotrun_checkpoint_requested(void)
{
    shim_init();
    if (job) {
        shim_job_listening();
        shim_heartbeat(); /* called once per step: the job makes progress */
        return __atomic_load_n(&job->requested, __ATOMIC_ACQUIRE) !=
               __atomic_load_n(&job->served, __ATOMIC_ACQUIRE);
    }
    return atomic_load_explicit(&requested_gen, memory_order_relaxed) !=
           atomic_load_explicit(&served_gen, memory_order_relaxed);
}

void shim_init(void)
{
    if (atomic_load_explicit(&init_state, memory_order_acquire) == INIT_DONE)
        return;
    int expected = INIT_NONE;
    if (!atomic_compare_exchange_strong(&init_state, &expected, INIT_RUNNING))
        return; /* done, or in progress elsewhere: never wait for it */
    acct_init();
    job_page_map();
    shim_signals_init();
    atomic_store_explicit(&init_state, INIT_DONE, memory_order_release);
}

__attribute__((constructor)) static void shim_constructor(void)
{
    shim_init();
}
