#!/usr/bin/env bash
# Jobs that misbehave: hang past the deadline, ignore the request signal or
# SIGTERM, crash in the middle of their own save, leave children behind.
# The wrapper still stops on time, the newest complete checkpoint survives,
# and nothing of the job outlives it.
. "$(dirname "$0")/lib.sh"

# A job that commits once (step 1), then misbehaves as $1 says.
cat >job.sh <<'JOB'
#!/bin/bash
mode=$1
if [ "${SPOTRUN_RESUMED}" = 1 ]; then
    echo "resumed with $(cat "$SPOTRUN_CKPT_DIR/state")" >>"$SPOTRUN_CKPT_DIR/../resumes"
    [ "$mode" = crash-in-save ] && exit 0
fi
echo "good" >"$SPOTRUN_CKPT_DIR/state"
"$SPOTRUN_BIN" commit --step 1
echo committed >"$SPOTRUN_CKPT_DIR/../ready"
case $mode in
hang)        trap '' TERM USR1; while :; do sleep 0.1; done ;;
ignore-usr1) trap '' USR1; trap 'exit 143' TERM; while :; do sleep 0.1; done ;;
children)    for i in 1 2 3; do (trap '' TERM; exec -a spotrun-t0620-child sleep 300) & done
             trap '' USR1; while :; do sleep 0.1; done ;;
crash-in-save)
             echo "half wri" >"$SPOTRUN_CKPT_DIR/state"   # torn write, then death
             kill -9 $$ ;;
esac
JOB
chmod +x job.sh

test_expect_success 'a job that ignores the request and SIGTERM is killed by the deadline; exit 75' '
    "$SPOTRUN" run --run-id hang --no-preload -- ./job.sh hang >hang.log 2>&1 &
    pid=$!
    wait_for work/hang/ready committed
    start=$(date +%s)
    "$SPOTRUN" notify --run-id hang --deadline 3s
    expect_code 75 wait $pid
    elapsed=$(( $(date +%s) - start ))
    [ "$elapsed" -le 6 ] || { say "took ${elapsed}s for a 3s deadline"; exit 1; }
    grep "did not commit in time" hang.log &&
    grep "did not stop after SIGTERM; killing it" hang.log &&
    "$SPOTRUN" pull -q hang out && test "$(cat out/state)" = good
'

test_expect_success 'a job that ignores the request signal but exits on SIGTERM: exit 75' '
    "$SPOTRUN" run --run-id ign --no-preload -- ./job.sh ignore-usr1 >ign.log 2>&1 &
    pid=$!
    wait_for work/ign/ready committed
    "$SPOTRUN" notify --run-id ign --deadline 3s
    expect_code 75 wait $pid
    grep "did not commit in time" ign.log && ! grep "killing it" ign.log
'

test_expect_success 'children of the job that ignore SIGTERM do not outlive the wrapper' '
    "$SPOTRUN" run --run-id kids --no-preload -- ./job.sh children >kids.log 2>&1 &
    pid=$!
    wait_for work/kids/ready committed
    for _ in $(seq 50); do [ "$(pgrep -fc spotrun-t0620-child)" -eq 3 ] && break; sleep 0.1; done
    [ "$(pgrep -fc spotrun-t0620-child)" -eq 3 ]
    "$SPOTRUN" notify --run-id kids --deadline 2s
    expect_code 75 wait $pid
    sleep 0.2
    ! pgrep -f spotrun-t0620-child
'

test_expect_success 'a job that dies in the middle of its own save resumes from the last commit' '
    "$SPOTRUN" run --run-id torn --keep-work --no-preload --backoff 10ms -- ./job.sh crash-in-save 2>torn.log &&
    grep "killed by SIGKILL" torn.log &&
    test "$(cat work/torn/resumes)" = "resumed with good"
'

test_done
