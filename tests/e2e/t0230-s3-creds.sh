#!/usr/bin/env bash
# Each credential source reaches the S3 store: environment, the shared
# profile files, the container endpoint and the EC2 instance role (IMDSv2),
# and temporary credentials are refreshed before they expire.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh"
s3_start
mkdir -p src && head -c 50000 /dev/urandom >src/w.bin

# no_env CMD...: runs CMD without credentials in the environment.
no_env() { env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN "$@"; }

start_creds() { # EXPIRES -> CREDS_URL
    # A new file each time: the server's redirection may truncate it after
    # wait_for has already read the previous server's port line.
    rm -f "$TRASH/creds.port"
    python3 "$SRCDIR/tests/s3/creds_server.py" "$S3_KEY_ID" "$S3_SECRET" "$1" "$TRASH/creds.log" \
        >"$TRASH/creds.port" 2>&1 &
    CREDS_PID=$!
    trap 's3_stop; kill $CREDS_PID 2>/dev/null' EXIT
    wait_for "$TRASH/creds.port" "^port" 30 || exit 1
    CREDS_URL=http://127.0.0.1:$(sed -n "s/^port //p" "$TRASH/creds.port")
}

test_expect_success 'environment: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY' '
    "$SPOTRUN" push env1 src && "$SPOTRUN" ls -v 2>ls.log && grep "credentials from environment" ls.log
'

test_expect_success 'profile: AWS_PROFILE in the shared credentials file, region from config' '
    printf "[default]\naws_access_key_id = nope\naws_secret_access_key = nope\n\n[ci]\naws_access_key_id = %s\naws_secret_access_key = %s\n" \
        "$S3_KEY_ID" "$S3_SECRET" >creds.ini &&
    printf "[profile ci]\nregion = us-east-1\n" >config.ini &&
    no_env AWS_SHARED_CREDENTIALS_FILE=$PWD/creds.ini AWS_CONFIG_FILE=$PWD/config.ini AWS_PROFILE=ci \
        "$SPOTRUN" push prof1 src -v 2>prof.log &&
    grep "credentials from profile ci" prof.log &&
    "$SPOTRUN" pull prof1 out1 && cmp src/w.bin out1/w.bin
'

test_expect_success 'addressing: the profile'"'"'s s3.addressing_style, overridden by SPOTRUN_S3_ADDRESSING' '
    printf "[default]\ns3 =\n    addressing_style = path\n[profile vh]\ns3 =\n    addressing_style = virtual\n" >conf-style
    AWS_CONFIG_FILE=$TRASH/conf-style "$SPOTRUN" ls -v >/dev/null 2>style1.log
    grep "s3: http://127.0.0.1:[0-9]*/bkt, region us-east-1, path-style" style1.log
    AWS_CONFIG_FILE=$TRASH/conf-style AWS_PROFILE=vh "$SPOTRUN" ls -v >/dev/null 2>style2.log || :
    grep "s3: http://bkt.127.0.0.1:[0-9]*, region us-east-1, virtual-hosted-style" style2.log
    AWS_CONFIG_FILE=$TRASH/conf-style AWS_PROFILE=vh SPOTRUN_S3_ADDRESSING=path "$SPOTRUN" ls \
        -v >/dev/null 2>style3.log
    grep "path-style" style3.log
'

test_expect_success 'profile: a missing AWS_PROFILE is a clear error' '
    expect_code 77 no_env AWS_SHARED_CREDENTIALS_FILE=$PWD/creds.ini AWS_PROFILE=ghost \
        "$SPOTRUN" ls 2>ghost.log &&
    grep "AWS_PROFILE=ghost has no credentials" ghost.log
'

