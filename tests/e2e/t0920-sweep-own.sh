#!/usr/bin/env bash
# A sweep's trials are its own (docs/sweeps.md): `sweep init` never adopts
# runs that merely have a trial's name, a trial's wrapper never resumes or
# takes as done a run that is not the trial's, `sweep delete` removes the
# sweep and exactly its own runs (under their leases, as gc), and a
# definition that differs from the stored one is exit 65, always.
. "$(dirname "$0")/lib.sh"

S=$SPOTRUN_STORE/sweeps
unset CUDA_VISIBLE_DEVICES
export OUT=$TRASH/out
mkdir -p "$OUT"
# no_objects DIR: the store holds no object under DIR (the file backend's
# own lock files, dot files, are not objects)
no_objects() { test -z "$(find "$1" -type f ! -name ".*" 2>/dev/null)"; }

# exp-0 done, exp-1 with a checkpoint: two ordinary runs
test_expect_success 'setup: runs exp-0 (done) and exp-1 (a checkpoint)' '
    "$SPOTRUN" run --run-id exp-0 -- true 2>/dev/null &&
    test -f "$SPOTRUN_STORE/exp-0/DONE" &&
    expect_code 3 "$SPOTRUN" run --run-id exp-1 --max-restarts 0 \
        -- sh -c "echo x >\"\$SPOTRUN_CKPT_DIR/x\"; \"\$SPOTRUN_BIN\" commit --step 5; exit 3" 2>/dev/null &&
    test -n "$(ls "$SPOTRUN_STORE/exp-1/ckpt")"
'

test_expect_success 'sweep init over runs NAME-K it did not make: exit 73 naming them, nothing written' '
    expect_code 73 "$SPOTRUN" sweep init exp --param k=0..2 -- sh -c "echo {k} >>\"\$OUT/exp\"" 2>err &&
    cat err &&
    grep "exp-0" err && grep "exp-1" err && grep "another sweep name" err &&
    test ! -e "$S/exp"
'

test_expect_success 'a trial never adopts a run made after the sweep by hand: exit 73, run untouched' '
    "$SPOTRUN" sweep init own --param k=0..2 -- sh -c "echo {k} >>\"\$OUT/own\"" >/dev/null &&
    "$SPOTRUN" run --run-id own-1 -- true 2>/dev/null &&
    expect_code 73 "$SPOTRUN" run --sweep own --trial 1 2>err &&
    cat err && grep "not trial 1 of sweep own" err &&
    expect_code 73 "$SPOTRUN" run --sweep own --trial 1 --fresh 2>err &&
    test -f "$SPOTRUN_STORE/own-1/DONE" && test ! -e "$OUT/own" &&
    test ! -e "$S/own/end/1.done"
'

test_expect_success 'a trial of another sweep is not this trial: exit 73' '
    "$SPOTRUN" sweep init o2 --param k=0..2 -- true >/dev/null &&
    "$SPOTRUN" run --sweep o2 --trial 0 --run-id own-2 2>/dev/null &&
    expect_code 73 "$SPOTRUN" run --sweep own --trial 2 2>err &&
    grep "trial 0 of sweep o2" err
'

test_expect_success 'the sweep own trial runs record it, and run' '
    "$SPOTRUN" run --sweep own --trial 0 2>/dev/null &&
    grep "\"sweep\":\"own\"" "$SPOTRUN_STORE/own-0/SWEEP" &&
    test "$(cat "$OUT/own")" = 0 &&
    "$SPOTRUN" run --sweep own --trial 0 --fresh 2>/dev/null &&
    test -f "$SPOTRUN_STORE/own-0/SWEEP" &&
    test "$(cat "$OUT/own" | tr "\n" " ")" = "0 0 "
'

# sweep own now: trial 0 done, trial 1's run made by hand (own-1), trial 2's
# run trial 0 of sweep o2 (own-2). Neither can ever run: a worker skips
# each for good, saying so once, and ends with 73 (not every trial ran).
# Both runs are done: the worker sees it when it claims them, and starts
# no wrapper for either.
test_expect_success 'sweep work --until-empty: a trial whose run is not the trial one is skipped, said once; exit 73' '
    expect_code 73 timeout 300 "$SPOTRUN" sweep work own --until-empty --poll 10ms 2>work.err &&
    cat work.err &&
    test "$(grep -c "skipping trial 1 from now on: run own-1 is not trial 1" work.err)" = 1 &&
    test "$(grep -c "skipping trial 2 from now on: run own-2 is not trial 2 .*trial 0 of sweep o2" work.err)" = 1 &&
    grep "2 trials not run" work.err &&
    test "$(grep -c "sweep own: trial 1 (k=1)" work.err)" = 0 && # its DONE seen at the claim: no wrapper started
    ! grep "sweep own trial 1" work.err &&
    test ! -e "$S/own/end/1.done" && test ! -e "$S/own/end/1.failed" &&
    test ! -e "$S/own/end/2.done" && test ! -e "$S/own/end/2.failed" &&
    test "$(cat "$OUT/own" | tr "\n" " ")" = "0 0 "
