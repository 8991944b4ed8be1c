/*
 * test_sweep.c - sweeps in the store (runtime/sweep/sweep.h): grids in order,
 * random search reproducible from its seed, bad specs refused, placeholders,
 * trial run ids, create-only definitions (same = no-op, different = error),
 * --add numbering on, labels with the definition, the best rule and
 * objectives with the definition, end marks and their one listing, hostile
 * definitions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "log.h"
#include "sweep.h"

static void gen(struct sr_sweep *sw, const char *name, const char *const *specs, size_t n,
                unsigned random, uint64_t seed)
{
    memset(sw, 0, sizeof(*sw));
    snprintf(sw->name, sizeof(sw->name), "%s", name);
    assert_int_equal(sr_sweep_generate(specs, n, random, seed, sw), 0);
}

static void test_grid_order(void **state)
{
    (void)state;
    const char *specs[] = {"lr=1e-4,3e-4", "seed=0..2"};
    struct sr_sweep sw;
    gen(&sw, "g", specs, 2, 0, 0);
    assert_int_equal(sr_sweep_count(&sw), 6);
    assert_int_equal(sr_sweep_nparams(&sw), 2);
    assert_string_equal(sr_sweep_param(&sw, 0), "lr");
    /* the first parameter varies slowest, values kept as written */
    assert_string_equal(sr_sweep_value(&sw, 0, "lr"), "1e-4");
    assert_string_equal(sr_sweep_value(&sw, 0, "seed"), "0");
    assert_string_equal(sr_sweep_value(&sw, 2, "seed"), "2");
    assert_string_equal(sr_sweep_value(&sw, 3, "lr"), "3e-4");
    assert_string_equal(sr_sweep_value(&sw, 5, "seed"), "2");
    assert_null(sr_sweep_value(&sw, 6, "lr"));
    assert_null(sr_sweep_value(&sw, 0, "nope"));
    sr_sweep_free(&sw);

    const char *neg[] = {"n=-2..1"};
    gen(&sw, "g", neg, 1, 0, 0);
    assert_int_equal(sr_sweep_count(&sw), 4);
    assert_string_equal(sr_sweep_value(&sw, 0, "n"), "-2");
    sr_sweep_free(&sw);
}

static void test_random_reproducible(void **state)
{
    (void)state;
    const char *specs[] = {"lr=loguniform:1e-5,1e-2", "wd=uniform:0,0.1", "bs=int:16,128",
                           "opt=choice:sgd,adam", "seed=0..3"};
    struct sr_sweep a, b, c;
    gen(&a, "r", specs, 5, 50, 7);
    gen(&b, "r", specs, 5, 50, 7);
    gen(&c, "r", specs, 5, 50, 8);
    assert_int_equal(sr_sweep_count(&a), 50);
    assert_true(json_equal(a.trials, b.trials));
    assert_false(json_equal(a.trials, c.trials));
    for (size_t t = 0; t < 50; t++) {
        const double lr = strtod(sr_sweep_value(&a, t, "lr"), NULL);
        const double wd = strtod(sr_sweep_value(&a, t, "wd"), NULL);
        const long bs = strtol(sr_sweep_value(&a, t, "bs"), NULL, 10);
        const char *opt = sr_sweep_value(&a, t, "opt");
        const long seed = strtol(sr_sweep_value(&a, t, "seed"), NULL, 10);
        assert_true(lr >= 1e-5 * 0.99999 && lr <= 1e-2 * 1.00001);
        assert_true(wd >= 0 && wd <= 0.1);
        assert_true(bs >= 16 && bs <= 128);
        assert_true(strcmp(opt, "sgd") == 0 || strcmp(opt, "adam") == 0);
        assert_true(seed >= 0 && seed <= 3);
    }
    /* the seed and the specs are recorded */
    assert_int_equal(json_integer_value(json_object_get(a.spec, "seed")), 7);
    assert_int_equal(json_integer_value(json_object_get(a.spec, "random")), 50);
    /* the draws are pinned: a stored seed must mean the same trials in every
     * version (SplitMix64, 53-bit doubles, parameters in order) */
    struct sr_sweep p;
    const char *pin[] = {"x=int:0,1000000", "u=uniform:0,1"};
    gen(&p, "p", pin, 2, 2, 7);
    assert_string_equal(sr_sweep_value(&p, 0, "x"), "389830");
    assert_string_equal(sr_sweep_value(&p, 0, "u"), "0.0167883");
    assert_string_equal(sr_sweep_value(&p, 1, "x"), "900761");
    assert_string_equal(sr_sweep_value(&p, 1, "u"), "0.58293");
    sr_sweep_free(&p);
    sr_sweep_free(&a);
    sr_sweep_free(&b);
    sr_sweep_free(&c);
}

