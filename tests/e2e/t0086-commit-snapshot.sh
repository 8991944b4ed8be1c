#!/usr/bin/env bash
# A commit is answered once the wrapper has snapshotted the checkpoint
# directory, before it is packed (runtime/supervise/snapshot.h): the job
# goes on at once. Files the job replaces by a rename right after are
# pulled back as committed; a file linked in the snapshot but rewritten in
# place while the commit is packed fails that commit (never a mix), and
# spotrun_wait_durable() says which. SPOTRUN_TEST_HOLD_PACK holds each
# commit between its snapshot and its packing until the job releases it.
. "$(dirname "$0")/lib.sh"
export TRASH

run_job() { # run-id mode
    rm -f "$TRASH/go" "$TRASH/wait2.rc"
    SPOTRUN_TEST_HOLD_PACK=$TRASH/go "$SPOTRUN" run --run-id "$1" --max-restarts 0 -- \
        "$COMMITJOB" "$2" >"$1.log" 2>&1
}

# Where the metric the job records once commit 2 returned stands among the
# events: before commit 2's "staged" one, or its "commit_failed" (so before
# its packing ended).
returned_before_staged() {
    events "$1" >"$1.ev" &&
        "$PY" - "$1.ev" <<\PY
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
names = [(e["event"], e.get("seq"), e.get("name")) for e in ev]
m = names.index(("metric", None, "commit2_returned"))
s = [i for i, n in enumerate(names) if n[0] in ("staged", "commit_failed") and n[1] == 2]
assert s and m < s[0], names
PY
}

# The stamps of a.bin and b.bin in a checkpoint pulled back.
stamps() { printf '%s %s' "$(head -c 7 "$1/a.bin")" "$(head -c 7 "$1/b.bin")"; }

test_expect_success 'commit returns before its packing: the job goes on, files replaced by rename' '
    run_job ren rename &&
    test "$(cat wait2.rc)" = 0 &&
    returned_before_staged ren
'

test_expect_success 'the checkpoint pulled back holds what was committed, not what came after' '
    "$SPOTRUN" show ren >show-ren.out &&
    awk "\$1 == 2 && \$2 == 2" show-ren.out | grep . &&
    "$SPOTRUN" pull ren --seq 2 out-ren &&
    test "$(stamps out-ren)" = "a.bin-2 b.bin-2"
'

test_expect_success 'a file rewritten in place while its commit packs: that commit fails cleanly' '
    run_job inp inplace &&
    returned_before_staged inp &&
    rc=$(cat wait2.rc) &&
    if [ "$rc" = 0 ]; then
        "$SPOTRUN" pull inp --seq 2 out-inp &&
            test "$(stamps out-inp)" = "a.bin-2 b.bin-2"
    else
        test "$rc" = -5 &&
            grep "checkpoint 2 failed after its commit returned" inp.log &&
            grep "was rewritten in place while the commit packed it" inp.log &&
            events inp | grep "\"event\":\"commit_failed\"" | grep "\"seq\":2" &&
            "$SPOTRUN" pull inp --seq 1 out-inp1 &&
            test "$(stamps out-inp1)" = "a.bin-1 b.bin-1"
    fi
'

# Every checkpoint of both runs: each holds one state of the two files.
all_whole() {
    local run seq s
    for run in ren inp; do
        "$SPOTRUN" show "$run" --json >"$run.json" || return 1
        for seq in $(json "$run.json" "print(\" \".join(str(c[\"seq\"]) for c in d[\"checkpoints\"]))"); do
            rm -rf "mix-$run-$seq"
            "$SPOTRUN" pull "$run" --seq "$seq" "mix-$run-$seq" >/dev/null || return 1
            s=$(stamps "mix-$run-$seq")
            case "$s" in
            "a.bin-1 b.bin-1" | "a.bin-2 b.bin-2" | "a.bin-3 b.bin-3") ;;
            *) say "checkpoint $seq of $run mixes states: $s"; return 1 ;;
            esac
        done
    done
}

test_expect_success 'no checkpoint in the store mixes two states of the files' '
    all_whole
'

# The same from Python: spotrun.wait_durable() is True once a commit is
# durable, and raises CommitError for one that failed after it returned: a
# file saved by a rename, then rewritten in place at once (within the same
# clock tick as its save, as likely as not).
cat >pyjob.py <<\PY
import os, spotrun
d, trash = spotrun.ckpt_dir(), os.environ["TRASH"]
go = os.path.join(trash, "go")
spotrun.save("m.bin", b"1" * 65536)
s1 = spotrun.commit(1)
open(go, "w").close()
print("wait1", spotrun.wait_durable(s1, timeout=120), flush=True)
spotrun.save("m.bin", b"2" * 65536)
s2 = spotrun.commit(2)
with open(os.path.join(d, "m.bin"), "r+b") as f:
    f.write(b"3" * 16)
open(go, "w").close()
try:
    print("wait2", spotrun.wait_durable(s2, timeout=120), flush=True)
except spotrun.CommitError as e:
    print("wait2 CommitError:", e, flush=True)
open(go, "w").close()
PY

test_expect_success 'Python: wait_durable is True once durable, CommitError for a failed commit' '
    rm -f go
    SPOTRUN_TEST_HOLD_PACK=$TRASH/go PYTHONPATH=$SRCDIR/python "$SPOTRUN" run --run-id py \
        --max-restarts 0 -- "$PY" pyjob.py >py.log 2>&1 &&
    grep "^wait1 True$" py.log &&
    grep "^wait2 CommitError: checkpoint 2 failed after its commit returned" py.log &&
    "$SPOTRUN" pull py --seq 1 out-py &&
    test "$(head -c 4 out-py/m.bin)" = 1111
'

# A notice while a commit is answered and its packing held: the stop (of a
# job that does not listen: SIGTERM at once) still makes that commit
# durable before the wrapper exits 75.
cat >notice-job.sh <<\JOB
#!/bin/sh
trap 'exit 0' TERM
head -c 4M /dev/urandom >"$SPOTRUN_CKPT_DIR/state"
"$SPOTRUN_BIN" commit --step 7 >/dev/null || exit 9
echo returned >"$TRASH/returned"
while :; do sleep 0.1; done
JOB
chmod +x notice-job.sh

release_all() { # touches go while the run lasts: every held commit goes on
    while kill -0 "$1" 2>/dev/null; do
        touch "$TRASH/go"
        sleep 0.1
    done
}

test_expect_success 'a notice right after a commit returned: that commit is durable before the stop' '
    rm -f go returned
    SPOTRUN_TEST_HOLD_PACK=$TRASH/go "$SPOTRUN" run --run-id ntc --grace 60s -- ./notice-job.sh \
        >ntc.log 2>&1 &
    pid=$!
    test_bg $pid
    wait_for returned returned 60 &&
    "$SPOTRUN" notify --run-id ntc --deadline 60s &&
    { release_all $pid & } &&
    expect_code 75 wait $pid &&
    grep "preempted: checkpoint [0-9]* is durable" ntc.log &&
    "$SPOTRUN" show ntc >show-ntc.out &&
    awk "\$1 == 1 && \$2 == 7" show-ntc.out | grep . &&
    "$SPOTRUN" pull ntc --seq 1 out-ntc &&
    test "$(stat -c %s out-ntc/state)" = 4194304
'

test_expect_success 'no snapshot is left behind' '
    refute grep -rl . --include="snap-*" work &&
    test -z "$(find . -name "*.spotrun-tmp.*")"
'

test_done
