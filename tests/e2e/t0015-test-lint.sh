#!/usr/bin/env bash
# The tests themselves: no assertion that cannot fail. A test body runs
# under `set -e -o pipefail` (lib.sh), where a `! cmd` that is not the
# body's last command asserts nothing, nor does a link of an && chain that
# is not the body's last statement, and `producer | grep -q` may fail the
# producer of SIGPIPE. testlint.py finds all three (docs in it).
. "$(dirname "$0")/lib.sh"

LINT=$SRCDIR/tests/e2e/testlint.py

test_expect_success 'the lint finds each planted dead assertion and passes the good forms' '
    "$PY" "$LINT" --self-test
'

test_expect_success 'the lint fails on a bare ! mid-body, an early reader and a dead && link, naming their lines' '
    cat >t9999-planted.sh <<-\EOF &&
	. lib.sh
	test_expect_success '"'"'planted'"'"' '"'"'
	    "$SPOTRUN" run --run-id r -- true
	    ! grep "lost" run.log
	    "$SPOTRUN" ls | grep -q "^r "
	    "$SPOTRUN" pull r out && test -s out/f
	    grep done run.log
	'"'"'
	test_done
	EOF
    expect_code 1 "$PY" "$LINT" t9999-planted.sh >lint.out &&
    cat lint.out &&
    grep "^t9999-planted.sh:4: test body: .! \.\.\.. here asserts nothing" lint.out &&
    grep "^t9999-planted.sh:5: test body: .| grep. may stop reading early" lint.out &&
    grep "^t9999-planted.sh:6: test body: if this fails, the rest of its && chain is skipped" lint.out &&
    test "$(wc -l <lint.out)" = 3
'

test_expect_success 'lib.sh runs the bodies with errexit and pipefail' '
    "$PY" "$LINT" "$SRCDIR/tests/e2e/lib.sh" &&
    sed "s/set -e -o pipefail;/set -e;/" "$SRCDIR/tests/e2e/lib.sh" >lib.sh &&
    expect_code 1 "$PY" "$LINT" lib.sh >lib.out &&
    grep "pipefail" lib.out
'

test_expect_success 'refute fails when its command succeeds, or when grep cannot read' '
    echo abc >f &&
    refute grep x f &&
    refute false &&
    expect_code 1 refute grep b f >out1 &&
    grep "expected failure, but it succeeded: grep b f" out1 &&
    grep "  | abc" out1 &&
    expect_code 1 refute grep b missing >out2 &&
    grep "expected exit 1 (no), got 2: grep b missing" out2
'

test_expect_success 'no e2e script holds a dead assertion or an early reader' '
    "$PY" "$LINT" "$SRCDIR"/tests/e2e/*.sh
'

test_done
