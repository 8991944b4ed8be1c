/*
 * test_codec.c - the checkpoint archive codec, as a user sees it: a packed
 * directory comes back identical, stock zstd+tar read the archive, corrupt
 * or hostile archives are refused with the right error and leave the target
 * directory exactly as it was.
 *
 * Each test works in its own directory under $SPOTRUN_TEST_TMP (or /tmp).
 * Hostile archives are built here with libarchive directly and wrapped in the
 * archive format (zstd frames + seek table) by wrap_tar().
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include <cmocka.h>

#include "codec.h"
#include "fsutil.h"
#include "log.h"
#include "seektable.h"

/* ---- helpers ---------------------------------------------------------- */

static char base[1024]; /* this test's scratch directory */

static int setup(void **state)
{
    (void)state;
    const char *const root = getenv("SPOTRUN_TEST_TMP") ? getenv("SPOTRUN_TEST_TMP") : "/tmp";
    assert_int_equal(sr_mkdirs(root, 0755), 0);
    snprintf(base, sizeof(base), "%s/codec.XXXXXX", root);
    assert_non_null(mkdtemp(base));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return sr_rmtree(base);
}

static const char *at(const char *rel)
{
    static char bufs[4][PATH_MAX];
    static int next;
    char *const p = bufs[next++ % 4];
    snprintf(p, PATH_MAX, "%s/%s", base, rel);
    return p;
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *const f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* len bytes of a mildly compressible pattern. */
static uint8_t *pattern(size_t len, uint32_t seed)
{
    uint8_t *const p = malloc(len ? len : 1);
    assert_non_null(p);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (i % 7 == 0) ? (uint8_t)(x >> 24) : (uint8_t)(i / 4096);
    }
    return p;
}

static void write_pattern(const char *path, size_t len, uint32_t seed)
{
    uint8_t *const p = pattern(len, seed);
    write_file(path, p, len);
    free(p);
}

/* src/: nested dirs, empty file, empty dir, symlink, a multi-frame file. */
static void make_tree(const char *dir, size_t big)
{
    char p[PATH_MAX];
    assert_int_equal(sr_mkdirs(dir, 0755), 0);
    snprintf(p, sizeof(p), "%s/a/b/c", dir);
    assert_int_equal(sr_mkdirs(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/empty-dir", dir);
    assert_int_equal(sr_mkdirs(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/a/b/c/small.txt", dir);
    write_file(p, "hello\n", 6);
    snprintf(p, sizeof(p), "%s/a/empty", dir);
    write_file(p, "", 0);
    snprintf(p, sizeof(p), "%s/model.bin", dir);
    write_pattern(p, big, 1);
    snprintf(p, sizeof(p), "%s/latest", dir);
    assert_int_equal(symlink("a/b/c/small.txt", p), 0);
    snprintf(p, sizeof(p), "%s/a/b/script.sh", dir);
    write_file(p, "#!/bin/sh\n", 10);
    assert_int_equal(chmod(p, 0750), 0);
}

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
    char cmd[4 * PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd);
}

static int same_tree(const char *a, const char *b)
{
    return run("diff -r --no-dereference '%s' '%s' >/dev/null", a, b) == 0;
}

static int unpack(const char *archive, const char *dir, const struct sr_unpack_opts *opts)
{
    struct sr_source src;
    assert_int_equal(sr_source_file_open(archive, &src), 0);
    const int rc = sr_unpack_to_dir(&src, dir, opts, NULL);
    sr_source_file_close(&src);
    return rc;
}

/* The target holds only its "keep" file, and nothing else was left beside. */
static void make_target(void)
{
    assert_int_equal(sr_mkdirs(at("dst"), 0755), 0);
    write_file(at("dst/keep"), "old", 3);
}

static void assert_target_untouched(void)
{
    assert_int_equal(run("test \"$(ls -A '%s')\" = keep", at("dst")), 0);
    char buf[8] = {0};
    FILE *const f = fopen(at("dst/keep"), "rb");
    assert_non_null(f);
    assert_int_equal(fread(buf, 1, sizeof(buf), f), 3);
    fclose(f);
    assert_string_equal(buf, "old");
    assert_int_equal(run("! ls -d '%s'/*.spotrun-tmp.* >/dev/null 2>&1", base), 0);
}

struct mem_sink {
    uint8_t *p;
    size_t len, cap;
};

static int mem_sink(void *ctx, const void *buf, size_t len)
{
    struct mem_sink *const m = ctx;
    if (m->len + len > m->cap) {
        m->cap = (m->len + len) * 2;
        m->p = realloc(m->p, m->cap);
        assert_non_null(m->p);
    }
    memcpy(m->p + m->len, buf, len);
    m->len += len;
    return 0;
}

/* Wraps a raw tar stream into the archive format, frame_size per frame. */
static void wrap_tar(const uint8_t *tar, size_t len, size_t frame_size, const char *path)
{
    struct sr_seektable t;
    struct mem_sink out = {0};
    sr_seektable_init(&t);
    ZSTD_CCtx *const cc = ZSTD_createCCtx();
    assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1)));
    uint8_t *const dst = malloc(ZSTD_compressBound(frame_size));
    for (size_t off = 0; off < len; off += frame_size) {
        const size_t n = len - off < frame_size ? len - off : frame_size;
        const size_t c = ZSTD_compress2(cc, dst, ZSTD_compressBound(frame_size), tar + off, n);
        assert_false(ZSTD_isError(c));
        const uint8_t *const e = dst + c - 4;
        assert_int_equal(sr_seektable_add(&t, (uint32_t)c, (uint32_t)n,
                                          e[0] | e[1] << 8 | e[2] << 16 | (uint32_t)e[3] << 24),
                         0);
        mem_sink(&out, dst, c);
    }
    uint8_t table[16384];
    assert_true(sr_seektable_size(t.count, 1) <= sizeof(table));
    sr_seektable_write(&t, table);
    mem_sink(&out, table, sr_seektable_size(t.count, 1));
    write_file(path, out.p, out.len);
    free(out.p);
    free(dst);
    ZSTD_freeCCtx(cc);
    sr_seektable_free(&t);
}

