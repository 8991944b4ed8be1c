#!/usr/bin/env bash
# bench-s3.sh - spotrun's S3 store against the stock pipelines, in one run,
# on the local S3-compatible test server (tests/s3, @20minutes/s3rver):
#
#   push:  spotrun push RUN DIR --store s3://bkt/bench
#     vs   tar -cf - DIR | zstd -3 -T0 | aws s3 cp - s3://...   (streamed)
#     vs   tar -cf - DIR | zstd -3 -T0 > f; aws s3 cp f s3://... (two steps)
#     vs   one curl SigV4 PUT of the already-compressed object (what the
#          server can take: the upper bound for any client)
#   pull:  spotrun pull RUN OUT
#     vs   aws s3 cp s3://... - | zstd -d | tar -x              (streamed)
#     vs   aws s3 cp s3://... f; zstd -d -c f | tar -x          (two steps)
#
# Prints wall times, throughputs and ratios; each baseline ratio is against
# the faster of its two variants. Targets (issue 3): push >= 2.5x the awscli
# pipeline and >= 0.9x the raw single-PUT rate; pull >= 2x awscli + zstd.
#
# Environment: BUILD (default build), SIZE_MB (default 1024), REPEAT (runs
# per measurement, the best is kept; default 1), BENCH_DIR (scratch on disk).
set -euo pipefail

BUILD=${BUILD:-build}
SIZE_MB=${SIZE_MB:-1024}
REPEAT=${REPEAT:-1}
SPOTRUN=${SPOTRUN:-$BUILD/runtime/spotrun}
root=$(cd "$(dirname "$0")/.." && pwd)
AWS=/usr/bin/aws
[ -x "$AWS" ] || AWS=aws

die() { echo "bench-s3: $*" >&2; exit 1; }
[ -x "$SPOTRUN" ] || die "no spotrun binary at $SPOTRUN (build first, or set BUILD)"
for t in tar zstd cc curl node "$AWS"; do command -v "$t" >/dev/null || die "$t is required"; done
[ -d "$root/tests/s3/node_modules/@20minutes/s3rver" ] ||
    die "the S3 test server is not installed (cd tests/s3 && npm ci)"

. "$root/scripts/bench-data.sh"
bench_scratch bench-s3
SERVER_PID=
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$BENCH_DIR"
}
trap cleanup EXIT

# ---- server and clients ----------------------------------------------------
mkdir -p "$BENCH_DIR/s3"
node --openssl-legacy-provider "$root/tests/s3/server.js" "$BENCH_DIR/s3" bkt \
    >"$BENCH_DIR/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do grep -q '^port ' "$BENCH_DIR/server.log" && break; sleep 0.1; done
PORT=$(sed -n 's/^port //p' "$BENCH_DIR/server.log")
[ -n "$PORT" ] || die "the S3 test server did not start: $(cat "$BENCH_DIR/server.log")"
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
export AWS_ENDPOINT_URL=http://127.0.0.1:$PORT AWS_EC2_METADATA_DISABLED=true
export SPOTRUN_WORK_DIR=$BENCH_DIR/work
printf '[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n' >"$BENCH_DIR/aws-config"
export AWS_CONFIG_FILE=$BENCH_DIR/aws-config AWS_SHARED_CREDENTIALS_FILE=$BENCH_DIR/none
aws_s3() { "$AWS" --endpoint-url "$AWS_ENDPOINT_URL" s3 "$@"; }
STORE=s3://bkt/bench

# ---- dataset -----------------------------------------------------------------
DATA="$BENCH_DIR/data"
bench_make_data "$BENCH_DIR" "$DATA" "$SIZE_MB"
RAW=$(du -sb "$DATA" | cut -f1)

