#!/usr/bin/env bash
# Early stopping (docs/sweeps.md, "Early stopping") on S3 (the test server
# with conditional writes): the same sweep as t0950
# (tests/e2e/early-stop-body.sh).
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/storelib.sh"
store_start s3
. "$SRCDIR/tests/e2e/early-stop-body.sh"
test_done
