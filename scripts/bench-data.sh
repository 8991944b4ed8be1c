# bench-data.sh - the benchmarks' dataset, timing and setup, sourced by scripts/bench-*.sh.
#
# bench_make_data SCRATCH DATA SIZE_MB: writes into DATA a deterministic
# tensor-like checkpoint directory of SIZE_MB MiB (float32 arrays with
# smooth, low-entropy structure, bf16-like arrays, zero-filled optimizer
# buffers, incompressible RNG blobs); SCRATCH holds the generator.
# bench_scratch NAME: BENCH_DIR made (under $PWD, .NAME.XXXXXX) when not
# given; one on tmpfs is refused (the benchmarks measure a disk).
# bench_best CMD...: the best wall time in seconds of CMD over REPEAT runs
# (default 1); $PREP is evaluated before each.
# bench_pull: bench_best of `spotrun pull` of the run bench from $STORE
# into $OUT, the tree then checked against $DATA.
# bench_work NAME [BUILD [s3]]: build (default $root/build), spotrun (its
# binary, checked) and work, a scratch directory under TMPDIR, made the
# current one; at exit the background jobs are killed and work removed
# (kept when KEEP is set). s3: the S3 test server must be installed.
# bench_event_ms DIR SUFFIX EVENT: unix_ms of the first EVENT in the newest
# event log of DIR whose name ends with SUFFIX ("" for any).
# (die and root are the sourcing script's.)
bench_make_data() {
    local scratch=$1 data=$2 size_mb=$3
    cat > "$scratch/gen.c" <<'CEOF'
/* gen DIR MIB: deterministic tensor-like files (xorshift64*, no libm). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static uint64_t s = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { s ^= s >> 12; s ^= s << 25; s ^= s >> 27; return s * 2685821657736338717ull; }
static float gauss(void) { float a = 0; for (int i = 0; i < 4; i++) a += (float)(rnd() >> 40) / 16777216.0f; return (a - 2.0f) * 1.7f; }
static void emit(const char *dir, const char *name, size_t bytes, int kind)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(1); }
    enum { N = 1 << 16 };
    static uint32_t buf[N];
    float walk = 0.0f;
    for (size_t done = 0; done < bytes; done += sizeof(buf)) {
        for (int i = 0; i < N; i++) {
            float v;
            switch (kind) {
            case 0: /* smooth float32, 16 low mantissa bits dropped (bf16 upcast) */
                walk = walk * 0.999f + gauss() * 0.01f;
                v = walk + 0.02f * (float)((i & 255) - 128) / 128.0f;
                memcpy(&buf[i], &v, 4); buf[i] &= 0xFFFF0000u; break;
            case 1: { /* bf16 pairs of normal weights */
                float a = gauss() * 0.02f, b = gauss() * 0.02f; uint32_t ua, ub;
                memcpy(&ua, &a, 4); memcpy(&ub, &b, 4);
                buf[i] = (ua >> 16) | (ub & 0xFFFF0000u); break; }
            case 2: /* optimizer buffer: mostly zero, some small floats */
                v = (rnd() & 7) ? 0.0f : gauss() * 1e-3f; memcpy(&buf[i], &v, 4); break;
            default: /* RNG state / compressed blob: incompressible */
                buf[i] = (uint32_t)(rnd() >> 32); break;
            }
        }
        const size_t n = bytes - done < sizeof(buf) ? bytes - done : sizeof(buf);
        if (fwrite(buf, 1, n, f) != n) { perror(path); exit(1); }
    }
    fclose(f);
}
int main(int argc, char **argv)
{
    const size_t mib = strtoull(argv[2], NULL, 10) << 20;
    char sub[4096];
    snprintf(sub, sizeof(sub), "%s/optim", argv[1]);
    emit(argv[1], "model.layers.0-7.f32", mib * 30 / 100, 0);
    emit(argv[1], "model.layers.8-15.bf16", mib * 25 / 100, 1);
    emit(argv[1], "model.embed.bf16", mib * 10 / 100, 1);
    emit(sub, "exp_avg.f32", mib * 15 / 100, 2);
    emit(sub, "exp_avg_sq.f32", mib * 8 / 100, 0);
    emit(argv[1], "rng_state.bin", mib * 7 / 100, 3);
    emit(argv[1], "dataloader.bin", mib * 5 / 100, 3);
    emit(argv[1], "meta.json", 4096, 2);
    return 0;
}
CEOF
    cc -O2 -o "$scratch/gen" "$scratch/gen.c"
    mkdir -p "$data/optim"
    echo "generating ${size_mb} MiB of tensor-like data in $data ..." >&2
    "$scratch/gen" "$data" "$size_mb"
}

bench_scratch() {
    if [ -z "${BENCH_DIR:-}" ]; then
        BENCH_DIR=$(mktemp -d "$PWD/.$1.XXXXXX")
    fi
    [ "$(stat -f -c %T "$BENCH_DIR")" != tmpfs ] || die "$BENCH_DIR is on tmpfs; set BENCH_DIR"
}

bench_best() {
    local best_t="" i t0 t1 t
    for ((i = 0; i < ${REPEAT:-1}; i++)); do
        eval "$PREP"
        sync
        t0=$(date +%s.%N)
        "$@" >/dev/null
        t1=$(date +%s.%N)
        t=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}')
        if [ -z "$best_t" ] || awk -v a="$t" -v b="$best_t" 'BEGIN{exit !(a<b)}'; then
            best_t=$t
        fi
    done
    echo "$best_t"
}

bench_pull() {
    local t
    PREP="rm -rf '$OUT'"
    t=$(bench_best "$SPOTRUN" pull bench "$OUT" --store "$STORE" -q)
    diff -r "$DATA" "$OUT" >/dev/null || die "pulled tree differs from the original"
    echo "$t"
}

bench_work() {
    [ "${3:-}" != s3 ] || [ -d "$root/tests/s3/node_modules/@20minutes/s3rver" ] ||
        { echo "$1: the S3 test server is not installed (cd tests/s3 && npm ci)" >&2; exit 1; }
    build=$(cd "${2:-$root/build}" && pwd)
    spotrun=$build/runtime/spotrun
    [ -x "$spotrun" ] || { echo "$1: build first ($spotrun missing)" >&2; exit 1; }
    work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    trap 'kill $(jobs -p) 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
    cd "$work"
}

bench_event_ms() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, os, sys
d, suffix, want = sys.argv[1], sys.argv[2], sys.argv[3]
logs = sorted(n for n in os.listdir(d) if n.endswith(suffix))
for line in open(os.path.join(d, logs[-1])) if logs else []:
    e = json.loads(line)
    if e.get("event") == want:
        print(e["unix_ms"]); sys.exit(0)
sys.exit(1)
PY
}
