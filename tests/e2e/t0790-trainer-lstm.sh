#!/usr/bin/env bash
# A real trainer as it is written: an LSTM language model that slices its
# batches by index (no DataLoader) and carries its hidden state, learning
# rate and best validation loss from step to step
# (tests/e2e/trainers/lstm_lm.py, in the style of pytorch/examples'
# word_language_model). Its spotrun version has at most 5 glue lines
# (State with keep=, carry(), batches(), epochs()); uninterrupted it ends
# with the plain script's weights, and so it does preempted at a random
# step by a notice or by SIGTERM to every process of the job, the rerun on
# another "node" (a fresh directory), bit for bit.
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/trainers/lib.sh"

STEPS=24 # 8 batches an epoch, 3 epochs
STEP_LINE="^| epoch [0-9]* | batch [0-9]* |"
lines() { count_lines "$1" "$STEP_LINE"; }

test_expect_success 'PyTorch is importable' '
    require_torch
'

test_expect_success 'the glue is at most 5 lines' '
    n=$(glue_lines "$TR/lstm_lm.py" "$TR/lstm_lm.spotrun.py")
    say "glue: $n lines"
    test "$n" -le 5
'

test_expect_success 'reference: the plain script, without spotrun' '
    timed ref.log timeout 300 "$PY" "$TR/lstm_lm.py" --out ref.txt || { cat ref.log; exit 1; }
    test "$(lines ref.log)" -eq $STEPS &&
    grep "| lr 5 |" ref.log # the annealing happened: the resume must bring lr back
'

test_expect_success 'uninterrupted under spotrun: the same weights' '
    timed whole.log timeout 300 "$SPOTRUN" run --run-id whole -- \
        "$PY" "$TR/lstm_lm.spotrun.py" --out whole.txt || { cat whole.log; exit 1; }
    cmp ref.txt whole.txt
'

for how in notice group; do
    test_expect_success "preempted ($how) at a random step, resumed on another node: the same weights" '
        n=$((2 + RANDOM % 18))
        say "$how after $n steps"
        mkdir node1-$how node2-$how
        (cd node1-$how && exec "$SPOTRUN" run --run-id $how -- "$PY" "$TR/lstm_lm.spotrun.py" \
            --pace 0.15 --out w.txt) >$how-1.log 2>&1 &
        stop_at $how-1.log "$STEP_LINE" $n $how $how $! &&
        done1=$(lines $how-1.log) &&
        (cd node2-$how && timed ../$how-2.log timeout 300 "$SPOTRUN" run --run-id $how -- \
            "$PY" "$TR/lstm_lm.spotrun.py" --out w.txt) || { cat $how-2.log; exit 1; }
        step=$("$SPOTRUN" show $how | awk "\$1 == 1 { print \$2 }")
        say "checkpoint at step $step; first attempt printed $done1 steps"
        test "$(lines $how-2.log)" -eq $((STEPS - step)) &&
        cmp ref.txt node2-$how/w.txt
    '
done

test_done