/* A hostile tar: entries described as "type:name[:target]" (f file, d dir,
 * l symlink, h hardlink, c char device, p fifo), written to path. */
static void hostile(const char *path, const char *const *specs, size_t n)
{
    struct archive *const a = archive_write_new();
    static uint8_t tar[1 << 20];
    size_t used = 0;
    archive_write_set_format_pax_restricted(a);
    archive_write_set_bytes_per_block(a, 512);
    assert_int_equal(archive_write_open_memory(a, tar, sizeof(tar), &used), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        char spec[256];
        snprintf(spec, sizeof(spec), "%s", specs[i]);
        char *const name = strchr(spec, ':') + 1;
        char *const target = strchr(name, ':');
        if (target)
            *target = '\0';
        struct archive_entry *const e = archive_entry_new();
        archive_entry_set_pathname(e, name);
        archive_entry_set_perm(e, 0644);
        static const mode_t types[] = {['f'] = AE_IFREG, ['d'] = AE_IFDIR, ['l'] = AE_IFLNK,
                                       ['h'] = AE_IFREG, ['c'] = AE_IFCHR, ['p'] = AE_IFIFO};
        archive_entry_set_filetype(e, types[(unsigned char)spec[0]]);
        if (spec[0] == 'l')
            archive_entry_set_symlink(e, target + 1);
        if (spec[0] == 'h')
            archive_entry_set_hardlink(e, target + 1);
        archive_entry_set_size(e, spec[0] == 'f' ? 5 : 0);
        assert_true(archive_write_header(a, e) >= ARCHIVE_WARN);
        if (spec[0] == 'f')
            assert_int_equal(archive_write_data(a, "evil\n", 5), 5);
        archive_entry_free(e);
    }
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    wrap_tar(tar, used, 1000, path);
}

static void assert_hostile_refused(const char *const *specs, size_t n)
{
    make_target();
    hostile(at("evil.tar.zst"), specs, n);
    assert_int_equal(unpack(at("evil.tar.zst"), at("dst"), NULL), -EPERM);
    assert_target_untouched();
    assert_int_equal(access(at("x"), F_OK), -1);
    assert_int_equal(access("/tmp/spotrun-codec-test-evil", F_OK), -1);
}

static void flip_byte(const char *path, off_t off)
{
    const int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t c;
    assert_int_equal(pread(fd, &c, 1, off), 1);
    c ^= 0x10;
    assert_int_equal(pwrite(fd, &c, 1, off), 1);
    close(fd);
}

/* ---- round trips ------------------------------------------------------ */

static void test_round_trip_restores_an_identical_tree(void **state)
{
    (void)state;
    make_tree(at("src"), 3u << 20);
    const struct sr_pack_opts po = {.frame_size = 1u << 20, .threads = 3};
    struct sr_pack_stats ps;
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), &po, &ps), 0);
    struct sr_unpack_stats us;
    struct sr_source src;
    assert_int_equal(sr_source_file_open(at("a.tar.zst"), &src), 0);
    assert_int_equal(sr_unpack_to_dir(&src, at("out"), NULL, &us), 0);
    sr_source_file_close(&src);
    assert_true(same_tree(at("src"), at("out")));
    assert_int_equal(us.files, 4);
    assert_int_equal(us.raw_bytes, ps.raw_bytes);
    assert_int_equal(us.frames, ps.frames);
    struct stat st;
    assert_int_equal(stat(at("out/a/b/script.sh"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0750);
    assert_int_equal(lstat(at("out/latest"), &st), 0);
    assert_true(S_ISLNK(st.st_mode));
}

static void round_trip_with_frame_size(size_t frame_size)
{
    make_tree(at("src"), 300000);
    const struct sr_pack_opts po = {.frame_size = frame_size, .threads = 2};
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), &po, NULL), 0);
    assert_int_equal(unpack(at("a.tar.zst"), at("out"), NULL), 0);
    assert_true(same_tree(at("src"), at("out")));
}

static void test_odd_frame_size_4097_round_trips(void **state)
{
    (void)state;
    round_trip_with_frame_size(4097);
}

static void test_odd_frame_size_below_a_tar_block_round_trips(void **state)
{
    (void)state;
    round_trip_with_frame_size(100);
}

static void test_empty_directory_round_trips(void **state)
{
    (void)state;
    assert_int_equal(sr_mkdirs(at("src"), 0755), 0);
    struct sr_pack_stats ps;
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), NULL, &ps), 0);
    assert_int_equal(ps.files, 0);
    assert_int_equal(ps.frames, 1);
    assert_int_equal(unpack(at("a.tar.zst"), at("out"), NULL), 0);
    assert_true(same_tree(at("src"), at("out")));
}

