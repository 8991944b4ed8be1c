# s3lib.sh - S3 test helpers for tests/e2e/t02*-s3-*.sh, sourced after
# lib.sh: starts the S3-compatible test server (tests/s3/server.js,
# @20minutes/s3rver, verifies SigV4) on 127.0.0.1 at a free port with the
# buckets "bkt" and "other", points spotrun at it, and stops it when the
# script exits.
#
# SPOTRUN_TEST_S3=rgw (the e2e-rgw/* ctest entries): the same scripts run
# against Ceph RGW instead, a cluster started once per ctest run by the
# fixture e2e-rgw/start (tests/e2e/rgw-fixture.sh, lib-rgw.sh) whose
# address is in $RGW_DIR/env; each script keeps its own prefix in the
# shared buckets. RGW always honours conditional writes (S3_CONDITIONAL
# is moot there); cases that need s3rver itself are skipped with
# s3rver_only, which prints why.
#
# After s3_start:  S3_PORT, S3_URL (http://127.0.0.1:PORT), SPOTRUN_STORE
# (s3://bkt/$test_name), AWS_* credentials of the server's account.

S3_SERVER=${SPOTRUN_TEST_S3:-s3rver}
S3_KEY_ID=S3RVER
S3_SECRET=S3RVER
if [ "$S3_SERVER" = rgw ]; then
    S3_KEY_ID=RGWTESTKEY
    S3_SECRET=RGWTESTSECRET
fi

# s3rver_only REASON: on RGW, prints that the next case is skipped and why,
# and succeeds (use: s3rver_only 'why' || test_expect_success ...).
s3rver_only() {
    [ "$S3_SERVER" = rgw ] || return 1
    test_count=$((test_count + 1))
    say "ok $test_count # skip on Ceph RGW: $1"
}

# The shared RGW cluster's address (the fixture started it).
s3_start_rgw() {
    local env=${RGW_DIR:-$TEST_TMP/rgw}/env
    if [ ! -f "$env" ]; then
        say "no Ceph RGW runs for SPOTRUN_TEST_S3=rgw: $env is missing (ctest starts one with the fixture e2e-rgw/start; by hand: scripts/rgw.sh start DIR, then RGW_DIR=DIR)"
        exit 1
    fi
    S3_URL=$(sed -n 's/^RGW_URL=//p' "$env")
    S3_PORT=${S3_URL##*:}
    S3_PID=
}

s3_start() {
    local dir=$SRCDIR/tests/s3
    if [ "$S3_SERVER" = rgw ]; then
        s3_start_rgw
        s3_env
        return
    fi
    if [ ! -d "$dir/node_modules/@20minutes/s3rver" ]; then
        say "the S3 test server is not installed: run scripts/test.sh (or: cd tests/s3 && npm ci)"
        exit 1
    fi
    mkdir -p "$TRASH/s3data"
    # A fresh log: the wait below must not read a "port" line left by an
    # earlier server (the background shell truncates the file only once it
    # runs, which may be after the first look).
    rm -f "$TRASH/s3.log"
    # --openssl-legacy-provider: s3rver ciphers continuation tokens with a
    # cipher that Node 20 disables by default (paged listings fail without).
    # S3_CONDITIONAL=1 s3_start: the server honours If-None-Match / If-Match
    # on writes (tests/s3/conditional.js); by default it ignores them.
    S3RVER_CONDITIONAL=${S3_CONDITIONAL:-} S3RVER_REQUEST_LOG=$TRASH/s3.requests \
        node --openssl-legacy-provider "$dir/server.js" "$TRASH/s3data" bkt other >"$TRASH/s3.log" 2>&1 &
    S3_PID=$!
    trap 's3_stop' EXIT
    local i=0
    until grep -q '^port ' "$TRASH/s3.log" 2>/dev/null; do
        i=$((i + 1))
        if [ "$i" -gt 100 ] || ! kill -0 "$S3_PID" 2>/dev/null; then
            say "the S3 test server did not start:"
            cat "$TRASH/s3.log"
            exit 1
        fi
        sleep 0.1
    done
    S3_PORT=$(sed -n 's/^port //p' "$TRASH/s3.log")
    S3_URL=http://127.0.0.1:$S3_PORT
    s3_env
}

# Points spotrun, curl and awscli at S3_URL.
s3_env() {
    export AWS_ACCESS_KEY_ID=$S3_KEY_ID AWS_SECRET_ACCESS_KEY=$S3_SECRET
    export AWS_ENDPOINT_URL=$S3_URL AWS_REGION=us-east-1
    export AWS_EC2_METADATA_DISABLED=true # never wait for a metadata service here
    export SPOTRUN_STORE=s3://bkt/$test_name
    export SPOTRUN_S3_RETRY_BASE_MS=50
    unset AWS_SESSION_TOKEN AWS_PROFILE AWS_DEFAULT_REGION AWS_ENDPOINT_URL_S3 \
        AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_CONTAINER_CREDENTIALS_RELATIVE_URI \
        AWS_CONTAINER_AUTHORIZATION_TOKEN
    export AWS_SHARED_CREDENTIALS_FILE=$TRASH/no-aws-credentials AWS_CONFIG_FILE=$TRASH/no-aws-config
}

# s3_count FILE CMD...: runs CMD; the requests it made (the lines it added
# to the server's request log, "KIND METHOD URL": tests/s3/server.js) go
# to FILE; CMD's exit code. Counted by the local server only (not RGW).
s3_count() {
    local out=$1 before
    shift
    before=$(wc -l <"$TRASH/s3.requests" 2>/dev/null || echo 0)
    "$@"
    local rc=$?
    tail -n +"$((before + 1))" "$TRASH/s3.requests" >"$out"
    return $rc
}

# s3_requests FILE [KIND]: how many requests FILE (of s3_count) holds, of
# KIND (LIST, GET, PUT, HEAD, DELETE) or all.
s3_requests() {
    if [ -n "${2:-}" ]; then grep -c "^$2 " "$1" || true; else wc -l <"$1"; fi
}

s3_stop() {
    [ -n "${S3_PID:-}" ] && kill "$S3_PID" 2>/dev/null && wait "$S3_PID" 2>/dev/null
    S3_PID=
}

# s3curl ARGS...: curl signing with the test account (for setup and checks).
s3curl() {
    curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$S3_KEY_ID:$S3_SECRET" \
        -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}

# awscli ARGS...: the stock AWS CLI against the test server (path-style).
awscli() {
    printf '[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n' >"$TRASH/aws-config"
    local aws=/usr/bin/aws # Debian's awscli; another one may come first on PATH
    [ -x "$aws" ] || aws=aws
    AWS_CONFIG_FILE=$TRASH/aws-config "$aws" --endpoint-url "$S3_URL" "$@"
}
