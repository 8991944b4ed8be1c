#!/usr/bin/env bash
# test.sh - the whole test suite on a fresh machine: installs what is
# missing, checks the formatting, that no function is over 100 lines
# (scripts/proc-length.py) and at most 5 duplicate pairs are outside tests
# (scripts/house.py), builds with -Werror, runs ctest; then the
# same suite again with ASan+UBSan (SPOTRUN_SANITIZE=ON), ThreadSanitizer
# and valgrind checks (scripts/check-threads-memory.sh), a short libFuzzer
# pass over the parsers, and spotrun in a real container runtime, installed
# from its .deb (scripts/container-test.sh; skipped with the reason where
# podman cannot run).
#
# After the RelWithDebInfo build, three tracks run at once, each stage after
# the one before it in its track:
#   suites:    ctest (RelWithDebInfo), then ctest (ASan+UBSan, a Debug
#              build) once its build is done, then leftovers: fails
#              when a test left a process running (tests/leftovers.py)
#   checks:    build (ASan+UBSan), TSan, valgrind, fuzz, then the builds
#              no suite runs on: Release with gcc and Debug with clang,
#              each under -Werror (their warnings differ: gcc -O3's
#              -Wformat-truncation and -Warray-bounds, clang's own)
#   container: the container test (its image is built once per run)
# The suites mostly wait on timers, so ctest runs at -j(2 x cores, at least
# 4) beside the CPU-bound checks; the two suites never overlap (one Slurm
# cluster at a time on a host: tests/CMakeLists.txt's RESOURCE_LOCK holds
# within one ctest only). Each stage's output goes to its own log, printed
# when the stage ends; the end is a table of each stage's seconds and
# status (scripts/lib-stages.sh), also on failure. Exits 1 when a stage
# failed, naming it.
#
# Environment: SPOTRUN_TEST_RGW=1 adds the S3 family against a local Ceph
# RGW (tests/CMakeLists.txt, docs/s3.md); SPOTRUN_TEST_SANITIZE=0 skips the ASan+UBSan build and suite,
# SPOTRUN_TEST_THREADS_MEMORY=0 TSan and valgrind, SPOTRUN_TEST_BUILDS=0
# the Release (gcc) and clang builds, SPOTRUN_TEST_CONTAINER=0 the container
# test; SPOTRUN_TEST_FUZZ sets the seconds per fuzz target
# (default 20; 0 skips). SPOTRUN_TEST_JOBS sets ctest's -j;
# SPOTRUN_TEST_FILTER restricts both suites to the tests matching a regex
# (ctest -R; for a quick run of the pipeline); SPOTRUN_TEST_LOGS the
# directory of the logs (default a new one under $TMPDIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/lib-stages.sh"

jobs=${SPOTRUN_TEST_JOBS:-$((2 * $(nproc)))}
[ "$jobs" -ge 4 ] || jobs=4
filter=()
[ -z "${SPOTRUN_TEST_FILTER:-}" ] || filter=(-R "$SPOTRUN_TEST_FILTER")
fuzz=${SPOTRUN_TEST_FUZZ:-20}
logs=${SPOTRUN_TEST_LOGS:-$(mktemp -d "${TMPDIR:-/tmp}/spotrun-test.XXXXXX")}
stage_init "$logs"

