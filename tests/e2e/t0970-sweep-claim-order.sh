#!/usr/bin/env bash
# Claim order (docs/sweeps.md, "sweep work") on the file store: at equal
# priority a `sweep work` worker claims a trial that ran before (preempted,
# or stopped by `sweep pause --stop`) before any fresh one, and it resumes
# from its checkpoint (tests/e2e/claim-order-body.sh).
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/storelib.sh"
store_start file
. "$SRCDIR/tests/e2e/claim-order-body.sh"
test_done
