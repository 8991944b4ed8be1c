#!/usr/bin/env bash
# rgw.sh - starts or stops a one-node Ceph RGW (Ceph's S3 server) on
# loopback by hand, as the e2e-rgw/* tests do (tests/e2e/lib-rgw.sh):
#
#   scripts/rgw.sh start [DIR]   # prints the S3 environment to export
#   scripts/rgw.sh stop [DIR]
#
# DIR (default /tmp/spotrun-rgw) holds all of the cluster's state; it lives
# in memory (memstore): stopping it loses every object.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tests/e2e/lib-rgw.sh"
cmd=${1:-}
dir=${2:-/tmp/spotrun-rgw}
case $cmd in
start)
    if [ -f "$dir/env" ]; then
        echo "rgw.sh: a cluster already runs in $dir: stop it first (scripts/rgw.sh stop $dir)" >&2
        exit 1
    fi
    t0=$(date +%s.%N)
    rgw_start "$dir"
    . "$dir/env"
    curl -sSf -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user "$RGW_KEY_ID:$RGW_SECRET" \
        -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$RGW_URL/bkt" >/dev/null
    awk -v a="$t0" -v b="$(date +%s.%N)" -v d="$dir" \
        'BEGIN { printf "rgw.sh: up in %.1f s (bucket \"bkt\"); state in %s\n", b - a, d }' >&2
    echo "export AWS_ENDPOINT_URL=$RGW_URL AWS_REGION=us-east-1"
    echo "export AWS_ACCESS_KEY_ID=$RGW_KEY_ID AWS_SECRET_ACCESS_KEY=$RGW_SECRET"
    echo "export SPOTRUN_STORE=s3://bkt/runs"
    ;;
stop)
    rgw_stop "$dir"
    ;;
*)
    echo "usage: scripts/rgw.sh start|stop [DIR]" >&2
    exit 2
    ;;
esac