tracks=()
finish() {
    local rc=$?
    local t
    # a run cut short (a signal, a failed setup stage): its tracks go too
    for t in ${tracks[@]+"${tracks[@]}"}; do stage_kill_tree "$t"; done
    stage_table || [ "$rc" -ne 0 ] || rc=1
    exit $rc
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The S3 tests' server (@20minutes/s3rver, pinned by tests/s3/package-lock.json)
# and the Azure ones' (azurite, pinned by tests/azure/package-lock.json).
npm_ci() {
    [ -d "$root/tests/s3/node_modules/@20minutes/s3rver" ] ||
        (cd "$root/tests/s3" && npm ci --no-audit --no-fund --loglevel=error)
    [ -d "$root/tests/azure/node_modules/azurite" ] ||
        (cd "$root/tests/azure" && npm ci --no-audit --no-fund --loglevel=error)
}
# Every process the suites start carries SPOTRUN_TEST_TAG; the leftovers
# stage kills and names any still running once both have ended (each e2e
# script is already checked on its own by tests/leftovers.py; this catches
# what a script killed at its timeout, or a unit test, left).
tag=spotrun-test-$$
suite() ( # BUILD_DIR TIMEOUT: ctest there
    export SPOTRUN_TEST_TAG=$tag
    cd "$1" && ctest -j"$jobs" --output-on-failure --timeout "$2" ${filter[@]+"${filter[@]}"}
)

track_suites() {
    stage ctest suite "$root/build" 600 || true
    if [ "${SPOTRUN_TEST_SANITIZE:-1}" != 0 ]; then
        stage_after build-asan ctest-asan suite "$root/build-san" 900 || true
    else
        stage_skip ctest-asan "SPOTRUN_TEST_SANITIZE=0"
    fi
    stage leftovers python3 "$root/tests/leftovers.py" --sweep "$tag" || true
}

track_checks() {
    if [ "${SPOTRUN_TEST_SANITIZE:-1}" != 0 ]; then
        stage build-asan "$root/scripts/build.sh" "$root/build-san" -DCMAKE_BUILD_TYPE=Debug \
            -DSPOTRUN_SANITIZE=ON "$rgw" || true
    else
        stage_skip build-asan "SPOTRUN_TEST_SANITIZE=0"
    fi
    if [ "${SPOTRUN_TEST_THREADS_MEMORY:-1}" != 0 ]; then
        stage tsan "$root/scripts/check-threads-memory.sh" tsan || true
        SPOTRUN_TEST_BUILT=1 stage valgrind "$root/scripts/check-threads-memory.sh" valgrind || true
    else
        stage_skip tsan "SPOTRUN_TEST_THREADS_MEMORY=0"
        stage_skip valgrind "SPOTRUN_TEST_THREADS_MEMORY=0"
    fi
    if [ "$fuzz" != 0 ]; then
        stage fuzz "$root/scripts/fuzz.sh" "$fuzz" || true
    else
        stage_skip fuzz "SPOTRUN_TEST_FUZZ=0"
    fi
    if [ "${SPOTRUN_TEST_BUILDS:-1}" != 0 ]; then
        stage build-release "$root/scripts/build.sh" "$root/build-release" \
            -DCMAKE_BUILD_TYPE=Release || true
        stage build-clang "$root/scripts/build.sh" "$root/build-clang" \
            -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang || true
    else
        stage_skip build-release "SPOTRUN_TEST_BUILDS=0"
        stage_skip build-clang "SPOTRUN_TEST_BUILDS=0"
    fi
}

track_container() {
    if [ "${SPOTRUN_TEST_CONTAINER:-1}" != 0 ]; then
        stage container "$root/scripts/container-test.sh" || true
    else
        stage_skip container "SPOTRUN_TEST_CONTAINER=0"
    fi
}

stage_say "== spotrun tests: logs in $logs; ctest -j$jobs${SPOTRUN_TEST_FILTER:+ -R $SPOTRUN_TEST_FILTER}"
stage deps "$root/scripts/deps.sh"
stage npm npm_ci
stage format "$root/scripts/check-format.sh" || true # reported at the end; the tests still run
stage proc-length python3 "$root/scripts/proc-length.py" || true # no function over 100 lines
stage house python3 "$root/scripts/house.py" || true # at most 5 duplicate pairs (tests/README.md)
rgw=-DSPOTRUN_TEST_RGW=$([ "${SPOTRUN_TEST_RGW:-0}" = 1 ] && echo ON || echo OFF)
stage build "$root/scripts/build.sh" "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$rgw"

# (all in the background: this shell's wait is what a signal interrupts)
track_suites &
tracks+=($!)
track_checks &
tracks+=($!)
track_container &
tracks+=($!)
for t in "${tracks[@]}"; do wait "$t" || true; done
tracks=()
