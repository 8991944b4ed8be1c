#!/usr/bin/env bash
# A metadata endpoint (--aws-imds, --gcp-metadata, --azure-metadata and
# their SPOTRUN_* twins) must be a URL a request goes to as written: an
# empty port ("http://127.0.0.1:", which curl would send to port 80), a bad
# port, another scheme or no host is a usage error (64) before anything runs.
. "$(dirname "$0")/lib.sh"

test_expect_success '--aws-imds with an empty port is refused at parse (64), the job never runs' '
    expect_code 64 "$SPOTRUN" run --run-id e --aws-imds http://127.0.0.1: -- touch ran 2>e1 &&
    cat e1 && grep "invalid --aws-imds \"http://127.0.0.1:\": an empty port" e1 &&
    test ! -e ran && test ! -e "$SPOTRUN_STORE/e"
'

test_expect_success 'the GCP and Azure flags and the environment twins are checked the same way' '
    expect_code 64 "$SPOTRUN" run --run-id e --gcp-metadata http://127.0.0.1:/x -- touch ran 2>e2 &&
    grep "invalid --gcp-metadata .*an empty port" e2 &&
    expect_code 64 "$SPOTRUN" run --run-id e --azure-metadata http://127.0.0.1:0 -- touch ran 2>e3 &&
    grep "invalid --azure-metadata .*port 0 is not 1..65535" e3 &&
    SPOTRUN_AWS_IMDS=ftp://127.0.0.1:21 expect_code 64 "$SPOTRUN" run --run-id e -- touch ran 2>e4 &&
    grep "invalid --aws-imds .*not an http:// or https:// URL" e4 &&
    SPOTRUN_GCP_METADATA=http://127.0.0.1: expect_code 64 "$SPOTRUN" run --run-id e -- touch ran 2>e5 &&
    grep "invalid --gcp-metadata .*an empty port" e5 &&
    test ! -e ran
'

test_expect_success 'a URL with a port, or none, is accepted' '
    "$SPOTRUN" run --run-id ok --notice none --aws-imds http://127.0.0.1:9/ \
        --gcp-metadata http://127.0.0.1 -- touch ran && test -e ran
'

test_done
