# lib.sh - the harness of the end-to-end tests (tests/e2e/tNNNN-*.sh), in
# the style of git's t/test-lib.sh. Each script sources it, runs
# test_expect_success blocks, and ends with test_done.
#
# Environment (set by ctest, see tests/CMakeLists.txt; defaults for running
# a script by hand from the repo root after building into ./build):
#   SPOTRUN          the spotrun binary
#   SPOTRUN_PRELOAD  libspotrun.so
#   LOGREG           the C example trainer
#   SRCDIR           the source tree
#   TEST_TMP         scratch root; each script gets its own $TRASH in it
#
# Each script runs with its own store and work dir ($SPOTRUN_STORE,
# $SPOTRUN_WORK_DIR under $TRASH), so scripts can run in parallel.

set -u
SRCDIR=${SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SPOTRUN=${SPOTRUN:-$SRCDIR/build/runtime/spotrun}
SPOTRUN_PRELOAD=${SPOTRUN_PRELOAD:-$SRCDIR/build/preload/libspotrun.so}
LOGREG=${LOGREG:-$SRCDIR/build/examples/logreg}
TEST_TMP=${TEST_TMP:-$SRCDIR/build/tests/tmp}
PY=/usr/bin/python3 # Debian's python3-torch is importable from this one only
export SPOTRUN SPOTRUN_PRELOAD LOGREG SRCDIR PY

test_name=$(basename "$0" .sh)
TRASH=$TEST_TMP/$test_name
rm -rf "$TRASH"
mkdir -p "$TRASH"
cd "$TRASH" || exit 1
export SPOTRUN_STORE=$TRASH/store
export SPOTRUN_WORK_DIR=$TRASH/work
# Runs keep every checkpoint here (the default keeps the newest 3): the
# tests count and pull older ones. t0112 tests the default.
export SPOTRUN_KEEP=0
unset SPOTRUN_RUN_ID SPOTRUN_CKPT_DIR SPOTRUN_CONTROL SPOTRUN_SIGNAL SPOTRUN_STEP \
    SLURM_JOB_ID SLURM_ARRAY_JOB_ID SLURM_ARRAY_TASK_ID JOB_COMPLETION_INDEX \
    AWS_BATCH_JOB_ARRAY_INDEX
# A sanitizer build of spotrun runs with libspotrun.so (uninstrumented)
# preloaded when the job calls `spotrun commit`.
export ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0:detect_leaks=1

test_count=0
test_failed=0

say() { printf '%s\n' "$*"; }

# test_expect_success 'title' 'commands': runs commands in a subshell with
# errexit and pipefail; the test passes when they exit 0.
# Under errexit bash goes on past a failing `! cmd` (and past a failing
# command that is not the last of an && or || list), so a negated command
# asserts nothing unless it is the body's last: write `refute cmd` (or
# `if cmd; then say "why"; false; fi`); and chain with && only in the
# body's last statement. t0015 (testlint.py) fails on both.
# pipefail makes `cmd | grep x` fail when cmd fails; so do not pipe into
# `grep -q` or `head`, which may exit before cmd has written everything and
# make it fail (SIGPIPE): write to a file, then grep the file.
test_expect_success() {
    test_count=$((test_count + 1))
    local title=$1 body=$2 out=$TRASH/test-$test_count.out
    # A plain command, not an `if` condition or an ||/&& operand: there bash
    # ignores set -e for the whole subshell and only the body's last command
    # would count.
    # The ERR trap names the command that failed: a failing grep or a
    # command whose output went to a file would otherwise fail silently.
    (set -e -o pipefail; trap 'say "# failed (exit $?): $BASH_COMMAND"' ERR; eval "$body") >"$out" 2>&1
    local rc=$?
    if [ "$rc" -eq 0 ]; then
        say "ok $test_count - $title"
    else
        test_failed=$((test_failed + 1))
        say "not ok $test_count - $title"
        sed 's/^/#   /' "$out"
    fi
}

# test_skip 'title' 'reason': a test this machine cannot run, counted and
# said as TAP says it (ok N - title # skip: reason).
test_skip() {
    test_count=$((test_count + 1))
    say "ok $test_count - $1 # skip: $2"
}

# test_done: prints the summary line ctest's log shows and sets the exit code.
test_done() {
    local passed=$((test_count - test_failed))
    say "$passed passed, $test_failed failed"
    # Leave wrappers of failed tests behind no longer than the script, nor
    # the servers bodies started (test_bg).
    jobs -p | xargs -r kill 2>/dev/null
    [ ! -s "$TRASH/.bg-pids" ] || xargs -r kill <"$TRASH/.bg-pids" 2>/dev/null
    [ "$test_failed" -eq 0 ]
    exit $?
}

# test_bg PID: a background process a test body started that test_done
# stops (a body is a subshell: its jobs are not the script's). ctest fails
# a script that leaves a process running (tests/leftovers.py).
test_bg() { printf '%s\n' "$1" >>"$TRASH/.bg-pids"; }

# expect_code N cmd...: runs cmd, fails unless it exits N.
expect_code() {
    local want=$1
    shift
    local got=0
    "$@" || got=$?
    if [ "$got" -ne "$want" ]; then
        say "expected exit $want, got $got: $*"
        return 1
    fi
}

# refute CMD...: the negation of CMD as an assertion (what `! CMD` would
# mean if errexit honoured it): fails when CMD succeeds, saying what it ran
# and what it printed; succeeds, quietly, when CMD fails. A grep, cmp or
# diff must answer "no" (exit 1): one that could not read its file (exit 2)
# proves nothing, and fails too.
refute() {
    local out rc=0
    out=$("$@" 2>&1) || rc=$?
    case "$rc:${1##*/}" in
    0:*) say "expected failure, but it succeeded: $*" ;;
    1:grep | 1:egrep | 1:fgrep | 1:cmp | 1:diff) return 0 ;;
    *:grep | *:egrep | *:fgrep | *:cmp | *:diff) say "expected exit 1 (no), got $rc: $*" ;;
    *) return 0 ;;
    esac
    [ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/  | /'
    return 1
}

