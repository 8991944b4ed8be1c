/*
 * fuzz_seektable.c - libFuzzer target: the zstd seekable-format seek table
 * parser, fed the tail of a hostile "archive". The first 8 bytes choose the
 * claimed source size, so sizes that do and do not match are both explored.
 */
#include <stdint.h>
#include <string.h>

#include "seektable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    uint64_t source_size;
    memcpy(&source_size, data, 8);
    data += 8;
    size -= 8;
    if (source_size & 1)
        source_size = size; /* half the time: the table is the whole source */
    struct sr_seektable t;
    sr_seektable_init(&t);
    size_t need = 0;
    if (sr_seektable_parse(data, size, source_size, &t, &need) == 0)
        sr_seektable_free(&t);
    return 0;
}
