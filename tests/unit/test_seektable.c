/*
 * test_seektable.c - the zstd seekable-format seek table: what is written,
 * and what the parser accepts and rejects (its input is hostile).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "seektable.h"

/* A table of three frames, serialised, preceded by `data` bytes of frames:
 * the parser gets the tail and the pretend source size. */
struct blob {
    uint8_t buf[256];
    size_t len;
    uint64_t source_size;
};

static void make_blob(struct blob *b, int checksums)
{
    struct sr_seektable t;
    sr_seektable_init(&t);
    t.has_checksums = checksums;
    assert_int_equal(sr_seektable_add(&t, 100, 4096, 0x11111111), 0);
    assert_int_equal(sr_seektable_add(&t, 200, 4096, 0x22222222), 0);
    assert_int_equal(sr_seektable_add(&t, 50, 10, 0x33333333), 0);
    b->len = sr_seektable_size(t.count, checksums);
    assert_true(b->len <= sizeof(b->buf));
    sr_seektable_write(&t, b->buf);
    b->source_size = 350 + b->len;
    sr_seektable_free(&t);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static int parse(const struct blob *b)
{
    struct sr_seektable t;
    const int rc = sr_seektable_parse(b->buf, b->len, b->source_size, &t, NULL);
    sr_seektable_free(&t);
    return rc;
}

static void test_written_table_has_the_seekable_layout(void **state)
{
    (void)state;
    struct blob b;
    make_blob(&b, 1);
    assert_int_equal(b.len, 8 + 3 * 12 + 9);
    const uint8_t head[8] = {0x5E, 0x2A, 0x4D, 0x18, 3 * 12 + 9, 0, 0, 0};
    assert_memory_equal(b.buf, head, 8);
    const uint8_t foot[9] = {3, 0, 0, 0, 0x80, 0xB1, 0xEA, 0x92, 0x8F};
    assert_memory_equal(b.buf + b.len - 9, foot, 9);
    const uint8_t first[12] = {100, 0, 0, 0, 0, 0x10, 0, 0, 0x11, 0x11, 0x11, 0x11};
    assert_memory_equal(b.buf + 8, first, 12);
}

static void test_parse_gives_back_sizes_offsets_and_checksums(void **state)
{
    (void)state;
    struct blob b;
    make_blob(&b, 1);
    struct sr_seektable t;
    assert_int_equal(sr_seektable_parse(b.buf, b.len, b.source_size, &t, NULL), 0);
    assert_int_equal(t.count, 3);
    assert_true(t.has_checksums);
    assert_int_equal(t.frames[1].coff, 100);
    assert_int_equal(t.frames[2].coff, 300);
    assert_int_equal(t.frames[2].doff, 8192);
    assert_int_equal(t.frames[2].checksum, 0x33333333);
    assert_int_equal(t.dsize_total, 8202);
    assert_int_equal(t.max_csize, 200);
    assert_int_equal(t.max_dsize, 4096);
    sr_seektable_free(&t);
}

static void test_table_without_checksums_is_accepted(void **state)
{
    (void)state;
    struct blob b;
    make_blob(&b, 0);
    struct sr_seektable t;
    assert_int_equal(sr_seektable_parse(b.buf, b.len, b.source_size, &t, NULL), 0);
    assert_int_equal(t.count, 3);
    assert_false(t.has_checksums);
    sr_seektable_free(&t);
}

static void test_short_buffer_asks_for_the_table_size(void **state)
{
    (void)state;
    struct blob b;
    make_blob(&b, 1);
    struct sr_seektable t;
    size_t need = 0;
    assert_int_equal(sr_seektable_parse(b.buf + 20, b.len - 20, b.source_size, &t, &need), -EAGAIN);
    assert_int_equal(need, b.len);
    sr_seektable_free(&t);
}

static void test_wrong_footer_magic_is_rejected(void **state)
{
    (void)state;
    struct blob b;
    make_blob(&b, 1);
    b.buf[b.len - 1] ^= 1;
    assert_int_equal(parse(&b), -EBADMSG);
}

static void test_reserved_descriptor_bits_are_rejected(void **state)
{
    (void)state;
    struct blob b;
    make_blob(&b, 1);
    b.buf[b.len - 5] |= 0x10;
    assert_int_equal(parse(&b), -EBADMSG);
}

static void test_frame_count_larger_than_the_source_is_rejected(void **state)
{
    (void)state;
    struct blob b;
    make_blob(&b, 1);
    put32(b.buf + b.len - 9, 0xFFFFFFFFu);
    assert_int_equal(parse(&b), -EBADMSG);
    put32(b.buf + b.len - 9, 1000);
    assert_int_equal(parse(&b), -EBADMSG);
}

static void test_skippable_header_must_match_the_footer(void **state)
{
    (void)state;
    struct blob b;
    make_blob(&b, 1);
    put32(b.buf + 4, 12);
    assert_int_equal(parse(&b), -EBADMSG);
}

static void test_sizes_that_do_not_add_up_to_the_source_are_rejected(void **state)
{
    (void)state;
    struct blob b;
    make_blob(&b, 1);
    b.source_size -= 1; /* a truncated archive */
    assert_int_equal(parse(&b), -EBADMSG);
    b.source_size += 2; /* trailing garbage before the table */
    assert_int_equal(parse(&b), -EBADMSG);
}

static void test_zero_and_huge_frame_sizes_are_rejected(void **state)
{
    (void)state;
    struct blob b;
    make_blob(&b, 1);
    put32(b.buf + 8 + 4, 0); /* decompressed size 0 */
    assert_int_equal(parse(&b), -EBADMSG);
    make_blob(&b, 1);
    put32(b.buf + 8 + 4, SR_SEEK_MAX_FRAME_SIZE + 1);
    assert_int_equal(parse(&b), -EBADMSG);
    make_blob(&b, 1);
    put32(b.buf + 8 + 4, 1); /* 100 bytes is more than zstd ever needs for 1 byte */
    assert_int_equal(parse(&b), -EBADMSG);
}

static void test_tiny_sources_are_rejected(void **state)
{
    (void)state;
    struct sr_seektable t;
    const uint8_t zeros[16] = {0};
    assert_int_equal(sr_seektable_parse(zeros, 0, 0, &t, NULL), -EBADMSG);
    assert_int_equal(sr_seektable_parse(zeros, 9, 9, &t, NULL), -EBADMSG);
    assert_int_equal(sr_seektable_parse(zeros, 16, 16, &t, NULL), -EBADMSG);
}

struct mem {
    const uint8_t *p;
    size_t len;
};

static int mem_read_at(void *ctx, void *buf, size_t len, uint64_t off)
{
    const struct mem *const m = ctx;
    if (off > m->len || len > m->len - off)
        return -EIO;
    memcpy(buf, m->p + off, len);
    return 0;
}

static void test_read_finds_the_table_at_the_end_of_a_source(void **state)
{
    (void)state;
    struct blob b;
    make_blob(&b, 1);
    uint8_t *const whole = calloc(1, b.source_size);
    assert_non_null(whole);
    memcpy(whole + 350, b.buf, b.len);
    struct mem m = {whole, b.source_size};
    const struct sr_source src = {.ctx = &m, .size = b.source_size, .read_at = mem_read_at};
    struct sr_seektable t;
    assert_int_equal(sr_seektable_read(&src, &t), 0);
    assert_int_equal(t.count, 3);
    sr_seektable_free(&t);
    free(whole);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_written_table_has_the_seekable_layout),
        cmocka_unit_test(test_parse_gives_back_sizes_offsets_and_checksums),
        cmocka_unit_test(test_table_without_checksums_is_accepted),
        cmocka_unit_test(test_short_buffer_asks_for_the_table_size),
        cmocka_unit_test(test_wrong_footer_magic_is_rejected),
        cmocka_unit_test(test_reserved_descriptor_bits_are_rejected),
        cmocka_unit_test(test_frame_count_larger_than_the_source_is_rejected),
        cmocka_unit_test(test_skippable_header_must_match_the_footer),
        cmocka_unit_test(test_sizes_that_do_not_add_up_to_the_source_are_rejected),
        cmocka_unit_test(test_zero_and_huge_frame_sizes_are_rejected),
        cmocka_unit_test(test_tiny_sources_are_rejected),
        cmocka_unit_test(test_read_finds_the_table_at_the_end_of_a_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