static void test_unpack_replaces_the_previous_contents(void **state)
{
    (void)state;
    make_tree(at("src"), 1000);
    make_target();
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), NULL, NULL), 0);
    assert_int_equal(unpack(at("a.tar.zst"), at("dst"), NULL), 0);
    assert_true(same_tree(at("src"), at("dst")));
    assert_int_equal(run("! ls -d '%s'/*.spotrun-tmp.* >/dev/null 2>&1", base), 0);
}

/* --ckpt-exclude: a pattern without '/' matches a name at any depth (a
 * directory takes its contents along), one with '/' the relative path. */
static void test_excluded_paths_are_left_out(void **state)
{
    (void)state;
    assert_int_equal(run("mkdir -p '%s/src/tb/run1' '%s/src/sub' && cd '%s/src' && "
                         "echo m >model.bin && echo l >train.log && echo l >sub/eval.log && "
                         "echo e >tb/run1/events.1 && echo t >sub/x.tmp && echo k >x.tmp",
                         base, base, base),
                     0);
    const char *const pats[] = {"*.log", "tb", "sub/*.tmp"};
    const struct sr_pack_opts po = {.exclude = pats, .nexclude = 3};
    struct sr_pack_stats ps;
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), &po, &ps), 0);
    assert_int_equal(ps.files, 2);
    assert_int_equal(unpack(at("a.tar.zst"), at("out"), NULL), 0);
    assert_int_equal(run("cd '%s' && test \"$(find . | sort | tr '\\n' ' ')\" = "
                         "'. ./model.bin ./sub ./x.tmp '",
                         at("out")),
                     0);
    assert_true(sr_pack_excluded(pats, 3, "a/b/c.log", "c.log"));
    assert_false(sr_pack_excluded(pats, 3, "x.tmp", "x.tmp"));
    assert_false(sr_pack_excluded(pats, 3, "sub/deeper/y.tmp", "y.tmp")); /* '*' stops at '/' */
}

/* Packing into a file is all or nothing: a pack that fails leaves the
 * previous archive as it was and no temp file beside it. */
static void test_failed_pack_leaves_the_previous_archive(void **state)
{
    (void)state;
    write_file(at("a.tar.zst"), "old", 3);
    assert_int_equal(sr_pack_dir_to_file(at("missing"), at("a.tar.zst"), NULL, NULL), -ENOENT);
    char *buf;
    size_t len;
    assert_int_equal(sr_read_file(at("a.tar.zst"), 16, &buf, &len), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(buf, "old", 3);
    free(buf);
    assert_int_equal(run("! ls -A '%s' | grep -q tmp", base), 0);
}

static void test_same_directory_packs_to_identical_bytes(void **state)
{
    (void)state;
    make_tree(at("src"), 2u << 20);
    struct mem_sink a = {0}, b = {0};
    struct sr_pack_opts po = {.frame_size = 256u << 10, .threads = 1};
    assert_int_equal(sr_pack_dir(at("src"), mem_sink, &a, &po, NULL), 0);
    po.threads = 4;
    assert_int_equal(sr_pack_dir(at("src"), mem_sink, &b, &po, NULL), 0);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.p, b.p, a.len);
    free(a.p);
    free(b.p);
}

/* With the frames of an earlier archive of the same tree, the packer copies
 * every frame instead of compressing it, and lists them as
 * sr_archive_frames() does; the archive is the same bytes. A frame whose
 * copy does not hold its content is compressed again. */
static void test_unchanged_frames_are_copied_not_compressed(void **state)
{
    (void)state;
    make_tree(at("src"), 3u << 20);
    struct sr_pack_opts po = {.frame_size = 256u << 10, .threads = 2, .list_frames = 1};
    struct sr_pack_stats first, second, third;
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), &po, &first), 0);
    assert_non_null(first.frame_list);
    assert_int_equal(first.reused, 0);
    /* the list is what a second pass over the file would say */
    struct sr_source src;
    struct sr_frame_info *fi = NULL;
    uint32_t n = 0;
    assert_int_equal(sr_source_file_open(at("a.tar.zst"), &src), 0);
    assert_int_equal(sr_archive_frames(&src, &fi, &n), 0);
    sr_source_file_close(&src);
    assert_int_equal(n, first.frames);
    for (uint32_t i = 0; i < n; i++) { /* field by field: the struct has padding */
        const struct sr_frame_info *x = &fi[i], *y = &first.frame_list[i];
        assert_true(x->hash_hi == y->hash_hi && x->hash_lo == y->hash_lo);
        assert_true(x->coff == y->coff && x->csize == y->csize && x->dsize == y->dsize);
        assert_true(x->xxh64_lo == y->xxh64_lo && x->chash == y->chash);
    }
    free(fi);

    for (uint32_t i = 0; i < first.frames; i++) { /* a pool of one earlier archive */
        first.frame_list[i].src = 1;
        first.frame_list[i].soff = first.frame_list[i].coff;
    }
    char apath[PATH_MAX];
    snprintf(apath, sizeof(apath), "%s", at("a.tar.zst"));
    const char *const paths[] = {apath};
    const struct sr_pack_reuse reuse = {
        .paths = paths, .npaths = 1, .v = first.frame_list, .n = first.frames};
    po.reuse = &reuse;
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("b.tar.zst"), &po, &second), 0);
    assert_int_equal(second.reused, second.frames);
    assert_string_equal(second.checksum, first.checksum);
    /* the earlier archive damaged in every frame: nothing is copied */
    assert_int_equal(run("cp '%s' '%s'", at("a.tar.zst"), at("orig.tar.zst")), 0);
    FILE *fp = fopen(at("a.tar.zst"), "r+b");
    assert_non_null(fp);
    for (uint32_t i = 0; i < first.frames; i++) {
        fseek(fp, (long)(first.frame_list[i].coff + first.frame_list[i].csize - 2), SEEK_SET);
        fputc(0x5a ^ fgetc(fp), fp);
    }
    fclose(fp);
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("c.tar.zst"), &po, &third), 0);
    assert_int_equal(third.reused, 0);
    assert_string_equal(third.checksum, first.checksum);
    free(first.frame_list);
    free(second.frame_list);
    free(third.frame_list);
}

