#!/usr/bin/env bash
# Population-based training (docs/sweeps.md, "Population-based training")
# on S3 (the test server with conditional writes): the same sweep as t0995
# (tests/e2e/pbt-body.sh).
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/storelib.sh"
store_start s3
. "$SRCDIR/tests/e2e/pbt-body.sh"
test_done
