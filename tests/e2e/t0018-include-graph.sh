#!/usr/bin/env bash
# Every #include "..." of spotrun's sources keeps to the layer picture
# (docs/internals.md, "The include graph"): tests/docs/include_graph.py
# fails, printing file:line, on a folder the table does not name, an
# include of a folder its row does not allow, and a header the table
# holds back (the exit codes outside runtime/, the shim's inside). The
# tree as it is passes.
. "$(dirname "$0")/lib.sh"

check() { "$PY" "$SRCDIR/tests/docs/include_graph.py" "$@"; }

# A small tree: layers, a held-back header, and the table (mid is named
# there before it has a file).
mkdir -p tree/docs tree/low tree/high tree/tests/unit &&
    printf '#include "low.h"\n#include "codes.h"\n' >tree/high/high.c &&
    printf '#include "low.h"\n' >tree/low/low.c &&
    touch tree/low/low.h tree/low/codes.h &&
    printf '#include "high.h"\n' >tree/tests/unit/test_low.c &&
    cat >tree/docs/internals.md <<'DOC'
# layers

<!-- include-graph: folders -->
| folder | may include |
| --- | --- |
| `low` | |
| `high` | `low` |
| `mid` | `low` |

<!-- include-graph: headers -->
| header | outside its folder, included only by |
| --- | --- |
| `low/codes.h` | `high` |
DOC

test_expect_success 'a tree that keeps to its table passes in silence' '
    check tree >out 2>&1 &&
    test ! -s out
'

test_expect_success 'an include upwards fails, naming the file, the line and the table' '
    printf "#include \"low.h\"\n#include \"high.h\"\n" >tree/low/low.c &&
    touch tree/high/high.h &&
    expect_code 1 check tree >out 2>&1 &&
    cat out &&
    grep "^include_graph: low/low.c:2: #include \"high.h\": low may not include high (high/high.h): docs/internals.md does not allow it" out &&
    test "$(wc -l <out)" = 1 &&
    printf "#include \"low.h\"\n" >tree/low/low.c
'

test_expect_success 'a folder the table does not name fails' '
    mkdir tree/side && printf "#include \"low.h\"\n" >tree/side/s.c &&
    expect_code 1 check tree >out 2>&1 &&
    grep "^include_graph: side/s.c:1: folder side is not in docs/internals.md.s table of folders" out &&
    rm -r tree/side
'

test_expect_success 'a held-back header included by a folder it does not name fails' '
    mkdir tree/mid && printf "#include \"codes.h\"\n" >tree/mid/m.c &&
    expect_code 1 check tree >out 2>&1 &&
    cat out &&
    grep "^include_graph: mid/m.c:1: #include \"codes.h\": low/codes.h is held back: docs/internals.md lets only high include it" out &&
    rm -r tree/mid
'

test_expect_success 'a header no folder holds fails' '
    printf "#include \"gone.h\"\n" >tree/high/g.c &&
    expect_code 1 check tree >out 2>&1 &&
    grep "^include_graph: high/g.c:1: #include \"gone.h\": no source folder holds it" out &&
    rm tree/high/g.c
'

test_expect_success 'storage may not include the exit codes: they are runtime'"'"'s' '
    mkdir -p src &&
    cp -r "$SRCDIR/docs" "$SRCDIR/common" "$SRCDIR/storage" src/ &&
    printf "#include \"exits.h\"\n" >>src/storage/run/lease.c &&
    expect_code 1 check src >out 2>&1 &&
    cat out &&
    grep "^include_graph: storage/run/lease.c:[0-9]*: #include \"exits.h\": common/exits.h is held back" out
'

test_expect_success 'every include of spotrun keeps to docs/internals.md' '
    check "$SRCDIR"
'

test_done
