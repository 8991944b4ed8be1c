#!/usr/bin/env bash
# A real trainer as it is written: one that saves every N steps on its own
# and resumes from its own file (tests/e2e/trainers/own_ckpt.py), run
# under spotrun with zero changed lines: its save directory pointed into
# $SPOTRUN_CKPT_DIR by its own flag, and --settle. Every snapshot it
# writes becomes durable once it settles; a notice cannot make it save
# (it does not listen), so spotrun stops it at once and commits its
# directory as it stands: the work since its last snapshot is lost, and
# the test says how much. The rerun on another "node" (a fresh directory)
# resumes from the restored snapshot and ends with the plain run's
# weights, bit for bit.
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/trainers/lib.sh"

STEPS=16 # saves at 4, 8, 12, 16
T=$TR/own_ckpt.py
# the job: the trainer, its save directory pointed into the checkpoint dir
job=(bash -c 'exec "$0" "$1" --save-dir "$SPOTRUN_CKPT_DIR" "${@:2}"' "$PY" "$T")

# ckpt_step RUN: the step in last.pt of RUN's newest durable checkpoint (0: none)
ckpt_step() {
    rm -rf pulled && "$SPOTRUN" pull "$1" pulled >/dev/null 2>&1 || { echo 0; return; }
    "$PY" -c 'import sys, torch; print(torch.load(sys.argv[1])["step"])' pulled/last.pt 2>/dev/null || echo 0
}

test_expect_success 'PyTorch is importable' '
    require_torch
'

test_expect_success 'reference: the plain script, without spotrun' '
    timed ref.log timeout 120 "$PY" "$T" --out ref.txt || { cat ref.log; exit 1; }
    grep "^saved checkpoint at step 16$" ref.log
'

test_expect_success 'uninterrupted under spotrun --settle, zero changed lines: the same weights' '
    mkdir whole && (cd whole && timed ../whole.log timeout 120 "$SPOTRUN" run --run-id whole \
        --settle 1s -- "${job[@]}" --out w.txt) || { cat whole.log; exit 1; }
    cmp ref.txt whole/w.txt &&
    test "$(ckpt_step whole)" -eq 16
'

for how in notice group; do
    test_expect_success "preempted ($how): its last snapshot is restored on another node, the same weights" '
        mkdir node1-$how node2-$how
        (cd node1-$how && exec "$SPOTRUN" run --run-id $how --settle 1s --grace 10s -- \
            "${job[@]}" --pace 0.5 --out w.txt) >$how-1.log 2>&1 &
        pid=$!
        # the first commit: the directory settled after the snapshot of step 4
        wait_for $how-1.log "checkpoint 1 durable" 120 || { kill $pid; exit 1; }
        n=$(count_lines $how-1.log "^step [0-9]* loss")
        n=$((n + 1 + RANDOM % 3))
        say "$how after $n steps"
        stop_at $how-1.log "^step [0-9]* loss" $n $how $how $pid &&
        last=$(grep "^saved checkpoint at step" $how-1.log | tail -n 1 | awk "{ print \$5 }") &&
        done1=$(count_lines $how-1.log "^step [0-9]* loss") &&
        (cd node2-$how && timed ../$how-2.log timeout 120 "$SPOTRUN" run --run-id $how \
            --settle 1s -- "${job[@]}" --out w.txt) || { cat $how-2.log; exit 1; }
        grep "^resuming from .* at step $last$" $how-2.log &&
        say "work lost: $((done1 - last)) of $done1 steps (snapshots every 4)" &&
        cmp ref.txt node2-$how/w.txt
    '
done

test_done
