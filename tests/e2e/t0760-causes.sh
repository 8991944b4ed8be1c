#!/usr/bin/env bash
# Every ended attempt has one cause from one vocabulary (docs/events.md):
# done, preempted, vanished, crashed, oom, stalled, time-limit, budget,
# lease-lost; show, ls, --json and the metrics file all say it. A job the
# OOM killer of its memory cgroup kills is oom (in a memory-limited cgroup
# the test makes, where the machine lets it); a plain kill -9 is crashed,
# with or without a readable cgroup. stalled, time-limit, budget and
# lease-lost come from planted event logs (the hang watchdog, the limits and
# the lease write those events).
. "$(dirname "$0")/lib.sh"

# cause_in_ls RUN: the CAUSE column of RUN in ls.
cause_in_ls() { "$SPOTRUN" ls | awk -v r="$1" '$1 == r {print $3}'; }

test_expect_success 'a run that finishes: its attempt is done everywhere' '
    "$SPOTRUN" run --run-id d -- true 2>d.log &&
    "$SPOTRUN" show d >show-d.out &&
    grep -E "^attempt 0 .*: done$" show-d.out &&
    grep "^causes: *1 done$" show-d.out &&
    test "$(cause_in_ls d)" = done &&
    "$SPOTRUN" show d --json >d.json &&
    json d.json "
