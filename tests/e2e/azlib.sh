# azlib.sh - Azure Blob test helpers for tests/e2e/t028*-az-*.sh, sourced
# after lib.sh: starts Azurite's Blob service (tests/azure, npm azurite) on
# 127.0.0.1 at a free port with its data in $TRASH, creates the container
# "ckpt", points spotrun at it with a connection string, and stops the
# server when the script exits.
#
# After az_start: AZ_PORT, AZ_ENDPOINT (http://127.0.0.1:PORT/devstoreaccount1),
# AZ_ACCOUNT, AZ_KEY (Azurite's published development key), SPOTRUN_STORE
# (az://devstoreaccount1/ckpt/$test_name), AZURE_STORAGE_CONNECTION_STRING.

AZ_ACCOUNT=devstoreaccount1
AZ_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

az_start() {
    local main=$SRCDIR/tests/azure/node_modules/azurite/dist/src/blob/main.js
    if [ ! -f "$main" ]; then
        say "Azurite is not installed: run scripts/test.sh (or: cd tests/azure && npm ci)"
        exit 1
    fi
    mkdir -p "$TRASH/azdata"
    rm -f "$TRASH/az.log"
    node "$main" --blobHost 127.0.0.1 --blobPort 0 --location "$TRASH/azdata" \
        --skipApiVersionCheck ${AZ_OAUTH:+--oauth basic --cert "$AZ_CERT" --key "$AZ_CERT_KEY"} \
        >"$TRASH/az.log" 2>&1 &
    AZ_PID=$!
    trap 'az_stop' EXIT
    local i=0
    until grep -q 'listens on http' "$TRASH/az.log" 2>/dev/null; do
        i=$((i + 1))
        if [ "$i" -gt 300 ] || ! kill -0 "$AZ_PID" 2>/dev/null; then
            say "Azurite did not start:"
            cat "$TRASH/az.log"
            exit 1
        fi
        sleep 0.1
    done
    AZ_PORT=$(sed -n 's/.*listens on https\{0,1\}:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$TRASH/az.log")
    AZ_ENDPOINT=http${AZ_OAUTH:+s}://127.0.0.1:$AZ_PORT/$AZ_ACCOUNT
    export AZ_ENDPOINT AZ_ACCOUNT AZ_KEY
    unset AZURE_STORAGE_ACCOUNT AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN AZURE_CLIENT_ID \
        AZURE_STORAGE_BLOB_ENDPOINT
    export AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=$AZ_ACCOUNT;AccountKey=$AZ_KEY;BlobEndpoint=$AZ_ENDPOINT;"
    export SPOTRUN_AZ_IMDS_ENDPOINT=off # never wait for a metadata service here
    export SPOTRUN_AZ_RETRY_BASE_MS=50
    export SPOTRUN_STORE=az://$AZ_ACCOUNT/ckpt/$test_name
    [ -n "${AZ_OAUTH:-}" ] || azreq PUT /ckpt restype=container >/dev/null
}

# SIGKILL: after SIGTERM Azurite says "successfully closed" and then may
# linger for minutes (its timers), holding the test's output open; its data
# is scratch.
az_stop() {
    [ -n "${AZ_PID:-}" ] && kill -KILL "$AZ_PID" 2>/dev/null && wait "$AZ_PID" 2>/dev/null
    AZ_PID=
}

# azreq METHOD /container[/blob] [QUERY] [BODY_FILE]: a request signed
# with the account key by tests/azure/azreq.py (status line, then body).
azreq() { python3 "$SRCDIR/tests/azure/azreq.py" "$@"; }

# az_keys PREFIX: the blob names under PREFIX in container ckpt, one a line.
az_keys() {
    # no key is no line (grep's exit 1 is not an error: bodies run under pipefail)
    azreq GET /ckpt "comp=list&prefix=$1&restype=container" |
        { grep -o '<Name>[^<]*</Name>' || test $? = 1; } | sed 's/<[^>]*>//g'
}