/* Random draws stay in their range: a huge one does not overflow to inf,
 * a narrow one is not rounded out of it. */
static void test_random_in_range(void **state)
{
    (void)state;
    const char *specs[] = {"x=uniform:-1e308,1e308", "y=uniform:1.0000001,1.0000002",
                           "z=loguniform:1.0000001,1.0000002", "w=uniform:3,3"};
    struct sr_sweep sw;
    gen(&sw, "rr", specs, 4, 200, 7);
    for (size_t t = 0; t < 200; t++) {
        const double x = strtod(sr_sweep_value(&sw, t, "x"), NULL);
        const double y = strtod(sr_sweep_value(&sw, t, "y"), NULL);
        const double z = strtod(sr_sweep_value(&sw, t, "z"), NULL);
        if (!(x >= -1e308 && x <= 1e308) || !(y >= 1.0000001 && y <= 1.0000002) ||
            !(z >= 1.0000001 && z <= 1.0000002))
            fail_msg("trial %zu out of range: x=%s y=%s z=%s", t, sr_sweep_value(&sw, t, "x"),
                     sr_sweep_value(&sw, t, "y"), sr_sweep_value(&sw, t, "z"));
        assert_string_equal(sr_sweep_value(&sw, t, "w"), "3");
    }
    sr_sweep_free(&sw);
    struct sr_sweep bad = {0};
    const char *inf[] = {"x=uniform:0,1e999"};
    assert_int_equal(sr_sweep_generate(inf, 1, 2, 0, &bad), -EINVAL);
    sr_err_clear();
}

/* int:LO,HI,step=S draws LO, LO+S, ... HI; int:LO,HI,log draws uniform in
 * log space (small values as often per octave as large ones); both
 * reproducible from the seed, and pinned. */
static void test_int_step_log(void **state)
{
    (void)state;
    const char *specs[] = {"batch=int:16,256,step=16", "width=int:8,1024,log"};
    struct sr_sweep a, b;
    gen(&a, "i", specs, 2, 400, 3);
    gen(&b, "i", specs, 2, 400, 3);
    assert_true(json_equal(a.trials, b.trials));
    int seen_hi = 0, seen_lo = 0, below_64 = 0;
    for (size_t t = 0; t < 400; t++) {
        const long batch = strtol(sr_sweep_value(&a, t, "batch"), NULL, 10);
        const long width = strtol(sr_sweep_value(&a, t, "width"), NULL, 10);
        if (batch < 16 || batch > 256 || batch % 16 != 0 || width < 8 || width > 1024)
            fail_msg("trial %zu: batch=%ld width=%ld", t, batch, width);
        seen_hi |= batch == 256;
        seen_lo |= batch == 16;
        below_64 += width < 64;
    }
    assert_true(seen_hi && seen_lo);
    /* log-uniform: [8, 64) is 3 of the 7 octaves, ~170 of 400 (uniform: ~22) */
    assert_in_range(below_64, 120, 220);
    sr_sweep_free(&a);
    sr_sweep_free(&b);
    struct sr_sweep p;
    const char *pin[] = {"s=int:0,100,step=5", "l=int:1,1000,log"};
    gen(&p, "p", pin, 2, 2, 7);
    assert_string_equal(sr_sweep_value(&p, 0, "s"), "40");
    assert_string_equal(sr_sweep_value(&p, 0, "l"), "1");
    assert_string_equal(sr_sweep_value(&p, 1, "s"), "90");
    assert_string_equal(sr_sweep_value(&p, 1, "l"), "42");
    sr_sweep_free(&p);
}

/* NAME=absent: is a trial without that parameter: the empty value. */
static void test_absent_value(void **state)
{
    (void)state;
    const char *specs[] = {"opt=adam", "momentum=absent:"};
    struct sr_sweep sw;
    gen(&sw, "a", specs, 2, 0, 0);
    assert_int_equal(sr_sweep_count(&sw), 1);
    assert_string_equal(sr_sweep_value(&sw, 0, "momentum"), "");
    char *tmpl[] = {"train", "--m={momentum}", NULL};
    char **out = NULL;
    assert_int_equal(sr_sweep_expand(&sw, 0, tmpl, &out), 0);
    assert_string_equal(out[1], "--m=");
    sr_sweep_argv_free(out);
    sr_sweep_free(&sw);
}

