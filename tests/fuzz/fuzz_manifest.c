/*
 * fuzz_manifest.c - libFuzzer target: MANIFEST.json parsing. Any input
 * either parses into a manifest that serialises and parses back to the
 * same values, or is refused with an error; never a crash or a leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sr_manifest m;
    if (sr_manifest_parse((const char *)data, size, &m) != 0)
        return 0;
    char *json = NULL;
    size_t len = 0;
    if (sr_manifest_to_json(&m, &json, &len) != 0)
        abort(); /* a manifest we accepted must serialise */
    struct sr_manifest back;
    if (sr_manifest_parse(json, len, &back) != 0 || back.seq != m.seq || back.step != m.step ||
        back.stored_bytes != m.stored_bytes || strcmp(back.checksum, m.checksum) != 0)
        abort(); /* and read back identically */
    free(json);
    return 0;
}
