#!/usr/bin/env bash
# A job that never calls commit still gets checkpoints: its directory is
# committed when it exits, and with --settle once it stops changing.
. "$(dirname "$0")/lib.sh"

cat >writer.sh <<\JOB
#!/bin/sh
mkdir -p "$SPOTRUN_CKPT_DIR/sub"
echo "epoch 3" >"$SPOTRUN_CKPT_DIR/state.txt"
echo "opt" >"$SPOTRUN_CKPT_DIR/sub/opt.txt"
JOB
chmod +x writer.sh

# Writes a file, then idles for a long time (until stopped).
cat >sleeper.sh <<\JOB
#!/bin/sh
echo "written once" >"$SPOTRUN_CKPT_DIR/state.txt"
echo "job wrote its state"
sleep 60
JOB
chmod +x sleeper.sh

test_expect_success 'a job that writes files and exits 0 without commit: exit 0' '
    "$SPOTRUN" run --run-id unco -- ./writer.sh >run1.log 2>&1 &&
    grep "committing" run1.log
'

test_expect_success 'its directory was committed at exit (pull shows the files)' '
    "$SPOTRUN" pull unco out &&
    test "$(cat out/state.txt)" = "epoch 3" &&
    test "$(cat out/sub/opt.txt)" = opt
'

test_expect_success 'the step of that checkpoint is unknown: shown as -' '
    "$SPOTRUN" show unco >show.out &&
    grep "^checkpoints: *1$" show.out &&
    awk "\$1 == 1 && \$2 == \"-\"" show.out | grep . &&
    "$SPOTRUN" ls >ls.out &&
    awk "\$1 == \"unco\" && \$6 == \"-\"" ls.out | grep .
'

test_expect_success 'a job that exits 0 leaving its dir empty: nothing committed' '
    "$SPOTRUN" run --run-id empty -- true >run2.log 2>&1 &&
    "$SPOTRUN" show empty >show2.out &&
    grep "^checkpoints: *0$" show2.out
'

test_expect_success 'a crashing job that wrote files: no commit (its dir may be half written)' '
    expect_code 3 "$SPOTRUN" run --run-id crashy --max-restarts 0 -- \
        sh -c "echo half >\$SPOTRUN_CKPT_DIR/x; exit 3" >run3.log 2>&1 &&
    "$SPOTRUN" show crashy | grep "^checkpoints: *0$"
'

test_expect_success '--settle 1s: a running job gets its dir committed; notify then stops it: 75' '
    "$SPOTRUN" run --run-id settle --settle 1s --grace 2s -- ./sleeper.sh >run4.log 2>&1 &
    pid=$!
    {
        wait_for run4.log "committing .*settled" 30 &&
        wait_for run4.log "checkpoint 1 durable" 30 &&
        "$SPOTRUN" show settle >show4.out &&
        grep "^checkpoints: *1$" show4.out &&
        awk "\$1 == 1 && \$2 == \"-\"" show4.out | grep . &&
        "$SPOTRUN" pull settle out4 &&
        test "$(cat out4/state.txt)" = "written once" &&
        kill -0 $pid &&
        "$SPOTRUN" notify --run-id settle --deadline 3s
    } || { kill -TERM $pid; wait $pid; exit 1; }
    expect_code 75 wait $pid &&
    grep "preempted" run4.log &&
    test "$(grep -c "committing" run4.log)" -eq 1
'

test_done
