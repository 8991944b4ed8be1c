#!/usr/bin/env bash
# The failure reason is in the store: the last lines of a failed attempt's
# stderr (at most 20 lines, 4 KiB, cleaned of control characters) are kept
# in its "exit" event, and `show` and `sweep show` print them; the job's
# stderr still reaches the wrapper's unchanged.
. "$(dirname "$0")/lib.sh"

unset CUDA_VISIBLE_DEVICES

# exit_field RUN FIELD: FIELD of the run's last "exit" event ("null" if none)
exit_field() {
    cat "$SPOTRUN_STORE/$1"/events/*.jsonl | "$PY" -c '
import json, sys
ex = [e for e in map(json.loads, sys.stdin) if e.get("event") == "exit"]
print(json.dumps(ex[-1].get(sys.argv[1])) if ex else "none")' "$2"
}

test_expect_success 'a crashed job: its exit event keeps the last lines of its stderr' '
    expect_code 3 "$SPOTRUN" run --run-id crash --max-restarts 0 -- sh -c "
        echo to-stdout; printf \"step 1\\r\\033[31mstep 2\\033[0m\\n\" >&2
        echo simulated CUDA error >&2; exit 3" >out 2>err &&
    test "$(exit_field crash tail)" = "\"step 2\\nsimulated CUDA error\"" &&
    grep "^to-stdout$" out
'

test_expect_success 'the job'"'"'s stderr reaches the wrapper'"'"'s unchanged, before "the job exited"' '
    printf "step 1\\r\\033[31mstep 2\\033[0m\\nsimulated CUDA error\\n" >want &&
    grep -v "^spotrun: " err >got && cmp want got &&
    test "$(grep -n "simulated CUDA error" err | cut -d: -f1)" -lt \
         "$(grep -n "the job exited with code 3" err | cut -d: -f1)"
'

test_expect_success 'show prints the failure'"'"'s last lines under its attempt' '
    "$SPOTRUN" show crash >show.out &&
    grep -A3 "^attempt 0 .*crashed (exit 3)" show.out >att &&
    grep "^  its stderr ended with:$" att &&
    grep "^    | simulated CUDA error$" att &&
    "$SPOTRUN" show crash --json | grep "\"tail\": \"step 2\\\\nsimulated CUDA error\""
'

test_expect_success 'a job that succeeds keeps no tail' '
    "$SPOTRUN" run --run-id ok -- sh -c "echo fine >&2" 2>/dev/null &&
    test "$(exit_field ok tail)" = null &&
    "$SPOTRUN" show ok >ok.out && ! grep "stderr ended" ok.out
'

test_expect_success 'an attempt stopped by a notice keeps and prints no stderr tail' '
    (set +e; "$SPOTRUN" run --run-id pre -- sh -c "echo working >&2; echo up >up; sleep 60" \
        2>pre.err; echo $? >pre.rc) &
    wait_for up up &&
    "$SPOTRUN" notify --run-id pre --deadline 3s 2>/dev/null &&
    wait_for pre.rc . 120 && test "$(cat pre.rc)" = 75 &&
    test "$(exit_field pre tail)" = null &&
    "$SPOTRUN" show pre >pre.out && grep "^attempt 0 .*preempted" pre.out &&
    ! grep "stderr ended" pre.out
'

test_expect_success 'a job writing 100 MB to stderr: only the bounded tail is kept' '
    expect_code 3 "$SPOTRUN" run --run-id big --max-restarts 0 -- sh -c "
        yes \"a line of training output\" | head -n 4000000 >&2 # 104 MB
        echo the last words >&2; exit 3" 2>/dev/null &&
    exit_field big tail >tail.json &&
    "$PY" -c "
import json, sys
t = json.load(open(\"tail.json\"))
lines = t.split(\"\\n\")
assert len(t.encode()) <= 4096 and len(lines) == 20, (len(t), len(lines))
assert lines[-1] == \"the last words\" and lines[0] == \"a line of training output\", lines
"
'

test_expect_success 'a grandchild holding the job'"'"'s stderr after it exits never holds up the wrapper' '
    expect_code 3 timeout 60 "$SPOTRUN" run --run-id gc --max-restarts 0 -- sh -c "
        (setsid sh -c \"sleep 50; echo late >&2\" &); echo dying >&2; exit 3" 2>/dev/null &&
    test "$(exit_field gc tail)" = "\"dying\""
'

test_expect_success 'sweep show prints a failed trial'"'"'s last lines' '
    "$SPOTRUN" sweep init sw --param k=0,3 -- sh -c "echo trial {k} says simulated CUDA error >&2; exit {k}" >/dev/null &&
    timeout 300 "$SPOTRUN" sweep work sw --until-empty --poll 100ms -- --max-restarts 0 2>work.err ||
        { cat work.err; exit 1; }
    "$SPOTRUN" sweep show sw >sw.out &&
    grep -A2 "^trial 1 (sw-1) failed" sw.out | grep "^    | trial 3 says simulated CUDA error$" &&
    ! grep "trial 0 says" sw.out &&
    "$SPOTRUN" sweep show sw --json | grep "\"tail\": \"trial 3 says simulated CUDA error\""
'

test_done
