#!/usr/bin/env bash
# scripts/house.py (scripts/test.sh's house stage; tests/README.md, "House
# limits"): the duplicate pairs outside tests (at most 5) and the C
# functions over 100 lines (none), counted without any outside tool. It
# names a pair of files that repeat a run of lines, does not count a run
# of boilerplate (frees, closes, returns), names a function over the
# limit, and exits 1 over either limit. The tree as it is passes.
. "$(dirname "$0")/lib.sh"

test_expect_success 'spotrun as it is: within the limits' '
    "$PY" "$SRCDIR/scripts/house.py" >out 2>&1 &&
    cat out &&
    grep -E "^duplicate pairs: [0-5] \(limit 5; [0-9]+ boilerplate\) in [0-9]+ files$" out &&
    grep "^procedures over 100 lines: 0$" out
'

# A small git tree with the two scripts and sources of its own.
mkdir -p tree/scripts tree/lib && cp "$SRCDIR/scripts/house.py" "$SRCDIR/scripts/proc-length.py" tree/scripts/ &&
    git -C tree init -q && git -C tree config user.email t@t && git -C tree config user.name t
house() { "$PY" tree/scripts/house.py "$@"; }
# body NAME: a function with eight lines of real work.
body() {
    cat <<C
int $1(const char *s, int n)
{
    int total = 0;
    for (int i = 0; i < n; i++)
        total += s[i] * (i + 3);
    if (total > 4096)
        total = total % 4093 + strlen(s);
    total ^= (int)strtol(s, NULL, 16);
    return total > n ? total - n : n - total;
}
C
}

test_expect_success 'two files repeating a run of real lines are a pair, and over the limit fail' '
    body alpha >tree/lib/a.c && body beta >tree/lib/b.c && git -C tree add -A &&
    expect_code 1 house --pairs 0 >out 2>&1 &&
    cat out &&
    grep -E "^lib/a.c:[0-9]+-[0-9]+ ~ lib/b.c:[0-9]+-[0-9]+$" out &&
    grep "^duplicate pairs: 1 (limit 0;" out &&
    house --pairs 1 >out 2>&1 &&
    grep "^duplicate pairs: 1 (limit 1;" out
'

test_expect_success 'a run of frees, closes and returns is boilerplate: not counted' '
    rm tree/lib/b.c &&
    for f in c d; do
        printf "void drop_$f(struct x *x)\n{\n    free(x->a);\n    free(x->b);\n    close(x->fd);\n    free(x->c);\n    sr_thing_free(&x->t);\n    free(x);\n    return;\n}\n" >tree/lib/$f.c
    done &&
    git -C tree add -A &&
    house --pairs 0 -v >out 2>&1 &&
    cat out &&
    grep "^lib/c.c:.* ~ lib/d.c:.* boilerplate" out &&
    grep "^duplicate pairs: 0 (limit 0; 1 boilerplate)" out
'

test_expect_success 'a function over 100 lines is named and fails' '
    { echo "int long_one(int x)"; echo "{"; for i in $(seq 1 105); do echo "    x += $i;"; done; echo "    return x;"; echo "}"; } >tree/lib/e.c &&
    git -C tree add -A &&
    expect_code 1 house >out 2>&1 &&
    grep -E "^ +10[0-9] lib/e.c:1 long_one$" out &&
    grep "^procedures over 100 lines: 1$" out
'

test_done
