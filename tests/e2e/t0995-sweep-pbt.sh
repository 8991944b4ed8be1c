#!/usr/bin/env bash
# Population-based training (docs/sweeps.md, "Population-based training")
# on the file store (tests/e2e/pbt-body.sh).
. "$(dirname "$0")/lib.sh"

store_dump() { cp -r "$SPOTRUN_STORE" "$1"; }

. "$SRCDIR/tests/e2e/pbt-body.sh"

test_done
