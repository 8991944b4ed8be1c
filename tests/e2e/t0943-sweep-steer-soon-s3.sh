#!/usr/bin/env bash
# t0942's steering within seconds (a cancel of a trial run by hand, a pause
# --stop under sweep work) on the S3 test server with conditional writes,
# plus the steering's request count per trial-hour
# (tests/e2e/steer-soon-body.sh).
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/storelib.sh"
store_start s3
. "$SRCDIR/tests/e2e/steer-soon-body.sh"
test_done
