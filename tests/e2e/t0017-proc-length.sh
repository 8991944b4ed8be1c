#!/usr/bin/env bash
# scripts/proc-length.py (scripts/test.sh's proc-length stage): names each
# C function over N lines, from its signature to its closing brace, and
# fails when one is over 100; an option table inside a function is data,
# not counted; comments and strings with braces do not confuse it; and no
# function of the tree outside tests/ and examples/ is over 100 lines.
. "$(dirname "$0")/lib.sh"

PL=$SRCDIR/scripts/proc-length.py

# cfunc NAME LINES [ENTRIES]: a C function of LINES lines, and then of an
# option table of ENTRIES entries (ENTRIES + 2 lines more), and a blank line.
cfunc() {
    printf 'static int %s(int x)\n{\n' "$1"
    if [ "${3:-0}" -gt 0 ]; then
        printf '    const struct sr_opt opts[] = {\n'
        for _ in $(seq "$3"); do printf '        {"a", 0, NULL, 0, &x, "{", "}"},\n'; done
        printf '        SR_OPTS_COMMON};\n'
    fi
    for _ in $(seq $(($2 - 3))); do printf '    x += 1; /* { */\n'; done
    printf '}\n\n'
}

test_expect_success 'a function over 100 lines is named with its length and fails the check' '
    { cfunc short 52 && cfunc long 101 && cfunc ok 100; } >a.c &&
    expect_code 1 python3 "$PL" a.c >out 2>err &&
    cat out err &&
    test "$(cat out)" = "  101 a.c:54 long" &&
    grep "^proc-length: 1 function(s) over 100 lines$" err
'

test_expect_success '-n lists shorter ones, longest first; --max sets the limit' '
    { cfunc short 52 && cfunc long 101; } >b.c &&
    python3 "$PL" -n 40 --max 101 b.c >out &&
    printf "  101 b.c:54 long\n   52 b.c:1 short\n" >want &&
    diff want out
'

test_expect_success 'an option table is data: a 140-line function with a 42-line table passes' '
    cfunc withtable 98 40 >c.c &&
    test "$(wc -l <c.c)" = 141 &&
    python3 "$PL" c.c >out &&
    test ! -s out &&
    python3 "$PL" -n 0 c.c >out &&
    test "$(cat out)" = "   98 c.c:1 withtable"
'

test_expect_success 'no function of the tree outside tests/ and examples/ is over 100 lines' '
    python3 "$PL" >out 2>err || { cat out err; exit 1; }
'

test_done
