#!/usr/bin/env bash
# fuzz.sh [SECONDS] - builds the libFuzzer targets (clang, ASan+UBSan) and
# runs each for SECONDS (default 300; CI runs a short pass). Targets: the
# manifest parser, the seek-table parser, the archive reader, the cloud
# metadata parsers (runtime/notice/notice_parse.c) and a generator of hostile file
# stores (fuzz_store: FIFOs, symlinks, deep trees, extreme numbers, read by
# list, restore, lease, history and gc). Corpora
# grow in build-fuzz/corpus/; crashes land in build-fuzz/ as crash-*.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-${FUZZ_SECONDS:-300}}
build=$root/build-fuzz
command -v clang >/dev/null || { echo "fuzz.sh: clang is required (scripts/deps.sh)" >&2; exit 1; }
CC=clang cmake -S "$root" -B "$build" -DSPOTRUN_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
status=0
for name in manifest seektable archive notice store; do
    corpus=$build/corpus/$name
    mkdir -p "$corpus"
    echo "== fuzz_$name for ${secs}s"
    (cd "$build" && "./tests/fuzz/fuzz_$name" -max_total_time="$secs" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 "$corpus" "$root/tests/fuzz/seeds/$name" \
        2>&1 | grep -E "^(#[0-9]+ *DONE|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)" ) ||
        true
    if ls "$build"/crash-* "$build"/leak-* "$build"/timeout-* >/dev/null 2>&1; then
        echo "fuzz_$name found a failing input:" >&2
        ls "$build"/crash-* "$build"/leak-* "$build"/timeout-* 2>/dev/null >&2
        status=1
    fi
done
exit $status
