#!/usr/bin/env bash
# A file the job keeps appending to in its checkpoint directory (a log, a
# TensorBoard events file) does not make its commits fail: it is archived as
# far as it was when spotrun opened it. A commit that fails anyway is an
# event `show` reports, and a job that committed once and kept writing gets
# its directory committed when it exits on SIGTERM (never after SIGKILL).
. "$(dirname "$0")/lib.sh"
export TRASH
SPOTRUN_INJECT_LIB=${SPOTRUN_INJECT_LIB:-$SRCDIR/build/tests/faults/libspotrun-inject.so}

# Commits steps 1..4 (a 4 MiB model each) while a loop appends to train.log
# (32 MiB to begin with: reading it takes a while) as fast as it can; on
# a rerun it says the step it resumed from.
yes "step 0 loss 1.000 lr 0.001 some log line" | head -c 32M >log0
head -c 4M /dev/urandom >model0
cat >logger.sh <<\JOB
#!/bin/sh
if [ "${SPOTRUN_RESUMED:-0}" = 1 ]; then
    echo "${SPOTRUN_STEP:-none}" >"$TRASH/resumed-step"
    exit 0
fi
cp "$TRASH/log0" "$SPOTRUN_CKPT_DIR/train.log"
(while :; do echo "loss line" >>"$SPOTRUN_CKPT_DIR/train.log"; done) &
step=1
while [ $step -le ${STEPS:-4} ]; do
    cp "$TRASH/model0" "$SPOTRUN_CKPT_DIR/model.bin"
    echo $step >"$SPOTRUN_CKPT_DIR/step"
    "$SPOTRUN_BIN" commit --step $step || echo "commit $step failed" >>"$TRASH/failed"
    step=$((step + 1))
done
echo "committed all" >"$TRASH/all-committed"
[ -n "${WAIT:-}" ] && while :; do sleep 0.1; done
kill $! 2>/dev/null
exit 0
JOB
chmod +x logger.sh

