#!/usr/bin/env bash
# Where each attempt ran: the notice watcher asks the cloud's metadata
# service (AWS IMDSv2, GCP, Azure IMDS) for the instance type, zone and
# region, and each attempt's event log gets a "placement" event that `show`
# and `show --json` print. Without a cloud (--notice none), with a hostile
# answer or an unreachable or hung service, nothing is recorded and the job
# is not held up.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-metadata.sh"
start_metadata aws && AWS_URL=$MD_URL
start_metadata gcp && GCP_URL=$MD_URL
start_metadata azure && AZ_URL=$MD_URL
export SPOTRUN_POLL_INTERVAL=200ms

# placement RUN [ATTEMPT]: the attempt's placement event as
# "cloud instance_type zone region" ("-" for a field left out), or nothing.
placement() {
    python3 - "$SPOTRUN_STORE/$1/events/$(printf %06d "${2:-0}").jsonl" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["event"] == "placement":
        print(" ".join(e.get(k, "-") for k in ("cloud", "instance_type", "zone", "region")))
EOF
}

# shown RUN: `show --json`'s attempts as "cloud instance_type zone region".
shown() {
    "$SPOTRUN" show --json "$1" | python3 -c '
import json, sys
for a in json.load(sys.stdin)["attempt_list"]:
    print(" ".join(a[k] or "-" for k in ("cloud", "instance_type", "zone", "region")))'
}

test_expect_success 'AWS: type, availability zone and region from IMDSv2' '
    "$SPOTRUN" run --run-id aws1 --notice aws --aws-imds "$AWS_URL" -- sleep 0.5 &&
    test "$(placement aws1)" = "aws g5.xlarge us-east-1a us-east-1" &&
    test "$(shown aws1)" = "aws g5.xlarge us-east-1a us-east-1" &&
    "$SPOTRUN" show aws1 | grep "^attempt 0 .* on [^ ]* g5.xlarge (aws us-east-1a): done$"
'

test_expect_success 'GCP: the last component of the resource paths; the region of the zone' '
    "$SPOTRUN" run --run-id gcp1 --notice gcp --gcp-metadata "$GCP_URL" -- sleep 0.5 &&
    test "$(placement gcp1)" = "gcp a2-highgpu-1g us-central1-a us-central1" &&
    test "$(shown gcp1)" = "gcp a2-highgpu-1g us-central1-a us-central1"
'

test_expect_success 'Azure: vmSize, and the zone as <location>-<zone>' '
    "$SPOTRUN" run --run-id az1 --notice azure --azure-metadata "$AZ_URL" -- sleep 0.5 &&
    test "$(placement az1)" = "azure Standard_NC6s_v3 eastus-1 eastus" &&
    test "$(shown az1)" = "azure Standard_NC6s_v3 eastus-1 eastus"
'

test_expect_success 'Azure: a VM without zones is placed in its location' '
    MD_URL=$AZ_URL md_control "placement?zone=" &&
    "$SPOTRUN" run --run-id az2 --notice azure --azure-metadata "$AZ_URL" -- sleep 0.5 &&
    test "$(placement az2)" = "azure Standard_NC6s_v3 eastus eastus" &&
    MD_URL=$AZ_URL md_control "placement?zone=1"
'

test_expect_success '--notice auto: the detected cloud is asked too' '
    "$SPOTRUN" run --run-id auto1 --notice auto --gcp-metadata "$GCP_URL" -- sleep 0.5 &&
    test "$(placement auto1)" = "gcp a2-highgpu-1g us-central1-a us-central1"
'

test_expect_success 'a restarted attempt has its own placement event' '
    "$SPOTRUN" run --run-id aws2 --notice aws --aws-imds "$AWS_URL" --backoff 10ms -- \
        sh -c "sleep 0.5; test \"\$SPOTRUN_ATTEMPT\" -ge 1 || exit 3" &&
    test "$(placement aws2 0)" = "aws g5.xlarge us-east-1a us-east-1" &&
    test "$(placement aws2 1)" = "aws g5.xlarge us-east-1a us-east-1" &&
    test "$(shown aws2 | sort -u)" = "aws g5.xlarge us-east-1a us-east-1"
'

test_expect_success 'the user'"'"'s --instance-type wins over the metadata service'"'"'s' '
    "$SPOTRUN" run --run-id aws3 --notice aws --aws-imds "$AWS_URL" --instance-type p4d.24xlarge \
        -- sleep 0.5 &&
    test "$(placement aws3)" = "aws g5.xlarge us-east-1a us-east-1" &&
    test "$(shown aws3)" = "aws p4d.24xlarge us-east-1a us-east-1"
'

test_expect_success '--notice none: no placement event, and nothing asked' '
    MD_URL=$AWS_URL md_get stats >before.json &&
    "$SPOTRUN" run --run-id none1 --notice none --aws-imds "$AWS_URL" -- sleep 0.3 &&
    test -z "$(placement none1)" &&
    test "$(shown none1)" = "- - - -" &&
    MD_URL=$AWS_URL md_get stats >after.json &&
    ! grep -h -o "\"GET /latest/meta-data/placement[^,]*" before.json after.json | sort | uniq -u | grep .
'

test_expect_success 'hostile answers are not recorded, and the run is fine' '
    MD_URL=$AWS_URL md_control "placement?zone=us-east-1a%0A%7B%22x%22%3A1%7D&region=us%20east" &&
    "$SPOTRUN" run --run-id bad1 --notice aws --aws-imds "$AWS_URL" -- sleep 0.5 &&
    test "$(placement bad1)" = "aws g5.xlarge - -" &&
    big=$(head -c 10240 /dev/zero | tr "\\0" a) &&
    MD_URL=$GCP_URL md_control "placement?zone=$big&instance_type=a%20b" &&
    "$SPOTRUN" run --run-id bad2 --notice gcp --gcp-metadata "$GCP_URL" -- sleep 0.5 &&
    test -z "$(placement bad2)" &&
    test "$(shown bad2)" = "- - - -" &&
    MD_URL=$AZ_URL md_control "placement?zone=$big&region=east%0Aus" &&
    "$SPOTRUN" run --run-id bad3 --notice azure --azure-metadata "$AZ_URL" -- sleep 0.5 &&
    test "$(placement bad3)" = "azure Standard_NC6s_v3 - -"
'

test_expect_success 'an unreachable metadata service: the job runs at once, no placement' '
    start=$(date +%s%N) &&
    "$SPOTRUN" run --run-id gone1 --notice aws --aws-imds http://127.0.0.1:9 -- true &&
    ms=$((($(date +%s%N) - start) / 1000000)) &&
    test -z "$(placement gone1)" &&
    test "$ms" -lt 1500 || { say "took $ms ms"; false; }
'

test_expect_success 'a service that never answers the placement does not hold up the job or its end' '
    MD_URL=$AWS_URL md_control "placement?hang=1" &&
    start=$(date +%s%N) &&
    "$SPOTRUN" run --run-id hang1 --notice aws --aws-imds "$AWS_URL" -- true &&
    ms=$((($(date +%s%N) - start) / 1000000)) &&
    test -z "$(placement hang1)" &&
    test "$ms" -lt 1500 || { say "took $ms ms"; false; }
'

test_done
