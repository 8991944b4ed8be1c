#!/usr/bin/env bash
# bench-preload.sh - the cost of the shim on the CUDA allocation hot path.
#
# Runs the same program (tests/fakecuda/bench.c: cudaMalloc + cudaFree pairs
# against the fake CUDA runtime, which allocates host memory) without and
# with libspotrun.so preloaded, in one run, single-threaded and with
# THREADS threads, and prints ns per pair and the difference: what the
# interception (guard, device query, limit check, pointer map, counters,
# the runtime->driver double hop) costs. Target: < 100 ns per pair, and no
# growth with threads (the hot path takes no lock).
#
# The fake's own pair is cheap (malloc + a small hash), so the difference
# is the shim's cost; against a real GPU it is noise next to cudaMalloc's
# microseconds.
#
# Environment: BUILD (default build), PAIRS (default 2000000), SIZE (4096),
# THREADS (default: the number of CPUs), REPEAT (default 3, best kept).
set -euo pipefail

BUILD=${BUILD:-build}
PAIRS=${PAIRS:-2000000}
SIZE=${SIZE:-4096}
THREADS=${THREADS:-$(nproc)}
REPEAT=${REPEAT:-3}
BENCH=$BUILD/tests/fakecuda/bench
SHIM=$BUILD/preload/libspotrun.so

die() { echo "bench-preload: $*" >&2; exit 1; }
[ -x "$BENCH" ] || die "no $BENCH (build first with the CUDA headers installed, or set BUILD)"
[ -f "$SHIM" ] || die "no $SHIM"
SHIM=$(readlink -f "$SHIM")

# best N [env...]: the lowest ns/pair of REPEAT runs.
best() {
    local threads=$1 best= v
    shift
    for _ in $(seq "$REPEAT"); do
        v=$(env "$@" "$BENCH" "$PAIRS" "$SIZE" "$threads" | sed -n 's/^ns_per_pair=//p')
        if [ -z "$best" ] || awk -v a="$v" -v b="$best" 'BEGIN{exit !(a < b)}'; then best=$v; fi
    done
    echo "$best"
}

printf '%-10s %8s %14s %14s %12s\n' "threads" "pairs" "no shim ns" "shim ns" "overhead ns"
for t in 1 "$THREADS"; do
    base=$(best "$t" LD_PRELOAD=)
    shim=$(best "$t" LD_PRELOAD="$SHIM")
    printf '%-10s %8s %14s %14s %12s\n' "$t" "$PAIRS" "$base" "$shim" \
        "$(awk -v a="$shim" -v b="$base" 'BEGIN{printf "%.1f", a - b}')"
    [ "$THREADS" = 1 ] && break
done
echo "target: overhead < 100 ns per pair (ns are wall time per pair per thread)"