/* ---- sparse files ----------------------------------------------------- */

static long long blocks_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (long long)st.st_blocks;
}

static int same_file(const char *a, const char *b)
{
    return run("cmp -s '%s' '%s'", a, b) == 0;
}

/* A 64 MiB file with three bytes of data (a hole, "x", a hole, "y", a
 * hole, "z" as its last byte) restores with the same bytes and size, and
 * with its holes: far fewer blocks than its size. */
static void test_a_sparse_file_comes_back_sparse(void **state)
{
    (void)state;
    assert_int_equal(sr_mkdirs(at("src"), 0755), 0);
    const int fd = open(at("src/sparse"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "x", 1, 5000), 1);
    assert_int_equal(pwrite(fd, "y", 1, 32u << 20), 1);
    assert_int_equal(pwrite(fd, "z", 1, (64u << 20) - 1), 1);
    close(fd);
    if (blocks_of(at("src/sparse")) * 512 >= (1 << 20))
        skip(); /* this filesystem has no holes */
    const struct sr_pack_opts po = {.frame_size = 1u << 20, .threads = 2};
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), &po, NULL), 0);
    assert_int_equal(unpack(at("a.tar.zst"), at("out"), NULL), 0);
    assert_true(same_file(at("src/sparse"), at("out/sparse")));
    struct stat st;
    assert_int_equal(stat(at("out/sparse"), &st), 0);
    assert_int_equal(st.st_size, 64u << 20);
    assert_true(st.st_blocks * 512 < (1 << 20));
}

/* Zero runs at every offset and length around the 4 KiB blocks, with data
 * between, through frames of an odd size (blocks cut across frames): the
 * bytes are restored exactly, and a file that is all zeros (or ends in
 * zeros) keeps its size. */
static void test_zero_runs_at_odd_offsets_restore_exactly(void **state)
{
    (void)state;
    assert_int_equal(sr_mkdirs(at("src"), 0755), 0);
    const size_t len = 300000;
    uint8_t *const p = pattern(len, 7);
    for (size_t i = 0; i < len; i++)
        if (p[i] == 0)
            p[i] = 1;
    size_t off = 1, n = 1;
    while (off + n < len) { /* runs of 1 .. ~20000 zeros, at shifting offsets */
        memset(p + off, 0, n);
        off += n + 1 + n % 4099;
        n = n * 3 + 1;
        if (n > 20000)
            n = n % 9000 + 4095;
    }
    write_file(at("src/mixed"), p, len);
    memset(p, 0, len);
    write_file(at("src/zeros"), p, 12345);
    p[0] = 'a';
    write_file(at("src/zero-tail"), p, 3 * 4096 + 17);
    free(p);
    const struct sr_pack_opts po = {.frame_size = 4097, .threads = 2};
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), &po, NULL), 0);
    assert_int_equal(unpack(at("a.tar.zst"), at("out"), NULL), 0);
    assert_true(same_tree(at("src"), at("out")));
    struct stat st;
    assert_int_equal(stat(at("out/zeros"), &st), 0);
    assert_int_equal(st.st_size, 12345);
    assert_int_equal(stat(at("out/zero-tail"), &st), 0);
    assert_int_equal(st.st_size, 3 * 4096 + 17);
}

/* A tar with entries (name, size, byte): each file's data is size copies
 * of byte. */
static void tar_of(const char *path, const char *const *names, const size_t *sizes,
                   const uint8_t *bytes, size_t n)
{
    struct archive *const a = archive_write_new();
    static uint8_t tar[1 << 20];
    size_t used = 0;
    archive_write_set_format_pax_restricted(a);
    archive_write_set_bytes_per_block(a, 512);
    assert_int_equal(archive_write_open_memory(a, tar, sizeof(tar), &used), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *const e = archive_entry_new();
        archive_entry_set_pathname(e, names[i]);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, (la_int64_t)sizes[i]);
        assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
        uint8_t *const d = malloc(sizes[i] + 1);
        memset(d, bytes[i], sizes[i]);
        assert_int_equal(archive_write_data(a, d, sizes[i]), (la_ssize_t)sizes[i]);
        free(d);
        archive_entry_free(e);
    }
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    wrap_tar(tar, used, 1000, path);
}

/* Holes rely on every file being written afresh: an archive that holds a
 * name twice, data then zeros, restores the zeros (as stock tar does), not
 * the first entry's data showing through the holes. */
