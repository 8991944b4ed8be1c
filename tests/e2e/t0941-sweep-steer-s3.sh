#!/usr/bin/env bash
# t0940's steering (cancel, retry, pause, resume, priority, racing cancels,
# the views) on the S3 test server with conditional writes
# (tests/e2e/steer-body.sh).
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/storelib.sh"
store_start s3
. "$SRCDIR/tests/e2e/steer-body.sh"
test_done
