#!/usr/bin/env bash
# Azure credentials, in the documented order (docs/azure.md, "Credentials"):
# a connection string, AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN, a managed
# identity. With none, the error names every source tried; a secret never
# appears in a message.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/azlib.sh"
az_start # (its EXIT trap is extended below)
mkdir -p src && echo hello >src/a.txt

trap 'kill "$(cat "$TRASH/imds.pid" 2>/dev/null)" 2>/dev/null; az_stop' EXIT

no_creds() {
    env -u AZURE_STORAGE_CONNECTION_STRING -u AZURE_STORAGE_KEY -u AZURE_STORAGE_ACCOUNT \
        -u AZURE_STORAGE_SAS_TOKEN AZURE_STORAGE_BLOB_ENDPOINT="$AZ_ENDPOINT" "$@"
}

test_expect_success 'a connection string: push and pull' '
    "$SPOTRUN" push r1 src && "$SPOTRUN" pull r1 out && diff -r src out
'

test_expect_success 'AZURE_STORAGE_ACCOUNT + AZURE_STORAGE_KEY (Shared Key) with the endpoint variable' '
    no_creds AZURE_STORAGE_ACCOUNT=$AZ_ACCOUNT AZURE_STORAGE_KEY=$AZ_KEY "$SPOTRUN" ls >ls.out &&
    grep "^r1 " ls.out
'

test_expect_success 'a wrong key: 403 naming the object and what to check, never the key' '
    bad=$(printf "%088d" 0 | tr 0 A) &&
    expect_code 77 no_creds AZURE_STORAGE_KEY=$bad "$SPOTRUN" ls >bad.out 2>&1 &&
    grep "az://devstoreaccount1/ckpt/t0282-az-creds.*403 AuthorizationFailure" bad.out &&
    grep "check the account key or SAS token" bad.out &&
    ! grep -F "$bad" bad.out
'

test_expect_success 'AZURE_STORAGE_SAS_TOKEN: push and pull with a SAS, the token never printed' '
    sas=$(azreq sas) &&
    no_creds AZURE_STORAGE_SAS_TOKEN="?$sas" "$SPOTRUN" push r2 src -v >sas.log 2>&1 &&
    no_creds AZURE_STORAGE_SAS_TOKEN="$sas" "$SPOTRUN" pull r2 out2 -v >>sas.log 2>&1 &&
    diff -r src out2 &&
    grep "credentials from AZURE_STORAGE_SAS_TOKEN" sas.log &&
    sig=$(printf "%s" "$sas" | sed "s/.*sig=//") && ! grep -F "$sig" sas.log
'

test_expect_success 'a read-only SAS cannot push: 403 with the hint' '
    sas=$(azreq sas rl) &&
    ! no_creds AZURE_STORAGE_SAS_TOKEN="$sas" "$SPOTRUN" push r3 src >ro.out 2>&1 &&
    grep "403" ro.out && grep "permission\|SAS" ro.out
'

test_expect_success 'no credentials: every source named with why it did not work' '
    expect_code 77 no_creds "$SPOTRUN" ls >none.out 2>&1 &&
    grep "no Azure credentials for account devstoreaccount1" none.out &&
    grep "AZURE_STORAGE_CONNECTION_STRING: not set" none.out &&
    grep "AZURE_STORAGE_KEY: not set" none.out &&
    grep "AZURE_STORAGE_SAS_TOKEN: not set" none.out &&
    grep "managed identity: off" none.out
'

test_expect_success 'a connection string for another account is skipped, and says so' '
    expect_code 77 no_creds AZURE_STORAGE_CONNECTION_STRING="AccountName=other;AccountKey=$AZ_KEY" \
        "$SPOTRUN" ls >other.out 2>&1 &&
    grep "AZURE_STORAGE_CONNECTION_STRING: for account other, not devstoreaccount1" other.out &&
    ! grep -F "$AZ_KEY" other.out
'

# A token endpoint that follows the IMDS protocol and a blob endpoint that
# records the Authorization header it gets (Azurite accepts OAuth only
# over HTTPS with its own certificate: the token fetch and the header are
# what is tested here).
test_expect_success 'managed identity: a token from the IMDS protocol, sent as Bearer' '
    mkdir -p imds && rm -f imds.log &&
    { python3 "$SRCDIR/tests/azure/imds.py" imds >imds.log 2>&1 & echo $! >imds.pid; } &&
    wait_for imds.log "^port" &&
    port=$(sed -n "s/^port //p" imds.log) &&
    no_creds AZURE_STORAGE_BLOB_ENDPOINT=http://127.0.0.1:$port/$AZ_ACCOUNT \
        SPOTRUN_AZ_IMDS_ENDPOINT=http://127.0.0.1:$port/metadata/identity/oauth2/token \
        "$SPOTRUN" ls -v >mi.out 2>&1 &&
    grep "credentials from managed identity" mi.out &&
    grep -c "^token" imds/tokens | grep -x 1 &&
    grep "^GET /devstoreaccount1/ckpt Bearer eyJ0eXAiOiJKV1QifQ.test-token.sig$" imds/requests &&
    ! grep -F "test-token" mi.out
'

test_expect_success 'managed identity unreachable: the chain names the endpoint and the failure' '
    expect_code 77 no_creds SPOTRUN_AZ_IMDS_ENDPOINT=http://127.0.0.1:1/token "$SPOTRUN" ls >mi2.out 2>&1 &&
    grep "managed identity: no token endpoint at http://127.0.0.1:1/token" mi2.out
'

test_done
