#!/usr/bin/env bash
# Every wait on the file store's object locks is bounded: a process paused
# (SIGSTOP, a frozen VM) or hung inside the lock of a run's LEASE cannot
# hang the other wrappers of the run. They say what they wait for, break a
# lock held past SPOTRUN_STORE_LOCK_WAIT, and the paused holder's late write
# is fenced: when it is continued it loses the run (73) instead of
# overwriting the new owner's lease.
. "$(dirname "$0")/lib.sh"
SPOTRUN_INJECT_LIB=${SPOTRUN_INJECT_LIB:-$SRCDIR/build/tests/faults/libspotrun-inject.so}

on_a="env SPOTRUN_WORK_DIR=$TRASH/node-a"
on_b="env SPOTRUN_WORK_DIR=$TRASH/node-b SPOTRUN_STORE_LOCK_WAIT=2s"
train="$LOGREG --steps 1500"

# wait_stopped PID: waits until PID is stopped (state T in /proc/PID/stat).
wait_stopped() {
    local i=0
    while [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != T ]; do
        i=$((i + 1))
        if [ "$i" -gt 600 ]; then
            say "timed out waiting for pid $1 to be stopped"
            return 1
        fi
        sleep 0.1
    done
}

test_expect_success 'uninterrupted reference run' '
    $train --out ref.bin >/dev/null
'

test_expect_success 'a lock held by a paused process is broken after the bound, naming its holder' '
    mkdir -p store/r1
    "$PY" -c "
import fcntl, os, signal, sys
f = open(sys.argv[1], \"w\")
fcntl.flock(f, fcntl.LOCK_EX)
f.write(\"pid %d on %s\n\" % (os.getpid(), os.uname().nodename)); f.flush()
os.kill(os.getpid(), signal.SIGSTOP)" store/r1/.LEASE.tmp.lock &
    h=$!
    trap "kill -CONT $h 2>/dev/null || :" EXIT
    wait_stopped $h
    expect_code 0 timeout 120 $on_b "$SPOTRUN" run --run-id r1 --lease-wait 5s -- $train \
        --out b1.bin >b1.log 2>&1
    grep "waiting for the lock of r1/LEASE in store .* held by pid $h on $(hostname)" b1.log
    grep "r1/LEASE in store .* has been locked by pid $h on $(hostname) for .*breaking its lock" \
        b1.log
    cmp ref.bin b1.bin
    kill -CONT $h
    wait $h
'

test_expect_success 'a wrapper paused inside its lease lock: the next one takes over; the paused one then loses with 73' '
    # A stops itself in the fsync of a lease renewal: inside the lock.
    LD_PRELOAD=$SPOTRUN_INJECT_LIB SPOTRUN_INJECT=fsync:STOP:1 SPOTRUN_INJECT_PATH=.LEASE.tmp. \
        $on_a "$SPOTRUN" run --run-id r2 --lease-ttl 2s -- $train --save-every 100 \
        --pace-ms 5 --out a.bin >a2.log 2>&1 &
    a=$!
    trap "kill -CONT $a 2>/dev/null || :; kill -CONT -- -\$(pgrep -P $a) 2>/dev/null || :" EXIT
    wait_stopped $a
    job=$(pgrep -P $a)
    kill -STOP -- -$job # the whole VM pauses: wrapper and job
    expect_code 0 timeout 120 $on_b "$SPOTRUN" run --run-id r2 --lease-ttl 2s \
        --lease-wait 30s -- $train --out b2.bin >b2.log 2>&1
    cat b2.log
    # A stop inside the lock is broken and named ("has been locked by pid A
    # ... breaking its lock"; test 2 and test_store pin that message); on a
    # loaded machine the stop can also land just outside it, and B then
    # waits only for the lease to expire. Either way B owns the run in time.
    grep -E "has been locked by pid $a on $(hostname) for .*breaking its lock|run r2 is owned by" b2.log
    cmp ref.bin b2.bin
    kill -CONT -- -$job
    kill -CONT $a
    expect_code 73 wait $a
    cat a2.log
    grep "lost the lease of run r2" a2.log
    # A stopped in whichever lease write came first: a commit'"'"'s fence
    # (its checkpoint 1 is then never stored: "its lock was broken") or a
    # renewal (a checkpoint 1 it finished before is B'"'"'s starting point).
    # Either way nothing of A'"'"'s after the pause became a checkpoint: B'"'"'s
    # three (epoch 2) are the newest, and A has at most its step-100 one.
    "$SPOTRUN" show --json r2 | "$PY" -c "
import json, sys
c = json.load(sys.stdin)[\"checkpoints\"]
a = [x for x in c if x.get(\"epoch\", 0) != 2]
assert [x[\"epoch\"] for x in c[-3:]] == [2, 2, 2] and len(c) - len(a) == 3, c
assert all(x[\"epoch\"] == 1 and x[\"step\"] == 100 for x in a) and len(a) <= 1, c"
'

test_done