static void test_bad_specs(void **state)
{
    (void)state;
    static const char *const bad[] = {"lr",
                                      "lr=",
                                      "=1,2",
                                      "1x=1",
                                      "a-b=1",
                                      "x=1..",
                                      "x=3..1",
                                      "x=a..b",
                                      "x=1,,2",
                                      "x=uniform:2,1",
                                      "x=uniform:1",
                                      "x=int:1,x",
                                      "x=choice:",
                                      "x=loguniform:0,1",
                                      "x=uniform:inf,1",
                                      "x=int:0,10,step=3",
                                      "x=int:0,10,step=0",
                                      "x=int:0,10,log",
                                      "x=int:1,10,log,step=1",
                                      "x=int:1,10,step=1,log",
                                      "x=int:1,10,lg",
                                      "x=absent:1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sr_sweep sw = {0};
        const int random = strstr(bad[i], ":") ? 3 : 0;
        const char *specs[] = {bad[i]};
        if (sr_sweep_generate(specs, 1, (unsigned)random, 1, &sw) != -EINVAL)
            fail_msg("accepted \"%s\"", bad[i]);
    }
    struct sr_sweep sw = {0};
    const char *grid_random[] = {"x=uniform:0,1"};
    assert_int_equal(sr_sweep_generate(grid_random, 1, 0, 0, &sw), -EINVAL);
    assert_non_null(strstr(sr_strerror(-EINVAL), "--random"));
    const char *dup[] = {"a=1", "A=2"};
    assert_int_equal(sr_sweep_generate(dup, 2, 0, 0, &sw), -EINVAL);
    const char *big[] = {"a=0..999", "b=0..999"};
    assert_int_equal(sr_sweep_generate(big, 2, 0, 0, &sw), -EINVAL);
    assert_int_equal(sr_sweep_generate(NULL, 0, 0, 0, &sw), -EINVAL);
}

static void test_expand(void **state)
{
    (void)state;
    const char *specs[] = {"lr=3e-4", "seed=5"};
    struct sr_sweep sw;
    gen(&sw, "e", specs, 2, 0, 0);
    char *tmpl[] = {"python", "--lr={lr}", "{seed}{seed}", "{{lit}}", NULL};
    char **out = NULL;
    assert_int_equal(sr_sweep_expand(&sw, 0, tmpl, &out), 0);
    assert_string_equal(out[0], "python");
    assert_string_equal(out[1], "--lr=3e-4");
    assert_string_equal(out[2], "55");
    assert_string_equal(out[3], "{lit}");
    assert_null(out[4]);
    sr_sweep_argv_free(out);
    char *unknown[] = {"{nope}", NULL}, *open[] = {"{lr", NULL}, *stray[] = {"a}", NULL};
    assert_int_equal(sr_sweep_expand(&sw, 0, unknown, &out), -EINVAL);
    assert_non_null(strstr(sr_strerror(-EINVAL), "{nope}"));
    assert_int_equal(sr_sweep_expand(&sw, 0, open, &out), -EINVAL);
    assert_int_equal(sr_sweep_expand(&sw, 0, stray, &out), -EINVAL);
    sr_sweep_free(&sw);
}

static void test_names(void **state)
{
    (void)state;
    char id[200];
    sr_sweep_run_id("lr-search", 12, id, sizeof(id));
    assert_string_equal(id, "lr-search-12");
    assert_int_equal(sr_sweep_trial_of("lr-search", "lr-search-12"), 12);
    assert_int_equal(sr_sweep_trial_of("lr-search", "lr-search-0"), 0);
    assert_int_equal(sr_sweep_trial_of("lr-search", "lr-search-012"), -1);
    assert_int_equal(sr_sweep_trial_of("lr-search", "lr-search-"), -1);
    assert_int_equal(sr_sweep_trial_of("lr-search", "lr-search-1x"), -1);
    assert_int_equal(sr_sweep_trial_of("lr-search", "lr-searchx-1"), -1);
    assert_int_equal(sr_sweep_trial_of("lr", "lr-search-1"), -1);
    assert_true(sr_sweep_name_valid("lr-search"));
    assert_false(sr_sweep_name_valid("sweeps"));
    assert_false(sr_sweep_name_valid("a/b"));
    assert_false(sr_sweep_name_valid(""));
    assert_false(sr_sweep_name_valid("-x"));
    assert_true(sr_sweep_param_name_valid("_lr2"));
    assert_false(sr_sweep_param_name_valid("2lr"));
}

