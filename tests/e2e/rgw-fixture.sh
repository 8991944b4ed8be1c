#!/usr/bin/env bash
# rgw-fixture.sh start|stop - the ctest fixture of the e2e-rgw/* tests
# (tests/CMakeLists.txt): one Ceph RGW for the whole ctest run, in
# $TEST_TMP/rgw, with the buckets "bkt" and "other" that the S3 scripts use
# (each script has its own prefix in them; tests/e2e/s3lib.sh).
set -u
SRCDIR=${SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
TEST_TMP=${TEST_TMP:-$SRCDIR/build/tests/tmp}
dir=${RGW_DIR:-$TEST_TMP/rgw}
. "$SRCDIR/tests/e2e/lib-rgw.sh"
case ${1:-} in
start)
    rgw_stop "$dir" 2>/dev/null # a cluster left by an interrupted run
    rm -rf "$dir"
    t0=$(date +%s.%N)
    rgw_start "$dir" || exit 1
    . "$dir/env"
    for b in bkt other; do
        curl -sSf -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user "$RGW_KEY_ID:$RGW_SECRET" \
            -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$RGW_URL/$b" >/dev/null || {
            echo "rgw-fixture: creating bucket $b failed (logs in $dir/log)" >&2
            rgw_stop "$dir"
            exit 1
        }
    done
    awk -v a="$t0" -v b="$(date +%s.%N)" -v u="$RGW_URL" \
        'BEGIN { printf "Ceph RGW up at %s in %.1f s\n", u, b - a }'
    ;;
stop)
    rgw_stop "$dir"
    ;;
*)
    echo "usage: rgw-fixture.sh start|stop" >&2
    exit 2
    ;;
esac
