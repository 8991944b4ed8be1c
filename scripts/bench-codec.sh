#!/usr/bin/env bash
# bench-codec.sh - spotrun's archive codec against the stock pipelines.
#
# Generates a deterministic tensor-like checkpoint directory (float32 arrays
# with smooth, low-entropy structure, bf16-like arrays, zero-filled optimizer
# buffers, incompressible RNG blobs), then in one run measures:
#   push:  spotrun push RUN DIR --store PATH   vs  tar -cf - DIR | zstd -3 -T0 > f
#   pull:  spotrun pull RUN OUT --store PATH   vs  zstd -d -c f | tar -x -C out
# and prints MiB/s, ratio (raw/stored), peak RSS and the speedup.
#
# Environment:
#   BUILD      build directory holding runtime/spotrun (default: build)
#   SIZE_MB    dataset size in MiB (default: 1024)
#   REPEAT     runs per measurement, the best is kept (default: 2)
#   BENCH_DIR  scratch directory on disk (default: a temp dir under $PWD)
#
# Peak RSS is GNU time's maximum resident set size; for a pipeline it is the
# largest single process of the pipeline (not the sum). Page cache is warm
# for every run (the dataset was just written); `sync` runs before each one
# so that writeback of the previous run does not land in the next one.
set -euo pipefail

BUILD=${BUILD:-build}
SIZE_MB=${SIZE_MB:-1024}
REPEAT=${REPEAT:-2}
SPOTRUN=${SPOTRUN:-$BUILD/runtime/spotrun}

die() { echo "bench-codec: $*" >&2; exit 1; }
[ -x "$SPOTRUN" ] || die "no spotrun binary at $SPOTRUN (build first, or set BUILD)"
for t in tar zstd cc; do command -v "$t" >/dev/null || die "$t is required"; done
[ -x /usr/bin/time ] || die "/usr/bin/time is required (apt-get install time)"

# Not tmpfs: the measurement must include a real filesystem.
if [ -z "${BENCH_DIR:-}" ]; then
    BENCH_DIR=$(mktemp -d "$PWD/.bench-codec.XXXXXX")
fi
if [ "$(stat -f -c %T "$BENCH_DIR")" = tmpfs ]; then
    die "$BENCH_DIR is on tmpfs; set BENCH_DIR to a directory on disk"
fi
cleanup() { rm -rf "$BENCH_DIR"; }
trap cleanup EXIT

# ---- dataset -------------------------------------------------------------
DATA="$BENCH_DIR/data"
. "$(dirname "$0")/bench-data.sh"
bench_make_data "$BENCH_DIR" "$DATA" "$SIZE_MB"
RAW=$(du -sb "$DATA" | cut -f1)

# ---- measurement ---------------------------------------------------------
# run NAME CMD...: best wall time (s) and its peak RSS (KiB) over REPEAT runs,
# printed as "secs kib"; $PREP is run (untimed) before each.
best() {
    local best_t="" best_m="" i t m
    for ((i = 0; i < REPEAT; i++)); do
        eval "$PREP"
        sync
        /usr/bin/time -f "%e %M" -o "$BENCH_DIR/time.out" "$@" >/dev/null
        read -r t m < "$BENCH_DIR/time.out"
        if [ -z "$best_t" ] || awk -v a="$t" -v b="$best_t" 'BEGIN{exit !(a<b)}'; then
            best_t=$t; best_m=$m
        fi
    done
    echo "$best_t $best_m"
}

STORE="$BENCH_DIR/store"
BASE="$BENCH_DIR/base.tar.zst"
OUT="$BENCH_DIR/out"

PREP="rm -rf '$STORE'"
read -r push_t push_m < <(best "$SPOTRUN" push -q bench "$DATA" --store "$STORE" --step 1)
PREP="rm -f '$BASE'"
read -r tarz_t tarz_m < <(best bash -c "tar -C '$DATA' -cf - . | zstd -q -3 -T0 > '$BASE'")
STORED=$(find "$STORE" -name 'data.tar.zst' -printf '%s\n' | head -n1)
BASE_STORED=$(stat -c %s "$BASE")

PREP="rm -rf '$OUT'"
read -r pull_t pull_m < <(best "$SPOTRUN" pull -q bench "$OUT" --store "$STORE")
diff -r "$DATA" "$OUT" >/dev/null || die "pulled tree differs from the original"
PREP="rm -rf '$OUT'; mkdir -p '$OUT'"
read -r untar_t untar_m < <(best bash -c "zstd -q -d -c '$BASE' | tar -x -C '$OUT'")

# ---- report --------------------------------------------------------------
awk -v raw="$RAW" -v st="$STORED" -v bst="$BASE_STORED" \
    -v pt="$push_t" -v pm="$push_m" -v tt="$tarz_t" -v tm="$tarz_m" \
    -v lt="$pull_t" -v lm="$pull_m" -v ut="$untar_t" -v um="$untar_m" 'BEGIN {
    mib = raw / 1048576
    printf "dataset: %.0f MiB raw, best of '"$REPEAT"' runs\n\n", mib
    printf "%-34s %9s %8s %7s %9s\n", "", "MiB/s", "seconds", "ratio", "peak RSS"
    printf "%-34s %9.1f %8.2f %7.3f %6.0f MiB\n", "spotrun push (file store)", mib/pt, pt, raw/st, pm/1024
    printf "%-34s %9.1f %8.2f %7.3f %6.0f MiB\n", "tar -cf - | zstd -3 -T0 > f", mib/tt, tt, raw/bst, tm/1024
    printf "%-34s %8.2fx\n\n", "push speedup", tt/pt
    printf "%-34s %9.1f %8.2f %7s %6.0f MiB\n", "spotrun pull", mib/lt, lt, "", lm/1024
    printf "%-34s %9.1f %8.2f %7s %6.0f MiB\n", "zstd -d -c f | tar -x", mib/ut, ut, "", um/1024
    printf "%-34s %8.2fx\n", "pull speedup", ut/lt
}'
