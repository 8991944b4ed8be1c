#!/usr/bin/env bash
# Retention: --keep N while running, and spotrun gc afterwards.
. "$(dirname "$0")/lib.sh"

# Commits steps 1..5, each with different content.
cat >job.sh <<\JOB
#!/bin/sh
for i in 1 2 3 4 5; do
    echo "state $i" >"$SPOTRUN_CKPT_DIR/state.txt"
    "$SPOTRUN_BIN" commit --step $i || exit 9
done
JOB
chmod +x job.sh

seqs() { ls "$SPOTRUN_STORE/$1/ckpt" | tr "\n" " "; }

test_expect_success '--keep 2 with a job committing 5 times: exit 0' '
    "$SPOTRUN" run --run-id k2 --keep 2 -- ./job.sh >run.log 2>&1 &&
    test "$(grep -c "durable" run.log)" -eq 5
'

test_expect_success 'exactly the newest 2 remain (seqs 4, 5)' '
    test "$(seqs k2)" = "0000000004 0000000005 " &&
    "$SPOTRUN" show k2 >show.out &&
    grep "^checkpoints: *2$" show.out &&
    awk "\$1 == 4 && \$2 == 4" show.out | grep . &&
    awk "\$1 == 5 && \$2 == 5" show.out | grep .
'

test_expect_success 'the newest is restored' '
    "$SPOTRUN" pull k2 out &&
    test "$(cat out/state.txt)" = "state 5"
'

test_expect_success 'SPOTRUN_KEEP=3 is the environment twin' '
    SPOTRUN_KEEP=3 "$SPOTRUN" run --run-id k3 -- ./job.sh >run3.log 2>&1 &&
    test "$(seqs k3)" = "0000000003 0000000004 0000000005 "
'

test_expect_success '--keep 0: all checkpoints remain' '
    "$SPOTRUN" run --run-id kall --keep 0 -- ./job.sh >runall.log 2>&1 &&
    "$SPOTRUN" show kall | grep "^checkpoints: *5$"
'

test_expect_success 'spotrun gc RUN --keep 1 leaves only the newest' '
    "$SPOTRUN" gc kall --keep 1 2>gc.err &&
    test "$(seqs kall)" = "0000000005 " &&
    "$SPOTRUN" show kall | grep "^checkpoints: *1$" &&
    "$SPOTRUN" pull kall out2 &&
    test "$(cat out2/state.txt)" = "state 5"
'

test_expect_success 'gc keeps the run done' '
    test -f "$SPOTRUN_STORE/kall/DONE" &&
    "$SPOTRUN" show kall | grep "^state: *done$"
'

test_expect_success 'gc without --keep: exit 64 and nothing deleted' '
    expect_code 64 "$SPOTRUN" gc k3 2>err &&
    grep -- "--keep" err &&
    test "$(seqs k3)" = "0000000003 0000000004 0000000005 "
'

test_expect_success 'gc --keep 0: exit 64 and nothing deleted' '
    expect_code 64 "$SPOTRUN" gc k3 --keep 0 2>err &&
    grep -- "--keep" err &&
    test "$(seqs k3)" = "0000000003 0000000004 0000000005 "
'

test_done