static void test_create_add(void **state)
{
    struct tu_store *f = *state;
    const char *specs[] = {"lr=1,2", "seed=0..1"};
    struct sr_sweep def, same, other, more, got;
    gen(&def, "s1", specs, 2, 0, 0);
    def.command = json_pack("[s,s]", "train", "{lr}");
    assert_int_equal(sr_sweep_read(f->st, "s1", &got), -ENOENT);
    assert_int_equal(sr_sweep_create(f->st, &def), 0);
    gen(&same, "s1", specs, 2, 0, 0);
    same.command = json_pack("[s,s]", "train", "{lr}");
    assert_int_equal(sr_sweep_create(f->st, &same), 1); /* a no-op */
    const char *other_specs[] = {"lr=1,3", "seed=0..1"};
    gen(&other, "s1", other_specs, 2, 0, 0);
    other.command = json_pack("[s,s]", "train", "{lr}");
    assert_int_equal(sr_sweep_create(f->st, &other), -EEXIST);
    assert_non_null(strstr(sr_strerror(-EEXIST), "trials"));
    json_decref(other.command);
    other.command = json_pack("[s]", "train");
    assert_int_equal(sr_sweep_create(f->st, &other), -EEXIST);
    /* fewer trials than part 0 (a prefix of them) is another definition */
    const char *fewer_specs[] = {"lr=1", "seed=0..1"};
    struct sr_sweep fewer;
    gen(&fewer, "s1", fewer_specs, 2, 0, 0);
    fewer.command = json_pack("[s,s]", "train", "{lr}");
    assert_int_equal(sr_sweep_create(f->st, &fewer), -EEXIST);
    assert_non_null(strstr(sr_strerror(-EEXIST), "trials"));
    sr_sweep_free(&fewer);

    const char *add_specs[] = {"lr=9", "seed=7"};
    gen(&more, "s1", add_specs, 2, 0, 0);
    size_t first = 0;
    assert_int_equal(sr_sweep_add(f->st, &more, &first), 0);
    assert_int_equal(first, 4);
    assert_int_equal(sr_sweep_add(f->st, &more, &first), 0);
    assert_int_equal(first, 5);
    /* --add with a command that is not the sweep's: refused, nothing added */
    more.command = json_pack("[s]", "other");
    assert_int_equal(sr_sweep_add(f->st, &more, &first), -EEXIST);
    assert_non_null(strstr(sr_strerror(-EEXIST), "command"));
    json_decref(more.command);
    more.command = json_pack("[s,s]", "train", "{lr}"); /* the same one is fine */
    assert_int_equal(sr_sweep_add(f->st, &more, &first), 0);
    assert_int_equal(first, 6);
    json_decref(more.command);
    more.command = NULL;
    assert_int_equal(sr_sweep_read(f->st, "s1", &got), 0);
    assert_int_equal(sr_sweep_count(&got), 7);
    assert_int_equal(got.parts, 4);
    assert_int_equal(got.first_part_trials, 4);
    /* after --add, part 0's definition again is still the same one */
    assert_int_equal(sr_sweep_create(f->st, &same), 1);
    assert_string_equal(sr_sweep_value(&got, 4, "lr"), "9");
    assert_string_equal(json_string_value(json_array_get(got.command, 1)), "{lr}");
    /* the original definition again is still a no-op after --add */
    assert_int_equal(sr_sweep_create(f->st, &same), 1);
    sr_sweep_free(&got);

    const char *wrong[] = {"lr=9"};
    struct sr_sweep bad;
    gen(&bad, "s1", wrong, 1, 0, 0);
    assert_int_equal(sr_sweep_add(f->st, &bad, &first), -EEXIST);
    snprintf(bad.name, sizeof(bad.name), "nosuch");
    assert_int_equal(sr_sweep_add(f->st, &bad, &first), -ENOENT);
    sr_sweep_free(&bad);
    sr_sweep_free(&def);
    sr_sweep_free(&same);
    sr_sweep_free(&other);
    sr_sweep_free(&more);
}

/* A search space (sweep init --random 0): the specs kept, no trials; a
 * driver appends trials one at a time at the count it read (--add --at),
 * and a driver that read an older count writes nothing. */