static void test_a_name_stored_twice_restores_the_later_zeros(void **state)
{
    (void)state;
    const char *const names[] = {"f", "f"};
    const size_t sizes[] = {3 * 4096, 2 * 4096 + 5};
    const uint8_t bytes[] = {'A', 0};
    tar_of(at("twice.tar.zst"), names, sizes, bytes, 2);
    assert_int_equal(unpack(at("twice.tar.zst"), at("out"), NULL), 0);
    uint8_t *const zeros = calloc(1, sizes[1]);
    write_file(at("want"), zeros, sizes[1]);
    free(zeros);
    assert_true(same_file(at("want"), at("out/f")));
}

/* The same with files large enough for the writer threads: the first
 * entry's data, still being written, never shows in the second's file. */
static void test_a_large_name_stored_twice_restores_the_later_zeros(void **state)
{
    (void)state;
    const char *const names[] = {"f", "f"};
    const size_t sizes[] = {400u << 10, (300u << 10) + 5};
    const uint8_t bytes[] = {'A', 0};
    tar_of(at("twice.tar.zst"), names, sizes, bytes, 2);
    struct sr_unpack_stats us = {0};
    struct sr_source src;
    assert_int_equal(sr_source_file_open(at("twice.tar.zst"), &src), 0);
    assert_int_equal(sr_unpack_to_dir(&src, at("out"), NULL, &us), 0);
    sr_source_file_close(&src);
    assert_int_equal(us.pooled_files, 2);
    uint8_t *const zeros = calloc(1, sizes[1]);
    write_file(at("want"), zeros, sizes[1]);
    free(zeros);
    assert_true(same_file(at("want"), at("out/f")));
}

static void test_stock_zstd_and_tar_extract_the_archive(void **state)
{
    (void)state;
    if (run("command -v zstd >/dev/null") != 0)
        skip();
    make_tree(at("src"), 3u << 20);
    const struct sr_pack_opts po = {.frame_size = 1u << 20};
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), &po, NULL), 0);
    assert_int_equal(sr_mkdirs(at("out"), 0755), 0);
    assert_int_equal(run("zstd -q -d -c '%s' | tar -x -C '%s'", at("a.tar.zst"), at("out")), 0);
    assert_true(same_tree(at("src"), at("out")));
}

static void test_stats_count_frames_bytes_and_checksum_the_stored_object(void **state)
{
    (void)state;
    make_tree(at("src"), 5u << 20);
    const struct sr_pack_opts po = {.frame_size = 1u << 20};
    struct sr_pack_stats ps;
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), &po, &ps), 0);
    assert_int_equal(ps.files, 4);
    /* the headers before model.bin, its 5 MiB in 5 frames, the rest */
    assert_int_equal(ps.frames, 7);
    assert_true(ps.raw_bytes > (5u << 20));
    struct sr_source src;
    assert_int_equal(sr_source_file_open(at("a.tar.zst"), &src), 0);
    assert_int_equal(src.size, ps.stored_bytes);
    char sum[SR_CHECKSUM_LEN];
    assert_int_equal(sr_source_checksum(&src, sum), 0);
    assert_string_equal(sum, ps.checksum);
    assert_int_equal(strncmp(sum, "xxh3-128:", 9), 0);
    assert_int_equal(strlen(sum), SR_CHECKSUM_LEN - 1);
    struct sr_seektable t;
    assert_int_equal(sr_seektable_read(&src, &t), 0);
    assert_int_equal(t.count, ps.frames);
    assert_int_equal(t.dsize_total, ps.raw_bytes);
    sr_seektable_free(&t);
    sr_source_file_close(&src);
    assert_int_equal(run("test $(zstd -q -d -c '%s' | wc -c) = %llu", at("a.tar.zst"),
                         (unsigned long long)ps.raw_bytes),
                     0);
}

struct sink_sizes {
    uint64_t bytes;
    size_t calls, largest;
};

static int sizes_sink(void *ctx, const void *buf, size_t len)
{
    struct sink_sizes *const s = ctx;
    (void)buf;
    s->bytes += len;
    s->calls++;
    if (len > s->largest)
        s->largest = len;
    return 0;
}

/* A sink that write()s what it gets (a file) would otherwise make the page
 * cache use large folios: several times the CPU (codec.h). */
static void test_the_sink_gets_at_most_the_write_size_per_call(void **state)
{
    (void)state;
    make_tree(at("src"), 9u << 20);
    struct sink_sizes s = {0};
    struct sr_pack_stats ps;
    assert_int_equal(sr_pack_dir(at("src"), sizes_sink, &s, NULL, &ps), 0);
    assert_int_equal(s.bytes, ps.stored_bytes);
    assert_true(ps.stored_bytes > 4 * SR_CODEC_WRITE_MAX); /* frames bigger than a write */
    assert_true(s.largest <= SR_CODEC_WRITE_MAX);
    assert_true(s.calls >= ps.stored_bytes / SR_CODEC_WRITE_MAX);
}

/* The seek table of an archive file (the caller frees it). */
static void read_table(const char *path, struct sr_seektable *t)
{
    struct sr_source src;
    assert_int_equal(sr_source_file_open(path, &src), 0);
    assert_int_equal(sr_seektable_read(&src, t), 0);
    sr_source_file_close(&src);
}

/* Frames are cut where a large file's data starts, so a file that did not
 * change gives the same frames even when everything before it moved (a
 * small file grew) - what lets a checkpoint reuse them. */
