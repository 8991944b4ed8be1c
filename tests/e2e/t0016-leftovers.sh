#!/usr/bin/env bash
# The harness kills what a test started (tests/leftovers.py, which ctest
# runs every e2e script under): a script that leaves a process running,
# even a daemon that forked twice into its own session, fails, each
# leftover named by its command line and killed; one that leaves nothing,
# or whose processes end within the grace, keeps its own exit code; and
# scripts/test.sh's sweep finds a process by its tag alone.
. "$(dirname "$0")/lib.sh"

LEFTOVERS=$SRCDIR/tests/leftovers.py
# alive PID: the process runs (a zombie does not count).
alive() { [ -e "/proc/$1" ] && ! grep -q "^State:.*Z" "/proc/$1/status" 2>/dev/null; }

test_expect_success 'a script that leaves a sleep behind fails, naming it, and the sleep is killed' '
    cat >leak.sh <<-EOF &&
	sleep 4242 &
	echo \$! >"$TRASH/leak.pid"
	echo done
	EOF
    SPOTRUN_LEFTOVER_GRACE=1 expect_code 1 python3 "$LEFTOVERS" bash leak.sh >leak.out 2>&1 &&
    cat leak.out &&
    grep "^done$" leak.out &&
    grep "^leftovers: leak.sh left pid $(cat leak.pid) running: sleep 4242$" leak.out &&
    grep "^leftovers: the test left processes running (killed now): it fails$" leak.out &&
    wait_until 30 "the leaked sleep to be gone" refute alive "$(cat leak.pid)"
'

test_expect_success 'a daemon (setsid, forked twice) is found too; a failing script keeps its exit code' '
    cat >daemon.sh <<-EOF &&
	setsid sh -c "sleep 4343 & echo \\\$! >$TRASH/daemon.pid" </dev/null >/dev/null 2>&1
	exit 3
	EOF
    SPOTRUN_LEFTOVER_GRACE=1 expect_code 3 python3 "$LEFTOVERS" bash daemon.sh >daemon.out 2>&1 &&
    cat daemon.out &&
    grep "^leftovers: daemon.sh left pid $(cat daemon.pid) running: sleep 4343$" daemon.out &&
    wait_until 30 "the daemon to be gone" refute alive "$(cat daemon.pid)"
'

test_expect_success 'a script that leaves nothing, or processes that end within the grace, passes quietly' '
    printf "echo clean\n" >clean.sh &&
    python3 "$LEFTOVERS" bash clean.sh >clean.out 2>&1 &&
    test "$(cat clean.out)" = clean &&
    printf "(sleep 1) &\necho short\n" >short.sh &&
    SPOTRUN_LEFTOVER_GRACE=120 python3 "$LEFTOVERS" bash short.sh >short.out 2>&1 &&
    test "$(cat short.out)" = short &&
    printf "exit 4\n" >four.sh &&
    expect_code 4 python3 "$LEFTOVERS" bash four.sh
'

test_expect_success 'the sweep (scripts/test.sh) kills and names a process by its SPOTRUN_TEST_TAG' '
    tag=t0016-$$-$RANDOM &&
    (SPOTRUN_TEST_TAG=$tag setsid sleep 4444 </dev/null >/dev/null 2>&1 & echo $! >"$TRASH/tagged.pid") &&
    wait_until 30 "the tagged sleep to start" alive "$(cat tagged.pid)" &&
    expect_code 1 python3 "$LEFTOVERS" --sweep "$tag" >sweep.out 2>&1 &&
    cat sweep.out &&
    grep "^leftovers: a test left pid $(cat tagged.pid) running: sleep 4444$" sweep.out &&
    wait_until 30 "the tagged sleep to be gone" refute alive "$(cat tagged.pid)" &&
    python3 "$LEFTOVERS" --sweep "$tag-other" >none.out 2>&1 &&
    test ! -s none.out
'

test_done
