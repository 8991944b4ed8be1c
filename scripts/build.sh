#!/usr/bin/env bash
# build.sh [BUILD_DIR [cmake args...]] - configures and builds spotrun.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true
cmake -S "$root" -B "$build" -DSPOTRUN_WERROR=ON "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
