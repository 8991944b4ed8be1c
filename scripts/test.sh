#!/usr/bin/env bash
# test.sh - the whole test suite on a fresh machine: installs what is
# missing, checks the formatting, builds with -Werror, runs ctest; then the same suite again with
# ASan+UBSan (SPOTRUN_SANITIZE=ON), then ThreadSanitizer and valgrind checks
# (scripts/check-threads-memory.sh), then a short libFuzzer pass over the
# parsers. SPOTRUN_TEST_SANITIZE=0 skips the second pass,
# SPOTRUN_TEST_THREADS_MEMORY=0 the TSan + valgrind pass; SPOTRUN_TEST_FUZZ
# sets the seconds per fuzz target (0 skips). Last, spotrun in a real
# container runtime, installed from its .deb (scripts/container-test.sh;
# skipped with the reason where podman cannot run; SPOTRUN_TEST_CONTAINER=0
# skips it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)

"$root/scripts/deps.sh"

# The S3 tests' server (@20minutes/s3rver, pinned by tests/s3/package-lock.json).
if [ ! -d "$root/tests/s3/node_modules/@20minutes/s3rver" ]; then
    echo "== npm ci (tests/s3)"
    (cd "$root/tests/s3" && npm ci --no-audit --no-fund --loglevel=error)
fi

echo "== format (.clang-format)"
"$root/scripts/check-format.sh"

echo "== build (Release, -Werror)"
"$root/scripts/build.sh" "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
echo "== ctest"
(cd "$root/build" && ctest -j"$jobs" --output-on-failure --timeout 600)

if [ "${SPOTRUN_TEST_SANITIZE:-1}" != 0 ]; then
    echo "== build (ASan+UBSan)"
    "$root/scripts/build.sh" "$root/build-san" -DCMAKE_BUILD_TYPE=Debug -DSPOTRUN_SANITIZE=ON
    echo "== ctest (ASan+UBSan)"
    (cd "$root/build-san" && ctest -j"$jobs" --output-on-failure --timeout 900)
fi

if [ "${SPOTRUN_TEST_THREADS_MEMORY:-1}" != 0 ]; then
    echo "== ThreadSanitizer and valgrind"
    "$root/scripts/check-threads-memory.sh"
fi

if [ "${SPOTRUN_TEST_FUZZ:-20}" != 0 ]; then
    echo "== fuzz (${SPOTRUN_TEST_FUZZ:-20}s per target; scripts/fuzz.sh runs longer)"
    "$root/scripts/fuzz.sh" "${SPOTRUN_TEST_FUZZ:-20}"
fi

if [ "${SPOTRUN_TEST_CONTAINER:-1}" != 0 ]; then
    echo "== container (podman, the .deb in the user's PyTorch image)"
    "$root/scripts/container-test.sh"
fi
