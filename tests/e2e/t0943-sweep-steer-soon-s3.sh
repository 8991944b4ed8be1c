#!/usr/bin/env bash
# t0942's steering within seconds (a cancel of a trial run by hand, a pause
# --stop under sweep work) on the S3 test server with conditional writes,
# plus the steering's request count per trial-hour: the same script,
# sourced (so this script's name names its scratch dir).
STEER_ON_S3=1
. "$(dirname "$0")/t0942-sweep-steer-soon.sh"
