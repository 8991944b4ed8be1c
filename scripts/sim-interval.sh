#!/usr/bin/env bash
# sim-interval.sh - how --every auto compares with fixed intervals, on
# synthetic preemption traces (Poisson, and bursty: calm spells and storms).
#
#   scripts/sim-interval.sh [BUILD_DIR [COST_SECONDS [SEEDS [WORK_HOURS]]]]
#                                       (default: build, 30, 50, 720)
#
# Builds tests/tools/sim_interval.c, which runs the supervisor's own
# interval code (runtime/supervise/every.c over common/interval.c) as a new
# wrapper after each preemption would, and prints, per policy, the work lost
# to preemptions, the time spent in checkpoints, and their sum (the waste),
# as means over SEEDS traces of a job needing WORK_HOURS of compute. No
# notice saves the work here: that is the case periodic checkpoints are for.
# docs/interval.md shows a result and the model's assumptions.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -DSPOTRUN_WERROR=ON >/dev/null
fi
cmake --build "$build" --target sim_interval -j"$(nproc)" >/dev/null
"$build/tests/sim_interval" "${2:-30}" "${3:-50}" "${4:-720}"
