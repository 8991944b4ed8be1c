#!/usr/bin/env bash
# t0970's claim order (a preempted and a paused trial claimed before fresh
# ones) on the S3 test server with conditional writes
# (tests/e2e/claim-order-body.sh).
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/storelib.sh"
store_start s3
. "$SRCDIR/tests/e2e/claim-order-body.sh"
test_done