static void test_search_space_add_at(void **state)
{
    struct tu_store *f = *state;
    const char *specs[] = {"lr=loguniform:1e-5,1e-2", "layers=int:2,8"};
    struct sr_sweep def;
    gen(&def, "hp", specs, 2, SR_SWEEP_SEARCH, 7);
    assert_int_equal(sr_sweep_count(&def), 0);
    assert_true(json_is_true(json_object_get(def.spec, "search")));
    assert_int_equal(json_integer_value(json_object_get(def.spec, "seed")), 7);
    assert_string_equal(json_string_value(json_array_get(json_object_get(def.spec, "param"), 0)),
                        specs[0]);
    def.command = json_pack("[s,s]", "train", "{lr}");
    assert_int_equal(sr_sweep_create(f->st, &def), 0);
    assert_int_equal(sr_sweep_create(f->st, &def), 1); /* the same space again: no-op */

    const char *one[] = {"lr=0.001", "layers=4"};
    struct sr_sweep more;
    gen(&more, "hp", one, 2, 0, 0);
    size_t first = 99;
    assert_int_equal(sr_sweep_add_at(f->st, &more, 1, &first), -ESTALE); /* it has 0 */
    assert_non_null(strstr(sr_strerror(-ESTALE), "has 0 trials, not 1"));
    assert_int_equal(first, 99);
    assert_int_equal(sr_sweep_add_at(f->st, &more, 0, &first), 0);
    assert_int_equal(first, 0);
    assert_int_equal(sr_sweep_add_at(f->st, &more, 0, &first), -ESTALE); /* lost the race */
    assert_int_equal(sr_sweep_add_at(f->st, &more, 1, &first), 0);
    assert_int_equal(first, 1);
    struct sr_sweep got;
    assert_int_equal(sr_sweep_read(f->st, "hp", &got), 0);
    assert_int_equal(sr_sweep_count(&got), 2);
    assert_int_equal(got.first_part_trials, 0);
    assert_string_equal(sr_sweep_value(&got, 1, "layers"), "4");
    assert_true(json_is_true(json_object_get(got.spec, "search")));
    sr_sweep_free(&got);
    sr_sweep_free(&more);
    sr_sweep_free(&def);
}

/* sweep init --label: the labels are part 0's; read back as written;
 * other labels (or none against some) are another definition; a sweep
 * without them reads none. */
static void test_labels(void **state)
{
    struct tu_store *f = *state;
    const char *specs[] = {"n=0..1"};
    struct sr_sweep def, same, other, bare, got;
    gen(&def, "lab", specs, 1, 0, 0);
    def.labels = json_pack("{s:s,s:s}", "team", "nlp", "user", "ana");
    assert_int_equal(sr_sweep_create(f->st, &def), 0);
    assert_int_equal(sr_sweep_read(f->st, "lab", &got), 0);
    assert_true(json_equal(got.labels, def.labels));
    sr_sweep_free(&got);
    gen(&same, "lab", specs, 1, 0, 0);
    same.labels = json_pack("{s:s,s:s}", "user", "ana", "team", "nlp");
    assert_int_equal(sr_sweep_create(f->st, &same), 1);
    gen(&other, "lab", specs, 1, 0, 0);
    other.labels = json_pack("{s:s}", "team", "cv");
    assert_int_equal(sr_sweep_create(f->st, &other), -EEXIST);
    assert_non_null(strstr(sr_strerror(-EEXIST), "labels"));
    gen(&bare, "lab", specs, 1, 0, 0);
    assert_int_equal(sr_sweep_create(f->st, &bare), -EEXIST);
    /* none: no "labels" in the definition, none read */
    sr_sweep_free(&bare);
    gen(&bare, "nolab", specs, 1, 0, 0);
    assert_int_equal(sr_sweep_create(f->st, &bare), 0);
    assert_int_equal(sr_sweep_read(f->st, "nolab", &got), 0);
    assert_null(got.labels);
    sr_sweep_free(&got);
    sr_sweep_free(&def);
    sr_sweep_free(&same);
    sr_sweep_free(&other);
    sr_sweep_free(&bare);
}

/* sweep init --best best-step and --objective: part 0's "best" (absent for
 * final) and "objectives", read back; another rule or other objectives are
 * another definition; a spec that is not METRIC:min|max, a stored rule or
 * objectives that are malformed are refused. */
