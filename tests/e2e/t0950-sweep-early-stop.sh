#!/usr/bin/env bash
# Early stopping (docs/sweeps.md, "Early stopping") on the file store:
# three `sweep work` workers; bad trials pruned at the first rung, good
# ones run to the end, a preemption in the middle of a rung changes no
# decision, a pruned trial refused until `sweep retry` (tests/e2e/early-stop-body.sh).
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/storelib.sh"
store_start file
. "$SRCDIR/tests/e2e/early-stop-body.sh"
test_done