static void test_an_unchanged_large_file_gives_the_same_frames_after_a_shift(void **state)
{
    (void)state;
    const struct sr_pack_opts po = {.frame_size = 1u << 20, .threads = 2};
    assert_int_equal(sr_mkdirs(at("src"), 0755), 0);
    write_file(at("src/a.json"), "{}", 2);
    write_pattern(at("src/model.bin"), (3u << 20) + 1000, 7);
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), &po, NULL), 0);
    uint8_t *const log = pattern(5000, 3);
    write_file(at("src/a.json"), log, 5000);
    free(log);
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("b.tar.zst"), &po, NULL), 0);
    struct sr_seektable a, b;
    read_table(at("a.tar.zst"), &a);
    read_table(at("b.tar.zst"), &b);
    /* headers, then model.bin's 3 MiB + 1000 in 4 frames, then the end */
    assert_int_equal(a.count, 6);
    assert_int_equal(b.count, 6);
    for (uint32_t i = 1; i < 5; i++) {
        assert_int_equal(a.frames[i].dsize, b.frames[i].dsize);
        assert_int_equal(a.frames[i].checksum, b.frames[i].checksum);
    }
    assert_int_equal(a.frames[1].dsize, 1u << 20);
    assert_int_equal(a.frames[4].dsize, 1024); /* the last 1000 bytes + tar padding */
    assert_true(a.frames[1].doff != b.frames[1].doff);
    sr_seektable_free(&a);
    sr_seektable_free(&b);
}

/* Only the cut points differ from fixed cuts: the tar stream is the same. */
static void test_aligned_and_fixed_cuts_hold_the_same_tar_stream(void **state)
{
    (void)state;
    if (run("command -v zstd >/dev/null") != 0)
        skip();
    make_tree(at("src"), (2u << 20) + 77);
    struct sr_pack_opts po = {.frame_size = 1u << 20};
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), &po, NULL), 0);
    po.align_min = SR_CODEC_ALIGN_NEVER;
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("b.tar.zst"), &po, NULL), 0);
    assert_int_equal(run("test \"$(zstd -q -d -c '%s' | md5sum)\" = "
                         "\"$(zstd -q -d -c '%s' | md5sum)\"",
                         at("a.tar.zst"), at("b.tar.zst")),
                     0);
    struct sr_seektable a, b;
    read_table(at("a.tar.zst"), &a);
    read_table(at("b.tar.zst"), &b);
    assert_int_equal(b.count, (b.dsize_total + (1u << 20) - 1) >> 20);
    assert_true(a.count > b.count);
    sr_seektable_free(&a);
    sr_seektable_free(&b);
}

static void test_unpack_with_the_right_checksum_succeeds(void **state)
{
    (void)state;
    make_tree(at("src"), 1000);
    struct sr_pack_stats ps;
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), NULL, &ps), 0);
    const struct sr_unpack_opts uo = {.checksum = ps.checksum};
    assert_int_equal(unpack(at("a.tar.zst"), at("out"), &uo), 0);
    assert_true(same_tree(at("src"), at("out")));
}

/* A file source that counts the bytes read through it. */
struct counted {
    struct sr_source in;
    uint64_t bytes;
};

static int counted_read_at(void *ctx, void *buf, size_t len, uint64_t off)
{
    struct counted *const c = ctx;
    __atomic_add_fetch(&c->bytes, len, __ATOMIC_RELAXED); /* read from the workers */
    return c->in.read_at(c->in.ctx, buf, len, off);
}

/* The archive's checksum is checked while the frames stream through: the
 * archive is read once (its seek table twice), not once for the checksum
 * and again to extract it; a wrong checksum is still refused, before the
 * swap. */
static void test_the_checksum_is_checked_without_reading_the_archive_twice(void **state)
{
    (void)state;
    make_tree(at("src"), 6u << 20);
    make_target();
    const struct sr_pack_opts po = {.frame_size = 1u << 20};
    struct sr_pack_stats ps;
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), &po, &ps), 0);
    struct counted c = {0};
    assert_int_equal(sr_source_file_open(at("a.tar.zst"), &c.in), 0);
    const struct sr_source src = {.ctx = &c, .size = c.in.size, .read_at = counted_read_at};
    const struct sr_unpack_opts uo = {.checksum = ps.checksum, .threads = 2};
    assert_int_equal(sr_unpack_to_dir(&src, at("out"), &uo, NULL), 0);
    assert_true(same_tree(at("src"), at("out")));
    assert_true(c.bytes < ps.stored_bytes + ps.stored_bytes / 4);
    const struct sr_unpack_opts bad = {.checksum = "xxh3-128:00000000000000000000000000000000",
                                       .threads = 2};
    assert_int_equal(sr_unpack_to_dir(&src, at("dst"), &bad, NULL), -EBADMSG);
    assert_non_null(strstr(sr_strerror(-EBADMSG), "checksum mismatch"));
    assert_target_untouched();
    sr_source_file_close(&c.in);
}

/* Many large files (holes, odd sizes, read-only ones, set times) through
 * the writer threads, with one writer and with four: byte-exact, holes
 * kept, modes and times as archived. */
