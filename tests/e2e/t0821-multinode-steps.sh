#!/usr/bin/env bash
# The steps of a multi-node run (docs/multinode.md, "The commit protocol"):
# each step is committed once (its parts are one checkpoint, made once): a
# second commit of a step, or of an older one, is refused, and a resume
# restores what was reported durable. A step too large to name a set (its
# seq, step + 1, is named in 10 digits) is refused at commit, never
# accepted and then unusable at restore.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-multinode.sh"

# The job of a node: commits step 10 holding "first", then step 10 again
# (or $AGAIN) holding "second", prints both commits' exit codes, and fails
# with 3 (the run is left to resume). With CHECK=1 it prints what it got.
cat >nodejob.sh <<\EOF
#!/bin/bash
d=$SPOTRUN_CKPT_DIR
if [ -n "${CHECK:-}" ]; then
    echo "rank=$SPOTRUN_NODE_RANK step=${SPOTRUN_STEP:-none} holds=$(cat "$d/f" 2>/dev/null)"
    exit 0
fi
echo first >"$d/f"
"$SPOTRUN_BIN" commit --step "${FIRST:-10}"
echo "first rc=$?"
echo second >"$d/f"
"$SPOTRUN_BIN" commit --step "${AGAIN:-10}"
echo "second rc=$?"
exit 3
EOF
chmod +x nodejob.sh

group() { # RUN PREFIX: both nodes, to their end
    start_node "$1" 2 0 "$2"0.log --max-restarts 0
    start_node "$1" 2 1 "$2"1.log --max-restarts 0
    wait ${pid[0]} || true
    wait ${pid[1]} || true
    cat "$2"0.log "$2"1.log
}

test_expect_success 'the same step twice: the second commit is refused; the resume restores the first' '
    group twice t
    for r in 0 1; do
        grep "^first rc=0$" t$r.log && grep "^second rc=74$" t$r.log &&
        grep "step 10 is not newer than this node.s last checkpoint (step 10)" t$r.log || exit 1
    done
    CHECK=1 group twice c
    grep "^rank=0 step=10 holds=first$" c0.log && grep "^rank=1 step=10 holds=first$" c1.log
'

test_expect_success 'an older step after a newer one is refused too' '
    FIRST=20 AGAIN=10 group older o
    grep "^second rc=74$" o0.log && grep "step 10 is not newer than this node.s last checkpoint (step 20)" o0.log
'

test_expect_success 'a step too large for a set is refused at commit; the one before stands' '
    AGAIN=9007199254740993 group big b
    for r in 0 1; do
        grep "^first rc=0$" b$r.log && grep "^second rc=64$" b$r.log &&
        grep "step 9007199254740993 is too large for a multi-node checkpoint (at most 9999999998" b$r.log || exit 1
    done
    CHECK=1 group big d
    grep "^rank=0 step=10 holds=first$" d0.log && grep "^rank=1 step=10 holds=first$" d1.log
'

test_expect_success 'the wrapper refuses it too (a commit that bypasses the CLI check)' '
    mkdir -p h && HOME=$TRASH/h SPOTRUN_WORK_DIR=$TRASH/w "$SPOTRUN" run --run-id raw --nodes 2 \
        --node-rank 0 --max-restarts 0 -- sh -c "SPOTRUN_NODES=1 \$SPOTRUN_BIN commit --step 10000000000; echo rc=\$?" >raw.log 2>&1 || true
    cat raw.log
    grep "^rc=74$" raw.log && grep "step 10000000000 is too large for a multi-node checkpoint" raw.log
'

test_done
