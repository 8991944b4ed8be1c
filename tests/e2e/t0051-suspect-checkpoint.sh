#!/usr/bin/env bash
# A checkpoint the job fails on right after restoring it, twice in a row, is
# marked suspect in the store (<run>/suspect/<seq>.json, with the reason):
# the next start restores the one before it, `show` marks it (text and
# --json), a later `spotrun run` on another node never restores it first, a
# plain `pull` takes the newest trusted one and `pull --seq N` says it is
# suspect (docs/runtime.md, "A bad checkpoint").
. "$(dirname "$0")/lib.sh"

# A job that counts to 6, one commit per step. Its first attempt writes
# "poison" as its state at step POISON_AT, commits it, and crashes; any
# attempt that finds "poison" in the restored state cannot load it and
# exits 1 before doing anything else. Each attempt's SPOTRUN_STEP goes to
# $OUT/starts.
cat >job.sh <<'JOB'
#!/bin/sh
d=$SPOTRUN_CKPT_DIR
echo "${SPOTRUN_STEP-fresh}" >>"$OUT/starts"
i=0
if [ -f "$d/state" ]; then
    if grep -q poison "$d/state"; then
        echo "cannot load $d/state: poison" >&2
        exit 1
    fi
    i=$(cat "$d/state")
fi
while [ "$i" -lt 6 ]; do
    i=$((i + 1))
    if [ "$i" -eq "$POISON_AT" ] && [ "$SPOTRUN_ATTEMPT" = 0 ]; then
        echo poison >"$d/state"
        "$SPOTRUN_BIN" commit --step "$i" || exit 3
        echo "wrote a bad checkpoint at step $i" >&2
        exit 1
    fi
    echo "$i" >"$d/state"
    "$SPOTRUN_BIN" commit --step "$i" || exit 3
done
echo "$i" >"$OUT/final"
JOB
chmod +x job.sh
export OUT=$PWD

test_expect_success 'two failures right after restoring checkpoint 4: the restart names checkpoint 3' '
    POISON_AT=4 "$SPOTRUN" run --run-id p --backoff 0.1s --max-restarts 5 -- ./job.sh \
        >run.log 2>&1 &&
    grep "is suspect: job failed twice right after restoring it (exit 1, exit 1)" run.log &&
    grep "restarting from the newest checkpoint (3)" run.log
'

test_expect_success 'the job was started from 4 twice, then from 3, and finished at step 6' '
    printf "%s\n" fresh 4 4 3 >want &&
    diff want starts &&
    test "$(cat final)" = 6
'

test_expect_success 'the mark is in the store with the reason, the attempts and the exits' '
    mark=$SPOTRUN_STORE/p/suspect/0000000004.json &&
    test -f "$mark" &&
    json "$mark" "
assert d[\"seq\"] == 4 and d[\"step\"] == 4, d
assert d[\"reason\"] == \"job failed twice right after restoring it (exit 1, exit 1)\", d
assert d[\"attempts\"] == [1, 2], d
assert [e[\"code\"] for e in d[\"exits\"]] == [1, 1], d
assert d[\"host\"] and d[\"time\"], d"
'

test_expect_success 'show marks the suspect checkpoint, and only it' '
    "$SPOTRUN" show p >show.txt &&
    grep -A1 "^ *4 " show.txt >row4 &&
    grep "suspect: job failed twice right after restoring it (exit 1, exit 1)" row4 &&
    test "$(grep -c "suspect:" show.txt)" = 1
'

test_expect_success 'show --json carries the mark in the checkpoint object' '
    "$SPOTRUN" show p --json >show.json &&
    json show.json "
c = {x[\"seq\"]: x for x in d[\"checkpoints\"]}
assert c[4][\"suspect\"][\"reason\"] == \"job failed twice right after restoring it (exit 1, exit 1)\", c[4]
assert all(c[s][\"suspect\"] is None for s in c if s != 4), c"
'

# A second run whose first wrapper gives up on the bad checkpoint: the next
# wrapper, on another node (its own HOME and work dir), starts from 2.
test_expect_success 'a wrapper that gives up after marking checkpoint 3 exits with the job code' '
    rm -f starts final &&
    expect_code 1 env POISON_AT=3 "$SPOTRUN" run --run-id q --backoff 0.1s --max-restarts 2 \
        -- ./job.sh >q1.log 2>&1 &&
    test -f "$SPOTRUN_STORE/q/suspect/0000000003.json" &&
    printf "%s\n" fresh 3 3 >want &&
    diff want starts
'

test_expect_success 'a plain pull takes checkpoint 2, the newest that is not suspect' '
    "$SPOTRUN" pull q out2 2>pull.err &&
    test "$(cat out2/state)" = 2 &&
    grep "restored checkpoint 2 " pull.err &&
    grep "seq 3 is marked suspect" pull.err
'

test_expect_success 'pull --seq 3 still fetches the suspect one, and says it is suspect' '
    "$SPOTRUN" pull q out3 --seq 3 2>pull3.err &&
    test "$(cat out3/state)" = poison &&
    grep "warning: checkpoint q seq 3 is marked suspect (job failed twice right after restoring it (exit 1, exit 1))" pull3.err
'

test_expect_success 'spotrun run on another node restores checkpoint 2 first and finishes at 6' '
    rm -f starts final &&
    mkdir -p node2/home node2/work &&
    HOME=$PWD/node2/home SPOTRUN_WORK_DIR=$PWD/node2/work POISON_AT=3 \
        "$SPOTRUN" run --run-id q --backoff 0.1s -- ./job.sh >q2.log 2>&1 &&
    test "$(cat starts)" = 2 &&
    test "$(cat final)" = 6 &&
    grep "restored checkpoint 2 " q2.log &&
    "$SPOTRUN" show q >q.txt &&
    grep "suspect: job failed twice" q.txt
'

test_done