static void test_large_files_round_trip_through_the_writer_threads(void **state)
{
    (void)state;
    assert_int_equal(sr_mkdirs(at("src/d"), 0755), 0);
    enum { N = 24 };
    for (int i = 0; i < N; i++) {
        char rel[64];
        snprintf(rel, sizeof(rel), "src/%sf%02d", i % 3 ? "d/" : "", i);
        const size_t len = (64u << 10) + (size_t)i * 250001u;
        uint8_t *const p = pattern(len, (uint32_t)i);
        for (size_t h = (size_t)i * 4096; h + (1u << 20) < len; h += 3u << 20)
            memset(p + h, 0, (1u << 20) + (size_t)i); /* a hole of a MiB and more */
        write_file(at(rel), p, len);
        free(p);
        const struct timespec t[2] = {{1000000 + i, 0}, {2000000 + i, 500}};
        assert_int_equal(utimensat(AT_FDCWD, at(rel), t, 0), 0);
        assert_int_equal(chmod(at(rel), i % 4 ? 0644 : 0444), 0);
    }
    const int probe = open(at("probe"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(probe >= 0 && pwrite(probe, "x", 1, 8u << 20) == 1 && close(probe) == 0);
    const int has_holes = blocks_of(at("probe")) * 512 < (1 << 20);
    const struct sr_pack_opts po = {.frame_size = 1u << 20, .threads = 2};
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), &po, NULL), 0);
    const int writers[] = {1, 4};
    for (int w = 0; w < 2; w++) {
        struct sr_unpack_stats us = {0};
        struct sr_source src;
        const struct sr_unpack_opts uo = {.threads = writers[w]};
        assert_int_equal(sr_source_file_open(at("a.tar.zst"), &src), 0);
        assert_int_equal(sr_unpack_to_dir(&src, at("out"), &uo, &us), 0);
        sr_source_file_close(&src);
        assert_int_equal(us.pooled_files, N);
        assert_true(same_tree(at("src"), at("out")));
        for (int i = 0; i < N; i++) {
            char rel[64], out[64];
            snprintf(rel, sizeof(rel), "src/%sf%02d", i % 3 ? "d/" : "", i);
            snprintf(out, sizeof(out), "out/%sf%02d", i % 3 ? "d/" : "", i);
            struct stat a, b;
            assert_int_equal(stat(at(rel), &a), 0);
            assert_int_equal(stat(at(out), &b), 0);
            assert_int_equal(a.st_mode, b.st_mode);
            assert_int_equal(a.st_mtim.tv_sec, b.st_mtim.tv_sec);
            assert_int_equal(a.st_size, b.st_size);
            if (has_holes && a.st_size > i * 4096 + (2 << 20)) /* a MiB of zeros: a hole */
                assert_true(b.st_blocks * 512 <= b.st_size - (512 << 10));
        }
    }
}

/* ---- corrupt archives ------------------------------------------------- */

/* A frame near the end corrupted, with the archive's checksum given: the
 * error names that frame (found while extracting, not by the whole-object
 * checksum beforehand), and the target is untouched. */
static void test_a_corrupt_last_frame_is_named_and_the_target_untouched(void **state)
{
    (void)state;
    make_tree(at("src"), 5u << 20);
    make_target();
    const struct sr_pack_opts po = {.frame_size = 1u << 20};
    struct sr_pack_stats ps;
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), &po, &ps), 0);
    struct sr_seektable t;
    read_table(at("a.tar.zst"), &t);
    assert_true(t.count >= 4);
    const uint32_t last = t.count - 1;
    const struct sr_seek_frame *const f = &t.frames[last - 1];
    flip_byte(at("a.tar.zst"), (off_t)(f->coff + f->csize / 2));
    const struct sr_unpack_opts uo = {.checksum = ps.checksum};
    assert_int_equal(unpack(at("a.tar.zst"), at("dst"), &uo), -EBADMSG);
    char want[64];
    snprintf(want, sizeof(want), "frame %u:", last - 1);
    assert_non_null(strstr(sr_strerror(-EBADMSG), want));
    assert_target_untouched();
    sr_seektable_free(&t);
}

static void test_bit_flip_in_a_frame_is_caught_by_the_frame_checksum(void **state)
{
    (void)state;
    make_tree(at("src"), 3u << 20);
    make_target();
    const struct sr_pack_opts po = {.frame_size = 1u << 20};
    struct sr_pack_stats ps;
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), &po, &ps), 0);
    flip_byte(at("a.tar.zst"), (off_t)ps.stored_bytes / 2);
    assert_int_equal(unpack(at("a.tar.zst"), at("dst"), NULL), -EBADMSG);
    assert_target_untouched();
}

static void test_bit_flip_is_caught_by_the_object_checksum_first(void **state)
{
    (void)state;
    make_tree(at("src"), 3u << 20);
    make_target();
    struct sr_pack_stats ps;
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), NULL, &ps), 0);
    flip_byte(at("a.tar.zst"), 1000);
    const struct sr_unpack_opts uo = {.checksum = ps.checksum};
    assert_int_equal(unpack(at("a.tar.zst"), at("dst"), &uo), -EBADMSG);
    assert_target_untouched();
}

static void test_truncated_archive_is_rejected(void **state)
{
    (void)state;
    make_tree(at("src"), 2u << 20);
    make_target();
    struct sr_pack_stats ps;
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), NULL, &ps), 0);
    assert_int_equal(truncate(at("a.tar.zst"), (off_t)ps.stored_bytes - 100), 0);
    assert_int_equal(unpack(at("a.tar.zst"), at("dst"), NULL), -EBADMSG);
    assert_target_untouched();
}

