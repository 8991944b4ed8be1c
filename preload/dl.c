/*
 * dl.c - our dlsym(): hands out a hook when a program looks up, by handle,
 * a CUDA function we interpose (the CUDA runtime gets libcuda's entry
 * points this way, which symbol interposition alone never sees).
 *
 * DESIGN
 *  - Pseudo-handles (RTLD_DEFAULT, RTLD_NEXT) are left alone: the normal
 *    lookup already finds our definitions first.
 *  - Everything else is forwarded to libc's dlsym with a tail call, so that
 *    the return address libc inspects for RTLD_NEXT is still the caller's,
 *    not ours. This file is compiled with sibling-call optimisation forced
 *    on (see CMakeLists.txt); tests check RTLD_NEXT from the program.
 *  - Never allocates, never takes a lock: other preloaded libraries
 *    (sanitizers, allocators) call dlsym before anything is initialised.
 */
#include "hooks.h"
#include "shim.h"

#include <dlfcn.h>

static void *hook_for(void *handle, const char *name)
{
    if (handle == RTLD_DEFAULT || handle == RTLD_NEXT || !name || name[0] != 'c' || name[1] != 'u')
        return NULL;
    const int id = shim_hook_by_name(name);
    if (id < 0 || (shim_hooks[id].family != SHIM_RT && shim_hooks[id].family != SHIM_DRV))
        return NULL;
    void *real = shim_libc_dlsym(handle, name);
    if (!real || real == shim_hooks[id].hook)
        return NULL; /* not there: let libc answer (and set dlerror) */
    shim_real_offer((enum shim_id)id, real);
    return shim_hooks[id].hook;
}

typedef void *(*libc_dlsym_t)(void *, const char *);

SPOTRUN_EXPORT void *dlsym(void *handle, const char *name)
{
    void *hook = hook_for(handle, name);
    if (hook)
        return hook;
    static libc_dlsym_t libc;
    libc_dlsym_t f = __atomic_load_n(&libc, __ATOMIC_ACQUIRE);
    if (__builtin_expect(!f, 0)) {
        f = (libc_dlsym_t)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!f)
            f = (libc_dlsym_t)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
        if (!f)
            f = (libc_dlsym_t)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17");
        if (!f)
            return NULL;
        __atomic_store_n(&libc, f, __ATOMIC_RELEASE);
    }
    return f(handle, name); /* tail call: keeps the caller's return address */
}