static void test_best_rule(void **state)
{
    struct tu_store *f = *state;
    const char *specs[] = {"n=0..1"};
    char err[200];
    struct sr_sweep def, other, got;
    gen(&def, "rank", specs, 1, 0, 0);
    def.best_step = 1;
    def.objectives = json_array();
    json_array_append_new(def.objectives, sr_sweep_objective_parse("val:loss:min", err, 200));
    json_array_append_new(def.objectives, sr_sweep_objective_parse("acc:max", err, 200));
    assert_true(sr_sweep_objectives_valid(def.objectives));
    assert_int_equal(sr_sweep_create(f->st, &def), 0);
    assert_int_equal(sr_sweep_read(f->st, "rank", &got), 0);
    assert_int_equal(got.best_step, 1);
    assert_int_equal(sr_sweep_nobjectives(&got), 2);
    int max = -1;
    assert_string_equal(sr_sweep_objective(&got, 0, &max), "val:loss");
    assert_int_equal(max, 0);
    assert_string_equal(sr_sweep_objective(&got, 1, &max), "acc");
    assert_int_equal(max, 1);
    sr_sweep_free(&got);
    assert_int_equal(sr_sweep_create(f->st, &def), 1); /* the same: unchanged */
    gen(&other, "rank", specs, 1, 0, 0);
    other.objectives = json_deep_copy(def.objectives);
    assert_int_equal(sr_sweep_create(f->st, &other), -EEXIST); /* final, not best-step */
    assert_non_null(strstr(sr_strerror(-EEXIST), "best rule"));
    other.best_step = 1;
    json_array_remove(other.objectives, 1);
    assert_int_equal(sr_sweep_create(f->st, &other), -EEXIST);
    assert_non_null(strstr(sr_strerror(-EEXIST), "objectives"));
    sr_err_clear();
    /* specs refused */
    assert_null(sr_sweep_objective_parse("loss", err, sizeof(err)));
    assert_null(sr_sweep_objective_parse("loss:up", err, sizeof(err)));
    assert_non_null(strstr(err, "not min or max"));
    assert_null(sr_sweep_objective_parse(":min", err, sizeof(err)));
    json_t *twice = json_pack("[{s:s,s:s},{s:s,s:s}]", "metric", "a", "direction", "min", "metric",
                              "a", "direction", "max");
    assert_false(sr_sweep_objectives_valid(twice));
    json_decref(twice);
    /* stored malformed: the sweep is unreadable */
    const char *bad[] = {
        "{\"format\":1,\"sweep\":\"b1\",\"part\":0,\"params\":[\"n\"],\"command\":[],"
        "\"trials\":[{\"n\":\"0\"}],\"best\":\"last\"}",
        "{\"format\":1,\"sweep\":\"b2\",\"part\":0,\"params\":[\"n\"],\"command\":[],"
        "\"trials\":[{\"n\":\"0\"}],\"objectives\":[{\"metric\":\"a b\",\"direction\":\"min\"}]}",
    };
    const char *keys[] = {"sweeps/b1/def/000000.json", "sweeps/b2/def/000000.json"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sr_store_put_if(f->st, keys[i], bad[i], strlen(bad[i]), NULL, NULL), 0);
        assert_int_equal(sr_sweep_read(f->st, i ? "b2" : "b1", &got), -EBADMSG);
        sr_err_clear();
    }
    sr_sweep_free(&def);
    sr_sweep_free(&other);
}

static void test_end_marks(void **state)
{
    struct tu_store *f = *state;
    unsigned char st[8];
    assert_int_equal(sr_sweep_list_ends(f->st, "m", 8, st), 0);
    for (int i = 0; i < 8; i++)
        assert_int_equal(st[i], SR_TRIAL_OPEN);
    struct sr_trial_end_info done = {.state = SR_TRIAL_DONE, .unix_ms = 5};
    struct sr_trial_end_info failed = {.state = SR_TRIAL_FAILED, .exit_code = 3};
    snprintf(failed.cause, sizeof(failed.cause), "exit 3");
    assert_int_equal(sr_sweep_mark_end(f->st, "m", 1, &done), 0);
    assert_int_equal(sr_sweep_mark_end(f->st, "m", 1, &done), 0); /* create-only, fine */
    assert_int_equal(sr_sweep_mark_end(f->st, "m", 6, &failed), 0);
    assert_int_equal(sr_sweep_list_ends(f->st, "m", 8, st), 0);
    assert_int_equal(st[1], SR_TRIAL_DONE);
    assert_int_equal(st[6], SR_TRIAL_FAILED);
    assert_int_equal(st[0], SR_TRIAL_OPEN);
    struct sr_trial_end_info got;
    assert_int_equal(sr_sweep_read_end(f->st, "m", 6, &got), 0);
    assert_int_equal(got.state, SR_TRIAL_FAILED);
    assert_int_equal(got.exit_code, 3);
    assert_string_equal(got.cause, "exit 3");
    assert_int_equal(sr_sweep_read_failed(f->st, "m", 1, &got), -ENOENT);
    assert_int_equal(sr_sweep_read_end(f->st, "m", 2, &got), -ENOENT);
    /* a trial beyond n and names that are not marks are ignored */
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/sweeps/m/end/junk", f->root);
    assert_int_equal(sr_write_file_atomic(path, "x", 1), 0);
    snprintf(path, sizeof(path), "%s/sweeps/m/end/99.done", f->root);
    assert_int_equal(sr_write_file_atomic(path, "x", 1), 0);
    /* an unreadable mark's name still says it ended; its content is not believed */
    snprintf(path, sizeof(path), "%s/sweeps/m/end/3.failed", f->root);
    assert_int_equal(sr_write_file_atomic(path, "{garbage", 8), 0);
    assert_int_equal(sr_sweep_list_ends(f->st, "m", 8, st), 0);
    assert_int_equal(st[3], SR_TRIAL_FAILED);
    assert_int_equal(sr_sweep_read_end(f->st, "m", 3, &got), -EBADMSG);
    assert_int_equal(got.state, SR_TRIAL_FAILED);
    /* a mark whose content is another trial's, another state's, or has an
     * exit code no process has: only its name is believed */
    static const char *const lies[] = {
        "{\"trial\":6,\"state\":\"failed\",\"exit_code\":3}",
        "{\"trial\":4,\"state\":\"done\",\"exit_code\":3}",
        "{\"trial\":4,\"state\":\"failed\",\"exit_code\":300}",
        "{\"trial\":4,\"state\":\"failed\",\"exit_code\":-1}",
    };
    snprintf(path, sizeof(path), "%s/sweeps/m/end/4.failed", f->root);
    for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
        assert_int_equal(sr_write_file_atomic(path, lies[i], strlen(lies[i])), 0);
        assert_int_equal(sr_sweep_read_failed(f->st, "m", 4, &got), -EBADMSG);
        assert_int_equal(got.state, SR_TRIAL_FAILED);
        assert_int_equal(got.exit_code, 0);
    }
    static const char done_lie[] = "{\"trial\":5,\"state\":\"done\",\"exit_code\":2}";
    snprintf(path, sizeof(path), "%s/sweeps/m/end/5.done", f->root);
    assert_int_equal(sr_write_file_atomic(path, done_lie, strlen(done_lie)), 0);
    assert_int_equal(sr_sweep_read_end(f->st, "m", 5, &got), -EBADMSG);
    assert_int_equal(sr_sweep_clear_end(f->st, "m", 6), 0);
    assert_int_equal(sr_sweep_list_ends(f->st, "m", 8, st), 0);
    assert_int_equal(st[6], SR_TRIAL_OPEN);
}