'

test_expect_success 'sweep work without --until-empty ends too (73) once only such trials are left' '
    expect_code 73 timeout 300 "$SPOTRUN" sweep work own --poll 10ms 2>work.err &&
    cat work.err &&
    test "$(grep -c "skipping trial 1 from now on" work.err)" = 1
'

test_expect_success 'sweep delete refuses while a trial runs (73, naming the owner), deleting nothing' '
    "$SPOTRUN" sweep init del --param k=0..2 \
        -- sh -c "if test {k} = 1; then touch \"\$OUT/del1\"; while test ! -e \"\$OUT/stop\"; do sleep 0.05; done; fi" >/dev/null &&
    "$SPOTRUN" run --sweep del --trial 0 2>/dev/null &&
    { "$SPOTRUN" run --sweep del --trial 1 2>run1.err & } &&
    for _ in $(seq 600); do test -e "$OUT/del1" && break; sleep 0.05; done &&
    test -e "$OUT/del1" || { echo "trial 1 never started"; exit 1; }
    "$SPOTRUN" run --run-id del-2 -- true 2>/dev/null &&
    expect_code 73 "$SPOTRUN" sweep delete del 2>err &&
    cat err && grep "del-1" err && grep "$(hostname)" err &&
    test -f "$SPOTRUN_STORE/del-0/DONE" && test -f "$S/del/def/000000.json" &&
    touch "$OUT/stop" && wait &&
    test -f "$S/del/end/1.done"
'

test_expect_success 'sweep delete removes the definition, end marks and its own runs only' '
    "$SPOTRUN" sweep delete del >o.txt 2>err &&
    cat o.txt err && grep "2 trial runs" o.txt &&
    no_objects "$S/del" && no_objects "$SPOTRUN_STORE/del-0" && no_objects "$SPOTRUN_STORE/del-1" &&
    test -f "$SPOTRUN_STORE/del-2/DONE" &&
    "$SPOTRUN" ls >ls.txt && cat ls.txt &&
    ! grep -E "^del-(0|1) " ls.txt && grep "^del-2 " ls.txt &&
    test ! -e "$SPOTRUN_STORE/del-0" && test ! -e "$SPOTRUN_STORE/del-1" && test ! -e "$S/del" &&
    expect_code 66 "$SPOTRUN" sweep delete del 2>err && grep "no sweep del" err
'

test_expect_success 'after sweep delete the name can be defined again over no leftovers' '
    "$SPOTRUN" sweep init own2 --param k=0..1 -- true >/dev/null &&
    "$SPOTRUN" run --sweep own2 --trial 0 2>/dev/null &&
    "$SPOTRUN" sweep delete own2 >/dev/null &&
    "$SPOTRUN" sweep init own2 --param k=0..1 -- true >/dev/null &&
    "$SPOTRUN" run --sweep own2 --trial 0 2>/dev/null
'

test_expect_success 'sweep init with fewer trials than the stored part 0: exit 65, not "unchanged"' '
    "$SPOTRUN" sweep init sm --param k=0..3 -- true >/dev/null &&
    expect_code 65 "$SPOTRUN" sweep init sm --param k=0..1 -- true >o.txt 2>err &&
    grep "different trials" err && ! grep unchanged o.txt &&
    "$SPOTRUN" sweep init sm --add --param k=9 >/dev/null &&
    "$SPOTRUN" sweep init sm --param k=0..3 -- true >o.txt &&
    grep unchanged o.txt &&
    expect_code 65 "$SPOTRUN" sweep init sm --param k=0..4 -- true 2>err
'

test_expect_success '--add with another command: exit 65, nothing added' '
    expect_code 65 "$SPOTRUN" sweep init sm --add --param k=10 -- echo other 2>err &&
    grep "cannot change the sweep.s command" err &&
    test ! -e "$S/sm/def/000002.json" &&
    "$SPOTRUN" sweep init sm --add --param k=10 -- true >/dev/null &&
    test -e "$S/sm/def/000002.json"
'

test_done
