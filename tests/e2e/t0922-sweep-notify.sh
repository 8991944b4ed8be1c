#!/usr/bin/env bash
# A notice to a sweep worker reaches whatever trial it runs: `notify
# --run-id` naming the trial the worker just finished (it has moved on)
# goes to the trial it runs now, instead of failing with 69; `notify`
# without --run-id reaches the one wrapper under the work dir.
. "$(dirname "$0")/lib.sh"

S=$SPOTRUN_STORE/sweeps
unset CUDA_VISIBLE_DEVICES
export OUT=$TRASH/out
mkdir -p "$OUT"

# wait_exists FILE: until FILE exists (at most 60 s).
wait_exists() {
    local i=0
    while test ! -e "$1"; do
        i=$((i + 1))
        test $i -gt 600 && { say "timed out waiting for $1 to exist"; return 1; }
        sleep 0.1
    done
}

# The first trial a worker takes runs until the test says go; the second
# runs (up to 2 minutes) until it is stopped.
"$SPOTRUN" sweep init sn --param k=0,1 -- sh -c '
    if mkdir "$OUT/first" 2>/dev/null; then
        echo "$SPOTRUN_RUN_ID" >"$OUT/first-id"
        i=0; while test ! -e "$OUT/go" && test $i -lt 1200; do sleep 0.1; i=$((i+1)); done
        exit 0
    fi
    echo "$SPOTRUN_RUN_ID" >"$OUT/second-id"
    i=0; while test $i -lt 1200; do sleep 0.1; i=$((i+1)); done' >/dev/null

test_expect_success 'notify --run-id of the trial a worker just finished reaches the trial it runs now' '
    (set +e; timeout 300 "$SPOTRUN" sweep work sn --until-empty --poll 100ms 2>work.err; echo $? >work.rc) &
    wait_for "$OUT/first-id" sn- &&
    first=$(cat "$OUT/first-id") &&
    touch "$OUT/go" &&
    wait_exists "$S/sn/end/${first#sn-}.done" &&
    wait_for "$OUT/second-id" sn- &&
    "$SPOTRUN" notify --run-id "$first" --deadline 5s --wait 60s 2>notify.err ||
        { cat notify.err; exit 1; }
    second=$(cat "$OUT/second-id") &&
    cat notify.err && grep "run $first is not running here any more: its sweep worker runs $second now" notify.err &&
    wait_for work.rc . 120 && cat work.err &&
    test "$(cat work.rc)" = 75 &&
    test ! -e "$S/sn/end/${second#sn-}.done" &&
    "$SPOTRUN" show "$second" | grep "^state: *preempted"
'

test_done
