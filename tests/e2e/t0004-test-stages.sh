#!/usr/bin/env bash
# scripts/test.sh's stages (scripts/lib-stages.sh): stages that run at the
# same time print their output whole, one after the other, never
# interleaved; a stage that fails makes the table fail and names it; a
# stage that needs another waits for it, or is skipped when it failed; the
# table gives each stage's seconds and status, also for one cut short (its
# track ended with all it started).
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/scripts/lib-stages.sh"

# chatty NAME N: N lines "NAME i", a little apart (stages running together
# would interleave them line by line without the lock and the logs)
chatty() { local i; for i in $(seq "$2"); do echo "$1 $i"; sleep 0.01; done; }

test_expect_success 'two stages at once: each one'"'"'s output comes whole, after its header' '
    stage_init "$TRASH/s1" &&
    { stage one chatty one 50 & stage two chatty two 50 & wait; } >out &&
    cat out &&
    for s in one two; do
        sed -n "/^== $s: ok in [0-9]*s; its output/,/^==/p" out | grep -c "^$s [0-9]*$" | grep -x 50 || exit 1
    done &&
    test "$(grep -c "^one [0-9]*$\|^two [0-9]*$" out)" = 100 &&
    stage_table >table &&
    cat table &&
    grep "^one  *[0-9][0-9]*  ok$" table &&
    grep "^two  *[0-9][0-9]*  ok$" table &&
    grep "^total  *[0-9][0-9]*  ok$" table
'

test_expect_success 'a failing stage: its status, its log named, the table fails naming it' '
    stage_init "$TRASH/s2" &&
    expect_code 3 stage bad sh -c "echo it broke; exit 3" >out &&
    cat out &&
    grep "^it broke$" out &&
    grep "^== bad: FAILED (exit 3) in [0-9]*s (log: $TRASH/s2/bad.log)$" out &&
    stage good true >/dev/null &&
    expect_code 1 stage_table >table &&
    cat table &&
    grep "^bad  *[0-9][0-9]*  FAILED (exit 3)$" table &&
    grep "^good  *[0-9][0-9]*  ok$" table &&
    grep "^total  *[0-9][0-9]*  FAILED: bad$" table
'

test_expect_success 'a stage that needs another waits for it across tracks, or is skipped when it failed' '
    stage_init "$TRASH/s3" &&
    { stage build sh -c "sleep 1; echo built >$TRASH/built" & } >out1 &&
    stage_after build use sh -c "cat $TRASH/built" >out2 &&
    wait &&
    grep "^built$" out2 &&
    expect_code 5 stage broken sh -c "exit 5" >/dev/null &&
    expect_code 1 stage_after broken after true >out3 &&
    grep "^== after: skipped (broken did not pass)$" out3 &&
    expect_code 1 stage_table >table &&
    cat table &&
    grep "^use  *[0-9][0-9]*  ok$" table &&
    grep "^after  *0  skipped (broken did not pass)$" table &&
    grep "^total  *[0-9][0-9]*  FAILED: broken$" table
'

# gone PID: the process has ended (no such process, or a zombie); a job
# killed on a busy machine takes a moment to be scheduled and die
gone() {
    local state
    state=$(awk "{print \$3}" "/proc/$1/stat" 2>/dev/null) || true
    test -z "$state" || test "$state" = Z
}

test_expect_success 'a stage cut short is in the table as not finished, and fails it' '
    stage_init "$TRASH/s4" &&
    { stage slow sh -c "echo \$\$ >$TRASH/slow.pid; exec sleep 60" >/dev/null & } &&
    wait_until 30 "the slow stage to start" test -s "$TRASH/slow.pid" &&
    stage_kill_tree $! &&
    wait &&
    wait_until 30 "the stage'"'"'s job to end (TERM after the tree was stopped)" gone "$(cat "$TRASH/slow.pid")" &&
    expect_code 1 stage_table >table &&
    cat table &&
    grep "^slow  *-  did not finish$" table &&
    grep "^total  *[0-9][0-9]*  FAILED: slow$" table
'

test_done
