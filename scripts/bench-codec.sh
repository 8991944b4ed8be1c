#!/usr/bin/env bash
# bench-codec.sh - spotrun's archive codec against the stock pipelines.
#
# Generates a deterministic tensor-like checkpoint directory (float32 arrays
# with smooth, low-entropy structure, bf16-like arrays, zero-filled optimizer
# buffers, incompressible RNG blobs), then in one run measures:
#   push:  spotrun push RUN DIR --store PATH   vs  tar -cf - DIR | zstd -3 -T0 > f
#   pull:  spotrun pull RUN OUT --store PATH   vs  zstd -d -c f | tar -x -C out
# and prints MiB/s, ratio (raw/stored), peak RSS and the speedup, each
# speedup against its goal (push 1.5x, pull 2.5x). Beside them, in the same
# run, the floors that bound each direction (docs/archive-format.md,
# "Speed"), with the share of spotrun's time each one takes:
#   push:  cat of the files to /dev/null (read), zstd -3 -T0 of the tar
#          stream to /dev/null (compression on every core), dd of the
#          stored archive with conv=fsync (write it durably, as push does)
#   pull:  zstd -d of the archive to /dev/null on one core, divided by the
#          cores (spotrun decompresses frames in parallel; zstd -d cannot),
#          dd of as many bytes from /dev/zero into a file in 64 KiB writes
#          (the copy into the page cache that laying the files out costs at
#          least), divided by the cores (spotrun's writer threads), and the
#          two together on every core: the CPU pull cannot do without
# A goal not met names the floor that stops it (the largest one, when the
# ratio it alone allows is below the goal), or says that none does.
#
# Environment:
#   BUILD      build directory holding runtime/spotrun (default: build)
#   SIZE_MB    dataset size in MiB (default: 1024)
#   REPEAT     runs per measurement, the best is kept (default: 2)
#   BENCH_DIR  scratch directory on disk (default: a temp dir under $PWD)
#   PUSH_GOAL, PULL_GOAL  the speedups to reach (default: 1.5 and 2.5)
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
PUSH_GOAL=${PUSH_GOAL:-1.5}
PULL_GOAL=${PULL_GOAL:-2.5}

die() { echo "bench-codec: $*" >&2; exit 1; }
[ -x "$SPOTRUN" ] || die "no spotrun binary at $SPOTRUN (build first, or set BUILD)"
for t in tar zstd cc dd; do command -v "$t" >/dev/null || die "$t is required"; done
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

# ---- floors --------------------------------------------------------------
# The same bytes through the one step each floor measures; the tar stream
# is made (untimed) once, with the files in the same order as spotrun's.
TARF="$BENCH_DIR/stream.tar"
tar -C "$DATA" --sort=name -cf "$TARF" .
DATA_OBJ=$(find "$STORE" -name 'data.tar.zst' | head -n1)
NCPU=$(nproc)
PREP=":"
read -r read_t _ < <(best bash -c "find '$DATA' -type f -exec cat {} + >/dev/null")
read -r comp_t _ < <(best bash -c "zstd -q -3 -T0 -c '$TARF' >/dev/null")
PREP="rm -f '$BENCH_DIR/copy'"
read -r sync_t _ < <(best dd if="$DATA_OBJ" of="$BENCH_DIR/copy" bs=64k conv=fsync status=none)
PREP=":"
read -r dec1_t _ < <(best bash -c "zstd -q -d -T1 -c '$DATA_OBJ' >/dev/null")
PREP="rm -rf '$OUT'; mkdir -p '$OUT'"
read -r wr_t _ < <(best dd if=/dev/zero of="$OUT/w" bs=64k count=$((RAW / 65536)) status=none)
rm -rf "$OUT" "$TARF" "$BENCH_DIR/copy"

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
awk -v pt="$push_t" -v tt="$tarz_t" -v lt="$pull_t" -v ut="$untar_t" -v ncpu="$NCPU" \
    -v pg="$PUSH_GOAL" -v lg="$PULL_GOAL" -v rd="$read_t" -v cp="$comp_t" -v sy="$sync_t" \
    -v d1="$dec1_t" -v wr="$wr_t" -v load="$(cut -d" " -f1-3 /proc/loadavg)" '
# verdict(name, spotrun s, stock s, goal, floor names/seconds): met, or
# the largest floor, its share of spotrun time and the ratio it allows
function verdict(what, t, base, goal, n, names, secs,    i, big, r) {
    r = base / t
    printf "\n%s: %.2fx the stock pipeline (%.2f s vs %.2f s), goal %.1fx: ", what, r, t, base, goal
    big = 1
    for (i = 2; i <= n; i++) if (secs[i] > secs[big]) big = i
    if (r >= goal) printf "met\n"
    else if (base / secs[big] < goal)
        printf "stopped by %s (measured: %.0f%% of spotrun'"'"'s time; that floor alone allows %.2fx)\n", \
            names[big], 100 * secs[big] / t, base / secs[big]
    else
        printf "not met, and no floor stops it: the largest, %s, allows %.2fx; the other %.0f%% of spotrun'"'"'s time is its own\n", \
            names[big], base / secs[big], 100 - 100 * secs[big] / t
    printf "  %-52s %8s %9s\n", "floor (measured in this run)", "seconds", "of spotrun"
    for (i = 1; i <= n; i++)
        printf "  %-52s %8.2f %8.0f%%\n", names[i], secs[i], 100 * secs[i] / t
}
BEGIN {
    printf "\nload average: %s; %d cores\n", load, ncpu
    pn[1] = "read the files (cat > /dev/null)"; ps[1] = rd
    pn[2] = "compress (zstd -3 -T0 of the tar > /dev/null)"; ps[2] = cp
    pn[3] = "write the archive durably (dd conv=fsync)"; ps[3] = sy
    verdict("push", pt, tt, pg, 3, pn, ps)
    ln[1] = sprintf("decompress (one core'"'"'s zstd -d %.2f s / %d cores)", d1, ncpu); ls[1] = d1 / ncpu
    ln[2] = sprintf("write the bytes (one core'"'"'s dd 64k %.2f s / %d cores)", wr, ncpu); ls[2] = wr / ncpu
    ln[3] = "both: decompress and write on every core"; ls[3] = (d1 + wr) / ncpu
    verdict("pull", lt, ut, lg, 3, ln, ls)
}'
