#!/usr/bin/env bash
# Population-based training (docs/sweeps.md, "Population-based training")
# on S3 (the test server with conditional writes): the same sweep as t0995
# (tests/e2e/pbt-body.sh).
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/s3lib.sh"
S3_CONDITIONAL=1 s3_start

store_dump() { awscli s3 cp --recursive --quiet "s3://bkt/$test_name/" "$1/"; }

. "$SRCDIR/tests/e2e/pbt-body.sh"

test_done
