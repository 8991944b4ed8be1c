#!/usr/bin/env bash
# One owner per run on Azure Blob (Azurite; tests/e2e/lease-body.sh): the
# lease is written with If-None-Match: * / If-Match on Put Blob; a second
# wrapper is refused, a paused owner loses the run, racing pushes never
# both write; a block upload onto an existing blob is refused by its
# conditional Put Block List.
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/storelib.sh"
store_start az
. "$SRCDIR/tests/e2e/lease-body.sh"
test_done
