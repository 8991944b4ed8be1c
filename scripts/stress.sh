#!/usr/bin/env bash
# stress.sh [ROUNDS] - the whole ctest suite ROUNDS times (default 3) at
# ctest -jJOBS (SPOTRUN_STRESS_JOBS, default 4) while a CPU hog keeps every
# core busy: a test that waits for a time instead of an event fails here
# before it fails CI. Uses the build in SPOTRUN_STRESS_BUILD (default
# build/, built first with scripts/build.sh; an ASan+UBSan build is
# SPOTRUN_STRESS_BUILD=build-san SPOTRUN_STRESS_SANITIZE=1). Prints each
# round's failures and, at the end, every test that failed with how often,
# then "N passed, N failed" over all rounds; exits 1 if any round failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
jobs=${SPOTRUN_STRESS_JOBS:-4}
build=${SPOTRUN_STRESS_BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac

"$root/scripts/deps.sh"
[ -d "$root/tests/s3/node_modules/@20minutes/s3rver" ] ||
    (cd "$root/tests/s3" && npm ci --no-audit --no-fund --loglevel=error)
[ -d "$root/tests/azure/node_modules/azurite" ] ||
    (cd "$root/tests/azure" && npm ci --no-audit --no-fund --loglevel=error)
if [ "${SPOTRUN_STRESS_SANITIZE:-0}" = 1 ]; then
    "$root/scripts/build.sh" "$build" -DCMAKE_BUILD_TYPE=Debug -DSPOTRUN_SANITIZE=ON
else
    "$root/scripts/build.sh" "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi

# The hog: one busy loop per core, niced like nothing (they compete with
# the tests as other work on a shared machine does), killed on any exit.
hogs=()
stop_hogs() { [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null || true; }
trap stop_hogs EXIT
for _ in $(seq "$(nproc)"); do
    (while :; do :; done) &
    hogs+=($!)
done

log=$(mktemp -d "${TMPDIR:-/tmp}/spotrun-stress.XXXXXX")
passed=0 failed=0
for r in $(seq "$rounds"); do
    echo "== stress round $r of $rounds (ctest -j$jobs, $(nproc) hog(s))"
    start=$(date +%s)
    (cd "$build" && ctest -j"$jobs" --timeout 900 --output-on-failure) >"$log/round$r.log" 2>&1 || true
    p=$(sed -n 's/^[0-9]*% tests passed, \([0-9]*\) tests failed out of \([0-9]*\)$/\2 \1/p' "$log/round$r.log")
    [ -n "$p" ] || { echo "stress: round $r printed no ctest summary (see $log/round$r.log)"; exit 1; }
    set -- $p
    passed=$((passed + $1 - $2)) failed=$((failed + $2))
    echo "   $(($1 - $2)) passed, $2 failed in $(($(date +%s) - start))s"
    grep -E '^\s+[0-9]+ - .* \((Failed|Timeout|SEGFAULT|Child aborted|Not Run)' "$log/round$r.log" |
        sed 's/^/   /' || true
done
if [ "$failed" -gt 0 ]; then
    echo "== tests that failed (rounds), logs in $log:"
    grep -hE '^\s+[0-9]+ - .* \((Failed|Timeout|SEGFAULT|Child aborted|Not Run)' "$log"/round*.log |
        sed -E 's/^\s+[0-9]+ - ([^ ]+).*/\1/' | sort | uniq -c | sort -rn
fi
echo "stress: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
