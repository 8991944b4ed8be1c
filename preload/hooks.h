/*
 * hooks.h - what is generated from THE table of hooked symbols
 * (hooks_table.h; one X-macro row per symbol: family, return type, name,
 * parameter list).
 *
 *   RT   CUDA runtime call, interposed (defined in cuda_runtime.c)
 *   DRV  CUDA driver call, interposed (cuda_driver.c), also handed out in
 *        place of the real one by dlsym() and cuGetProcAddress()
 *   SIG  signal disposition call, interposed (signals.c)
 *   DL   dlsym itself (dl.c)
 *   USE  used by the shim, never interposed (helpers: device queries,
 *        copies for registered buffers)
 *
 * From this one list come: the enum of ids, the names, the prototypes of the
 * interposed functions, the function-pointer typedefs used to forward, the
 * table of hook addresses that dlsym()/cuGetProcAddress() hand out, and the
 * version script that exports them (exports.map.c).
 * Adding a hook = one row here + its definition in the family's file.
 */
#ifndef SPOTRUN_HOOKS_H
#define SPOTRUN_HOOKS_H

#include <signal.h>
#include <stddef.h>

#include "cuda_abi.h"

typedef struct sr_cudaPitchedPtr sr_pitched_t;
typedef struct sr_cudaExtent sr_extent_t;
typedef const struct sr_CUmemAllocationProp_head *sr_prop_t;
typedef struct sr_cudaPointerAttributes *sr_attrs_t;

#include "hooks_table.h"

enum shim_family { SHIM_RT, SHIM_DRV, SHIM_SIG, SHIM_DL, SHIM_USE };

#define SHIM_ID(fam, ret, name, params) SH_##name,
enum shim_id { SHIM_HOOKS(SHIM_ID) SHIM_NHOOKS };
#undef SHIM_ID

#define SHIM_FN(fam, ret, name, params) typedef ret(*name##_fn) params;
SHIM_HOOKS(SHIM_FN)
#undef SHIM_FN

/* Prototypes of what we define (the USE rows are only called). The
 * compiler checks each definition against these, and the libc ones against
 * libc's own declarations. */
#define SHIM_PROTO_RT(ret, name, params) ret name params;
#define SHIM_PROTO_DRV(ret, name, params) ret name params;
#define SHIM_PROTO_SIG(ret, name, params) ret name params;
#define SHIM_PROTO_DL(ret, name, params) ret name params;
#define SHIM_PROTO_USE(ret, name, params)
#define SHIM_PROTO(fam, ret, name, params) SHIM_PROTO_##fam(ret, name, params)
SHIM_HOOKS(SHIM_PROTO)
#undef SHIM_PROTO

struct shim_hook {
    const char *name;
    enum shim_family family;
    void *hook; /* our definition; NULL for USE rows */
};
extern const struct shim_hook shim_hooks[SHIM_NHOOKS];

/* The real function for id, resolved once (NULL when it is not loaded:
 * the caller returns the API's error code). Lock-free after the first
 * successful resolution. */
void *shim_real_slow(enum shim_id id);
extern void *shim_reals[SHIM_NHOOKS]; /* accessed with __atomic builtins */
static inline void *shim_real(enum shim_id id)
{
    void *p = __atomic_load_n(&shim_reals[id], __ATOMIC_ACQUIRE);
    return p ? p : shim_real_slow(id);
}
#define REAL(name) ((name##_fn)shim_real(SH_##name))

/* Records `real` as the real function of id unless one is known already. */
void shim_real_offer(enum shim_id id, void *real);
/* The id whose name is `name`, or -1. */
int shim_hook_by_name(const char *name);
/* libc's dlsym (never ours). */
void *shim_libc_dlsym(void *handle, const char *name);

#endif
