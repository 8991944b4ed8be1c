#!/usr/bin/env bash
# What a user sees about a run's past: `ls` shows when a run without
# checkpoints began (its first event) instead of "-", and rerunning a
# finished run with another command than the one that finished it is
# refused (64) naming both commands, instead of exiting 0 for a command
# that never ran; the same command again still exits 0 at once.
. "$(dirname "$0")/lib.sh"

test_expect_success 'ls: a run without checkpoints shows its creation time, not "-"' '
    "$SPOTRUN" run --run-id nockpt -- true 2>/dev/null &&
    "$SPOTRUN" ls >out &&
    grep "^nockpt " out >row &&
    grep -E " [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$" row
'

test_expect_success 'rerun of a finished run with the same command: exit 0 at once, not run again' '
    "$SPOTRUN" run --run-id fin -- sh -c "echo ran >>ran.log" 2>/dev/null &&
    "$SPOTRUN" run --run-id fin -- sh -c "echo ran >>ran.log" 2>err &&
    test "$(wc -l <ran.log)" -eq 1 && grep "already done" err
'

test_expect_success 'rerun of a finished run with another command: 64 naming both, nothing run' '
    expect_code 64 "$SPOTRUN" run --run-id fin -- sh -c "echo other >>ran.log" 2>err &&
    grep -F "run fin already finished with \`sh -c '"'"'echo ran >>ran.log'"'"'\`" err &&
    grep -F "this asks for \`sh -c '"'"'echo other >>ran.log'"'"'\`, which was not run" err &&
    grep -F -- "--fresh" err &&
    test "$(wc -l <ran.log)" -eq 1
'

test_expect_success '--fresh runs the new command' '
    "$SPOTRUN" run --fresh --run-id fin -- sh -c "echo other >>ran.log" 2>/dev/null &&
    test "$(tail -n 1 ran.log)" = other
'

test_done
