#!/usr/bin/env bash
# bench-runsum.sh [N] - how long reading every run's summary takes
# (runtime/record/runsum.h, what `spotrun stats` reads): N synthetic runs
# (default 10000; one event log and one summary each) in a file store
# and in the S3 test server (tests/s3), then sr_runsum_load_all over each,
# timed by tests/tools/runsum_tool, beside `aws s3 ls --recursive` of the
# same keys. Goals (issue 24): under 1 s on the file store, 5 s on S3.
#
# Needs a build (scripts/build.sh build) and tests/s3's modules (npm ci).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-10000}
tool=${RUNSUM_TOOL:-$root/build/tests/runsum_tool}
[ -x "$tool" ] || { echo "bench-runsum: no $tool: run scripts/build.sh build" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-runsum.XXXXXX")
s3pid=
cleanup() {
    [ -n "$s3pid" ] && kill "$s3pid" 2>/dev/null && wait "$s3pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

best() { # best of 3 runs of load over store $1: its stderr line
    for _ in 1 2 3; do "$tool" load "$1" 2>&1 >/dev/null | tail -n 1; done |
        sort -t' ' -k4 -n | head -n 1
}

echo "== file store: $n runs"
"$tool" gen "$work/store" "$n"
echo "load_all: $(best "$work/store")"
cp -r "$work/store" "$work/nosum" && rm -r "$work"/nosum/summaries
echo "load_all without summaries (every run from its event log): $(best "$work/nosum")"

echo "== S3 test server: $n runs"
node --openssl-legacy-provider "$root/tests/s3/server.js" "$work/s3data" bkt >"$work/s3.log" 2>&1 &
s3pid=$!
for _ in $(seq 100); do grep -q '^port ' "$work/s3.log" && break; sleep 0.1; done
port=$(sed -n 's/^port //p' "$work/s3.log")
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
export AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_EC2_METADATA_DISABLED=true
"$tool" gen s3://bkt/bench "$n"
ticks() { awk '{print $14 + $15}' "/proc/$s3pid/stat"; } # the server's CPU time
t0=$(ticks)
echo "listing alone: $("$tool" list s3://bkt/bench 2>&1)"
t1=$(ticks)
echo "load_all: $(best s3://bkt/bench)"
t2=$(ticks)
hz=$(getconf CLK_TCK)
echo "the server's CPU: $(echo "scale=1; ($t1 - $t0) / $hz" | bc) s for the listing," \
    "$(echo "scale=1; ($t2 - $t1) / $hz / 3" | bc) s per load_all"
if [ -x /usr/bin/aws ]; then
    printf '[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n' >"$work/aws-config"
    start=$(date +%s.%N)
    keys=$(AWS_CONFIG_FILE=$work/aws-config /usr/bin/aws --endpoint-url "$AWS_ENDPOINT_URL" \
        s3 ls --recursive s3://bkt/bench/ | wc -l)
    end=$(date +%s.%N)
    echo "aws s3 ls --recursive: $keys keys in $(echo "$end - $start" | bc) s"
fi