test_expect_success 'no credentials anywhere: 77 naming every source tried and what it said' '
    expect_code 77 no_env AWS_SHARED_CREDENTIALS_FILE=$TRASH/nohome/.aws/credentials \
        AWS_CONFIG_FILE=$TRASH/nohome/.aws/config "$SPOTRUN" ls 2>none.log &&
    grep -F "no AWS credentials found; tried" none.log &&
    grep -F "environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY not set" none.log &&
    grep -F "profile default (AWS_PROFILE unset): $TRASH/nohome/.aws/credentials absent, $TRASH/nohome/.aws/config absent" none.log &&
    grep -F "container endpoint: AWS_CONTAINER_CREDENTIALS_FULL_URI and _RELATIVE_URI not set" none.log &&
    grep -F "instance role: off (AWS_EC2_METADATA_DISABLED=true)" none.log &&
    ! grep -F "Permission denied" none.log
'

test_expect_success 'no credentials: a profile file without the profile and an unreachable IMDS are named' '
    printf "[other]\naws_access_key_id = x\naws_secret_access_key = y\n" >other.ini &&
    expect_code 77 no_env AWS_SHARED_CREDENTIALS_FILE=$PWD/other.ini AWS_EC2_METADATA_DISABLED= \
        SPOTRUN_AWS_IMDS=http://127.0.0.1:9 "$SPOTRUN" ls 2>none2.log &&
    grep -F "$PWD/other.ini has no aws_access_key_id in [default]" none2.log &&
    grep -F "instance role: no metadata service at http://127.0.0.1:9" none2.log
'

test_expect_success 'run names the S3 store with its endpoint before the job starts' '
    "$SPOTRUN" run --run-id where1 -- true 2>where.log &&
    grep -F "spotrun: run where1, store s3://bkt/$test_name at $S3_URL/bkt (region us-east-1)" where.log
'

start_creds 3600

test_expect_success 'container endpoint: FULL_URI with the authorization token' '
    no_env AWS_CONTAINER_CREDENTIALS_FULL_URI=$CREDS_URL/container-creds \
        AWS_CONTAINER_AUTHORIZATION_TOKEN=container-secret-token \
        "$SPOTRUN" push cont1 src -v 2>cont.log &&
    grep "credentials from container endpoint" cont.log &&
    grep -q "^container" creds.log
'

test_expect_success 'container endpoint: a wrong authorization token fails with 77' '
    expect_code 77 no_env AWS_CONTAINER_CREDENTIALS_FULL_URI=$CREDS_URL/container-creds \
        AWS_CONTAINER_AUTHORIZATION_TOKEN=wrong "$SPOTRUN" ls 2>cont2.log &&
    grep "container credentials endpoint" cont2.log && ! grep -q wrong cont2.log
'

test_expect_success 'instance role: IMDSv2 token, role name, credentials' '
    no_env AWS_EC2_METADATA_DISABLED= SPOTRUN_AWS_IMDS=$CREDS_URL \
        "$SPOTRUN" push imds1 src -v 2>imds.log &&
    grep "credentials from instance role spotrun-test-role" imds.log &&
    grep "s3: .*, region us-east-1," imds.log && # AWS_REGION wins over the instance
    no_env -u AWS_REGION AWS_EC2_METADATA_DISABLED= SPOTRUN_AWS_IMDS=$CREDS_URL \
        "$SPOTRUN" ls -v 2>region.log &&
    grep "s3: .*, region eu-west-3," region.log &&
    no_env AWS_EC2_METADATA_DISABLED= SPOTRUN_AWS_IMDS=$CREDS_URL "$SPOTRUN" pull imds1 out2 &&
    cmp src/w.bin out2/w.bin
'

test_expect_success 'no secret in any log line' '
    ! grep -h "$S3_SECRET\b" ls.log prof.log cont.log imds.log | grep -v "^spotrun: s3: http" | grep -i secret
'

kill $CREDS_PID 2>/dev/null; wait $CREDS_PID 2>/dev/null
: >creds.log
start_creds 120 # expires within the refresh margin: every request refreshes

test_expect_success 'instance role: credentials near expiry are refreshed' '
    no_env AWS_EC2_METADATA_DISABLED= SPOTRUN_AWS_IMDS=$CREDS_URL "$SPOTRUN" push imds2 src -v \
        2>imds2.log &&
    grep "refreshed credentials from instance role" imds2.log &&
    test "$(grep -c "^imds" creds.log)" -ge 2
'

test_done
