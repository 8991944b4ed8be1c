#!/usr/bin/env bash
# The supervisor's state is split into owned parts (docs/runtime.md, "The
# supervisor's state"): tests/docs/sup_owners.py fails, naming the file,
# the line and the owners, when a file other than a part's owners writes
# one of its fields (an assignment, ++/--, or its address given to a
# function that does not take it as const), and when a file of the loop
# or of runtime/cmd compares the wrapper's node count (multi-node questions
# go through supervisor.h's sr_cfg_multinode/_rank/_nodes). The tree as it
# is passes.
. "$(dirname "$0")/lib.sh"

check() { "$PY" "$SRCDIR/tests/docs/sup_owners.py" "$@"; }

test_expect_success 'spotrun as it is: every owned field is written by its owners only' '
    check "$SRCDIR" >out 2>&1 &&
    test ! -s out
'

mkdir tree && cp -r "$SRCDIR/common" "$SRCDIR/storage" "$SRCDIR/runtime" tree/
sup=tree/runtime/supervise
# add FILE LINE: appends LINE inside a new function at the end of FILE.
add() { printf '\nvoid sup_test_write(struct sup *s)\n{\n    %s\n}\n' "$2" >>"$sup/$1"; }
fresh() { cp "$SRCDIR/runtime/supervise/$1" "$sup/$1"; }

test_expect_success 'an assignment to the stop from the job end handler fails' '
    add ending.c "s->stop.deadline = 0;" &&
    expect_code 1 check tree >out 2>&1 &&
    cat out &&
    grep -E "^runtime/supervise/ending.c:[0-9]+: writes s->stop.deadline \(owned by stop.c, notices.c\)$" out &&
    test "$(wc -l <out)" = 1 &&
    fresh ending.c
'

test_expect_success 'an increment of the commit pipeline from requests.c fails' '
    add requests.c "++s->ckpt.job_commits;" &&
    expect_code 1 check tree >out 2>&1 &&
    grep "^runtime/supervise/requests.c:[0-9]*: writes s->ckpt.job_commits (owned by supervisor.c, commitlog.c)" out &&
    fresh requests.c
'

test_expect_success 'an attempt part written from another file fails; its owner may' '
    add supervisor.c "s->att.watch.stalling |= 1;" &&
    expect_code 1 check tree >out 2>&1 &&
    grep "^runtime/supervise/supervisor.c:[0-9]*: writes s->att.watch.stalling (owned by watchdog.c)" out &&
    fresh supervisor.c &&
    add watchdog.c "s->att.watch.stalling |= 1;" &&
    check tree &&
    fresh watchdog.c
'

test_expect_success 'an address to a non-const parameter is a write; to a const one a read' '
    add ending.c "memset(&s->group.await_seq, 0, 8);" &&
    expect_code 1 check tree >out 2>&1 &&
    grep "writes s->group.await_seq (owned by group.c)" out &&
    fresh ending.c &&
    add ending.c "char b[64]; sr_limit_describe(&s->stop.limit_hit, b, sizeof(b));" &&
    check tree &&
    fresh ending.c
'

test_expect_success 'a node count compared in the loop or a run step fails: sr_cfg_* answer' '
    add watchdog.c "if (s->cfg->nodes > 1) return;" &&
    expect_code 1 check tree >out 2>&1 &&
    grep "^runtime/supervise/watchdog.c:[0-9]*: asks how many nodes (supervisor.h.s sr_cfg_\* answer)" out &&
    fresh watchdog.c &&
    add group.c "if (s->cfg->nodes <= 1) return;" &&
    expect_code 1 check tree >out 2>&1 &&
    grep "^runtime/supervise/group.c:" out &&
    fresh group.c &&
    printf "\nstatic int f(struct run *r) { return r->c.nodes > 1; }\n" >>tree/runtime/cmd/run_main.c &&
    expect_code 1 check tree >out 2>&1 &&
    grep "^runtime/cmd/run_main.c:[0-9]*: asks how many nodes" out &&
    cp "$SRCDIR/runtime/cmd/run_main.c" tree/runtime/cmd/run_main.c &&
    add group.c "if (!sr_cfg_multinode(s->cfg) || m->nodes > 1) return;" &&
    check tree &&
    fresh group.c
'

test_expect_success 'comparisons and reads are not writes' '
    add ending.c "if (s->stop.pre == STOPPING && s->ckpt.submitted != 0 && s->stop.deadline <= 1) return;" &&
    check tree &&
    fresh ending.c
'

test_done
