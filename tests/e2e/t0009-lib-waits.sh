#!/usr/bin/env bash
# The harness's waits (lib.sh): a file that a background command has not
# created yet counts as "not yet" (no line, 0 matches), never as an error
# that ends the wait at once; a wait that gives up says what it waited for.
# (A test that starts `cmd >FILE &` and waits for lines in FILE at once used
# to kill the wrapper before it started: t0720 under load.)
. "$(dirname "$0")/lib.sh"

# late FILE LINE...: writes the lines to FILE a second from now, in the
# background, as a wrapper started with `cmd >FILE &` does on a busy machine.
late() {
    local file=$1
    shift
    (sleep 1 && printf '%s\n' "$@" >"$file") &
}

test_expect_success 'count_lines: a missing file has 0 matching lines' '
    test "$(count_lines nothing.log "^step")" = 0 &&
    printf "step 1\nother\nstep 2\n" >some.log &&
    test "$(count_lines some.log "^step")" = 2
'

test_expect_success 'wait_lines waits for a file created late, until it has the lines' '
    late steps.log "step 1" "step 2" "step 3" &&
    wait_lines steps.log "^step" 3 30 &&
    test "$(count_lines steps.log "^step")" = 3
'

test_expect_success 'wait_for waits for a file created late' '
    late ready.log "ready" &&
    wait_for ready.log "^ready" 30 &&
    grep -q "^ready" ready.log
'

test_expect_success 'wait_until waits for a command that succeeds late' '
    late flag "x" &&
    wait_until 30 "the flag file" test -s flag &&
    test -s flag
'

test_expect_success 'a wait that gives up fails and says what it waited for' '
    expect_code 1 wait_lines never.log "^step" 2 1 >out1 &&
    grep "timed out after 1s waiting for 2 lines matching .^step. in never.log (it has none: it does not exist)" out1 &&
    echo "step 1" >one.log &&
    expect_code 1 wait_lines one.log "^step" 2 1 >out2 &&
    grep "waiting for 2 lines matching .^step. in one.log (it has 1)" out2 &&
    expect_code 1 wait_for never.log "^ready" 1 >out3 &&
    grep "timed out after 1s waiting for a line matching .^ready. in never.log (it does not exist)" out3 &&
    expect_code 1 wait_until 1 "the moon" false >out4 &&
    grep "timed out after 1s waiting for the moon" out4
'

test_done
