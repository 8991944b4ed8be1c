#!/usr/bin/env bash
# check-threads-memory.sh - the two checks the sanitizer pass does not do:
#   1. ThreadSanitizer over the threaded parts (parallel codec, stager and
#      persister threads, the thread-to-loop queue): their unit tests in a
#      -fsanitize=thread build,
#      and the S3 delta test (download ring and codec threads);
#   2. valgrind (memcheck) on the core scenarios: push, pull, and a run that
#      crashes, restarts from its checkpoint, is preempted and resumes.
# check-threads-memory.sh tsan runs the first alone, valgrind the second
# (scripts/test.sh runs them as two stages; SPOTRUN_TEST_BUILT=1 there: build/
# is up to date, and its suite may be running, so it is not rebuilt).
# Exits non-zero on any report.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
which=${1:-all}
case $which in tsan | valgrind | all) ;; *)
    echo "usage: check-threads-memory.sh [tsan|valgrind] (default both)" >&2
    exit 64
    ;;
esac

tsan_checks() {
    echo "== ThreadSanitizer"
    "$root/scripts/build.sh" "$root/build-tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPOTRUN_TSAN=ON >/dev/null
    (cd "$root/build-tsan" && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
        ctest -j"$(nproc)" --output-on-failure -R "unit/(test_codec|test_checkpointer|test_evq|test_catalog|test_store|test_control|test_lease|test_preload_account)")
    # the threaded end-to-end tests, at once (they wait on timers more than
    # on the CPU): S3 downloads (the ring's download thread and the codec's
    # readers, whole objects and a delta's planned reads of older ones); the
    # GPU utilization sampler thread beside the loop and the metrics
    # observer; the summary writer's thread, stats' parallel reads (file
    # and S3), the placement query on the notice watcher's thread
    (cd "$root/build-tsan" && TSAN_OPTIONS="halt_on_error=1 exitcode=66" \
        ctest -j3 --output-on-failure \
        -R "e2e/(t0225-s3-delta|t0780-gpu-util|t0771-stats|t0772-stats-summary|t0785-placement)|unit/test_gpu_stats")

    # sweep show reads the trials' histories on a thread pool
    (tsan=$root/build-tsan/runtime/spotrun scratch=$(mktemp -d)
     trap 'rm -rf "$scratch"' EXIT
     export SPOTRUN_STORE=$scratch/store SPOTRUN_WORK_DIR=$scratch/work SPOTRUN_QUIET=1 \
         TSAN_OPTIONS="halt_on_error=1 exitcode=66"
     "$tsan" sweep init tsan --param k=0..39 -- sh -c '"$SPOTRUN_BIN" metric loss=0.{k}'
     "$tsan" sweep work tsan --slots 4 --poll 100ms
     "$tsan" sweep show tsan --threads 8 >/dev/null
     "$tsan" sweep show tsan --json --threads 8 >/dev/null
     echo "sweep: clean")
}
if [ "$which" != valgrind ]; then tsan_checks; fi
[ "$which" != tsan ] || exit 0

echo "== valgrind (memcheck) on the core scenarios"
command -v valgrind >/dev/null || { echo "valgrind is required (apt-get install valgrind)" >&2; exit 1; }
[ "${SPOTRUN_TEST_BUILT:-0}" = 1 ] || "$root/scripts/build.sh" "$root/build" >/dev/null
spotrun=$root/build/runtime/spotrun
logreg=$root/build/examples/logreg
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export SPOTRUN_STORE=$scratch/store SPOTRUN_WORK_DIR=$scratch/work
vg() { valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    --trace-children=no "$@"; }
mkdir -p "$scratch/src/sub"
head -c 6000000 /dev/urandom >"$scratch/src/blob"
seq 100000 >"$scratch/src/sub/numbers"
vg "$spotrun" push -q vg "$scratch/src" --step 1
vg "$spotrun" pull -q vg "$scratch/out"
diff -r "$scratch/src" "$scratch/out"
vg "$spotrun" show vg >/dev/null
vg "$spotrun" ls >/dev/null
vg "$spotrun" gc -q vg --keep 1
vg "$spotrun" sweep init -q vgs --param a=1,2 --param b=0..1 -- sh -c 'exit 0'
vg "$spotrun" sweep work -q vgs --slots 2 --poll 100ms
vg "$spotrun" sweep show vgs >/dev/null
vg "$spotrun" sweep report vgs -o "$scratch/vgs.svg"
# crash at 700 -> restart from the checkpoint at 500 -> finish
vg "$spotrun" run -q --run-id vgrun --backoff 10ms -- "$logreg" --steps 1500 --save-every 500 \
    --crash-at 700 >/dev/null
# preempted by a notice, then resumed
(for _ in $(seq 600); do [ -S "$SPOTRUN_WORK_DIR/vgrun2/control.sock" ] && break; sleep 0.1; done
 sleep 1; "$spotrun" notify -q --run-id vgrun2) &
code=0
vg "$spotrun" run -q --run-id vgrun2 -- "$logreg" --steps 100000 --save-every 0 --pace-ms 1 \
    >/dev/null || code=$?
wait
[ "$code" -eq 75 ] || { echo "expected exit 75 from the preempted run, got $code" >&2; exit 1; }
echo "valgrind: clean"
