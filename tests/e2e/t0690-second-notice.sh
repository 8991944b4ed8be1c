#!/usr/bin/env bash
# A notice that arrives while a stop is under way: the same reclamation seen
# by a second source (a cloud notice then systemd's TERM, `spotrun notify`
# then a fleet worker's TERM) only brings the deadline forward and the job's
# checkpoint is still waited for; the same signal again from the same sender
# (a second Ctrl-C) is a user in a hurry and skips the wait.
. "$(dirname "$0")/lib.sh"

# Commits step 1 at once; asked for a checkpoint, takes 2 s to commit step 2.
cat >slow.sh <<\EOF2
#!/bin/bash
want=0
trap 'want=1' USR1
echo 1 >"$SPOTRUN_CKPT_DIR/s" && "$SPOTRUN_BIN" commit --step 1
echo ready
while [ $want = 0 ]; do sleep 0.05; done
sleep 2
echo 2 >"$SPOTRUN_CKPT_DIR/s" && "$SPOTRUN_BIN" commit --step 2
sleep 100
EOF2
chmod +x slow.sh
newest_step() { "$SPOTRUN" show "$1" --json | "$PY" -c 'import json, sys; print(max(c["step"] for c in json.load(sys.stdin)["checkpoints"]))'; }

test_expect_success 'notify, then TERM from elsewhere: still waits for the commit, step 2 is durable' '
    "$SPOTRUN" run --run-id twice --notice none -- ./slow.sh >a.log 2>&1 &
    pid=$!
    wait_for a.log "^ready"
    "$SPOTRUN" notify --run-id twice --deadline 30s
    sleep 0.3
    kill -TERM $pid
    expect_code 75 wait $pid
    cat a.log
    grep "notice from signal:SIGTERM too: still making the checkpoint durable" a.log &&
    ! grep "second notice" a.log &&
    test "$(newest_step twice)" = 2
'

test_expect_success 'the same signal twice from the same sender: the stop skips the wait' '
    "$SPOTRUN" run --run-id hurry --notice none -- ./slow.sh >b.log 2>&1 &
    pid=$!
    wait_for b.log "^ready"
    kill -INT $pid
    sleep 0.3
    kill -INT $pid
    expect_code 75 wait $pid
    cat b.log
    grep "second notice (signal:SIGINT): not waiting any longer" b.log &&
    test "$(newest_step hurry)" = 1
'

test_done
