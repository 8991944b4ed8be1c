# lib-bench-s3.sh - sourced by the benchmarks that need the local S3 test
# server (tests/s3/server.js: @20minutes/s3rver with conditional writes).
#
# bench_s3_start DIR: starts it with its data in DIR/s3data (the caller's
# EXIT trap kills its background jobs) and points spotrun and the AWS
# variables at it, store s3://bkt/bench. Needs $root (the checkout). The
# server logs each request to DIR/requests (S3RVER_REQUEST_LOG), which
# bench_requests counts.
bench_s3_start() {
    mkdir -p "$1/s3data"
    rm -f "$1/s3.log" # no "port" line of an earlier server
    BENCH_S3_REQUESTS=$1/requests
    S3RVER_REQUEST_LOG=$BENCH_S3_REQUESTS S3RVER_CONDITIONAL=1 node --openssl-legacy-provider "$root/tests/s3/server.js" "$1/s3data" bkt \
        >"$1/s3.log" 2>&1 &
    until grep -qs '^port ' "$1/s3.log"; do sleep 0.1; done
    export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
    export AWS_ENDPOINT_URL=http://127.0.0.1:$(sed -n 's/^port //p' "$1/s3.log")
    export AWS_EC2_METADATA_DISABLED=true
    export AWS_SHARED_CREDENTIALS_FILE=$1/none AWS_CONFIG_FILE=$1/none
    export SPOTRUN_STORE=s3://bkt/bench
}

# bench_requests CMD...: runs CMD (its output discarded), then prints
# "N requests (K LIST, M GET, ...)": the requests it made, as the server
# counted them.
bench_requests() {
    local before
    before=$(wc -l <"$BENCH_S3_REQUESTS" 2>/dev/null || echo 0)
    "$@" >/dev/null 2>&1
    tail -n +"$((before + 1))" "$BENCH_S3_REQUESTS" >"$BENCH_S3_REQUESTS.last"
    printf '%d requests (%s)\n' "$(wc -l <"$BENCH_S3_REQUESTS.last")" \
        "$(cut -d' ' -f1 "$BENCH_S3_REQUESTS.last" | sort | uniq -c | awk '{print $1 " " $2}' |
            paste -sd, - | sed 's/,/, /g')"
}
