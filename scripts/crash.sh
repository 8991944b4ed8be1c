#!/usr/bin/env bash
# crash.sh N [--store file|s3] [--seed S] [--only WHAT] [--keep] - the
# crash-consistency loop (tests/e2e/crashloop.py) for N iterations: a
# trainer (in place under --settle, or with spotrun commit) interrupted at
# a random point (kill -9 of the job or of the wrapper mid-stage,
# mid-upload, mid-manifest, mid-lease-renewal, a notice mid-save), rerun by
# a new node, and checked (a complete checkpoint restored, the correct final
# state, no user file changed). Prints a line per iteration, how often each
# point was reached, the failing iterations (their logs are kept) and a
# summary line for the README; exits 1 when a run was unrecoverable or a
# user file changed. Uses the build in build/ (scripts/build.sh); an S3 run
# starts the test server (tests/s3, npm ci). The t0605 and t0606 e2e tests
# run the same loop for a few iterations. SPOTRUN and SPOTRUN_INJECT_LIB
# point it at another build.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-}
case $n in '' | *[!0-9]*)
    echo "usage: scripts/crash.sh N [--store file|s3] [--seed S] [--only WHAT] [--keep]" >&2
    exit 64
    ;;
esac
shift
store=file seed=$(date +%s) extra=()
while [ $# -gt 0 ]; do
    case $1 in
    --store) store=$2 && shift 2 ;;
    --seed) seed=$2 && shift 2 ;;
    --only) extra+=(--only "$2") && shift 2 ;;
    --keep) extra+=(--keep) && shift ;;
    *) echo "crash.sh: unknown option $1" >&2 && exit 64 ;;
    esac
done
case $store in file | s3) ;; *) echo "crash.sh: --store is file or s3" >&2 && exit 64 ;; esac
# Another build's binaries: SPOTRUN and SPOTRUN_INJECT_LIB.
export SPOTRUN=${SPOTRUN:-$root/build/runtime/spotrun}
export SPOTRUN_INJECT_LIB=${SPOTRUN_INJECT_LIB:-$root/build/tests/faults/libspotrun-inject.so}
[ -x "$SPOTRUN" ] || {
    echo "crash.sh: no $SPOTRUN: run scripts/build.sh first" >&2
    exit 69
}
# lib.sh: the e2e tests' scratch dir ($TRASH: build/tests/tmp/crash-STORE-SEED/crash) and
# environment; s3lib.sh starts the S3 server and stops it on exit.
set +e
# file and s3 loops, and loops of different seeds, may run at once
export SRCDIR=$root TEST_TMP=$root/build/tests/tmp/crash-$store-$seed
. "$root/tests/e2e/lib.sh"
case $store in
file) url=$TRASH/store s3=() ;;
s3)
    . "$root/tests/e2e/s3lib.sh"
    S3_CONDITIONAL=1 s3_start
    url=$SPOTRUN_STORE s3=(--s3-url "$S3_URL")
    ;;
esac
"$PY" "$root/tests/e2e/crashloop.py" --store "$url" "${s3[@]}" -n "$n" --seed "$seed" \
    --dir "$TRASH/loop" "${extra[@]}"
