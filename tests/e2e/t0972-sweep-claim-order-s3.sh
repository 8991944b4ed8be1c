#!/usr/bin/env bash
# t0970's claim order (a preempted and a paused trial claimed before fresh
# ones) on the S3 test server: the same script, sourced (so this script's
# name names its scratch dir).
CLAIM_ON_S3=1
. "$(dirname "$0")/t0970-sweep-claim-order.sh"