static void put(struct tu_store *f, const char *key, const char *body)
{
    char path[PATH_MAX + 128];
    snprintf(path, sizeof(path), "%s/%s", f->root, key);
    *strrchr(path, '/') = '\0';
    assert_int_equal(sr_mkdirs(path, 0755), 0);
    path[strlen(path)] = '/';
    assert_int_equal(sr_write_file_atomic(path, body, strlen(body)), 0);
}

/* A trial's run is provably the trial's: bound once, refused when another's. */
static void test_trial_runs(void **state)
{
    struct tu_store *f = *state;
    const char *specs[] = {"k=0..2"};
    struct sr_sweep def, sw, other;
    gen(&def, "b", specs, 1, 0, 0);
    assert_int_equal(sr_sweep_create(f->st, &def), 0);
    assert_int_equal(sr_sweep_read(f->st, "b", &sw), 0);
    assert_int_equal(strlen(sw.id), 32);
    /* no run yet, or one with only a lease: nothing to adopt, bound now */
    assert_int_equal(sr_sweep_run_owner(f->st, &sw, 0, "b-0"), 1);
    put(f, "b-1/LEASE", "{}");
    assert_int_equal(sr_sweep_bind_run(f->st, &sw, 1, "b-1"), 0);
    assert_int_equal(sr_sweep_bind_run(f->st, &sw, 1, "b-1"), 0);
    assert_int_equal(sr_sweep_run_owner(f->st, &sw, 1, "b-1"), 0);
    /* the same run as another trial, or a run with content but no record */
    assert_int_equal(sr_sweep_run_owner(f->st, &sw, 2, "b-1"), -EEXIST);
    put(f, "b-2/DONE", "");
    assert_int_equal(sr_sweep_bind_run(f->st, &sw, 2, "b-2"), -EEXIST);
    assert_non_null(strstr(sr_strerror(-EEXIST), "records no sweep"));
    /* a sweep of the same name defined again (another id) is another sweep */
    other = sw;
    snprintf(other.id, sizeof(other.id), "%s", "0123");
    assert_int_equal(sr_sweep_run_owner(f->st, &other, 1, "b-1"), -EEXIST);
    /* sweep init over runs it did not make: refused, nothing written */
    const char *specs2[] = {"k=0..3"};
    struct sr_sweep c;
    gen(&c, "b2", specs2, 1, 0, 0);
    put(f, "b2-3/ckpt/0000000001/MANIFEST.json", "{}");
    assert_int_equal(sr_sweep_create(f->st, &c), -ENOTEMPTY);
    assert_non_null(strstr(sr_strerror(-ENOTEMPTY), "b2-3"));
    assert_int_equal(sr_sweep_read(f->st, "b2", &other), -ENOENT);
    /* remove: the definition and the end marks go */
    struct sr_trial_end_info done = {.state = SR_TRIAL_DONE};
    assert_int_equal(sr_sweep_mark_end(f->st, "b", 0, &done), 0);
    assert_int_equal(sr_sweep_remove(f->st, "b"), 0);
    assert_int_equal(sr_sweep_read(f->st, "b", &other), -ENOENT);
    unsigned char ends[3];
    assert_int_equal(sr_sweep_list_ends(f->st, "b", 3, ends), 0);
    assert_int_equal(ends[0], SR_TRIAL_OPEN);
    sr_err_clear();
    sr_sweep_free(&c);
    sr_sweep_free(&sw);
    sr_sweep_free(&def);
}

