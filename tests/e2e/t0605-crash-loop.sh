#!/usr/bin/env bash
# The crash-consistency loop on a file store (tests/e2e/crashloop.py):
# trainers that save in place under --settle and with `spotrun commit`,
# interrupted at random points (kill -9 of the job mid-save, a notice
# mid-save, kill -9 of the wrapper mid-stage, mid-upload, mid-manifest,
# mid-lease-renewal or at a random time), then rerun by a new node: each
# run resumes from a checkpoint its trainer verifies (or starts fresh only
# when none was durable), ends with the one correct state, and no user file
# changes. Seeded: SPOTRUN_CRASH_SEED=S replays a sequence;
# SPOTRUN_CRASH_N sets the iterations (scripts/crash.sh N for long runs).
. "$(dirname "$0")/lib.sh"

seed=${SPOTRUN_CRASH_SEED:-$(date +%s)}
n=${SPOTRUN_CRASH_N:-6}
export SPOTRUN_INJECT_LIB=${SPOTRUN_INJECT_LIB:-$SRCDIR/build/tests/faults/libspotrun-inject.so}

test_expect_success "$n interrupted runs on a file store all recover, no user file changes" '
    code=0
    "$PY" "$SRCDIR/tests/e2e/crashloop.py" --store "$TRASH/store" -n "$n" --seed "$seed" \
        --dir "$TRASH/loop" >loop.out 2>&1 || code=$?
    cat loop.out
    test "$code" -eq 0
'

test_done