a = d[\"attempt_list\"]
assert [x[\"cause\"] for x in a] == [\"done\"] and a[0][\"cause_detail\"] is None
assert d[\"last_cause\"] == \"done\" and d[\"causes\"][\"done\"] == 1
assert set(d[\"causes\"]) == {\"done\", \"preempted\", \"vanished\", \"crashed\", \"oom\", \"stalled\",
                              \"time-limit\", \"budget\", \"lease-lost\", \"cancelled\",
                              \"paused\", \"pruned\", \"exploit\", \"quota\"}
"
'

# kill9_job RUN: runs a job that waits, kills it with kill -9, expects 137.
kill9_job() {
    "$SPOTRUN" run --run-id "$1" --max-restarts 0 -- \
        sh -c "echo \$\$ >$TRASH/$1.pid; exec sleep 300" >"$1.log" 2>&1 &
    local pid=$!
    wait_for "$1.log" "started" 30 &&
        wait_until 30 "the job to write $1.pid" test -s "$1.pid" &&
        kill -9 "$(cat "$1.pid")" &&
        expect_code 137 wait $pid
}

test_expect_success 'kill -9 of the job: crashed (SIGKILL, signal 9), not oom' '
    kill9_job k9 &&
    ! grep "ran out of memory" k9.log &&
    ! grep "\"oom\"" "$SPOTRUN_STORE/k9/events/000000.jsonl" &&
    "$SPOTRUN" show k9 >show-k9.out &&
    grep -E "^attempt 0 .*: crashed \(SIGKILL, signal 9\), lost [0-9.]+m?s; not restarted$" show-k9.out &&
    test "$(cause_in_ls k9)" = crashed &&
    "$SPOTRUN" show k9 --json >k9.json &&
    json k9.json "
a = d[\"attempt_list\"][0]
assert a[\"cause\"] == \"crashed\" and a[\"cause_detail\"] == \"SIGKILL, signal 9\", a
assert a[\"outcome\"] == \"failed\" and a[\"signal\"] == \"KILL\"
"
'

test_expect_success 'no readable memory cgroup: a kill -9 is crashed, nothing guessed' '
    mkdir -p nocgroup &&
    SPOTRUN_CGROUP_ROOT=$TRASH/nocgroup kill9_job nocg &&
    ! grep "\"oom\"" "$SPOTRUN_STORE/nocg/events/000000.jsonl" &&
    "$SPOTRUN" show nocg | grep -E "^attempt 0 .*: crashed \(SIGKILL, signal 9\)" &&
    test "$(cause_in_ls nocg)" = crashed
'

test_expect_success 'a notice: preempted (manual), in show, ls and --json' '
    "$SPOTRUN" run --run-id p --notice none -- \
        "$LOGREG" --steps 100000 --save-every 500 --pace-ms 1 --out "$TRASH/p.bin" >p.log 2>&1 &
    pid=$!
    wait_for p.log "^step 200 " 60 &&
    "$SPOTRUN" notify --run-id p --deadline 20s &&
    expect_code 75 wait $pid &&
    "$SPOTRUN" show p >show-p.out &&
    grep -E "^attempt 0 .*: preempted \(manual\), lost " show-p.out &&
    test "$(cause_in_ls p)" = preempted &&
    "$SPOTRUN" show p --json >p.json &&
    json p.json "assert d[\"attempt_list\"][0][\"cause\"] == \"preempted\""
'

test_expect_success 'kill -9 of the wrapper: its attempt vanished, before and after a rerun' '
    cat >vjob.sh <<-\EOF
	#!/bin/sh
	# the first attempt waits to be killed with its wrapper; the rerun ends
	[ "$SPOTRUN_ATTEMPT" = 0 ] || exit 0
	exec sleep 301
	EOF
    chmod +x vjob.sh
    "$SPOTRUN" run --run-id v -- ./vjob.sh >v1.log 2>&1 &
    pid=$!
    wait_for v1.log "started" 30 &&
    kill -9 $pid &&
    { wait $pid 2>/dev/null || :; } &&
    for _ in $(seq 100); do pgrep -f "sleep 301" >/dev/null || break; sleep 0.1; done &&
    "$SPOTRUN" show v >show-v0.out &&
    grep -E "^attempt 0 .*: vanished, lost " show-v0.out &&
    test "$(cause_in_ls v)" = vanished &&
    "$SPOTRUN" run --run-id v -- ./vjob.sh >v2.log 2>&1 &&
    "$SPOTRUN" show v >show-v.out &&
    grep -E "^attempt 0 .*: vanished, lost " show-v.out &&
    grep -E "^attempt 1 .*: done$" show-v.out &&
    grep "^causes: *1 done, 1 vanished$" show-v.out &&
    "$SPOTRUN" show v --json >v.json &&
    json v.json "assert [x[\"cause\"] for x in d[\"attempt_list\"]] == [\"vanished\", \"done\"]"
'

# A memory-limited cgroup this test may make: cgroup v2 (the memory
# controller enabled for the root's children) or the v1 memory hierarchy.
CG=""
CG_WHY=""
make_cgroup() {
    local v2=/sys/fs/cgroup v1=/sys/fs/cgroup/memory name="spotrun-t0760-$$"
    if [ -f "$v2/cgroup.subtree_control" ] && grep -qw memory "$v2/cgroup.subtree_control" &&
        mkdir "$v2/$name" 2>/dev/null; then
        CG=$v2/$name
        echo $((128 << 20)) >"$CG/memory.max" && echo 0 >"$CG/memory.swap.max" 2>/dev/null
        [ "$(cat "$CG/memory.max")" = $((128 << 20)) ] && return 0
    elif [ -f "$v1/memory.limit_in_bytes" ] && mkdir "$v1/$name" 2>/dev/null; then
        CG=$v1/$name
        echo $((128 << 20)) >"$CG/memory.limit_in_bytes" &&
            { [ ! -f "$CG/memory.memsw.limit_in_bytes" ] ||
                echo $((128 << 20)) >"$CG/memory.memsw.limit_in_bytes"; }
        [ "$(cat "$CG/memory.limit_in_bytes")" = $((128 << 20)) ] && return 0
    fi
    [ -n "$CG" ] && rmdir "$CG" 2>/dev/null
    CG=""
    CG_WHY="cannot make a memory-limited cgroup here (no writable cgroup v2 with the memory controller at /sys/fs/cgroup, nor a v1 memory hierarchy; run as root on a host that delegates it)"
    return 1
}

# moves_in: a process can be put into $CG here (delegation may forbid it).
moves_in() {
    sh -c "echo \$\$ >\"\$1/cgroup.procs\"" - "$CG" 2>/dev/null && return 0
    rmdir "$CG" 2>/dev/null
    CG_WHY="made the memory-limited cgroup $CG but cannot move a process into it (cgroup delegation)"
    return 1
}

if make_cgroup && moves_in; then
    test_expect_success 'a job the OOM killer of its memory cgroup kills: oom everywhere' '
        echo "x = b\"x\" * (1 << 30)" >hog.py &&
        expect_code 137 sh -c "echo \$\$ >\"\$1/cgroup.procs\" && shift && exec \"\$@\"" - "$CG" \
            "$SPOTRUN" run --run-id o --max-restarts 0 -- "$PY" hog.py >o.log 2>&1 &&
        grep "the job ran out of memory: the OOM killer of its memory cgroup killed it" o.log &&
        grep "\"event\":\"exit\".*\"oom\":true" "$SPOTRUN_STORE/o/events/000000.jsonl" &&
        "$SPOTRUN" show o >show-o.out &&
        grep -E "^attempt 0 .*: oom \(SIGKILL, signal 9\), lost [0-9.]+m?s; not restarted$" show-o.out &&
        grep "^causes: *1 oom$" show-o.out &&
        test "$(cause_in_ls o)" = oom &&
        "$SPOTRUN" ls --json >ls-o.json &&
        json ls-o.json "
r = {x[\"run_id\"]: x for x in d[\"runs\"]}
assert r[\"o\"][\"last_cause\"] == \"oom\" and r[\"o\"][\"causes\"][\"oom\"] == 1
assert r[\"o\"][\"last_cause_detail\"] == \"SIGKILL, signal 9\"
" &&
        "$SPOTRUN" show o --json >o.json &&
        json o.json "assert d[\"attempt_list\"][0][\"cause\"] == \"oom\""
    '
    rmdir "$CG" 2>/dev/null || :
else
    test_skip 'a job the OOM killer of its memory cgroup kills: oom everywhere' "$CG_WHY"
fi

# plant RUN ATTEMPT EVENT-FIELDS...: writes RUN's event log of ATTEMPT, one
# line per argument ("event" and its own fields), a second apart.
plant() {
    local run=$1 att=$2 t
    shift 2
    t=$(($(date +%s) * 1000 - 600000 + att * 60000))
    mkdir -p "$SPOTRUN_STORE/$run/events"
    for f in "$@"; do
        printf "{\"event\":\"%s\",\"time\":\"x\",\"unix_ms\":%s,\"attempt\":%s%s}\n" \
            "${f%%,*}" "$t" "$att" "$([ "$f" = "${f#*,}" ] || printf ",%s" "${f#*,}")"
        t=$((t + 1000))
    done >"$SPOTRUN_STORE/$run/events/$(printf %06d "$att").jsonl"
}
STALL='stalled,"since_ms":600000,"timeout_ms":600000,"procs":[{"pid":7,"comm":"python","state":"S","wchan":"futex_wait","cpu_ms":0}]'
TLIM='limit,"cause":"time-limit","what":"attempt","limit":3600000,"used":3600400'
BUDG='limit,"cause":"budget","what":"run","limit":5,"used":5.01'
LEASE='lease_lost,"reason":"another wrapper holds epoch 2"'
EXIT_KILL='exit,"code":137,"signal":"KILL"'

test_expect_success 'planted logs: stalled, time-limit, budget, lease-lost in show, ls and --json' '
    plant ps 0 start "$STALL" "$EXIT_KILL" &&
    plant pt 0 start "$TLIM" request staged "exit,\"code\":0" &&
    plant pb 0 start "$BUDG" "exit,\"code\":1" &&
    plant pl 0 start "$LEASE" "exit,\"code\":143,\"signal\":\"TERM\"" &&
    "$SPOTRUN" ls >ls.out &&
    test "$(cause_in_ls ps)" = stalled &&
    test "$(cause_in_ls pt)" = time-limit &&
    test "$(cause_in_ls pb)" = budget &&
    test "$(cause_in_ls pl)" = lease-lost &&
    "$SPOTRUN" show ps | grep -E "^attempt 0 .*: stalled \(no progress for 10m00s, stall timeout 10m00s\), lost " &&
    "$SPOTRUN" show pt | grep -E "^attempt 0 .*: time-limit \(attempt time limit 1h00m reached, used 1h00m\), lost " &&
    "$SPOTRUN" show pb | grep -E "^attempt 0 .*: budget \(run budget \\\$5.00 reached, used \\\$5.01\), lost " &&
    "$SPOTRUN" show pl | grep -E "^attempt 0 .*: lease-lost: another wrapper took the run over$" &&
    "$SPOTRUN" ls --json >ls.json &&
    json ls.json "
r = {x[\"run_id\"]: x for x in d[\"runs\"]}
assert [r[k][\"last_cause\"] for k in (\"ps\", \"pt\", \"pb\", \"pl\")] == \
    [\"stalled\", \"time-limit\", \"budget\", \"lease-lost\"], r
assert r[\"pb\"][\"last_cause_detail\"] == \"run budget \$5.00 reached, used \$5.01\"
"
'

test_expect_success 'the metrics file counts attempt ends by cause' '
    plant pm 0 start "$STALL" "$EXIT_KILL" "restart,\"restart\":1" &&
    plant pm 1 start "$TLIM" "exit,\"code\":0" &&
    plant pm 2 start "$BUDG" "exit,\"code\":1" &&
    plant pm 3 start "$LEASE" "exit,\"code\":143,\"signal\":\"TERM\"" &&
    plant pm 4 start "exit,\"code\":137,\"signal\":\"KILL\",\"oom\":true" "restart,\"restart\":1" &&
    "$SPOTRUN" run --run-id pm --metrics-file "$TRASH/pm.prom" -- true 2>pm.log &&
    "$PY" "$SRCDIR/tests/e2e/promcheck.py" pm.prom >pm.jsonl &&
    "$PY" -c "
import json
ends = {}
for line in open(\"pm.jsonl\"):
    s = json.loads(line)
    if s[\"name\"] == \"spotrun_attempt_ends_total\":
        ends[s[\"labels\"][\"cause\"]] = s[\"value\"]
want = {\"done\": 1, \"preempted\": 0, \"vanished\": 0, \"crashed\": 0, \"oom\": 1, \"stalled\": 1,
        \"time-limit\": 1, \"budget\": 1, \"lease-lost\": 1, \"cancelled\": 0,
        \"paused\": 0, \"pruned\": 0, \"exploit\": 0, \"quota\": 0}
assert ends == want, ends
" &&
    "$SPOTRUN" show pm >show-pm.out &&
    grep "^causes: *1 done, 1 oom, 1 stalled, 1 time-limit, 1 budget, 1 lease-lost$" show-pm.out
'

test_expect_success 'report: each attempt ends in its cause colour, with a legend of causes' '
    "$SPOTRUN" report pm -o pm.svg 2>/dev/null &&
    if command -v xmllint >/dev/null; then xmllint --noout pm.svg; fi &&
    for c in done oom stalled time-limit budget lease-lost; do
        test "$(svg_count pm.svg "cause cause-$c")" -eq 1 &&
        test "$(svg_count pm.svg "legend-cause cause-$c")" -eq 1 || { say "cause $c"; exit 1; }
    done &&
    test "$(svg_count pm.svg "legend-cause cause-crashed")" -eq 0 &&
    grep -q "oom: SIGKILL, signal 9" pm.svg &&
    grep -q "stalled: no progress for 10m00s, stall timeout 10m00s" pm.svg
'

test_done
