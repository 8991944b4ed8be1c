#!/usr/bin/env bash
# Population-based training (docs/sweeps.md, "Population-based training")
# on the file store (tests/e2e/pbt-body.sh).
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/storelib.sh"
store_start file
. "$SRCDIR/tests/e2e/pbt-body.sh"
test_done
