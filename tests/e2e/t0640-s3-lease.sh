#!/usr/bin/env bash
# One owner per run on S3 (tests/e2e/lease-body.sh): the lease is written
# with If-None-Match / If-Match; a second wrapper is refused, a paused
# owner loses the run, racing pushes never both write; a server that takes
# bare ETags only, and one that ignores conditional writes (stock s3rver).
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/storelib.sh"
store_start s3
. "$SRCDIR/tests/e2e/lease-body.sh"
test_done
