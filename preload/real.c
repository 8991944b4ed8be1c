/*
 * real.c - finding the real functions behind our hooks.
 *
 * DESIGN
 *  - Each real function is resolved once and cached in shim_reals[] (an
 *    atomic pointer per row of hooks.h); the hot path is one acquire load.
 *  - First dlsym(RTLD_NEXT): right for everything loaded in the global
 *    scope (libc, a CUDA runtime the program links). The CUDA runtime
 *    itself dlopen()s libcuda.so.1 privately (RTLD_LOCAL), and Python
 *    loads extension modules - and the libcudart they need - the same way;
 *    RTLD_NEXT cannot see those. So, second, we look through every loaded
 *    object (dl_iterate_phdr) and ask each one by handle. A result equal to
 *    our own hook is never taken (that would recurse).
 *  - A lookup that found nothing is repeated only after new objects were
 *    loaded (dlpi_adds), so a program without CUDA that calls a CUDA entry
 *    point pays the scan once, and each such call returns the API's error.
 *  - dlsym() and cuGetProcAddress() hand their results to shim_real_offer(),
 *    which is how libcuda.so.1's functions usually become known.
 */
#include "hooks.h"
#include "shim.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

void *shim_reals[SHIM_NHOOKS];
static unsigned long long scanned_adds[SHIM_NHOOKS];

#define SHIM_ADDR_RT(name) (void *)&name
#define SHIM_ADDR_DRV(name) (void *)&name
#define SHIM_ADDR_SIG(name) (void *)&name
#define SHIM_ADDR_DL(name) (void *)&name
#define SHIM_ADDR_USE(name) NULL
#define SHIM_ROW(fam, ret, name, params) {#name, SHIM_##fam, SHIM_ADDR_##fam(name)},
/* sigset is deprecated in glibc; interposing it is the point. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
const struct shim_hook shim_hooks[SHIM_NHOOKS] = {SHIM_HOOKS(SHIM_ROW)};
#pragma GCC diagnostic pop
#undef SHIM_ROW

typedef void *(*dlsym_fn_t)(void *, const char *);
static dlsym_fn_t libc_dlsym;

void *shim_libc_dlsym(void *handle, const char *name)
{
    dlsym_fn_t f = __atomic_load_n(&libc_dlsym, __ATOMIC_ACQUIRE);
    if (!f) {
        /* dlvsym is not interposed; the version names cover glibc >= 2.34
         * and older x86_64 / aarch64 glibc. */
        static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
        for (size_t i = 0; !f && i < sizeof versions / sizeof versions[0]; i++)
            f = (dlsym_fn_t)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
        if (!f)
            return NULL;
        __atomic_store_n(&libc_dlsym, f, __ATOMIC_RELEASE);
    }
    return f(handle, name);
}

int shim_hook_by_name(const char *name)
{
    for (int i = 0; i < SHIM_NHOOKS; i++)
        if (strcmp(shim_hooks[i].name, name) == 0)
            return i;
    return -1;
}

void shim_real_offer(enum shim_id id, void *real)
{
    if (!real || real == shim_hooks[id].hook)
        return;
    void *expected = NULL;
    __atomic_compare_exchange_n(&shim_reals[id], &expected, real, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
}

#define MAX_OBJECTS 1024

struct scan {
    const char *names[MAX_OBJECTS];
    size_t n;
    unsigned long long adds;
};

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct scan *s = arg;
    s->adds = info->dlpi_adds;
    if (info->dlpi_name && info->dlpi_name[0] && s->n < MAX_OBJECTS)
        s->names[s->n++] = info->dlpi_name;
    return 0;
}

static void *scan_objects(enum shim_id id)
{
    static struct scan s; /* big; only touched on this slow path */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock); /* one scanner at a time */
    s.n = 0;
    dl_iterate_phdr(collect, &s);
    void *found = NULL;
    if (s.adds != __atomic_load_n(&scanned_adds[id], __ATOMIC_RELAXED)) {
        Dl_info self;
        const int have_self = dladdr((void *)&scan_objects, &self) != 0;
        for (size_t i = 0; i < s.n && !found; i++) {
            if (have_self && self.dli_fname && strcmp(self.dli_fname, s.names[i]) == 0)
                continue;
            void *h = dlopen(s.names[i], RTLD_LAZY | RTLD_NOLOAD);
            if (!h)
                continue;
            void *p = shim_libc_dlsym(h, shim_hooks[id].name);
            dlclose(h);
            if (p && p != shim_hooks[id].hook)
                found = p;
        }
        if (!found)
            __atomic_store_n(&scanned_adds[id], s.adds, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&lock);
    return found;
}

void *shim_real_slow(enum shim_id id)
{
    void *p = shim_libc_dlsym(RTLD_NEXT, shim_hooks[id].name);
    if (!p || p == shim_hooks[id].hook)
        p = scan_objects(id);
    if (!p)
        return NULL;
    shim_real_offer(id, p);
    return __atomic_load_n(&shim_reals[id], __ATOMIC_ACQUIRE);
}
