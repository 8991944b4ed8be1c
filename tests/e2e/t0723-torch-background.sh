#!/usr/bin/env bash
# spotrun.torch.State(background=True): a save copies the state into host
# memory and returns; a thread writes and commits it. The checkpoint holds
# the state as it was when save() returned, not later values; a second
# save waits for the first; a save in flight at a notice answers it and is
# committed (the rerun resumes at its step), on one process and on two
# gloo ranks (one atomic commit of both ranks' files); background=False
# still returns once committed. tests/e2e/bgtrainer.py holds torch.save
# where a test needs a save to be in flight.
. "$(dirname "$0")/lib.sh"

export PYTHONPATH=$SRCDIR/python
export PYTHONDONTWRITEBYTECODE=1
T=$SRCDIR/tests/e2e/bgtrainer.py

test_expect_success 'PyTorch is importable' '
    require_torch
'

test_expect_success 'save() returns before the file is written; the checkpoint holds the values at save()' '
    "$SPOTRUN" run --run-id ret -- "$PY" "$T" returns >ret.log 2>&1 || { cat ret.log; exit 1; }
    cat ret.log
    grep "^rank 0 save returned: seq None, file written False$" ret.log
    grep "^rank 0 writing step 7 in spotrun-save$" ret.log
    grep "^rank 0 wait: seq 1$" ret.log
    grep "^rank 0 checkpoint step 7 weight \[1.0\]$" ret.log
    "$SPOTRUN" show ret | awk "\$1 == 1 { print \$2 }" | grep -x 7
'

test_expect_success 'a second save waits for the first (said once); each holds its own values' '
    "$SPOTRUN" run --run-id wait -- "$PY" "$T" waits >wait.log 2>&1 || { cat wait.log; exit 1; }
    cat wait.log
    # the first write ended before the second save returned
    sed -n "/^rank 0 save 1 returned/,/^rank 0 save 2 returned/p" wait.log >between.log
    grep "^rank 0 wrote step 10$" between.log
    test "$(grep -c "waited .*s for the previous one, still being written" wait.log)" = 1
    grep "^rank 0 waits [12]$" wait.log
    grep "^rank 0 checkpoint step 12 weight \[3.0\]$" wait.log
    "$SPOTRUN" show wait >wait.show
    cat wait.show
    grep "^checkpoints: *3$" wait.show
'

test_expect_success 'background=False: save() returns once committed, with the seq' '
    "$SPOTRUN" run --run-id sync -- "$PY" "$T" sync >sync.log 2>&1 || { cat sync.log; exit 1; }
    cat sync.log
    grep "^rank 0 save returned: seq 1, file written True$" sync.log
    grep "^rank 0 writing step 3 in MainThread$" sync.log
'

# notice_mid_save RUN CMD...: runs CMD (bgtrainer.py train --every 10
# --hold 10) under spotrun, sends a notice while the save of step 10 is
# held in its thread, and expects the preemption (exit 75).
notice_mid_save() {
    local run=$1
    shift
    "$SPOTRUN" run --run-id "$run" -- "$@" >"$run.log" 2>&1 &
    pid=$!
    wait_for "$run.log" "^rank 0 writing step 10 in spotrun-save" 120 ||
        { kill -TERM $pid; wait $pid; return 1; }
    "$SPOTRUN" notify --run-id "$run" --deadline 60s || { kill -TERM $pid; wait $pid; return 1; }
    expect_code 75 wait $pid
    cat "$run.log"
}

test_expect_success 'a save in flight at a notice answers it: committed, training went on meanwhile' '
    notice_mid_save nt "$PY" "$T" train --every 10 --hold 10 --pace 0.4 &&
    grep "preempted: checkpoint 1 is durable" nt.log &&
    # the loop went on while step 10 was written
    sed -n "/^rank 0 writing step 10/,/^rank 0 wrote step 10/p" nt.log | grep "^rank 0 step 11$" &&
    # the pending request started no second save
    test "$(grep -c "^rank 0 writing step" nt.log)" = 1 &&
    "$SPOTRUN" show nt | awk "\$1 == 1 { print \$2 }" | grep -x 10
'

test_expect_success 'the rerun resumes at that step, with the values of that step' '
    "$SPOTRUN" run --run-id nt -- "$PY" "$T" train --every 10 --steps 12 >nt2.log 2>&1 ||
        { cat nt2.log; exit 1; }
    cat nt2.log
    grep "^rank 0 resumed at step 10 weight \[10.0\]$" nt2.log
    grep "^rank 0 finished at step 12$" nt2.log
'

test_expect_success '2 gloo ranks: a save in flight at a notice is one commit of both ranks at one step' '
    notice_mid_save dd "$PY" -m spotrun.launch --nproc-per-node 2 "$T" train --every 10 \
        --hold 10 --pace 0.4 &&
    grep "preempted: checkpoint 1 is durable" dd.log &&
    sed -n "/^rank 1 writing step 10/,/^rank 1 wrote step 10/p" dd.log | grep "^rank 1 step 11$" &&
    test "$(grep -c "^rank [01] writing step" dd.log)" = 2 &&
    "$SPOTRUN" show dd | awk "\$1 == 1 { print \$2 }" | grep -x 10 &&
    "$SPOTRUN" pull dd ckpt &&
    "$PY" -c "
import torch
for r in (0, 1):
    sd = torch.load(\"ckpt/spotrun-torch.rank%d.pt\" % r)
    w = sd[\"objects\"][\"model\"][\"weight\"].unique().tolist()
    assert sd[\"step\"] == 10 and w == [10.0 * (r + 1)], (r, sd[\"step\"], w)
print(\"both ranks at step 10\")
"
'

test_expect_success '2 gloo ranks: the rerun resumes both ranks at that step' '
    timeout 300 "$SPOTRUN" run --run-id dd -- "$PY" -m spotrun.launch --nproc-per-node 2 "$T" \
        train --every 10 --steps 12 >dd2.log 2>&1 || { cat dd2.log; exit 1; }
    cat dd2.log
    grep "^rank 0 resumed at step 10 weight \[10.0\]$" dd2.log
    grep "^rank 1 resumed at step 10 weight \[20.0\]$" dd2.log
    grep "^rank 1 finished at step 12$" dd2.log
'

test_done
