#!/usr/bin/env bash
# Steering reaches a running trial within seconds (docs/sweeps.md,
# "Steering"), not at the budget's poll, on the file store: a cancel of a
# trial run by hand and a pause --stop under sweep work
# (tests/e2e/steer-soon-body.sh).
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/storelib.sh"
store_start file
. "$SRCDIR/tests/e2e/steer-soon-body.sh"
test_done
