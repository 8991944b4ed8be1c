#!/usr/bin/env bash
# bench-preload.sh - the cost of the shim on the CUDA allocation hot path.
#
# Runs the same program (tests/fakecuda/bench.c: cudaMalloc + cudaFree pairs
# against the fake CUDA runtime, which allocates host memory) without and
# with libspotrun.so preloaded, in one run, for each thread count, and
# prints ns per pair (per thread, best of 5 rounds in a run; past the CPU
# count scaled to CPU time, see one()) as the best and the median of REPEAT
# runs, and the differences: what
# the interception (guard, device query, quota, pointer map, counters, the
# runtime->driver double hop) costs. Runs with and without the shim
# alternate, so that drift on a shared machine hits both. Target: < 100 ns
# per pair, and no growth with threads (the hot path takes no lock and
# shares no cache line between threads).
#
# The fake's own pair is cheap (malloc + a striped-lock hash), so the
# difference is the shim's cost; against a real GPU it is noise next to
# cudaMalloc's microseconds.
#
# Environment: BUILD (default build), PAIRS (default 1000000), SIZE (4096),
# THREADS (thread counts, default "1 2 <nproc>"), REPEAT (default 5).
set -euo pipefail

BUILD=${BUILD:-build}
PAIRS=${PAIRS:-1000000}
SIZE=${SIZE:-4096}
THREADS=${THREADS:-$(printf '%s\n' 1 2 "$(nproc)" | sort -nu | tr '\n' ' ')}
REPEAT=${REPEAT:-5}
BENCH=$BUILD/tests/fakecuda/bench
SHIM=$BUILD/preload/libspotrun.so

die() { echo "bench-preload: $*" >&2; exit 1; }
[ -x "$BENCH" ] || die "no $BENCH (build first with the CUDA headers installed, or set BUILD)"
[ -f "$SHIM" ] || die "no $SHIM"
SHIM=$(readlink -f "$SHIM")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

CPUS=$(nproc)
# one ENV...: ns per pair for $t threads, as CPU time: the bench's wall time
# per pair per thread, times min(t, CPUS) / t (past the CPU count threads
# take turns, and wall time per thread grows for both columns alike).
one() { env "$@" "$BENCH" "$PAIRS" "$SIZE" "$t" | sed -n 's/^ns_per_pair=//p' |
    awk -v t="$t" -v c="$CPUS" '{ printf "%.1f\n", $1 * (t < c ? t : c) / t }'; }
# stats FILE: "best median" of the numbers in FILE.
stats() { sort -g "$1" | awk '{v[NR] = $1} END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.1f %.1f", v[1], m }'; }

printf '%-8s %10s | %8s %8s | %8s %8s | %8s %8s\n' "" "" "no shim" "" "shim" "" "overhead" ""
printf '%-8s %10s | %8s %8s | %8s %8s | %8s %8s\n' threads pairs best median best median best median
for t in $THREADS; do
    : >"$scratch/base" && : >"$scratch/shim"
    for _ in $(seq "$REPEAT"); do
        one LD_PRELOAD= >>"$scratch/base"
        one LD_PRELOAD="$SHIM" >>"$scratch/shim"
    done
    read -r bb bm <<<"$(stats "$scratch/base")"
    read -r sb sm <<<"$(stats "$scratch/shim")"
    printf '%-8s %10s | %8s %8s | %8s %8s | %8s %8s\n' "$t" "$PAIRS" "$bb" "$bm" "$sb" "$sm" \
        "$(awk -v a="$sb" -v b="$bb" 'BEGIN{printf "%.1f", a - b}')" \
        "$(awk -v a="$sm" -v b="$bm" 'BEGIN{printf "%.1f", a - b}')"
done
echo "ns per pair per thread, in CPU time ($CPUS CPUs); target: overhead < 100 ns per pair, flat in threads"
