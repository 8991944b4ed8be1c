#!/usr/bin/env bash
# bench-azure.sh - spotrun's Azure Blob store against the stock pipeline,
# in one run, on Azurite (tests/azure, npm azurite) with Debian's azure-cli:
#
#   push:  spotrun push RUN DIR --store az://devstoreaccount1/bench/b
#     vs   tar -cf - DIR | zstd -3 -T0 > f; az storage blob upload -f f
#          (az cannot upload from a pipe: the two steps are the pipeline)
#   pull:  spotrun pull RUN OUT
#     vs   az storage blob download -f f; zstd -d -c f | tar -x
#
# Prints wall times, throughputs and the ratios, measured in the same run.
# Azurite is a Node process writing to local disk: the numbers say how the
# clients compare, not what Azure itself sustains (docs/azure.md).
#
# Environment: BUILD (default build), SIZE_MB (default 256), REPEAT (runs
# per measurement, the best is kept; default 1), BENCH_DIR (scratch on disk).
set -euo pipefail

BUILD=${BUILD:-build}
SIZE_MB=${SIZE_MB:-256}
REPEAT=${REPEAT:-1}
SPOTRUN=${SPOTRUN:-$BUILD/runtime/spotrun}
root=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "bench-azure: $*" >&2; exit 1; }
[ -x "$SPOTRUN" ] || die "no spotrun binary at $SPOTRUN (build first, or set BUILD)"
for t in tar zstd node az python3; do command -v "$t" >/dev/null || die "$t is required"; done
main=$root/tests/azure/node_modules/azurite/dist/src/blob/main.js
[ -f "$main" ] || die "Azurite is not installed (cd tests/azure && npm ci)"

. "$root/scripts/bench-data.sh"
bench_scratch bench-azure
SERVER_PID=
cleanup() {
    # SIGKILL: Azurite may linger for minutes after SIGTERM; its data is scratch.
    [ -n "$SERVER_PID" ] && kill -KILL "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$BENCH_DIR"
}
trap cleanup EXIT

# ---- server and clients ----------------------------------------------------
mkdir -p "$BENCH_DIR/az"
node "$main" --blobHost 127.0.0.1 --blobPort 0 --location "$BENCH_DIR/az" --skipApiVersionCheck \
    >"$BENCH_DIR/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 300); do grep -q 'listens on http' "$BENCH_DIR/server.log" && break; sleep 0.1; done
PORT=$(sed -n 's/.*listens on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$BENCH_DIR/server.log")
[ -n "$PORT" ] || die "Azurite did not start: $(cat "$BENCH_DIR/server.log")"
export AZ_ACCOUNT=devstoreaccount1
export AZ_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
export AZ_ENDPOINT=http://127.0.0.1:$PORT/$AZ_ACCOUNT
export AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=$AZ_ACCOUNT;AccountKey=$AZ_KEY;BlobEndpoint=$AZ_ENDPOINT;"
export AZURE_CONFIG_DIR=$BENCH_DIR/azcli AZURE_CORE_COLLECT_TELEMETRY=no
export SPOTRUN_WORK_DIR=$BENCH_DIR/work SPOTRUN_AZ_IMDS_ENDPOINT=off
python3 "$root/tests/azure/azreq.py" PUT /bench restype=container >/dev/null
STORE=az://$AZ_ACCOUNT/bench/b

# ---- dataset -----------------------------------------------------------------
DATA="$BENCH_DIR/data"
bench_make_data "$BENCH_DIR" "$DATA" "$SIZE_MB"
RAW=$(du -sb "$DATA" | cut -f1)

rmblob() { python3 "$root/tests/azure/azreq.py" DELETE "/bench/$1" >/dev/null || :; }

# ---- push --------------------------------------------------------------------
echo "measuring push ..." >&2
PREP="\"$SPOTRUN\" gc bench --keep 0 --store '$STORE' -q 2>/dev/null || :; rm -rf '$SPOTRUN_WORK_DIR'"
push_t=$(bench_best "$SPOTRUN" push bench "$DATA" --store "$STORE" --step 1 -q)
STORED=$(az storage blob show -c bench -n b/bench/ckpt/0000000001/data.tar.zst \
    --query properties.contentLength -o tsv --only-show-errors)
PREP="rm -f '$BENCH_DIR/base.tar.zst'; rmblob base.tar.zst"
az_push_t=$(bench_best bash -c "tar -C '$DATA' -cf - . | zstd -q -3 -T0 > '$BENCH_DIR/base.tar.zst' && \
    az storage blob upload -c bench -n base.tar.zst -f '$BENCH_DIR/base.tar.zst' --no-progress --only-show-errors")

# ---- pull --------------------------------------------------------------------
echo "measuring pull ..." >&2
OUT="$BENCH_DIR/out"
pull_t=$(bench_pull)
PREP="rm -rf '$OUT' '$BENCH_DIR/got.tar.zst'; mkdir -p '$OUT'"
az_pull_t=$(bench_best bash -c "az storage blob download -c bench -n base.tar.zst \
    -f '$BENCH_DIR/got.tar.zst' --no-progress --only-show-errors && zstd -q -d -c '$BENCH_DIR/got.tar.zst' | \
    tar -x -C '$OUT'")

# ---- report ------------------------------------------------------------------
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
awk -v raw="$RAW" -v stored="$STORED" -v push="$push_t" -v azp="$az_push_t" -v pull="$pull_t" \
    -v azl="$az_pull_t" '
function mibs(b, t) { return t > 0 ? b / 1048576 / t : 0 }
BEGIN {
    printf "dataset: %.0f MiB raw, %.0f MiB stored by spotrun (ratio %.2f)\n\n",
        raw / 1048576, stored / 1048576, raw / stored
    printf "%-52s %8s %12s\n", "", "seconds", "raw MiB/s"
    printf "%-52s %8.2f %12.1f\n", "spotrun push", push, mibs(raw, push)
    printf "%-52s %8.2f %12.1f\n", "tar | zstd -3 -T0 > f; az storage blob upload -f f", azp, mibs(raw, azp)
    printf "%-52s %8.2f %12.1f\n", "spotrun pull", pull, mibs(raw, pull)
    printf "%-52s %8.2f %12.1f\n", "az storage blob download -f f; zstd -d | tar -x", azl, mibs(raw, azl)
    printf "\npush vs az + tar | zstd: %.2fx\npull vs az + zstd -d | tar -x: %.2fx\n", azp / push, azl / pull
}'