# wait_for FILE PATTERN [SECONDS]: waits until FILE has a line matching PATTERN.
wait_for() {
    local file=$1 pattern=$2 limit=${3:-60} i=0
    while ! grep -q -- "$pattern" "$file" 2>/dev/null; do
        i=$((i + 1))
        if [ "$i" -gt $((limit * 10)) ]; then
            say "timed out after ${limit}s waiting for a line matching '$pattern' in $file$([ -e "$file" ] || echo " (it does not exist)")"
            cat "$file" 2>/dev/null
            return 1
        fi
        sleep 0.1
    done
}

# count_lines FILE PATTERN: how many lines of FILE match PATTERN (grep's
# basic regex); 0 when FILE does not exist yet (a command started with
# `cmd >FILE &` may not have opened it when the test first looks).
count_lines() {
    local n
    n=$(grep -c -- "$2" "$1" 2>/dev/null) || true
    echo "${n:-0}"
}

# wait_lines FILE PATTERN N [SECONDS]: waits until FILE has at least N lines
# matching PATTERN (a missing FILE has none yet); on timeout says what it
# waited for and how far it got, and shows the file's tail.
wait_lines() {
    local file=$1 pattern=$2 want=$3 limit=${4:-120} i=0
    while [ "$(count_lines "$file" "$pattern")" -lt "$want" ]; do
        i=$((i + 1))
        if [ "$i" -gt $((limit * 10)) ]; then
            local have
            have=$(count_lines "$file" "$pattern")
            [ -e "$file" ] || have="none: it does not exist"
            say "timed out after ${limit}s waiting for $want lines matching '$pattern' in $file (it has $have)"
            tail -n 20 "$file" 2>/dev/null
            return 1
        fi
        sleep 0.1
    done
}

# wait_until SECONDS WHAT CMD...: waits until CMD succeeds (its output is
# discarded); on timeout says "timed out after SECONDS s waiting for WHAT".
wait_until() {
    local limit=$1 what=$2 i=0
    shift 2
    until "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ "$i" -gt $((limit * 10)) ]; then
            say "timed out after ${limit}s waiting for $what"
            return 1
        fi
        sleep 0.1
    done
}

# run_id_of CMD...: the default run id spotrun derives for a command here.
# (Read from the store after a run; see t0110 for the derivation itself.)
latest_run() { "$SPOTRUN" ls | awk 'NR>1 {print $1}' | tail -n 1; }

# require_torch: fail loudly when PyTorch is missing (scripts/deps.sh installs it).
require_torch() {
    "$PY" -c 'import torch' 2>/dev/null || {
        say "PyTorch is not importable from $PY: run scripts/deps.sh"
        return 1
    }
}

# spotrun_made DIR: marks DIR as a directory spotrun made (the user.spotrun
# extended attribute that a restore leaves), so that a pull or a run may
# replace what it holds; spotrun refuses a directory holding anything else.
spotrun_made() { "$PY" -c 'import os, sys; os.setxattr(sys.argv[1], "user.spotrun", b"1")' "$1"; }

# spotrun_work_made DIR RUN: makes DIR (mode 0700) a work dir spotrun made
# for run RUN (its .spotrun-owner marker, common/dirmark.h), as a run that
# was stopped leaves it; spotrun refuses a work dir without the marker.
spotrun_work_made() {
    mkdir -p "$1" && chmod 700 "$1" &&
        printf 'spotrun made this directory\nrun %s\nnonce %s\n' "$2" \
            "$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')" >"$1/.spotrun-owner" &&
        chmod 600 "$1/.spotrun-owner"
}

# svg_count FILE CLASS...: how many elements of the SVG document FILE have
# every word of CLASS in their class attribute (report and sweep report).
svg_count() {
    "$PY" -c "
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
want = sys.argv[2].split()
print(sum(1 for e in root.iter() if all(w in (e.get(\"class\") or \"\").split() for w in want)))
" "$1" "$2"
}

# json FILE CODE: runs the Python CODE with d, the JSON document in FILE
# (assertions on `show --json`, `stats --json`...); fails when CODE raises.
json() { "$PY" -c "import json, sys; d = json.load(open(sys.argv[1])); $2" "$1"; }

# events RUN: every line of RUN's event logs in the file store (all
# attempts, all nodes), in the order of the logs' names.
events() { cat "$SPOTRUN_STORE/$1"/events/*.jsonl; }

# newest_epoch RUN: the epoch in the manifest restore picks (highest
# (epoch, seq)), read back from the store with `spotrun show --json`.
newest_epoch() {
    "$SPOTRUN" show --json "$1" | "$PY" -c '
import json, sys
c = json.load(sys.stdin)["checkpoints"]
print(max((x.get("epoch", 0), x["seq"]) for x in c)[0])'
}

# free_port: a TCP port of 127.0.0.1 that nothing listens on just now.
free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