rmobj() { curl -sS -o /dev/null -X DELETE --aws-sigv4 aws:amz:us-east-1:s3 \
    --user S3RVER:S3RVER -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$AWS_ENDPOINT_URL/bkt/$1"; }

# ---- push --------------------------------------------------------------------
echo "measuring push ..." >&2
PREP="rm -rf '$BENCH_DIR/s3/bkt/bench' '$SPOTRUN_WORK_DIR'"
push_t=$(bench_best "$SPOTRUN" push bench "$DATA" --store "$STORE" --step 1 -q)
PREP="rmobj stream.tar.zst"
awss_t=$(bench_best bash -c "tar -C '$DATA' -cf - . | zstd -q -3 -T0 | \"$AWS\" --endpoint-url \
    '$AWS_ENDPOINT_URL' s3 cp - s3://bkt/stream.tar.zst --expected-size $RAW")
PREP="rm -f '$BENCH_DIR/base.tar.zst'; rmobj base.tar.zst"
awsf_t=$(bench_best bash -c "tar -C '$DATA' -cf - . | zstd -q -3 -T0 > '$BENCH_DIR/base.tar.zst' && \
    \"$AWS\" --endpoint-url '$AWS_ENDPOINT_URL' s3 cp '$BENCH_DIR/base.tar.zst' s3://bkt/base.tar.zst")
# The raw single PUT sends the very object spotrun stored.
curl -sS -o "$BENCH_DIR/obj.tar.zst" --aws-sigv4 aws:amz:us-east-1:s3 --user S3RVER:S3RVER \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
    "$AWS_ENDPOINT_URL/bkt/bench/bench/ckpt/0000000001/data.tar.zst"
STORED=$(stat -c %s "$BENCH_DIR/obj.tar.zst")
PREP="rmobj raw.tar.zst"
raw_t=$(bench_best curl -sS -f -o /dev/null --aws-sigv4 aws:amz:us-east-1:s3 --user S3RVER:S3RVER \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -T "$BENCH_DIR/obj.tar.zst" \
    "$AWS_ENDPOINT_URL/bkt/raw.tar.zst")

# ---- pull --------------------------------------------------------------------
echo "measuring pull ..." >&2
OUT="$BENCH_DIR/out"
pull_t=$(bench_pull)
PREP="rm -rf '$OUT'; mkdir -p '$OUT'"
awsps_t=$(bench_best bash -c "\"$AWS\" --endpoint-url '$AWS_ENDPOINT_URL' s3 cp \
    s3://bkt/base.tar.zst - | zstd -q -d | tar -x -C '$OUT'")
PREP="rm -rf '$OUT' '$BENCH_DIR/got.tar.zst'; mkdir -p '$OUT'"
awspf_t=$(bench_best bash -c "\"$AWS\" --endpoint-url '$AWS_ENDPOINT_URL' s3 cp \
    s3://bkt/base.tar.zst '$BENCH_DIR/got.tar.zst' && zstd -q -d -c '$BENCH_DIR/got.tar.zst' | \
    tar -x -C '$OUT'")

# ---- report ------------------------------------------------------------------
# The machine may be shared: the load average says how much to trust this run.
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
awk -v raw="$RAW" -v stored="$STORED" -v push="$push_t" -v awss="$awss_t" -v awsf="$awsf_t" \
    -v rawput="$raw_t" -v pull="$pull_t" -v awsps="$awsps_t" -v awspf="$awspf_t" '
function mibs(b, t) { return t > 0 ? b / 1048576 / t : 0 }
function min(a, b) { return a < b ? a : b }
BEGIN {
    printf "dataset: %.0f MiB raw, %.0f MiB stored by spotrun (ratio %.2f)\n\n",
        raw / 1048576, stored / 1048576, raw / stored
    printf "%-46s %8s %12s %12s\n", "", "seconds", "raw MiB/s", "wire MiB/s"
    printf "%-46s %8.2f %12.1f %12.1f\n", "spotrun push", push, mibs(raw, push), mibs(stored, push)
    printf "%-46s %8.2f %12.1f\n", "tar | zstd -3 -T0 | aws s3 cp - (streamed)", awss, mibs(raw, awss)
    printf "%-46s %8.2f %12.1f\n", "tar | zstd -3 -T0 > f; aws s3 cp f", awsf, mibs(raw, awsf)
    printf "%-46s %8.2f %12s %12.1f\n", "curl: one SigV4 PUT of the compressed object", rawput, "-",
        mibs(stored, rawput)
    printf "%-46s %8.2f %12.1f %12.1f\n", "spotrun pull", pull, mibs(raw, pull), mibs(stored, pull)
    printf "%-46s %8.2f %12.1f\n", "aws s3 cp - | zstd -d | tar -x (streamed)", awsps, mibs(raw, awsps)
    printf "%-46s %8.2f %12.1f\n", "aws s3 cp f; zstd -d -c f | tar -x", awspf, mibs(raw, awspf)
    pa = min(awss, awsf); pp = min(awsps, awspf)
    printf "\npush vs awscli pipeline (faster variant): %.2fx   (target >= 2.5x)\n", pa / push
    printf "push wire rate vs raw single PUT:         %.2fx   (target >= 0.9x)\n",
        mibs(stored, push) / mibs(stored, rawput)
    printf "pull vs awscli + zstd -d | tar -x:        %.2fx   (target >= 2x)\n", pp / pull
}'
