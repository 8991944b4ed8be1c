#!/usr/bin/env bash
# A trial's job may exit with any code, spotrun's own included (docs/sweeps.md):
# a job that exits 64, 73 or 75 fails its trial (marked failed, left alone)
# and never stops or drains the `sweep work` worker, which tells spotrun's
# own refusals from the job's codes by the trial's end mark and the run's
# recorded attempts, not by the wrapper's exit code.
. "$(dirname "$0")/lib.sh"

S=$SPOTRUN_STORE/sweeps
unset CUDA_VISIBLE_DEVICES
export OUT=$TRASH/out
mkdir -p "$OUT"

test_expect_success 'jobs exiting 64, 73 and 75 fail their trials; the worker runs the rest and exits 0' '
    "$SPOTRUN" sweep init codes --param c=64,73,75,0 -- sh -c "echo {c} >>\"\$OUT/codes\"; exit {c}" >/dev/null &&
    timeout 300 "$SPOTRUN" sweep work codes --until-empty --poll 100ms -- --max-restarts 0 2>work.err ||
        { cat work.err; exit 1; }
    for k in 0 1 2; do test -f "$S/codes/end/$k.failed" || exit 1; done &&
    test -f "$S/codes/end/3.done" &&
    test "$(sort "$OUT/codes" | tr "\n" " ")" = "0 64 73 75 " &&
    ! grep "refused its options" work.err && ! grep "preempted" work.err &&
    grep -c "failed (.*); left alone" work.err
'

test_expect_success 'a failed trial of code 64 run again by a worker does not stop it' '
    : >"$OUT/codes" &&
    timeout 300 "$SPOTRUN" sweep work codes --until-empty --poll 100ms 2>again.err &&
    test ! -s "$OUT/codes"
'

# trial 0 exits 75 by itself at once; trial 1 waits for trial 0's failed
# mark, then finishes: the worker must not drain (TERM) the healthy trial
test_expect_success 'sweep work --slots 2: a job that exits 75 by itself does not drain the healthy trial' '
    "$SPOTRUN" sweep init own75 --param k=0,1 -- sh -c "
        if test {k} = 0; then exit 75; fi
        i=0; while test ! -e \"\$SPOTRUN_STORE/sweeps/own75/end/0.failed\" && test \$i -lt 1200; do sleep 0.05; i=\$((i+1)); done
        test -e \"\$SPOTRUN_STORE/sweeps/own75/end/0.failed\" || echo never saw trial 0 fail
        test -e \"\$SPOTRUN_STORE/sweeps/own75/end/0.failed\" || exit 9
        echo healthy-done >>\"\$OUT/own75\"" >/dev/null &&
    timeout 300 "$SPOTRUN" sweep work own75 --slots 2 --until-empty --poll 100ms -- --max-restarts 0 2>own75.err ||
        { cat own75.err; exit 1; }
    test -f "$S/own75/end/0.failed" && test -f "$S/own75/end/1.done" &&
    test "$(cat "$OUT/own75")" = healthy-done &&
    ! grep "checkpointing the running trials" own75.err
'

test_done