static void test_bad_seek_table_is_rejected(void **state)
{
    (void)state;
    make_tree(at("src"), 1000);
    make_target();
    struct sr_pack_stats ps;
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), NULL, &ps), 0);
    flip_byte(at("a.tar.zst"), (off_t)ps.stored_bytes - 9 - 12 + 1); /* a compressed size */
    assert_int_equal(unpack(at("a.tar.zst"), at("dst"), NULL), -EBADMSG);
    assert_target_untouched();
}

static void test_plain_tar_zst_without_seek_table_is_rejected(void **state)
{
    (void)state;
    make_tree(at("src"), 1000);
    make_target();
    assert_int_equal(run("tar -C '%s' -cf - . | zstd -q > '%s'", at("src"), at("a.tar.zst")), 0);
    assert_int_equal(unpack(at("a.tar.zst"), at("dst"), NULL), -EBADMSG);
    assert_target_untouched();
}

/* ---- hostile archives ------------------------------------------------- */

static void test_absolute_path_is_refused(void **state)
{
    (void)state;
    const char *const specs[] = {"f:ok", "f:/tmp/spotrun-codec-test-evil"};
    assert_hostile_refused(specs, 2);
}

static void test_dotdot_path_is_refused(void **state)
{
    (void)state;
    const char *const specs[] = {"f:ok", "f:../x"};
    assert_hostile_refused(specs, 2);
}

static void test_write_through_an_earlier_symlink_is_refused(void **state)
{
    (void)state;
    const char *const specs[] = {"d:sub", "l:link:sub", "f:link/x"};
    assert_hostile_refused(specs, 3);
}

static void test_symlink_pointing_outside_is_refused(void **state)
{
    (void)state;
    const char *const specs[] = {"l:up:../..", "f:ok"};
    assert_hostile_refused(specs, 2);
}

static void test_symlink_to_an_absolute_path_is_refused(void **state)
{
    (void)state;
    const char *const specs[] = {"l:etc:/etc"};
    assert_hostile_refused(specs, 1);
}

static void test_hardlink_is_refused(void **state)
{
    (void)state;
    const char *const specs[] = {"f:ok", "h:hl:ok"};
    assert_hostile_refused(specs, 2);
}

static void test_device_node_is_refused(void **state)
{
    (void)state;
    const char *const specs[] = {"c:null"};
    assert_hostile_refused(specs, 1);
}

static void test_fifo_is_refused(void **state)
{
    (void)state;
    const char *const specs[] = {"f:ok", "p:pipe"};
    assert_hostile_refused(specs, 2);
}

static void test_archive_over_the_size_cap_is_refused(void **state)
{
    (void)state;
    assert_int_equal(sr_mkdirs(at("src"), 0755), 0);
    uint8_t *const zeros = calloc(1, 8u << 20);
    write_file(at("src/zeros"), zeros, 8u << 20);
    free(zeros);
    make_target();
    assert_int_equal(sr_pack_dir_to_file(at("src"), at("a.tar.zst"), NULL, NULL), 0);
    const struct sr_unpack_opts uo = {.max_raw_bytes = 1u << 20};
    assert_int_equal(unpack(at("a.tar.zst"), at("dst"), &uo), -EFBIG);
    assert_target_untouched();
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_round_trip_restores_an_identical_tree),
        T(test_odd_frame_size_4097_round_trips),
        T(test_odd_frame_size_below_a_tar_block_round_trips),
        T(test_empty_directory_round_trips),
        T(test_excluded_paths_are_left_out),
        T(test_unpack_replaces_the_previous_contents),
        T(test_failed_pack_leaves_the_previous_archive),
        T(test_same_directory_packs_to_identical_bytes),
        T(test_unchanged_frames_are_copied_not_compressed),
        T(test_a_sparse_file_comes_back_sparse),
        T(test_zero_runs_at_odd_offsets_restore_exactly),
        T(test_a_name_stored_twice_restores_the_later_zeros),
        T(test_a_large_name_stored_twice_restores_the_later_zeros),
        T(test_stock_zstd_and_tar_extract_the_archive),
        T(test_stats_count_frames_bytes_and_checksum_the_stored_object),
        T(test_the_sink_gets_at_most_the_write_size_per_call),
        T(test_an_unchanged_large_file_gives_the_same_frames_after_a_shift),
        T(test_aligned_and_fixed_cuts_hold_the_same_tar_stream),
        T(test_unpack_with_the_right_checksum_succeeds),
        T(test_the_checksum_is_checked_without_reading_the_archive_twice),
        T(test_large_files_round_trip_through_the_writer_threads),
        T(test_a_corrupt_last_frame_is_named_and_the_target_untouched),
        T(test_bit_flip_in_a_frame_is_caught_by_the_frame_checksum),
        T(test_bit_flip_is_caught_by_the_object_checksum_first),
        T(test_truncated_archive_is_rejected),
        T(test_bad_seek_table_is_rejected),
        T(test_plain_tar_zst_without_seek_table_is_rejected),
        T(test_absolute_path_is_refused),
        T(test_dotdot_path_is_refused),
        T(test_write_through_an_earlier_symlink_is_refused),
        T(test_symlink_pointing_outside_is_refused),
        T(test_symlink_to_an_absolute_path_is_refused),
        T(test_hardlink_is_refused),
        T(test_device_node_is_refused),
        T(test_fifo_is_refused),
        T(test_archive_over_the_size_cap_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
