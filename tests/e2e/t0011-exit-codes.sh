#!/usr/bin/env bash
# Exit codes of `spotrun run`: the job's own code after --max-restarts,
# 128+N for a job killed by signal N, 127 / 126 when the command cannot be
# run; and SPOTRUN_ATTEMPT counts every start of the run.
. "$(dirname "$0")/lib.sh"

# Appends its attempt number to starts, records a metric (it talks to the
# wrapper: a job that fails twice the same way without a word is not
# restarted a second time, t0731), then exits with $CODE.
cat >fail.sh <<\JOB
#!/bin/sh
echo "$SPOTRUN_ATTEMPT" >>"$STARTS"
"$SPOTRUN" metric "starts=$SPOTRUN_ATTEMPT"
exit "${CODE:-7}"
JOB
chmod +x fail.sh

test_expect_success 'a job always failing with 7: exit 7 after 1 + --max-restarts starts' '
    STARTS=$PWD/starts7 CODE=7 expect_code 7 \
        "$SPOTRUN" run --run-id f7 --max-restarts 2 --backoff 10ms -- ./fail.sh 2>run.log &&
    test "$(wc -l <starts7)" -eq 3 &&
    grep "exited with code 7" run.log &&
    grep "giving up after 2 restart" run.log
'

test_expect_success 'SPOTRUN_ATTEMPT is 0, 1, 2 across restarts' '
    printf "0\n1\n2\n" >expect &&
    diff expect starts7
'

test_expect_success 'SPOTRUN_ATTEMPT goes on counting across reruns of the run' '
    STARTS=$PWD/starts7 CODE=7 expect_code 7 \
        "$SPOTRUN" run --run-id f7 --max-restarts 1 --backoff 10ms -- ./fail.sh 2>/dev/null &&
    printf "0\n1\n2\n3\n4\n" >expect &&
    diff expect starts7 &&
    "$SPOTRUN" show f7 | grep "^attempts: *5$"
'

test_expect_success 'a failed run is not marked done' '
    test ! -e "$SPOTRUN_STORE/f7/DONE" &&
    "$SPOTRUN" ls | awk "\$1 == \"f7\" && \$2 != \"done\"" | grep .
'

test_expect_success '--max-restarts 0: one start only' '
    STARTS=$PWD/starts0 CODE=3 expect_code 3 \
        "$SPOTRUN" run --run-id f0 --max-restarts 0 -- ./fail.sh 2>/dev/null &&
    test "$(wc -l <starts0)" -eq 1
'

test_expect_success 'a job that succeeds after a crash: exit 0' '
    cat >flaky.sh <<-\JOB &&
	#!/bin/sh
	[ "$SPOTRUN_ATTEMPT" -ge 1 ]
	JOB
    chmod +x flaky.sh &&
    "$SPOTRUN" run --run-id flaky --backoff 10ms -- ./flaky.sh 2>run.log &&
    grep "exited with code 1" run.log &&
    test -f "$SPOTRUN_STORE/flaky/DONE"
'

test_expect_success 'a job killed by SIGKILL with --max-restarts 0: exit 137' '
    expect_code 137 "$SPOTRUN" run --run-id killed --max-restarts 0 -- \
        sh -c "kill -KILL \$\$" 2>run.log &&
    grep "killed by SIGKILL" run.log
'

test_expect_success 'a missing command: exit 127' '
    expect_code 127 "$SPOTRUN" run --run-id missing -- ./no-such-program 2>err &&
    grep "no-such-program" err &&
    expect_code 127 "$SPOTRUN" run --run-id missing2 -- no-such-program-in-path 2>err &&
    grep "no-such-program-in-path" err
'

test_expect_success 'a file that is not executable: exit 126' '
    echo "echo hi" >noexec.sh &&
    chmod 644 noexec.sh &&
    expect_code 126 "$SPOTRUN" run --run-id noexec -- ./noexec.sh 2>err &&
    grep "noexec.sh" err && grep -i "permission denied" err
'

test_done
