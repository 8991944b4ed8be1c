#!/usr/bin/env bash
# t0940's steering (cancel, retry, pause, resume, priority, racing cancels,
# the views) on the S3 test server with conditional writes: the same
# script, sourced (so this script's name names its scratch dir).
STEER_ON_S3=1
. "$(dirname "$0")/t0940-sweep-steer.sh"
