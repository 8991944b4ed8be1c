/* exports.map.c - preprocessed (cc -E -P) into libspotrun.map, the version
 * script: the public API plus every interposed row of hooks_table.h. */
// clang-format off
#include "hooks_table.h"
#define EXPORT_RT(name) name;
#define EXPORT_DRV(name) name;
#define EXPORT_SIG(name) name;
#define EXPORT_DL(name) name;
#define EXPORT_USE(name)
#define EXPORT(fam, ret, name, params) EXPORT_##fam(name)
{
  global: spotrun_*; SHIM_HOOKS(EXPORT)
  local: *;
};
// clang-format on
