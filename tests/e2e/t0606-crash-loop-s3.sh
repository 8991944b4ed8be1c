#!/usr/bin/env bash
# The crash-consistency loop (tests/e2e/crashloop.py, see t0605) on S3:
# the upload, the manifest and a lease renewal are interrupted while their
# request is held in the fault proxy (tests/s3/faultproxy.py: its body half
# sent, or done by the server and not yet answered), then the wrapper is
# killed. SPOTRUN_CRASH_SEED=S replays a sequence; SPOTRUN_CRASH_N sets the
# iterations.
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/s3lib.sh"

seed=${SPOTRUN_CRASH_SEED:-$(date +%s)}
n=${SPOTRUN_CRASH_N:-6}
export SPOTRUN_INJECT_LIB=${SPOTRUN_INJECT_LIB:-$SRCDIR/build/tests/faults/libspotrun-inject.so}
S3_CONDITIONAL=1 s3_start # conditional writes, as S3 has them

test_expect_success "$n interrupted runs on S3 all recover, no user file changes" '
    code=0
    "$PY" "$SRCDIR/tests/e2e/crashloop.py" --store "$SPOTRUN_STORE" --s3-url "$S3_URL" -n "$n" \
        --seed "$seed" --dir "$TRASH/loop" >loop.out 2>&1 || code=$?
    cat loop.out
    test "$code" -eq 0
'

test_done