test_expect_success 'commits of a directory whose log grows while packed all succeed' '
    "$SPOTRUN" run --run-id grow -- ./logger.sh >grow.log 2>&1 &&
    test ! -e failed &&
    ! grep "changed while it was read" grow.log &&
    ! grep -h commit_failed "$SPOTRUN_STORE"/grow/events/*.jsonl &&
    "$SPOTRUN" show grow >show-grow.out &&
    ! grep "^commits:" show-grow.out &&
    awk "\$1 == 4 && \$2 == 4" show-grow.out | grep .
'

test_expect_success 'at a notice the commit is durable and the rerun resumes from its step' '
    rm -f all-committed resumed-step
    WAIT=1 "$SPOTRUN" run --run-id growpre --grace 20s -- ./logger.sh >growpre.log 2>&1 &
    pid=$!
    { wait_for all-committed "committed" 120 &&
        wait_for growpre.log "checkpoint 4 durable" 60 &&
        "$SPOTRUN" notify --run-id growpre --deadline 20s; } ||
        { kill -TERM $pid; wait $pid; exit 1; }
    expect_code 75 wait $pid &&
    grep "preempted: checkpoint [0-9]* is durable" growpre.log &&
    grep "committing .* (job stopped), step 4" growpre.log &&
    "$SPOTRUN" run --run-id growpre -- ./logger.sh >growpre2.log 2>&1 &&
    test "$(cat resumed-step)" = 4
'

# Deterministic: the fault injector appends to train.log right after
# spotrun first reads it.
cat >append-job.sh <<\JOB
#!/bin/sh
printf "line 1\nline 2\n" >"$SPOTRUN_CKPT_DIR/train.log"
cp "$SPOTRUN_CKPT_DIR/train.log" "$TRASH/log-at-commit"
"$SPOTRUN_BIN" commit --step 1 || exit 5
JOB
chmod +x append-job.sh

test_expect_success 'a log that grew while read is archived as it was when opened' '
    LD_PRELOAD=$SPOTRUN_INJECT_LIB SPOTRUN_INJECT_APPEND=train.log \
        "$SPOTRUN" run --run-id app -- ./append-job.sh >app.log 2>&1 &&
    "$SPOTRUN" pull --seq 1 app out-app &&
    cmp log-at-commit out-app/train.log
'

test_expect_success 'a file that grew and whose first bytes changed is torn: the commit fails' '
    expect_code 5 env LD_PRELOAD=$SPOTRUN_INJECT_LIB SPOTRUN_INJECT_APPEND=train.log \
        SPOTRUN_INJECT_REWRITE=train.log \
        "$SPOTRUN" run --run-id torn --max-restarts 0 -- ./append-job.sh >torn.log 2>&1 &&
    grep "train.log changed while it was read" torn.log &&
    grep "no checkpoint: the next start begins from scratch" torn.log
'

test_expect_success 'the failed commit is an event of the attempt and show reports it' '
    grep -h "\"event\":\"commit_failed\"" "$SPOTRUN_STORE"/torn/events/*.jsonl >ev.out &&
    grep "\"phase\":\"stage\"" ev.out &&
    grep "\"step\":1" ev.out &&
    grep "\"stands_seq\":0" ev.out &&
    grep "train.log changed while it was read" ev.out &&
    "$SPOTRUN" show torn >show-torn.out &&
    grep "^commits: *1 failed; the newest (attempt 0, checkpoint 1, step 1) to stage: train.log changed while it was read.*; no checkpoint stood" show-torn.out &&
    "$SPOTRUN" show --json torn >show-torn.json &&
    "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d[\"commit_failures\"] == 1, d; assert d[\"last_commit_failure\"][\"phase\"] == \"stage\", d" show-torn.json
'

# --ckpt-exclude: the files it names are never read (the injector would
# tear train.log) nor archived, nor watched for changes.
cat >excl-job.sh <<\JOB
#!/bin/sh
echo model >"$SPOTRUN_CKPT_DIR/model.bin"
mkdir -p "$SPOTRUN_CKPT_DIR/tb"
echo events >"$SPOTRUN_CKPT_DIR/tb/events.1"
printf "line 1\n" >"$SPOTRUN_CKPT_DIR/train.log"
"$SPOTRUN_BIN" commit --step 1 || exit 5
[ -z "${WAIT:-}" ] && exit 0
echo "committed" >"$TRASH/excl-committed"
while :; do echo "loss line" >>"$SPOTRUN_CKPT_DIR/train.log"; sleep 0.05; done
JOB
chmod +x excl-job.sh

test_expect_success '--ckpt-exclude: an excluded file is neither read nor archived' '
    LD_PRELOAD=$SPOTRUN_INJECT_LIB SPOTRUN_INJECT_REWRITE=train.log \
        "$SPOTRUN" run --run-id excl --ckpt-exclude "*.log" --ckpt-exclude tb \
        -- ./excl-job.sh >excl.log 2>&1 &&
    ! grep "changed while it was read" excl.log &&
    "$SPOTRUN" pull excl out-excl &&
    test "$(ls -A out-excl)" = model.bin
'

test_expect_success 'SPOTRUN_CKPT_EXCLUDE: a directory whose only change is an excluded log settles' '
    rm -f excl-committed
    WAIT=1 SPOTRUN_CKPT_EXCLUDE="*.log,tb" "$SPOTRUN" run --run-id exs --settle 1s --grace 3s \
        -- ./excl-job.sh >exs.log 2>&1 &
    pid=$!
    { wait_for excl-committed committed 60 && wait_for exs.log "checkpoint 1 durable" 60 &&
        echo extra >"$SPOTRUN_WORK_DIR/exs/ckpt/extra" &&
        wait_for exs.log "committing .*(settled)" 60 &&
        wait_for exs.log "checkpoint 2 durable" 60 &&
        "$SPOTRUN" notify --run-id exs --deadline 3s; } || { kill -TERM $pid; wait $pid; exit 1; }
    expect_code 75 wait $pid &&
    "$SPOTRUN" pull exs out-exs &&
    test "$(ls -A out-exs | tr "\n" " ")" = "extra model.bin "
'

test_expect_success '--ckpt-exclude refuses an absolute pattern' '
    expect_code 64 "$SPOTRUN" run --run-id bad --ckpt-exclude /abs -- true 2>bad.err &&
    grep "invalid --ckpt-exclude pattern \"/abs\"" bad.err
'

# Commits v1 at step 1, then writes v2 and idles; it never answers a
# request and exits on SIGTERM (or, with IGNORE_TERM, only dies of SIGKILL).
cat >deaf.sh <<\JOB
#!/bin/sh
if [ "${SPOTRUN_RESUMED:-0}" = 1 ]; then
    cat "$SPOTRUN_CKPT_DIR/state" >"$TRASH/restored"
    exit 0
fi
echo v1 >"$SPOTRUN_CKPT_DIR/state"
"$SPOTRUN_BIN" commit --step 1 || exit 9
echo v2 >"$SPOTRUN_CKPT_DIR/state"
echo "wrote v2" >"$TRASH/wrote-v2"
if [ -n "${IGNORE_TERM:-}" ]; then trap "" TERM; else trap "exit 143" TERM; fi
while :; do sleep 0.1; done
JOB
chmod +x deaf.sh

test_expect_success 'committed once, kept writing, exits on SIGTERM: its directory is committed' '
    rm -f wrote-v2 restored
    "$SPOTRUN" run --run-id deaf --grace 5s -- ./deaf.sh >deaf.log 2>&1 &
    pid=$!
    { wait_for wrote-v2 v2 60 && wait_for deaf.log "checkpoint 1 durable" 60 &&
        "$SPOTRUN" notify --run-id deaf --deadline 5s; } || { kill -TERM $pid; wait $pid; exit 1; }
    expect_code 75 wait $pid &&
    grep "committing .* (job stopped), step 1" deaf.log &&
    "$SPOTRUN" run --run-id deaf -- ./deaf.sh >deaf2.log 2>&1 &&
    test "$(cat restored)" = v2
'

test_expect_success 'the same job killed by SIGKILL: not committed, checkpoint 1 stands' '
    rm -f wrote-v2 restored
    IGNORE_TERM=1 "$SPOTRUN" run --run-id deafk --grace 3s -- ./deaf.sh >deafk.log 2>&1 &
    pid=$!
    { wait_for wrote-v2 v2 60 && wait_for deafk.log "checkpoint 1 durable" 60 &&
        "$SPOTRUN" notify --run-id deafk --deadline 3s; } || { kill -TERM $pid; wait $pid; exit 1; }
    expect_code 75 wait $pid &&
    grep "killed (SIGKILL): .* so it is not committed; checkpoint 1 (step 1) stands" deafk.log &&
    ! grep "committing" deafk.log &&
    "$SPOTRUN" run --run-id deafk -- ./deaf.sh >deafk2.log 2>&1 &&
    test "$(cat restored)" = v1
'

test_done
