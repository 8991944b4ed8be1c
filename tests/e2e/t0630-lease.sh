#!/usr/bin/env bash
# One owner per run: two wrappers of one run on two "nodes" (separate work
# dirs, one store). The second waits for the first's lease or gives up with
# 73; it takes over when the first is preempted, killed, or paused past its
# lease; a paused owner that wakes up after a takeover stops with 73 and its
# checkpoints never become the newest (epoch fence).
. "$(dirname "$0")/lib.sh"

# node A and node B: the same store, their own local state.
# (env execs: $! of "$on_a ... &" is the wrapper's own pid)
on_a="env SPOTRUN_WORK_DIR=$TRASH/node-a"
on_b="env SPOTRUN_WORK_DIR=$TRASH/node-b"
train="$LOGREG --steps 1500" # the job (word-split on purpose: no spaces in it)

test_expect_success 'uninterrupted reference run' '
    "$LOGREG" --steps 1500 --out ref.bin >/dev/null
'

test_expect_success 'a second wrapper of a running run waits, then exits 73 naming the owner' '
    $on_a "$SPOTRUN" run --run-id r1 -- "$LOGREG" --steps 100000 \
        --save-every 0 --pace-ms 2 --out a.bin >a.log 2>&1 &
    a=$!
    wait_for a.log "step 100 "
    expect_code 73 $on_b "$SPOTRUN" run --run-id r1 --lease-wait 1s -- $train --out b.bin \
        >b.log 2>&1
    grep "is owned by $(hostname) pid $a" b.log
    grep "not starting (--lease-wait)" b.log
    test ! -e b.bin
    kill -0 $a
    "$SPOTRUN" show --json r1 | "$PY" -c "
import json, sys
l = json.load(sys.stdin)[\"lease\"]
assert l[\"state\"] == \"held\" and l[\"pid\"] == $a and l[\"epoch\"] == 1, l"
    "$SPOTRUN" show r1 | grep "^lease: *held by $(hostname) pid $a (epoch 1, expires in"
    $on_a "$SPOTRUN" notify --run-id r1 --deadline 20s
    expect_code 75 wait $a
'

test_expect_success 'a waiting wrapper takes over when the owner is preempted, bit-exact' '
    $on_a "$SPOTRUN" run --run-id r2 -- $train --pace-ms 2 --out a.bin >a2.log 2>&1 &
    a=$!
    wait_for a2.log "step 300 "
    $on_b "$SPOTRUN" run --run-id r2 --lease-wait 60s -- $train --out b.bin >b2.log 2>&1 &
    b=$!
    wait_for b2.log "waiting up to"
    $on_a "$SPOTRUN" notify --run-id r2 --deadline 20s
    expect_code 75 wait $a
    expect_code 0 wait $b
    grep "resumed from step" b2.log
    cmp ref.bin b.bin
    test "$(newest_epoch r2)" = 2
'

test_expect_success 'kill -9 of the owner here: a rerun need not wait for the lease to expire' '
    $on_a "$SPOTRUN" run --run-id r3 --lease-ttl 1h -- $train --pace-ms 2 --save-every 200 \
        --out a.bin >a3.log 2>&1 &
    a=$!
    wait_for a3.log "checkpoint 1 durable"
    kill -9 $a
    wait $a || : # the job dies with it (PR_SET_PDEATHSIG)
    $on_b "$SPOTRUN" run --run-id r3 --lease-wait 5s -- $train --out b.bin >b3.log 2>&1
    grep "belonged to pid $a on this machine, which is gone" b3.log
    grep "resumed from step" b3.log
    cmp ref.bin b.bin
'

test_expect_success 'an owner paused past its lease loses the run; its wake-up cannot win' '
    $on_a "$SPOTRUN" run --run-id r4 --lease-ttl 2s -- $train \
        --save-every 100 --pace-ms 5 --out a.bin >a4.log 2>&1 &
    a=$!
    wait_for a4.log "checkpoint 1 durable"
    job=$(pgrep -P $a)
    # Whatever fails below, the paused pair is resumed (and then exits 73):
    # a stopped wrapper would outlive the test, holding its connections.
    trap "kill -CONT -- -$job $a 2>/dev/null || :" EXIT
    kill -STOP $a
    kill -STOP -- -$job # the whole VM pauses: wrapper and job
    $on_b "$SPOTRUN" run --run-id r4 --lease-ttl 2s --lease-wait 30s -- $train --pace-ms 2 \
        --out b.bin >b4.log 2>&1 &
    b=$!
    wait_for b4.log "resumed from step"
    wait_for b4.log "step 1000 "
    $on_b "$SPOTRUN" notify --run-id r4 --deadline 20s
    expect_code 75 wait $b
    test "$(newest_epoch r4)" = 2
    kill -CONT -- -$job
    kill -CONT $a
    expect_code 73 wait $a
    grep "lost the lease of run r4" a4.log
    grep "took it over (epoch 2)" a4.log
    refute grep "preempted" a4.log
    test "$(newest_epoch r4)" = 2
    "$SPOTRUN" show r4 >show4.out
    grep ": lease-lost: another wrapper took the run over$" show4.out
    grep "failures:    0" show4.out
    $on_b "$SPOTRUN" run --run-id r4 -- $train --out b.bin >b5.log 2>&1
    cmp ref.bin b.bin
'

test_expect_success '--lease-ttl 0 runs without a lease; bad values are usage errors' '
    "$SPOTRUN" run --run-id r5 --lease-ttl 0 -- $train --out c.bin >c.log 2>&1
    cmp ref.bin c.bin
    "$SPOTRUN" show --json r5 >r5.json
    refute grep "\"epoch\"" r5.json
    mkdir -p st
    echo leased >st/state
    "$SPOTRUN" push r6 st
    "$SPOTRUN" run --run-id r6 --lease-ttl 0 -- sh -c \
        "echo unleased >\$SPOTRUN_CKPT_DIR/state && \$SPOTRUN_BIN commit" >r6.log 2>&1
    rm -rf out6
    "$SPOTRUN" pull r6 out6
    test "$(cat out6/state)" = unleased
    expect_code 64 "$SPOTRUN" run --lease-ttl 10ms -- true 2>err.log
    grep -- "--lease-ttl" err.log
    expect_code 64 "$SPOTRUN" run --lease-wait soon -- true 2>err2.log
    grep -- "--lease-wait" err2.log
'

test_done
