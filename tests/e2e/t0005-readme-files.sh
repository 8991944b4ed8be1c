#!/usr/bin/env bash
# Every C source file is named in its folder's README (docs/internals.md,
# "The map"): tests/docs/readme_files.py fails, naming the file and the
# README, when one is not; a README that lists a file that is gone fails
# too. The tree as it is passes.
. "$(dirname "$0")/lib.sh"

check() { "$PY" "$SRCDIR/tests/docs/readme_files.py" "$@"; }

# A small tree: a library folder with its README, a test folder that
# borrows the README above it, and a glob for a family of files.
mkdir -p tree/lib/part tree/tests/fake tree/tests/unit &&
    touch tree/lib/part/a.c tree/lib/part/a.h tree/tests/fake/f.c tree/tests/unit/test_x.c &&
    printf '# lib/part\n\n## Files\n\n- `a.c`, `a.h`: the a.\n' >tree/lib/part/README.md &&
    printf '# tests\n\n`unit/test_*.c`, one per module.\n\n- `fake/f.c`: a fake.\n' \
        >tree/tests/README.md

test_expect_success 'a tree whose READMEs name every file passes in silence' '
    check tree >out 2>&1 &&
    test ! -s out
'

test_expect_success 'a new file not named in its folder README fails, naming both' '
    touch tree/lib/part/b.c &&
    expect_code 1 check tree >out 2>&1 &&
    cat out &&
    grep "^readme_files: lib/part/b.c is not named in lib/part/README.md: add a line for it" out &&
    test "$(wc -l <out)" = 1 &&
    rm tree/lib/part/b.c
'

test_expect_success 'a folder of sources without a README fails' '
    mkdir tree/lib/new && touch tree/lib/new/n.h &&
    expect_code 1 check tree >out 2>&1 &&
    grep "^readme_files: lib/new/ holds C sources but no README.md" out &&
    rm -r tree/lib/new
'

test_expect_success 'a test folder without a README borrows the one above it' '
    touch tree/tests/fake/g.c &&
    expect_code 1 check tree >out 2>&1 &&
    grep "^readme_files: tests/fake/g.c is not named in tests/README.md" out &&
    rm tree/tests/fake/g.c &&
    touch tree/tests/unit/test_y.c &&
    check tree
'

test_expect_success 'a README that lists a file that is gone fails' '
    rm tree/lib/part/a.h &&
    expect_code 1 check tree >out 2>&1 &&
    grep "^readme_files: lib/part/README.md lists a.h, which does not exist" out
'

test_expect_success 'every source file of spotrun is named in its folder README' '
    check "$SRCDIR"
'

test_done
