/*
 * ptrmap.h - the shim's map from live allocation (pointer or tagged
 * cuMemCreate handle) to what it was counted as, so that a free needs no
 * size from the application.
 *
 * Contract: lock-free, any thread, never blocks; one fixed table mapped on
 * first use. A key is never 0 or 1 (those mark empty and deleted slots).
 */
#ifndef SPOTRUN_PTRMAP_H
#define SPOTRUN_PTRMAP_H

#include <stdint.h>

/* Records key -> val: 0, or -1 when there is no room (the caller counts it
 * as untracked). */
int ptrmap_insert(uintptr_t key, uint64_t val);
/* Removes key and gives its value: 1, or 0 when the key is not there. */
int ptrmap_remove(uintptr_t key, uint64_t *val);

#endif
