#!/usr/bin/env bash
# Steering a sweep (docs/sweeps.md, "Steering") on the file store: cancel,
# retry, pause, resume, priority, racing cancels, the views
# (tests/e2e/steer-body.sh).
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/storelib.sh"
store_start file
. "$SRCDIR/tests/e2e/steer-body.sh"
test_done