static void test_hostile_definitions(void **state)
{
    struct tu_store *f = *state;
    static const char *const bodies[] = {
        "not json",
        "{\"format\":1}",
        "{\"format\":1,\"params\":[\"a\"],\"command\":[],\"trials\":[{\"a\":1}]}",
        "{\"format\":1,\"params\":[\"a\"],\"command\":[],\"trials\":[{\"b\":\"1\"}]}",
        "{\"format\":1,\"params\":[\"a\",\"A\"],\"command\":[],\"trials\":[]}",
        "{\"format\":1,\"params\":[\"../x\"],\"command\":[],\"trials\":[]}",
        "{\"format\":1,\"params\":[\"a\"],\"command\":[3],\"trials\":[]}",
        "{\"format\":1,\"params\":[\"a\"],\"command\":[],\"trials\":[{\"a\":\"x\\u0000y\"}]}",
    };
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        char name[32], key[96];
        snprintf(name, sizeof(name), "h%zu", i);
        snprintf(key, sizeof(key), "sweeps/%s/def/000000.json", name);
        put(f, key, bodies[i]);
        struct sr_sweep sw;
        if (sr_sweep_read(f->st, name, &sw) != -EBADMSG)
            fail_msg("accepted definition %zu: %s", i, bodies[i]);
    }
    put(f, "sweeps/newer/def/000000.json",
        "{\"format\":9,\"params\":[],\"command\":[],\"trials\":[]}");
    struct sr_sweep sw;
    assert_int_equal(sr_sweep_read(f->st, "newer", &sw), -EPROTONOSUPPORT);
    /* a gap in the parts: only the ones before it count */
    put(f, "sweeps/gap/def/000000.json",
        "{\"format\":1,\"sweep\":\"gap\",\"part\":0,\"params\":[\"a\"],\"command\":[],"
        "\"trials\":[{\"a\":\"1\"}]}");
    put(f, "sweeps/gap/def/000002.json",
        "{\"format\":1,\"sweep\":\"gap\",\"part\":2,\"trials\":[{\"a\":\"2\"}]}");
    assert_int_equal(sr_sweep_read(f->st, "gap", &sw), 0);
    assert_int_equal(sr_sweep_count(&sw), 1);
    sr_sweep_free(&sw);
    /* a part whose "sweep" or "part" is not its key's (copied from another
     * sweep, or from another position): the sweep is unreadable */
    put(f, "sweeps/gap/def/000001.json",
        "{\"format\":1,\"sweep\":\"gap\",\"part\":2,\"trials\":[{\"a\":\"2\"}]}");
    assert_int_equal(sr_sweep_read(f->st, "gap", &sw), -EBADMSG);
    put(f, "sweeps/gap/def/000001.json",
        "{\"format\":1,\"sweep\":\"other\",\"part\":1,\"trials\":[{\"a\":\"2\"}]}");
    assert_int_equal(sr_sweep_read(f->st, "gap", &sw), -EBADMSG);
    put(f, "sweeps/cp/def/000000.json",
        "{\"format\":1,\"sweep\":\"gap\",\"part\":0,\"params\":[\"a\"],\"command\":[],"
        "\"trials\":[{\"a\":\"1\"}]}");
    assert_int_equal(sr_sweep_read(f->st, "cp", &sw), -EBADMSG);
    put(f, "sweeps/np/def/000000.json",
        "{\"format\":1,\"params\":[\"a\"],\"command\":[],\"trials\":[{\"a\":\"1\"}]}");
    assert_int_equal(sr_sweep_read(f->st, "np", &sw), -EBADMSG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid_order),
        cmocka_unit_test(test_random_reproducible),
        cmocka_unit_test(test_random_in_range),
        cmocka_unit_test(test_int_step_log),
        cmocka_unit_test(test_absent_value),
        cmocka_unit_test(test_bad_specs),
        cmocka_unit_test(test_expand),
        cmocka_unit_test(test_names),
        cmocka_unit_test_setup_teardown(test_create_add, tu_store_setup, tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_search_space_add_at, tu_store_setup,
                                        tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_labels, tu_store_setup, tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_best_rule, tu_store_setup, tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_end_marks, tu_store_setup, tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_trial_runs, tu_store_setup, tu_store_teardown),
        cmocka_unit_test_setup_teardown(test_hostile_definitions, tu_store_setup,
                                        tu_store_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
